//! Hostile input at the CLI boundary (issue: containment by construction): bounded and
//! well-shaped requests, glob patterns that cannot panic, over-long path segments, symlinked
//! homes, check-then-use races, stale temp files, and a fuzz smoke test over every subcommand.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{Run, pi_context, run};

/// A scratch directory with a notes home inside it (`notes/`) and room for "outside" files.
struct Scratch {
    dir: TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let scratch = Scratch {
            dir: tempfile::tempdir().unwrap(),
        };
        fs::create_dir_all(scratch.notes()).unwrap();
        scratch
    }

    fn notes(&self) -> PathBuf {
        self.dir.path().join("notes")
    }

    #[allow(dead_code)]
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A notes command with a full identity.
    fn command(&self, verb: &str) -> assert_cmd::Command {
        let mut cmd = pi_context(self.dir.path());
        cmd.arg(verb);
        match verb {
            "dream-fs" | "doctor" | "budget-check" => {}
            _ => {
                cmd.args(["--session-id", "s1"]);
                if verb != "boot-render" {
                    cmd.args(["--project-key", "demo-1a2b3c4d"]);
                }
                cmd.args(["--agent", "ann", "--model", "gpt"]);
            }
        }
        if verb.starts_with("notes-") || verb == "boot-render" || verb == "doctor" {
            cmd.arg("--notes-home").arg(self.notes());
        }
        cmd
    }

    fn call(&self, verb: &str, stdin: impl AsRef<[u8]>) -> Run {
        let mut cmd = self.command(verb);
        let output = cmd.write_stdin(stdin.as_ref().to_vec()).output().unwrap();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    fn dream_fs(&self, op: &str, request: Value) -> Run {
        let mut cmd = pi_context(self.dir.path());
        cmd.args(["dream-fs", op, "--notes-home"]).arg(self.notes());
        run(cmd, &request.to_string())
    }
}

/// `(exit code, error code)` of a run.
fn outcome(out: &Run) -> (i32, String) {
    let code = out.json()["error"]["code"]
        .as_str()
        .unwrap_or("ok")
        .to_owned();
    (out.code, code)
}

fn refused(out: &Run, exit: i32, code: &str) {
    assert_eq!(
        outcome(out),
        (exit, code.to_owned()),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
}

/// Every regular file and symlink under `dir`, with its bytes (links: their target).
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn visit(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.push((path, target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                out.push((path.clone(), Vec::new()));
                visit(&path, out);
            } else {
                out.push((path.clone(), fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    visit(dir, &mut out);
    out.sort();
    out
}

// ----- 4. requests: bounded, objects only, clear messages -------------------------------------

#[test]
fn oversized_stdin_is_too_large_without_reading_it_all() {
    let s = Scratch::new();
    // One byte over the 16 MiB cap: refused before any decoding.
    let mut big = br#"{"address":"@human/x","content":""#.to_vec();
    big.resize(16 * 1024 * 1024 + 1, b'a');
    let out = s.call("notes-write", &big);
    refused(&out, 1, "too_large");
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("16777216")
    );
    assert!(tree(&s.notes()).is_empty());
    // A 1,000,000-byte note whose every byte needs escaping is still a valid request.
    let content: String = "\u{1}".repeat(999_000);
    let request = json!({"address": "@human/x", "content": content}).to_string();
    assert!(request.len() > 5_000_000);
    let out = s.call("notes-write", &request);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn only_a_json_object_is_a_request() {
    let s = Scratch::new();
    for (verb, stdin) in [
        ("notes-write", r#"["@human/x","t"]"#),
        ("notes-list", "[]"),
        ("doctor", "[]"),
        ("notes-search", r#""needle""#),
        ("budget-check", "3"),
        ("boot-render", "null"),
    ] {
        let out = s.call(verb, stdin);
        refused(&out, 2, "invalid_request");
        let message = out.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains("must be one JSON object"),
            "{verb}: {message}"
        );
    }
    assert!(tree(&s.notes()).is_empty(), "nothing written");
    let out = s.dream_fs("write", json!(["human/x.md", "t"]));
    refused(&out, 2, "invalid_request");
    assert!(tree(&s.notes()).is_empty(), "nothing written");
}

#[test]
fn a_utf8_bom_before_the_request_is_accepted() {
    let s = Scratch::new();
    let out = s.call(
        "notes-write",
        "\u{feff}{\"address\":\"@human/bom\",\"content\":\"x\"}",
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(s.notes().join("human/bom.md").is_file());
    let out = s.call("notes-list", "\u{feff}");
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn type_errors_name_the_field_and_a_json_type_not_rust_internals() {
    let s = Scratch::new();
    for (verb, stdin, field, expected) in [
        (
            "notes-list",
            r#"{"limit":-1}"#,
            "limit",
            "a non-negative integer",
        ),
        (
            "notes-list",
            r#"{"wastebasket":"yes"}"#,
            "wastebasket",
            "a boolean",
        ),
        (
            "notes-update",
            r#"{"address":"@human/x","edits":[3]}"#,
            "edits[0]",
            "an object",
        ),
        (
            "notes-update",
            r#"{"address":"@human/x","edits":{}}"#,
            "edits",
            "an array",
        ),
    ] {
        let out = s.call(verb, stdin);
        refused(&out, 2, "invalid_request");
        let message = out.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains(&format!("`{field}`")) && message.contains(expected),
            "{verb} {stdin}: {message}"
        );
        for rust in ["u64", "struct", "Request", "sequence", "usize"] {
            assert!(!message.contains(rust), "{verb} {stdin}: {message}");
        }
    }
    let out = s.call("notes-read", [b'{', 0xff, b'}']);
    refused(&out, 2, "invalid_request");
    assert!(out.stdout.contains("not valid UTF-8"), "{}", out.stdout);
}

#[test]
fn search_query_shapes_are_invalid_requests_and_empty_strings_invalid_queries() {
    let s = Scratch::new();
    for query in [
        json!([]),
        json!([{"n": 1}]),
        json!(5),
        json!(null),
        json!([""]),
    ] {
        let out = s.call("notes-search", json!({"query": query}).to_string());
        if query == json!([""]) {
            refused(&out, 1, "invalid_query");
        } else {
            refused(&out, 2, "invalid_request");
        }
    }
    refused(
        &s.call("notes-search", r#"{"query":""}"#),
        1,
        "invalid_query",
    );
}

#[test]
fn a_terminal_on_stdin_gets_one_line_saying_what_is_awaited() {
    use clap::Parser;
    use pi_context::cli::{Cli, Ctx, Format, Io, run as run_cli};
    let s = Scratch::new();
    let cli = Cli::try_parse_from([
        "pi-context",
        "notes-list",
        "--notes-home",
        s.notes().to_str().unwrap(),
        "--project-key",
        "k",
    ])
    .unwrap();
    let ctx = Ctx {
        env: Default::default(),
        cwd: s.dir.path().to_path_buf(),
        now: chrono::DateTime::parse_from_rfc3339(crate::support::NOW).unwrap(),
        format: Format::Json,
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut stdin: &[u8] = b"";
    let mut io = Io {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
        stderr_is_terminal: true,
        stdin_is_terminal: true,
    };
    run_cli(cli, &ctx, &mut io).unwrap();
    let stderr = String::from_utf8(stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("JSON request on stdin"), "{stderr}");
    // Not a terminal (every other test): nothing on stderr.
    assert!(s.call("notes-list", "").stderr.is_empty());
}

// ----- 3. glob patterns never panic -----------------------------------------------------------

#[test]
fn huge_or_explosive_glob_patterns_are_refused_not_panics() {
    let s = Scratch::new();
    let patterns = [
        "*".repeat(30_000),
        "**/".repeat(12_000),
        "a".repeat(400_000),
        "é".repeat(300_000),
        "*".repeat(2048),
        "*a".repeat(1024),
    ];
    for pattern in &patterns {
        for (verb, request) in [
            ("notes-list", json!({"pattern": pattern})),
            ("notes-search", json!({"pattern": pattern, "query": "x"})),
        ] {
            let out = s.call(verb, request.to_string());
            let (exit, code) = outcome(&out);
            assert!(
                (exit, code.as_str()) == (1, "invalid_pattern") || exit == 0,
                "{verb} pattern of {} bytes: {}",
                pattern.len(),
                out.stdout
            );
            if pattern.len() > 2048 {
                assert_eq!(code, "invalid_pattern");
            }
        }
    }
}

// ----- 5. caller errors get caller codes ------------------------------------------------------

#[test]
fn over_long_path_segments_are_invalid_addresses_up_front() {
    let s = Scratch::new();
    let long = "a".repeat(300);
    let out = s.call(
        "notes-write",
        json!({"address": format!("@human/{long}"), "content": "x"}).to_string(),
    );
    refused(&out, 1, "invalid_address");
    assert!(out.stdout.contains("255"), "{}", out.stdout);
    let out = s.call(
        "notes-read",
        json!({"address": format!("@human/{long}")}).to_string(),
    );
    refused(&out, 1, "invalid_address");
    // 253 bytes + ".md" is 256: too long once the extension is added.
    let out = s.call(
        "notes-write",
        json!({"address": format!("@human/d/{}", "b".repeat(253)), "content": "x"}).to_string(),
    );
    refused(&out, 1, "invalid_address");
    // A 600-byte segment is over the whole-path cap too: too_large, home or no home.
    let out = s.call(
        "notes-read",
        json!({"address": format!("@human/{}", "c".repeat(600))}).to_string(),
    );
    refused(&out, 1, "too_large");
    let out = s.dream_fs(
        "write",
        json!({"path": format!("human/{long}.md"), "content": "x"}),
    );
    refused(&out, 1, "invalid_path");
    assert!(tree(&s.notes()).is_empty(), "nothing created");
}
