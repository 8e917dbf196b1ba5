//! The process around a command (the binary's own C `main`, see `src/main.rs`): what std's
//! runtime used to guarantee is still guaranteed — SIGPIPE ignored, so a reader that went away
//! ends the command with exit 0 rather than a signal; descriptors 0–2 valid, so a process
//! started with one of them closed has `/dev/null` there, never a file it opened later.

use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

const IDENTITY: [&str; 8] = [
    "--session-id",
    "s1",
    "--project-key",
    "demo-1a2b3c4d",
    "--agent",
    "ann",
    "--model",
    "default",
];

/// The binary with a scrubbed environment (as `support::pi_context`, but a plain
/// `std::process::Command`: these tests choose the descriptors themselves).
fn bin(home: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("pi-context"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TZ", "UTC")
        .env("PI_CONTEXT_NOW", crate::support::NOW)
        .env("PI_CONTEXT_CACHE_DIR", home.join("cache"))
        .current_dir(home);
    cmd
}

fn write_note(home: &Path, address: &str, content: &str) {
    let out = bin(home)
        .arg("notes-write")
        .arg("--notes-home")
        .arg(home.join("notes"))
        .args(IDENTITY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let request = serde_json::json!({"address": address, "content": content});
            child
                .stdin
                .take()
                .expect("stdin is piped")
                .write_all(request.to_string().as_bytes())?;
            child.wait_with_output()
        })
        .expect("notes-write runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn a_reader_that_went_away_ends_the_command_with_exit_0_not_sigpipe() {
    let home = tempfile::tempdir().unwrap();
    let body = "a body long enough to be printed ".repeat(100);
    write_note(home.path(), "@human/long", &body);
    let request = home.path().join("read.json");
    fs::write(&request, r#"{"address":"@human/long.md"}"#).unwrap();
    // stdout is a pipe whose only reader is closed before the command starts: its one write
    // fails with EPIPE. With SIGPIPE at its default action the process would die of the signal.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = bin(home.path())
        .arg("notes-read")
        .arg("--notes-home")
        .arg(home.path().join("notes"))
        .args(IDENTITY)
        .stdin(fs::File::open(&request).unwrap())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("notes-read runs");
    assert_eq!(status.status.signal(), None, "{status:?}");
    assert_eq!(status.status.code(), Some(0), "{status:?}");
    assert!(status.stderr.is_empty(), "{status:?}");
}

#[test]
fn a_command_started_with_a_standard_descriptor_closed_finds_dev_null_there() {
    let home = tempfile::tempdir().unwrap();
    // `<&-`: the command starts with descriptor 0 closed. Left closed, the first file or
    // directory the command opens would take number 0 (and a closed 1 would hand the JSON
    // result to whatever took it). Made valid, it is `/dev/null`: a notes root below
    // `/proc/self/fd/0` is then under a character device (every home unavailable), where a
    // closed descriptor would leave no such path (every home simply missing, none unavailable).
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"exec "$@" <&-"#)
        .arg("sh")
        .arg(assert_cmd::cargo::cargo_bin("pi-context"))
        .arg("notes-list")
        .arg("--notes-home")
        .arg("/proc/self/fd/0/notes")
        .args(IDENTITY)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("TZ", "UTC")
        .env("PI_CONTEXT_NOW", crate::support::NOW)
        .env("PI_CONTEXT_CACHE_DIR", home.path().join("cache"))
        .output()
        .expect("sh runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        envelope["data"]["homes_unavailable"],
        serde_json::json!([
            "session",
            "@project",
            "@human",
            "@agents/ann",
            "@models/default"
        ]),
        "{envelope}"
    );
}
