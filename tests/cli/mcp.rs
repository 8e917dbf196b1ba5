//! CLI tests for `pi-context mcp` at the JSON-RPC wire (the SDK-level suite lives in
//! `tests/mcp-sdk/`): one tool call equals the CLI command's envelope, malformed input gets an
//! error answer and the server keeps serving, EOF ends it cleanly; and `claude-hook`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::support::{NOW, pi_context, run};

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(home: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("pi-context"))
            .env_clear()
            .env("HOME", home)
            .env("TZ", "UTC")
            .env("PI_CONTEXT_NOW", NOW)
            .current_dir(home)
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server {
            child,
            stdin,
            stdout,
        };
        let init = server.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "pi-context");
        server.send_line(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        server
    }

    fn send_line(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let answer = self.read();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }

    /// Close stdin and wait: the exit status and stderr.
    fn finish(self) -> (i32, String) {
        drop(self.stdin);
        let output = self.child.wait_with_output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

fn identity(home: &Path) -> Vec<String> {
    [
        "--notes-home",
        &home.join("notes").display().to_string(),
        "--project-key",
        "demo-1a2b3c4d",
        "--agent",
        "tester",
        "--session-id",
        "s-1",
    ]
    .map(String::from)
    .to_vec()
}

/// The CLI's envelope for the same command and request.
fn cli(home: &Path, command: &str, request: &Value) -> Value {
    let mut cmd = pi_context(home);
    cmd.args(["--format", "both", command]).args(identity(home));
    run(cmd, &request.to_string()).json()
}

#[test]
fn tool_calls_answer_exactly_what_the_cli_answers() {
    let home = tempfile::tempdir().unwrap();
    let args = identity(home.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = Server::start(home.path(), &args);
    let tools = server.request(2, "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "notes_write",
            "notes_read",
            "notes_update",
            "notes_list",
            "notes_search"
        ]
    );
    let write = server.call(
        3,
        "notes_write",
        json!({"address": "@project/a.md", "content": "alpha"}),
    );
    assert_eq!(write["result"]["isError"], false);
    assert_eq!(write["result"]["structuredContent"]["outcome"], "created");
    // Same request through the CLI now overwrites: compare a read, which is repeatable.
    let request = json!({"address": "@project/a.md"});
    let read = server.call(4, "notes_read", request.clone());
    let envelope = cli(home.path(), "notes-read", &request);
    let mut mcp = read["result"]["structuredContent"].clone();
    let mut expected = envelope["data"].clone();
    // Reading bumps the access count and time: everything else is identical.
    for v in [&mut mcp, &mut expected] {
        v["meta"].as_object_mut().map(|m| {
            m.remove("accessCount");
            m.remove("lastAccessed")
        });
    }
    assert_eq!(mcp, expected);
    let list = server.call(5, "notes_list", json!({}));
    let envelope = cli(home.path(), "notes-list", &json!({}));
    assert_eq!(list["result"]["structuredContent"], envelope["data"]);
    assert_eq!(list["result"]["content"][0]["text"], envelope["text"]);
    // A refusal: isError, the error object, the CLI's text.
    let missing = server.call(6, "notes_read", json!({"address": "@project/none.md"}));
    let envelope = cli(
        home.path(),
        "notes-read",
        &json!({"address": "@project/none.md"}),
    );
    assert_eq!(envelope["ok"], false);
    assert_eq!(missing["result"]["isError"], true);
    assert_eq!(missing["result"]["structuredContent"], envelope["error"]);
    assert_eq!(missing["result"]["content"][0]["text"], envelope["text"]);
    let (code, _) = server.finish();
    assert_eq!(code, 0);
}

#[test]
fn malformed_input_gets_an_error_answer_and_the_server_keeps_serving() {
    let home = tempfile::tempdir().unwrap();
    let args = identity(home.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = Server::start(home.path(), &args);
    server.send_line("{not json");
    let answer = server.read();
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], Value::Null);
    server.send_line(r#"{"jsonrpc":"2.0","id":7,"method":42}"#);
    let answer = server.read();
    assert!(answer["error"]["code"].as_i64().is_some(), "{answer}");
    let unknown = server.call(8, "no_such_tool", json!({}));
    assert_eq!(unknown["error"]["code"], -32602);
    let wrong = server.call(9, "notes_write", json!({"address": 5, "content": []}));
    assert_eq!(wrong["result"]["isError"], true);
    assert_eq!(
        wrong["result"]["structuredContent"]["code"],
        "invalid_request"
    );
    // Arguments over the CLI's 16 MiB request cap: the command's own refusal, as a tool result.
    let big = "x".repeat(17 * 1024 * 1024);
    let over = server.call(
        10,
        "notes_write",
        json!({"address": "big.md", "content": big}),
    );
    assert_eq!(over["result"]["isError"], true);
    assert_eq!(over["result"]["structuredContent"]["code"], "too_large");
    // A line over the server's 32 MiB message cap: a JSON-RPC error.
    let huge = "x".repeat(33 * 1024 * 1024);
    server.send_line(&format!(
        r#"{{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{{"name":"notes_write","arguments":{{"address":"big.md","content":"{huge}"}}}}}}"#
    ));
    let answer = server.read();
    assert_eq!(answer["error"]["code"], -32600);
    let ok = server.call(11, "notes_list", json!({}));
    assert_eq!(ok["result"]["isError"], false);
    let (code, stderr) = server.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn without_a_session_id_the_server_names_its_own_session_home() {
    let home = tempfile::tempdir().unwrap();
    let notes = home.path().join("notes").display().to_string();
    let mut server = Server::start(home.path(), &["--notes-home", &notes]);
    let write = server.call(
        2,
        "notes_write",
        json!({"address": "plan.md", "content": "p"}),
    );
    assert_eq!(write["result"]["isError"], false, "{write}");
    let (code, stderr) = server.finish();
    assert_eq!(code, 0);
    let id = stderr
        .split_whitespace()
        .find(|w| w.starts_with("mcp-"))
        .expect("the session id is logged");
    assert!(
        home.path()
            .join("notes/pi/session")
            .join(id)
            .join("plan.md")
            .is_file()
    );
}

#[test]
fn history_tools_exist_only_with_a_session_file() {
    let home = tempfile::tempdir().unwrap();
    let session = home.path().join("s.jsonl");
    std::fs::write(
        &session,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s-1\",\"timestamp\":\"2026-11-30T10:00:00.000Z\",\"cwd\":\"/w\"}\n",
    )
    .unwrap();
    let mut server = Server::start(home.path(), &["--session", "s.jsonl"]);
    let tools = server.request(2, "tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 9);
    let windows = server.call(3, "history_windows", json!({}));
    let mut cmd = pi_context(home.path());
    cmd.args([
        "--format",
        "both",
        "history-windows",
        "--session",
        "s.jsonl",
    ]);
    let envelope = run(cmd, "{}").json();
    assert_eq!(windows["result"]["structuredContent"], envelope["data"]);
    assert_eq!(server.finish().0, 0);
}

#[test]
fn claude_hook_records_the_session_and_emits_a_boot_that_fits() {
    let home = tempfile::tempdir().unwrap();
    let notes = home.path().join("notes");
    // A store well over the hook cap: four long MAPs.
    for dir in [
        "human",
        "agents/claude-code",
        "models/default",
        "project/demo-1a2b3c4d",
    ] {
        let map: String = (0..300)
            .map(|n| format!("- topic-{n}.md: a gist of some length for line {n}\n"))
            .collect();
        std::fs::create_dir_all(notes.join(dir)).unwrap();
        std::fs::write(notes.join(dir).join("MAP.md"), map).unwrap();
    }
    let input = json!({
        "session_id": "c1a2b3c4-0000-4000-8000-000000000001",
        "transcript_path": "/t/c1.jsonl",
        "cwd": home.path(),
        "hook_event_name": "SessionStart",
        "source": "clear",
    });
    let mut cmd = pi_context(home.path());
    cmd.arg("claude-hook")
        .arg("--notes-home")
        .arg(&notes)
        .args(["--project-key", "demo-1a2b3c4d", "--agent", "claude-code"])
        .arg("--host-state")
        .arg(home.path().join("state"));
    let out = run(cmd, &input.to_string());
    assert_eq!(out.code, 0, "{}", out.transcript());
    let hook = out.json();
    assert_eq!(hook["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let context = hook["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.chars().count() <= 10_000);
    assert!(context.contains("Current context window id: pcw:c1a2b3c4:root"));
    assert!(context.contains("mcp__plugin_pi-context_notes__notes_*"));
    assert!(context.contains("trimmed to fit: @human/MAP.md]"));
    assert!(!context.contains("history_"));
    assert!(!context.contains("wipe_memory"));
    let states: Vec<_> = std::fs::read_dir(home.path().join("state"))
        .unwrap()
        .collect();
    assert_eq!(states.len(), 1);
    let state: Value =
        serde_json::from_slice(&std::fs::read(states[0].as_ref().unwrap().path()).unwrap())
            .unwrap();
    assert_eq!(state["session_id"], input["session_id"]);
    assert_eq!(state["transcript_path"], "/t/c1.jsonl");
}

#[test]
fn the_server_follows_the_session_the_hook_recorded() {
    let home = tempfile::tempdir().unwrap();
    let notes = home.path().join("notes").display().to_string();
    let state = home.path().join("state");
    let mut server = Server::start(
        home.path(),
        &[
            "--notes-home",
            &notes,
            "--host-state",
            "state",
            "--session-id",
            "stale",
        ],
    );
    // The hook runs as a sibling (same parent: this test process).
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join(format!("{}.json", std::process::id())),
        json!({"session_id": "after-clear"}).to_string(),
    )
    .unwrap();
    let write = server.call(
        2,
        "notes_write",
        json!({"address": "plan.md", "content": "p"}),
    );
    assert_eq!(write["result"]["isError"], false, "{write}");
    assert_eq!(server.finish().0, 0);
    assert!(
        home.path()
            .join("notes/pi/session/after-clear/plan.md")
            .is_file()
    );
    assert!(!home.path().join("notes/pi/session/stale").exists());
}
