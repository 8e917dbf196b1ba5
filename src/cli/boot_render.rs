//! `pi-context boot-render`: load the five-home snapshot once and render the boot block for the
//! head of a context window. Identity, window ids and `opened_at` come from flags; the request
//! carries only the tool-name bindings. The answer also carries the reset continuation text
//! (`data.continuation`), so a host gets every model-facing text of a reset from one call.

use chrono::{DateTime, FixedOffset, SecondsFormat};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::boot::{self, BootIdentity, HomeKind, Layout, Snapshot, Windows};
use crate::cli::common::{NotesArgs, read_request, resolve_cache_dir};
use crate::cli::error::RequestError;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
use crate::protocol::{ToolNames, root_window_id};

/// Render the boot block for the head of a context window.
///
/// Reads `{"tools": {…}}` on stdin (optional: the tool names the text refers to; default the Pi
/// names) and prints the boot block: identity, the recovery protocol, the MAP.md bodies and the
/// recent-notes index.
#[derive(Debug, clap::Args)]
#[command(mut_arg("session_id", |arg| arg.required(true)))]
pub struct Args {
    /// Identity and cache (`--session-id` is required here, so clap says so in the usage line:
    /// it names the session home and the root window id).
    #[command(flatten)]
    pub notes: NotesArgs,
    /// The window this boot opens [default: the session's root window id].
    #[arg(long, value_name = "ID")]
    pub window_id: Option<String>,
    /// The window active before this one (omit for the root boot).
    #[arg(long, value_name = "ID")]
    pub previous_window_id: Option<String>,
    /// When boot construction began (RFC 3339); every relative age is against it [default: now].
    #[arg(long, value_name = "TIME")]
    pub opened_at: Option<String>,
    /// Fit the boot text into this many characters (e.g. a host's context-injection cap):
    /// MAP tails and recent-note rows are trimmed visibly; identity and protocol never are.
    #[arg(long, value_name = "N")]
    pub max_chars: Option<usize>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Request {
    tools: ToolNames,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct HomeReport {
    home: HomeKind,
    label: &'static str,
    /// The displayed address prefix of the home.
    address: String,
    unavailable: bool,
    /// Note files in the home other than the top-level MAP, crumpled ones included (the boot
    /// does not read every note, so it does not know how many are live).
    note_files: usize,
    /// Recent rows shown (≤ the home's cap).
    shown: usize,
    cap: usize,
    map: bool,
    map_cut: bool,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Unavailable {
    home: HomeKind,
    label: &'static str,
    error: String,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let request: Request = read_request(io)?;
    render(&args, &request, ctx)
}

fn render(args: &Args, request: &Request, ctx: &Ctx) -> Result<Reply, CmdError> {
    let opened_at: DateTime<FixedOffset> = match &args.opened_at {
        None => ctx.now,
        Some(text) => DateTime::parse_from_rfc3339(text).map_err(|e| {
            RequestError::Invalid(format!(
                "--opened-at must be an RFC 3339 timestamp ({e}): {text:?}"
            ))
        })?,
    };
    let Some(session_id) = args.notes.identity.session_id.clone() else {
        return Err(RequestError::Invalid(
            "boot-render needs --session-id (it names the session home and the root window id)"
                .into(),
        )
        .into());
    };
    let identity = args.notes.identity.resolve(ctx)?;
    let (agent, model) = (identity.agent.clone(), identity.model.clone());
    let layout = Layout {
        root: identity.root.clone(),
        session_id: session_id.clone(),
        project_key: identity.project_key.clone(),
        agent: identity.agent.clone(),
        model: identity.model.clone(),
    };
    let first = root_window_id(&session_id);
    let windows = Windows {
        current: args
            .window_id
            .clone()
            .filter(|w| !w.is_empty())
            .unwrap_or_else(|| first.clone()),
        previous: args.previous_window_id.clone().filter(|p| !p.is_empty()),
        first,
    };
    let cache_dir = if args.notes.cache.no_cache {
        None
    } else {
        resolve_cache_dir(ctx)
    };
    let snapshot = boot::load::load_snapshot_cached(
        &layout,
        opened_at.timestamp_millis(),
        cache_dir.as_deref(),
    );
    let boot_identity = BootIdentity { agent, model };
    let (text, budget) = match args.max_chars {
        None => (
            boot::render(&boot_identity, &windows, &snapshot, &request.tools),
            None,
        ),
        Some(max_chars) => {
            let fitted = boot::render::render_within(
                &boot_identity,
                &windows,
                &snapshot,
                &request.tools,
                max_chars,
            );
            let trimmed = fitted.trim != boot::render::Trim::NONE;
            let budget = json!({
                "max_chars": max_chars,
                "fits": fitted.fits,
                "trimmed": trimmed,
                "map_chars": trimmed.then_some(fitted.trim.map_chars),
                "rows_per_home": (trimmed && fitted.trim.rows_per_home != usize::MAX)
                    .then_some(fitted.trim.rows_per_home),
            });
            (fitted.text, Some(budget))
        }
    };

    let homes: Vec<HomeReport> = HomeKind::ORDER
        .into_iter()
        .map(|kind| home_report(kind, &snapshot, &layout))
        .collect();
    let unavailable: Vec<Unavailable> = boot::load::LOAD_ORDER
        .into_iter()
        .filter_map(|kind| {
            snapshot
                .home(kind)
                .unavailable
                .as_ref()
                .map(|error| Unavailable {
                    home: kind,
                    label: kind.label(),
                    error: error.clone(),
                })
        })
        .collect();
    let sync_conflicts = boot::notice::sync_conflicts(&snapshot);
    let notice = boot::notice::notice(&snapshot, &request.tools);
    let mut data = json!({
        "window_id": windows.current,
        "first_window_id": windows.first,
        "previous_window_id": windows.previous,
        "opened_at": opened_at.to_rfc3339_opts(SecondsFormat::Millis, false),
        "identity": {
            "session_id": session_id,
            "project_key": layout.project_key,
            "agent": layout.agent,
            "model": layout.model,
        },
        "homes": homes,
        "unavailable": unavailable,
        "notice": notice,
        "sync_conflicts": sync_conflicts,
        "text_chars": text.chars().count(),
        "continuation": boot::continuation(&request.tools),
    });
    if let Some(budget) = budget {
        data["budget"] = budget;
    }
    Ok(Reply::ok(data, text))
}

fn home_report(kind: HomeKind, snapshot: &Snapshot, layout: &Layout) -> HomeReport {
    let home = snapshot.home(kind);
    let map = home.map.as_ref().filter(|m| !m.body.is_empty());
    HomeReport {
        home: kind,
        label: kind.label(),
        address: layout.prefix(kind),
        unavailable: home.unavailable.is_some(),
        note_files: home.note_files,
        shown: home.recent.len().min(kind.cap()),
        cap: kind.cap(),
        map: map.is_some(),
        map_cut: map.is_some_and(|m| boot::render::map_is_cut(&m.body)),
    }
}
