//! In-process handler tests through the `Ctx`/`Io` seams: the refusal tables of every command
//! family, each row one refusal code with the exit code and envelope it must produce. The
//! process-level tests in `tests/cli/` prove the binary; these run the same `cli::run` without
//! spawning it, so every documented code is checked against its class in one place.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Ctx, Exit, Format, Io, parse, run};

/// What one in-process call printed and how it ended.
struct Call {
    exit: Exit,
    stdout: String,
    stderr: String,
}

impl Call {
    fn envelope(&self) -> Value {
        serde_json::from_str(self.stdout.trim_end())
            .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {}", self.stdout))
    }
}

/// A scrubbed world: `HOME` is `home`, the working directory too, a fixed clock.
fn ctx(home: &Path, format: Format) -> Ctx {
    let env: BTreeMap<String, String> = [
        ("HOME", home.display().to_string()),
        ("PATH", "/usr/bin:/bin".to_string()),
        (
            "PI_CONTEXT_CACHE_DIR",
            home.join("cache").display().to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Ctx {
        env,
        cwd: home.to_path_buf(),
        now: chrono::DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z").unwrap(),
        format,
    }
}

fn call_as(home: &Path, format: Format, args: &[&str], stdin: &[u8]) -> Call {
    let cli = parse(std::iter::once("pi-context").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?} parses: {e}"));
    let ctx = ctx(home, format);
    let (mut stdin, mut stdout, mut stderr) = (stdin, Vec::new(), Vec::new());
    let mut io = Io {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
        stderr_is_terminal: false,
        stdin_is_terminal: false,
    };
    let exit = run(cli, &ctx, &mut io).unwrap_or_else(|e| panic!("{args:?}: escaped: {e:#}"));
    Call {
        exit,
        stdout: String::from_utf8(stdout).unwrap(),
        stderr: String::from_utf8(stderr).unwrap(),
    }
}

fn call(home: &Path, args: &[&str], stdin: &str) -> Call {
    call_as(home, Format::Json, args, stdin.as_bytes())
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/history")
        .join(name)
        .display()
        .to_string()
}

/// Check one refusal: the `ok:false` envelope with `code`, the exit code, and a stderr line
/// exactly for the internal class.
#[track_caller]
fn assert_refused(call: &Call, code: &str, exit: Exit) {
    let envelope = call.envelope();
    assert_eq!(envelope["ok"], json!(false), "{}", call.stdout);
    assert_eq!(envelope["error"]["code"], json!(code), "{}", call.stdout);
    assert!(
        envelope["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    assert_eq!(call.exit, exit, "{code}: {}", call.stdout);
    if exit == Exit::Internal {
        assert!(
            call.stderr.starts_with("error: "),
            "{code}: {}",
            call.stderr
        );
        assert_eq!(call.stderr.lines().count(), 1, "{}", call.stderr);
    } else {
        assert_eq!(call.stderr, "", "{code}");
    }
}

/// Rows of (arguments, stdin, code, exit) that need nothing but an empty home.
const USAGE_AND_REFUSAL_ROWS: &[(&[&str], &str, &str, Exit)] = &[
    // The request reader: malformed requests are usage errors.
    (&["notes-list"], "[]", "invalid_request", Exit::Usage),
    (
        &["notes-list"],
        r#"{"x":1}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (
        &["notes-list"],
        r#"{"limit":"5"}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (&["notes-write"], "{", "invalid_request", Exit::Usage),
    (&["doctor"], "null", "invalid_request", Exit::Usage),
    (
        &["budget-check"],
        r#"{"nope":true}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (&["sync"], r#"{"x":1}"#, "invalid_request", Exit::Usage),
    // Schema bounds checked by the handlers.
    (
        &["notes-list"],
        r#"{"limit":0}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (
        &["notes-read", "--session-id", "s1"],
        r#"{"address":"a.md","limit_chars":0}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (
        &["notes-search"],
        r#"{"query":[]}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (
        &["notes-search"],
        r#"{"query":[1]}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (
        &["notes-search"],
        r#"{"query":"x","limit":0}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (
        &[
            "boot-render",
            "--session-id",
            "s1",
            "--opened-at",
            "yesterday",
        ],
        "{}",
        "invalid_request",
        Exit::Usage,
    ),
    (
        &["claude-hook"],
        r#"{"session_id":"s1","hook_event_name":"Stop"}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (
        &["dream-fs", "edit"],
        r#"{"path":"a.md","edits":[]}"#,
        "invalid_request",
        Exit::Usage,
    ),
    (
        &["dream-fs", "write"],
        r#"{"path":"a.md"}"#,
        "invalid_request",
        Exit::Usage,
    ),
    // The identity: a usage error with the field named.
    (
        &["notes-write", "--session-id", "a/b"],
        r#"{"address":"a.md","content":"x"}"#,
        "invalid_identity",
        Exit::Usage,
    ),
    (
        &["boot-render", "--session-id", "s1", "--project-key", "../k"],
        "{}",
        "invalid_identity",
        Exit::Usage,
    ),
    // Notes refusals.
    (
        &["notes-read"],
        r#"{"address":"plan.md"}"#,
        "no_session",
        Exit::Refused,
    ),
    (
        &["notes-read", "--session-id", "s1"],
        r#"{"address":"@project/missing.md"}"#,
        "not_found",
        Exit::Refused,
    ),
    (
        &["notes-list"],
        r#"{"scope":"everywhere"}"#,
        "invalid_scope",
        Exit::Refused,
    ),
    (
        &["notes-update", "--session-id", "s1"],
        r#"{"address":"a.md","rename_to":"b.md","crumpled":true}"#,
        "invalid_scope",
        Exit::Refused,
    ),
    (
        &["notes-write", "--session-id", "s1"],
        r#"{"address":"../a.md","content":"x"}"#,
        "invalid_address",
        Exit::Refused,
    ),
    (
        &["notes-search"],
        r#"{"query":""}"#,
        "invalid_query",
        Exit::Refused,
    ),
    // The dream jail.
    (
        &["dream-fs", "write"],
        r#"{"path":"../x.md","content":"x"}"#,
        "outside_home",
        Exit::Refused,
    ),
    (
        &["dream-fs", "write"],
        r#"{"path":".dream.lock","content":"x"}"#,
        "protected_path",
        Exit::Refused,
    ),
    (
        &["dream-fs", "delete"],
        r#"{"path":"gone.md"}"#,
        "not_found",
        Exit::Refused,
    ),
    (
        &["dream-fs", "write"],
        r#"{"path":"","content":""}"#,
        "invalid_path",
        Exit::Refused,
    ),
];

#[test]
fn refusal_table_usage_and_refused() {
    for (args, stdin, code, exit) in USAGE_AND_REFUSAL_ROWS {
        let home = tempfile::tempdir().unwrap();
        let notes = home.path().join("notes");
        std::fs::create_dir_all(&notes).unwrap();
        let mut argv: Vec<&str> = args.to_vec();
        let notes_arg = notes.display().to_string();
        // `notes-home` is a flag of every command in the table but budget-check.
        if args[0] != "budget-check" {
            argv.extend(["--notes-home", &notes_arg]);
        }
        let result = call(home.path(), &argv, stdin);
        assert_refused(&result, code, *exit);
    }
}

#[test]
fn too_large_is_refused_with_its_bound() {
    let home = tempfile::tempdir().unwrap();
    let big = vec![b' '; super::common::MAX_REQUEST_BYTES as usize + 1];
    let result = call_as(home.path(), Format::Json, &["notes-list"], &big);
    assert_refused(&result, "too_large", Exit::Refused);
    assert_eq!(
        result.envelope()["error"]["details"]["max_bytes"],
        json!(super::common::MAX_REQUEST_BYTES)
    );
}

#[test]
fn history_refusals() {
    let home = tempfile::tempdir().unwrap();
    let basic = fixture("basic.jsonl");
    let missing = home.path().join("missing.jsonl").display().to_string();
    let rows: &[(&[&str], &str, &str, Exit)] = &[
        (
            &["history-windows", "--session", &missing],
            "{}",
            "session_not_found",
            Exit::Refused,
        ),
        (
            &["history-list", "--session", &basic],
            r#"{"limit":0}"#,
            "invalid_request",
            Exit::Usage,
        ),
        (
            &["history-search", "--session", &basic],
            "{}",
            "invalid_request",
            Exit::Usage,
        ),
        (
            &["history-read", "--session", &basic],
            "{}",
            "invalid_request",
            Exit::Usage,
        ),
        (
            &["history-read", "--session", &basic],
            r#"{"seq":99999}"#,
            "unknown_seq",
            Exit::Refused,
        ),
        (
            &["history-list", "--session", &basic],
            r#"{"window_id":"nope"}"#,
            "unknown_window_id",
            Exit::Refused,
        ),
        (
            &[
                "history-list",
                "--session",
                &basic,
                "--leaf",
                "no-such-entry",
            ],
            "{}",
            "unknown_leaf",
            Exit::Refused,
        ),
    ];
    for (args, stdin, code, exit) in rows {
        let result = call(home.path(), &[&args[..], &["--no-index"]].concat(), stdin);
        assert_refused(&result, code, *exit);
    }
    // A leaf refusal names the leaf.
    let result = call(
        home.path(),
        &["history-windows", "--session", &basic, "--leaf", "zz"],
        "{}",
    );
    assert_eq!(result.envelope()["error"]["details"], json!({"leaf": "zz"}));
    // A session that cannot be read is ours: exit 70 and one stderr line.
    let dir = home.path().display().to_string();
    let result = call(home.path(), &["history-windows", "--session", &dir], "{}");
    assert_refused(&result, "io_error", Exit::Internal);
}

#[test]
fn a_failing_notes_store_is_internal_with_its_cause_on_stderr() {
    let home = tempfile::tempdir().unwrap();
    // The notes home is a regular file: nothing can be created under it.
    let file = home.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let notes_home = file.display().to_string();
    let result = call(
        home.path(),
        &[
            "notes-write",
            "--notes-home",
            &notes_home,
            "--session-id",
            "s1",
        ],
        r#"{"address":"@project/a.md","content":"x"}"#,
    );
    assert_refused(&result, "io_error", Exit::Internal);
    assert_eq!(
        result.envelope()["error"]["message"],
        json!("notes operation failed")
    );
    // The cause (kept out of the path-free message) is on the stderr line.
    assert!(
        result.stderr.starts_with("error: notes operation failed: "),
        "{}",
        result.stderr
    );
}

#[test]
fn dream_and_sync_busy_and_unavailable() {
    let home = tempfile::tempdir().unwrap();
    let notes = home.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let notes_arg = notes.display().to_string();
    // A dreamer that cannot start.
    let result = call(
        home.path(),
        &[
            "dream",
            "--notes-home",
            &notes_arg,
            "--force",
            "--pi-bin",
            "/nonexistent/pi",
        ],
        "",
    );
    assert_refused(&result, "dreamer_unavailable", Exit::Refused);
    // A held lock: busy for both dream and sync, and the lock is left alone.
    std::fs::write(notes.join(".dream.lock"), "1 someone-else").unwrap();
    let result = call(
        home.path(),
        &[
            "dream",
            "--notes-home",
            &notes_arg,
            "--force",
            "--pi-bin",
            "/bin/sh",
        ],
        "",
    );
    assert_refused(&result, "lock_held", Exit::LockHeld);
    let remote = home.path().join("remote.git");
    git2::Repository::init_bare(&remote).unwrap();
    let remote_arg = remote.display().to_string();
    let result = call(
        home.path(),
        &["sync", "--notes-home", &notes_arg, "--remote", &remote_arg],
        "{}",
    );
    assert_refused(&result, "lock_held", Exit::LockHeld);
    assert_eq!(
        std::fs::read_to_string(notes.join(".dream.lock")).unwrap(),
        "1 someone-else"
    );
    std::fs::remove_file(notes.join(".dream.lock")).unwrap();
    // No remote at all; a branch name Git refuses; a remote that is not there.
    let result = call(home.path(), &["sync", "--notes-home", &notes_arg], "{}");
    assert_refused(&result, "no_remote", Exit::Refused);
    let gone = home.path().join("no-such-remote").display().to_string();
    let result = call(
        home.path(),
        &[
            "sync",
            "--notes-home",
            &notes_arg,
            "--remote",
            &gone,
            "--branch",
            "a..b",
        ],
        "{}",
    );
    assert_refused(&result, "invalid_request", Exit::Usage);
    let result = call(
        home.path(),
        &["sync", "--notes-home", &notes_arg, "--remote", &gone],
        "{}",
    );
    assert_refused(&result, "remote_unreachable", Exit::Unavailable);
}

#[test]
fn doctor_issues_are_ok_true_with_exit_1() {
    let home = tempfile::tempdir().unwrap();
    let notes = home.path().join("notes");
    std::fs::create_dir_all(notes.join("pi/project/k")).unwrap();
    std::fs::write(
        notes.join("pi/project/k/bad.md"),
        "---\nnot: [closed\n---\nx",
    )
    .unwrap();
    let notes_arg = notes.display().to_string();
    let result = call(home.path(), &["doctor", "--notes-home", &notes_arg], "");
    assert_eq!(result.envelope()["ok"], json!(true));
    assert_eq!(result.exit, Exit::Refused);
    let clean = home.path().join("clean");
    std::fs::create_dir_all(&clean).unwrap();
    let clean_arg = clean.display().to_string();
    let result = call(home.path(), &["doctor", "--notes-home", &clean_arg], "");
    assert_eq!(result.envelope()["ok"], json!(true));
    assert_eq!(result.exit, Exit::Ok);
}

#[test]
fn a_refusal_renders_in_every_format() {
    let home = tempfile::tempdir().unwrap();
    let result = call_as(
        home.path(),
        Format::Text,
        &["notes-list"],
        br#"{"limit":0}"#,
    );
    assert_eq!(
        result.stdout,
        "error: invalid_request: limit must be at least 1\n"
    );
    assert_eq!(result.exit, Exit::Usage);
    let result = call_as(
        home.path(),
        Format::Both,
        &["notes-list"],
        br#"{"limit":0}"#,
    );
    let both: Value = serde_json::from_str(result.stdout.trim_end()).unwrap();
    assert_eq!(both["error"]["code"], json!("invalid_request"));
    assert_eq!(
        both["text"],
        json!("error: invalid_request: limit must be at least 1")
    );
}

#[test]
fn error_sources_chain_to_the_io_cause() {
    use std::error::Error;
    let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
    let session = crate::session::SessionError::Io {
        path: "/s.jsonl".into(),
        source: io,
    };
    assert_eq!(session.source().unwrap().to_string(), "denied");
    let history = crate::history::HistoryError::from(session);
    let command = super::CmdError::from(history);
    assert_eq!(command.exit(), Exit::Internal);
    // CmdError → HistoryError (transparent over SessionError) → io::Error.
    let domain = command.source().expect("the domain error");
    assert_eq!(domain.source().unwrap().to_string(), "denied");
    let lock = crate::dream::lock::LockError::Io {
        path: "/l".into(),
        source: std::io::Error::other("full"),
    };
    assert_eq!(lock.source().unwrap().to_string(), "full");
    assert_eq!(super::CmdError::from(lock).exit(), Exit::Internal);
}
