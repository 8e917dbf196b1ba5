//! `pi-context budget-check`: the context-budget decision, and `--settings-only` for shell
//! users. Also the one place that resolves where Pi's settings files are
//! ([`resolve_settings_paths`], [`load_settings`]), reused by `dream`.

use std::path::{Path, PathBuf};

use crate::budget::settings::{self, Settings, SettingsPaths};
use crate::cli::common::{Exit, absolute_from, not_implemented};
use crate::cli::{Ctx, Io};

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    not_implemented("budget-check", ctx, io)
}

/// Pi's agent directory: `--agent-dir`, else `PI_CODING_AGENT_DIR` (set and non-empty; a
/// leading `~` is the home directory, as Pi expands it), else `~/.pi/agent`. Relative paths
/// resolve against the working directory.
pub fn resolve_agent_dir(flag: Option<&Path>, ctx: &Ctx) -> PathBuf {
    let home = || {
        ctx.var_non_empty("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"))
    };
    let chosen = match (flag, ctx.var_non_empty("PI_CODING_AGENT_DIR")) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some("~")) => home(),
        (None, Some(env)) => match env.strip_prefix("~/") {
            Some(rest) => home().join(rest),
            None => PathBuf::from(env),
        },
        (None, None) => home().join(".pi").join("agent"),
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

/// Read both settings files and resolve them (see [`settings::load`]). `project_dir` is the
/// directory whose `.pi/settings.json` applies (the invocation directory for `dream`).
pub fn load_settings(
    agent_dir: Option<&Path>,
    project_dir: &Path,
    project_trusted: bool,
    ctx: &Ctx,
) -> (Settings, Vec<String>) {
    let (global, project) = resolve_settings_paths(agent_dir, project_dir, project_trusted, ctx);
    settings::load(&SettingsPaths {
        global: &global,
        project: project.as_deref(),
    })
}
