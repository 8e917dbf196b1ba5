//! Shared test plumbing: a scrubbed command, a fixed clock, and snapshot-friendly output.

#![allow(dead_code)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

/// The instant every test runs at (`PI_CONTEXT_NOW`), so timestamps and ages are stable.
pub const NOW: &str = "2026-11-30T12:00:00.000+00:00";

/// `pi-context` with an empty environment apart from PATH, a fake HOME, UTC, and a fixed clock:
/// tests can never see the real `~/.agents` or `~/.pi`.
pub fn pi_context(home: &Path) -> Command {
    let mut cmd =
        Command::cargo_bin("pi-context").expect("the pi-context binary is built by cargo test");
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TZ", "UTC")
        .env("PI_CONTEXT_NOW", NOW)
        .current_dir(home);
    cmd
}

/// What one run printed and how it ended, in a form that snapshots well.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as the one JSON object it must be.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim_end())
            .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {}", self.stdout))
    }

    /// A stable text block: exit code, stdout, stderr.
    pub fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Run `cmd` with `stdin` and capture everything.
pub fn run(mut cmd: Command, stdin: &str) -> Run {
    let output = cmd
        .write_stdin(stdin.as_bytes().to_vec())
        .output()
        .expect("the binary runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Replace a temp directory path with a stable placeholder in any text.
pub fn redact(text: &str, dir: &Path, placeholder: &str) -> String {
    text.replace(&dir.display().to_string(), placeholder)
}
