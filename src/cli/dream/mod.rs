//! `pi-context dream`: one locked, gated, jailed, audited consolidation run of the notes store
//! by a real Pi dreamer (`pi -p`).
//!
//! This layer resolves flags, environment, settings, the lock token and the clock, hands the
//! run to [`crate::dream::run`] with a [`pi::PiDreamer`] (the Pi process, its signals and its
//! deadline, supervised in [`supervisor`]), and prints the outcome as one JSON result.
//! Progress goes to stderr only when stderr is a terminal.

mod pi;
mod supervisor;

use std::path::PathBuf;
use std::time::Duration;

use crate::budget::settings::{self, SettingsPaths};
use crate::cli::budget_check::{resolve_agent_dir, resolve_settings_paths};
use crate::cli::common::{NotesHomeArg, resolve_cache_dir};
use crate::cli::{CmdError, Ctx, Io};
use crate::dream::run::{DreamOutcome, DreamerChoice, ModelSource, Options};
use crate::envelope::{Refusal, Reply};

pub use pi::DREAMER_TOOLS;

#[derive(Debug, clap::Args)]
pub struct Args {
    // The notes home (created when missing); the flag and its help are `NotesHomeArg`'s.
    #[command(flatten)]
    pub home: NotesHomeArg,
    /// Dreamer model pattern for Pi's `--model` (beats the `pi-context.dreamer` setting).
    #[arg(long, value_name = "MODEL")]
    pub dreamer: Option<String>,
    /// Run even when the time or material gate is closed (never bypasses the lock).
    #[arg(long)]
    pub force: bool,
    /// Material gate: at least this many session homes changed since the last run.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub min_sessions: u64,
    /// Time gate: at least this many hours since the last run (decimals allowed).
    #[arg(long, value_name = "H", default_value_t = 24.0, value_parser = parse_hours)]
    pub min_hours: f64,
    /// End the dreamer after this long and record a failed run (e.g. `90s`, `30m`, `2h`).
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The Pi binary; default `$PI_CONTEXT_PI_BIN`, else `pi` on PATH.
    #[arg(long, value_name = "PATH")]
    pub pi_bin: Option<PathBuf>,
    /// Pi's agent directory (global settings); default `$PI_CODING_AGENT_DIR`, else
    /// `~/.pi/agent`. Passed to the dreamer as `PI_CODING_AGENT_DIR`.
    #[arg(long, value_name = "DIR")]
    pub agent_dir: Option<PathBuf>,
}

fn parse_hours(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(h) if h.is_finite() && h >= 0.0 => Ok(h),
        _ => Err(format!("{text:?} is not a non-negative number of hours")),
    }
}

/// A positive duration in `humantime`'s grammar (`90s`, `30m`, `2h`, `1h 30m`, `1.5s`, `250ms`);
/// a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bare_number = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.');
    let parsed = if bare_number {
        humantime::parse_duration(&format!("{t}s"))
    } else {
        humantime::parse_duration(t)
    };
    match parsed {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(format!("{text:?} must be a positive duration")),
        Err(e) => Err(format!(
            "{text:?} is not a duration (e.g. 90s, 30m, 2h): {e}"
        )),
    }
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let home = args.home.resolve(ctx);
    let agent_dir = resolve_agent_dir(args.agent_dir.as_deref(), ctx);
    let (dreamer, warnings) = resolve_dreamer(&args, ctx);
    let options = Options {
        force: args.force,
        min_sessions: args.min_sessions,
        min_hours: args.min_hours,
        dreamer,
        warnings,
        invocation_dir: ctx.cwd.clone(),
        pid: std::process::id(),
        token: uuid::Uuid::new_v4().to_string(),
        cache_dir: resolve_cache_dir(ctx),
    };
    let mut pi = pi::PiDreamer {
        pi_bin: pi_bin(&args, ctx),
        agent_dir,
        timeout: args.timeout,
        ctx,
        io,
        signals: None,
        run_dir: None,
    };
    // A scratch directory that cannot be created is an internal failure (exit 70).
    let outcome = crate::dream::run(&home, options, &mut pi, ctx.now)?;
    drop(pi.run_dir.take());
    match outcome {
        DreamOutcome::Skipped(skipped) => {
            let text = skipped.text();
            Ok(Reply::ok(&skipped, text))
        }
        DreamOutcome::Refused(refused) => Err(refused.into()),
        DreamOutcome::Ran(record) => match &record.failure {
            None => {
                let text = record.text();
                Ok(Reply::ok(&record, text))
            }
            Some(failure) => {
                let details = serde_json::to_value(&record)?;
                let refusal = Refusal::new(
                    failure.code.as_str(),
                    failure.message.clone(),
                    Some(details),
                );
                Err(CmdError::new(failure.code.class(), refusal))
            }
        },
    }
}

/// `--dreamer` (non-empty) > `pi-context.dreamer` in Pi settings (global, then the invocation
/// directory's project settings winning per key) > Pi's automatic model. Settings are not read
/// when the flag decides.
fn resolve_dreamer(args: &Args, ctx: &Ctx) -> (DreamerChoice, Vec<String>) {
    if let Some(model) = args.dreamer.as_deref().filter(|m| !m.is_empty()) {
        let choice = DreamerChoice {
            model: Some(model.to_string()),
            source: ModelSource::Flag,
        };
        return (choice, Vec::new());
    }
    let (global, project) = resolve_settings_paths(args.agent_dir.as_deref(), &ctx.cwd, true, ctx);
    let (model, warnings) = settings::load_dreamer(&SettingsPaths {
        global: &global,
        project: project.as_deref(),
    });
    let source = if model.is_some() {
        ModelSource::Settings
    } else {
        ModelSource::Automatic
    };
    (DreamerChoice { model, source }, warnings)
}

/// The Pi binary: `--pi-bin`, else `PI_CONTEXT_PI_BIN`, else `pi` (looked up on PATH).
fn pi_bin(args: &Args, ctx: &Ctx) -> PathBuf {
    args.pi_bin
        .clone()
        .or_else(|| ctx.var_non_empty("PI_CONTEXT_PI_BIN").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("pi"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_hours("-1").is_err());
        assert_eq!(parse_hours("0.5").unwrap(), 0.5);
    }
}
