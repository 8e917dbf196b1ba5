//! The real dreamer: `pi -p` with our jailed tools, in its own process group, started with the
//! run facts as its task and supervised until it ends (see [`super::supervisor`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::supervisor::{self, Ended};
use crate::cli::{Ctx, Io};
use crate::dream::playbook;
use crate::dream::run::{Dreamer, DreamerEnd, Failure, FailureCode, Notice, Task, Unavailable};

/// The dreamer's tools: Pi's read-only built-ins plus our jailed write, edit and delete
/// (which replace the built-ins of the same names).
pub const DREAMER_TOOLS: &str = "read,grep,find,ls,write,edit,delete";

/// Pi as the dreamer, with what the CLI resolved for it.
pub struct PiDreamer<'a, 'b, 'c> {
    pub pi_bin: PathBuf,
    pub agent_dir: PathBuf,
    pub timeout: Duration,
    pub ctx: &'a Ctx,
    pub io: &'b mut Io<'c>,
    /// SIGINT and SIGTERM, caught from [`Dreamer::prepare`] on so the run can end the dreamer,
    /// record the failure and release the lock instead of dying with the lock held.
    pub signals: Option<Signals>,
    /// The run's temporary directory (the tools extension and the journal), outside the notes
    /// home so nothing of it is committed; removed when the caller drops it after the run.
    pub run_dir: Option<tempfile::TempDir>,
}

impl Dreamer for PiDreamer<'_, '_, '_> {
    fn prepare(&mut self) -> Result<(), Unavailable> {
        if find_executable(&self.pi_bin, self.ctx.var("PATH").unwrap_or("")).is_none() {
            return Err(Unavailable {
                message: format!(
                    "cannot find the dreamer's Pi binary {}: set --pi-bin or PI_CONTEXT_PI_BIN, or put pi on PATH",
                    self.pi_bin.display()
                ),
                program: self.pi_bin.clone(),
            });
        }
        // Registration only fails for signals that cannot be caught; these two always can.
        self.signals = Signals::new([SIGINT, SIGTERM]).ok();
        Ok(())
    }

    fn interrupted(&mut self) -> Option<String> {
        let signal = self.signals.as_mut()?.pending().next()?;
        Some(signal_name(signal).to_string())
    }

    fn dream(&mut self, task: &Task) -> std::io::Result<DreamerEnd> {
        let run_dir = tempfile::Builder::new()
            .prefix("pi-context-dream-")
            .tempdir()?;
        let journal = run_dir.path().join("journal.jsonl");
        let tools = run_dir.path().join("dream-tools.ts");
        self.run_dir = Some(run_dir);
        let unavailable =
            |message: String| DreamerEnd::not_started(FailureCode::DreamerUnavailable, message);
        if let Err(e) = std::fs::write(&tools, playbook::TOOLS_EXTENSION) {
            return Ok(unavailable(format!(
                "cannot stage the dreamer's tools: {e}"
            )));
        }
        // Always this very binary: the jail the tools reach must be the one this run documents,
        // whatever `PI_CONTEXT_BIN` says in the caller's environment.
        let self_bin = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(e) => {
                return Ok(unavailable(format!(
                    "cannot locate the pi-context binary for the dreamer's tools: {e}"
                )));
            }
        };
        let mut command = self.command(task, &tools, &journal, &self_bin);
        let child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                return Ok(unavailable(format!(
                    "cannot start the dreamer {}: {e}",
                    self.pi_bin.display()
                )));
            }
        };
        let run = supervisor::supervise(child, self.timeout, self.signals.as_mut());
        let failure = match run.ended {
            Ended::Exited(status) if status.success() => None,
            Ended::Exited(status) => {
                let tail = tail_lines(&run.stderr, 20);
                Some(Failure {
                    code: FailureCode::DreamerFailed,
                    message: format!(
                        "dreamer failed ({status}){}",
                        if tail.is_empty() {
                            String::new()
                        } else {
                            format!(": {tail}")
                        }
                    ),
                })
            }
            Ended::WaitFailed(e) => Some(Failure {
                code: FailureCode::DreamerFailed,
                message: format!("cannot wait for the dreamer: {e}"),
            }),
            Ended::Signalled(signal) => Some(Failure {
                code: FailureCode::Interrupted,
                message: format!(
                    "interrupted by {}; the dreamer was ended",
                    signal_name(signal)
                ),
            }),
            Ended::TimedOut => Some(Failure {
                code: FailureCode::Timeout,
                message: format!(
                    "the dreamer ran longer than --timeout ({}s) and was ended",
                    self.timeout.as_secs_f64()
                ),
            }),
        };
        Ok(DreamerEnd {
            failure,
            final_text: run.stdout,
            journal: Some(journal),
        })
    }

    fn notice(&mut self, notice: Notice) {
        let _ = match notice {
            Notice::Step(text) if self.io.stderr_is_terminal => {
                writeln!(self.io.stderr, "dream: {text}")
            }
            Notice::Step(_) => Ok(()),
            Notice::Warning(text) => writeln!(self.io.stderr, "{text}"),
            Notice::Problem(text) => writeln!(self.io.stderr, "dream: {text}"),
        };
    }
}

impl PiDreamer<'_, '_, '_> {
    /// `pi -p` with the jailed tools, the task as its one message, our environment plus what
    /// the tools need, in its own process group.
    fn command(&self, task: &Task, tools: &Path, journal: &Path, self_bin: &Path) -> Command {
        let mut command = Command::new(&self.pi_bin);
        command
            .args(["-p", "--no-session", "--no-extensions"])
            .arg("-e")
            .arg(tools)
            .args(["--tools", DREAMER_TOOLS, "--thinking", "off"])
            .args([
                "--no-skills",
                "--no-prompt-templates",
                "--no-themes",
                "--no-context-files",
            ]);
        if let Some(model) = task.model {
            command.arg("--model").arg(model);
        }
        command
            .arg("--")
            .arg(task.text)
            .env_clear()
            .envs(&self.ctx.env)
            .env("PI_NOTES_HOME", task.notes_home)
            .env("PI_CONTEXT_DREAM_JOURNAL", journal)
            .env("PI_CONTEXT_BIN", self_bin)
            .env("PI_CODING_AGENT_DIR", &self.agent_dir)
            .current_dir(&self.ctx.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        {
            use std::os::unix::process::CommandExt;
            // Its own process group, so a kill reaches Pi and every tool process it started, and
            // a terminal's Ctrl-C reaches only us (we then end the group ourselves).
            command.process_group(0);
        }
        command
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// Where `program` would be executed from: itself when it names a path, else the first
/// executable regular file of that name in `path_var` (as `execvp` searches).
fn find_executable(program: &Path, path_var: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 || program.is_absolute() {
        return runnable(program).then(|| program.to_path_buf());
    }
    std::env::split_paths(path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| runnable(candidate))
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
