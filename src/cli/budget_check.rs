//! `pi-context budget-check`: the context-budget decision, and `--settings-only` for shell
//! users. Also the one place that resolves where Pi's agent directory and settings files are
//! ([`resolve_agent_dir`], [`resolve_settings_paths`]), reused by `dream`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::budget::decision::{self, Policy, Usage, WindowFacts};
use crate::budget::settings::{self, Settings, SettingsPaths};
use crate::cli::common::{absolute_from, env_path, home_dir, read_request};
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
use crate::protocol::ToolNames;

/// Decide the context-budget action from usage and Pi settings.
///
/// Reads `{"usage", "model", "window", "enabled", "tools", "close_out"}` on stdin and Pi's settings
/// from disk. With --settings-only, reads no stdin and prints the resolved settings and thresholds
/// instead.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Pi's agent directory holding the global settings.json [default: $PI_CODING_AGENT_DIR,
    /// else ~/.pi/agent].
    #[arg(long, value_name = "DIR")]
    pub agent_dir: Option<PathBuf>,
    /// The project directory whose .pi/settings.json applies [default: the working directory].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Ignore the project's .pi/settings.json (pass this when Pi reports the project untrusted).
    #[arg(long)]
    pub untrusted_project: bool,
    /// The active model as <provider>/<id>, selecting compaction.modelOverrides (the request's
    /// "model" wins when both are given).
    #[arg(long, value_name = "PROVIDER/ID")]
    pub model: Option<String>,
    /// Print the resolved settings and thresholds; read nothing from stdin.
    #[arg(long)]
    pub settings_only: bool,
}

/// The one JSON request.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Request {
    /// `{"tokens": n|null, "context_window": n|null}`, or null when the host has no usage.
    usage: Option<Usage>,
    /// `<provider>/<id>` of the active model.
    model: Option<String>,
    window: WindowFacts,
    /// pi-context's on/off switch (default on).
    #[serde(default = "yes")]
    enabled: bool,
    tools: ToolNames,
    /// The host asks for the close-out text (the human's `/wipe-memory`): `message` is the
    /// close-out whatever the usage and settings.
    close_out: bool,
}

fn yes() -> bool {
    true
}

/// The resolved settings as printed (the raw model-override table stays out: only the effective
/// reserve for the chosen model matters, and it keeps the result bounded).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct SettingsView<'a> {
    #[serde(flatten)]
    settings: &'a Settings,
    global_path: String,
    project_path: Option<String>,
}

#[allow(
    clippy::expect_used,
    reason = "a budget check holds only JSON-safe data"
)]
pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let request: Request = if args.settings_only {
        Request {
            enabled: true,
            ..Request::default()
        }
    } else {
        read_request(io)?
    };
    let project_dir = args.cwd.clone().unwrap_or_else(|| ctx.cwd.clone());
    let (global_path, project_path) = resolve_settings_paths(
        args.agent_dir.as_deref(),
        &project_dir,
        !args.untrusted_project,
        ctx,
    );
    let (settings, mut warnings) = settings::load(&SettingsPaths {
        global: &global_path,
        project: project_path.as_deref(),
    });
    let model = request.model.clone().or(args.model.clone());
    let (policy, override_warning) = Policy::resolve(&settings, model.as_deref());
    warnings.extend(override_warning);
    let view = SettingsView {
        settings: &settings,
        global_path: global_path.display().to_string(),
        project_path: project_path.map(|p| p.display().to_string()),
    };

    Ok(if args.settings_only {
        let text = settings_text(&view, model.as_deref(), &policy, &warnings);
        Reply::ok(
            json!({
                "settings": view,
                "model": model,
                "thresholds": policy.thresholds,
                "automatic": policy.automatic,
                "warnings": warnings,
            }),
            text,
        )
    } else {
        let check = decision::decide(
            &policy,
            request.usage.as_ref(),
            &request.window,
            request.enabled,
            &request.tools,
        );
        let check = if request.close_out {
            check.with_close_out(&request.tools)
        } else {
            check
        };
        let text = decision::remaining_text(check.remaining_tokens);
        let mut data =
            serde_json::to_value(&check).expect("a budget check holds only JSON-safe data");
        data["model"] = json!(model);
        data["settings"] = json!(view);
        data["warnings"] = json!(warnings);
        Reply::ok(data, text)
    })
}

/// A short human summary for `--settings-only --format text`.
fn settings_text(
    view: &SettingsView,
    model: Option<&str>,
    policy: &Policy,
    warnings: &[String],
) -> String {
    let s = view.settings;
    let t = policy.thresholds;
    let mut lines = vec![
        format!("global settings: {}", view.global_path),
        format!(
            "project settings: {}",
            view.project_path
                .as_deref()
                .unwrap_or("(untrusted project: ignored)")
        ),
        format!("model: {}", model.unwrap_or("(none)")),
        format!("compaction.enabled: {}", s.compaction_enabled),
        format!("compaction.reserveTokens: {}", s.reserve_tokens),
        format!(
            "pi-context.reminderMarginTokens: {}",
            s.reminder_margin_tokens
        ),
        format!(
            "pi-context.dreamer: {}",
            s.dreamer
                .as_deref()
                .unwrap_or("(none: Pi's automatic model)")
        ),
        format!(
            "thresholds (remaining tokens): reminder {}, warning {}, reserve {}",
            t.reminder, t.warning, t.reserve
        ),
    ];
    lines.extend(warnings.iter().cloned());
    lines.join("\n")
}

/// Pi's agent directory: `--agent-dir`, else `PI_CODING_AGENT_DIR` (set and non-empty; a
/// leading `~` is the home directory, as Pi expands it), else `~/.pi/agent`. Relative paths
/// resolve against the working directory.
pub fn resolve_agent_dir(flag: Option<&Path>, ctx: &Ctx) -> PathBuf {
    let chosen = match (flag, env_path(ctx, "PI_CODING_AGENT_DIR")) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some(env)) => env,
        (None, None) => home_dir(ctx).join(".pi").join("agent"),
    };
    absolute_from(&ctx.cwd, &chosen)
}

/// The global `<agent-dir>/settings.json` and, when the project is trusted, the project's
/// `<project-dir>/.pi/settings.json`.
pub fn resolve_settings_paths(
    agent_dir: Option<&Path>,
    project_dir: &Path,
    project_trusted: bool,
    ctx: &Ctx,
) -> (PathBuf, Option<PathBuf>) {
    let global = resolve_agent_dir(agent_dir, ctx).join("settings.json");
    let project = project_trusted.then(|| {
        absolute_from(&ctx.cwd, project_dir)
            .join(".pi")
            .join("settings.json")
    });
    (global, project)
}
