//! `pi-context sync`: commit, fetch, merge note by note, push — the notes home through a Git
//! remote. This layer resolves the home, the remote (flag, else Pi's `pi-context.syncRemote`
//! setting, else the domain's `origin`), the host name, the clock and the lock token, calls
//! [`crate::sync::sync`], and prints one result. The merge, the lock and Git are the domain's.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;

use crate::budget::settings::{self, SettingsPaths};
use crate::cli::budget_check::resolve_settings_paths;
use crate::cli::common::{NotesHomeArg, read_request};
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::{Refusal, Reply};
use crate::sync::{self, Outcome, SyncError};

/// Flags of `sync`; the request on stdin is `{}`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Commits this machine's notes, fetches the remote's branch, merges note by note (metadata field \
by field, bodies three-way by lines; a clash keeps the local note live and writes the other \
side beside it as <name>.conflict-<host>-<stamp>.md), brings the result into the home and \
pushes, never forced. A remote whose branch does not descend from what this machine last \
synced is refused (remote_rewritten) unless --adopt-remote. Runs under the home's dream lock, \
so a sync and a dream never overlap. Session homes (pi/session/) stay local unless \
--include-sessions.

Request on stdin (may be empty): {}.

Exit status: 0 synced (conflicts included: they are reported, never blocking); 1 refused \
(remote_rewritten, no_remote, push_rejected, unsupported_transport, repository_unusable); 2 \
usage error or malformed request; 69 the remote cannot be reached; 70 I/O failure; 75 the \
lock is held (a dream or another sync) or the remote kept moving (remote_busy).")]
pub struct Args {
    // The notes home (created when missing); the flag and its help are `NotesHomeArg`'s.
    #[command(flatten)]
    pub home: NotesHomeArg,
    /// A Git remote of the notes home, or a URL (path, file://, git://; https:// and ssh://
    /// when built in) [default: pi-context.syncRemote in Pi's settings, else origin].
    #[arg(long, value_name = "NAME|URL")]
    pub remote: Option<String>,
    /// The remote branch.
    #[arg(long, value_name = "NAME", default_value = "main")]
    pub branch: String,
    /// Accept a remote that was rewritten (force-pushed, recreated): merge into its line and
    /// keep the old line under a tag instead of refusing with remote_rewritten.
    #[arg(long)]
    pub adopt_remote: bool,
    /// Also sync the session homes pi/session/* (by default they stay on this machine).
    #[arg(long)]
    pub include_sessions: bool,
    /// Pi's agent directory (global settings); default `$PI_CODING_AGENT_DIR`, else
    /// `~/.pi/agent`.
    #[arg(long, value_name = "DIR")]
    pub agent_dir: Option<PathBuf>,
}

/// The request on stdin: nothing yet.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Request {}

/// This machine's name as a file-name-safe slug: `PI_CONTEXT_HOST`, else the host name.
fn host_name(ctx: &Ctx) -> String {
    let raw = match ctx.var_non_empty("PI_CONTEXT_HOST") {
        Some(h) => h.to_string(),
        None => rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned(),
    };
    let slug: String = raw
        .split('.')
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let slug = slug.trim_matches('-').to_string();
    if slug.is_empty() { "host".into() } else { slug }
}

fn render_text(outcome: &Outcome) -> String {
    let c = &outcome.counts;
    let head = outcome
        .head
        .as_deref()
        .map_or("(empty)".to_string(), |h| h[..12.min(h.len())].to_string());
    let mut text = format!(
        "synced {} with {} {}: {} at {head}{}\nlocal changes {}, incoming {}, merged {}, kept edits {}, changed during sync {}, conflicts {}",
        outcome.notes_home.display(),
        outcome.remote.url,
        outcome.branch,
        serde_json::to_value(outcome.integration)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        if outcome.pushed { " (pushed)" } else { "" },
        c.local_changes,
        c.incoming_changes,
        c.merged,
        c.kept_edits,
        c.changed_during_sync,
        c.conflicts,
    );
    if let Some(tag) = &outcome.adopted_tag {
        text.push_str(&format!(
            "\nadopted the rewritten remote; old line kept at {tag}"
        ));
    }
    for conflict in &outcome.conflicts {
        text.push_str(&format!(
            "\nconflict ({}): {} kept this machine's version; the other side is {}",
            conflict.reason.as_str(),
            conflict.path,
            conflict.conflict_path
        ));
    }
    text
}

/// The refusal of a sync error, with the facts that locate it.
fn refused(err: SyncError, home: &Path) -> CmdError {
    let details = match &err {
        SyncError::LockHeld { path } => Some(json!({"lock_path": path})),
        SyncError::Unreachable { url, .. }
        | SyncError::PushRejected { url, .. }
        | SyncError::RemoteBusy { url }
        | SyncError::UnsupportedTransport { url, .. } => Some(json!({"url": url})),
        SyncError::RemoteRewritten {
            url,
            remote_tip,
            last_synced,
        } => Some(json!({"url": url, "remote_tip": remote_tip, "last_synced": last_synced})),
        SyncError::NoRemote | SyncError::Repository(_) | SyncError::Io(_) => {
            Some(json!({"notes_home": home}))
        }
        SyncError::InvalidBranch(_) => None,
    };
    let refusal = Refusal::new(err.code(), err.to_string(), details);
    CmdError::with_refusal(err, refusal)
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let _request: Request = read_request(io)?;
    let home = args.home.resolve(ctx);
    let (remote, warnings) = match args.remote.as_deref().filter(|r| !r.is_empty()) {
        Some(flag) => (Some(flag.to_string()), Vec::new()),
        None => {
            // `pi-context.syncRemote`: the global settings and the working directory's
            // project settings (project wins).
            let (global, project) =
                resolve_settings_paths(args.agent_dir.as_deref(), &ctx.cwd, true, ctx);
            settings::load_sync_remote(&SettingsPaths {
                global: &global,
                project: project.as_deref(),
            })
        }
    };
    for warning in &warnings {
        writeln!(io.stderr, "{warning}")?;
    }
    // The lock's `<pid> <uuid>`, the form the dream writes and `doctor` checks.
    let token = uuid::Uuid::new_v4().to_string();
    let host = host_name(ctx);
    // Process-wide libgit2 setting, ours to choose in this one-command process: trees are
    // only ever built from objects this run wrote or fetched, so re-checking that every
    // entry's object exists (one loose-object read per note) buys nothing.
    git2::opts::strict_object_creation(false);
    let options = sync::Options {
        home: &home,
        remote: remote.as_deref(),
        branch: &args.branch,
        adopt_remote: args.adopt_remote,
        include_sessions: args.include_sessions,
        host: &host,
        now: ctx.now,
        pid: std::process::id(),
        token: &token,
    };
    let outcome = sync::sync(&options).map_err(|err| refused(err, &home))?;
    let text = render_text(&outcome);
    let mut data = serde_json::to_value(&outcome)?;
    data["warnings"] = json!(warnings);
    Ok(Reply::ok(data, text))
}
