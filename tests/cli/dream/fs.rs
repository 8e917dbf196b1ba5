//! The jail: `dream-fs` directly (every outcome and refusal code, snapshotted), and through a
//! `dream` run (refusals reach the report; nothing outside the home changes).

use std::fs;
use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use super::{World, data, go, note, tree};
use crate::support::{Run, pi_context, run};

fn dream_fs(w: &World, op: &str, request: &Value) -> Run {
    let mut cmd = pi_context(w.root());
    cmd.current_dir(w.path("work"))
        .args(["--format", "both", "dream-fs", op, "--notes-home"])
        .arg(w.home())
        .arg("--journal")
        .arg(w.path("journal.jsonl"));
    run(cmd, &request.to_string())
}

/// A home with a live note, a crumpled note, a hard-linked note, a symlink to a directory
/// outside and a symlinked note pointing outside, plus the outside files they point at.
fn jail_world() -> World {
    let w = World::new();
    w.write("notes/human/live.md", &note("live", None));
    w.write("notes/human/dup.md", &note("same same", None));
    w.write(
        "notes/human/trash.md",
        &note("trash", Some("2026-11-01T00:00:00.000+00:00")),
    );
    w.write("outside/secret.md", "secret\n");
    w.write(
        "outside/linked.md",
        &note("linked", Some("2026-11-01T00:00:00.000+00:00")),
    );
    fs::hard_link(w.path("outside/linked.md"), w.path("notes/human/hard.md")).unwrap();
    symlink(w.path("outside"), w.path("notes/escape")).unwrap();
    symlink(w.path("outside/secret.md"), w.path("notes/human/out.md")).unwrap();
    w
}

#[test]
fn every_outcome_and_refusal_of_dream_fs() {
    let w = jail_world();
    let home = w.home();
    let cases: Vec<(&str, Value)> = vec![
        ("write", json!({"path": "human/new.md", "content": "new\n"})),
        (
            "write",
            json!({"path": home.join("human/new.md"), "content": "newer\n"}),
        ),
        (
            "edit",
            json!({"path": "human/live.md", "edits": [{"oldText": "live", "newText": "alive"}]}),
        ),
        ("delete", json!({"path": "human/trash.md"})),
        ("write", json!({"path": "../escape.md", "content": "x"})),
        (
            "write",
            json!({"path": w.path("outside/abs.md"), "content": "x"}),
        ),
        (
            "write",
            json!({"path": "escape/via-dir.md", "content": "x"}),
        ),
        ("write", json!({"path": "human/out.md", "content": "x"})),
        (
            "edit",
            json!({"path": "human/hard.md", "edits": [{"oldText": "linked", "newText": "x"}]}),
        ),
        ("delete", json!({"path": "human/hard.md"})),
        ("delete", json!({"path": "human/live.md"})),
        ("delete", json!({"path": "human/missing.md"})),
        ("write", json!({"path": ".git/config", "content": "x"})),
        ("write", json!({"path": "dreams/fake.md", "content": "x"})),
        ("write", json!({"path": ".dream.lock", "content": "x"})),
        ("write", json!({"path": "", "content": "x"})),
        (
            "edit",
            json!({"path": "human/dup.md", "edits": [{"oldText": "same", "newText": "x"}]}),
        ),
        (
            "edit",
            json!({"path": "human/live.md", "edits": [{"oldText": "absent", "newText": "x"}]}),
        ),
        ("write", json!({"path": "human/x.md"})),
        ("delete", json!({"path": "human/x.md", "force": true})),
    ];
    let outside_before = tree(&w.path("outside"));
    let mut transcript = String::new();
    for (op, request) in &cases {
        let out = dream_fs(&w, op, request);
        transcript.push_str(&format!(
            "$ dream-fs {op} {}\nexit {}: {}",
            request, out.code, out.stdout
        ));
    }
    w.norm()
        .bind(|| crate::dream_snapshot!("dream_fs_cases", transcript));
    assert_eq!(
        tree(&w.path("outside")),
        outside_before,
        "nothing outside changed"
    );
    assert_eq!(
        fs::read_to_string(w.home().join("human/new.md")).unwrap(),
        "newer\n"
    );
    assert!(
        fs::read_to_string(w.home().join("human/live.md"))
            .unwrap()
            .contains("alive")
    );
    assert!(!w.home().join("human/trash.md").exists());
    assert!(w.home().join("human/hard.md").exists());
    // Every attempt, refusals and malformed requests included, is journaled in order.
    let journal = fs::read_to_string(w.path("journal.jsonl")).unwrap();
    assert_eq!(journal.lines().count(), cases.len());
    w.norm()
        .bind(|| crate::dream_snapshot!("dream_fs_journal", journal));
}

#[test]
fn edit_or_delete_of_a_missing_note_creates_nothing() {
    let w = World::new();
    for (op, request) in [
        (
            "edit",
            json!({"path": "human/new-dir/none.md", "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
        ("delete", json!({"path": "project/absent-key/none.md"})),
    ] {
        let out = dream_fs(&w, op, &request);
        assert_eq!(out.code, 1, "{}", out.transcript());
        assert_eq!(out.json()["error"]["code"], "not_found");
    }
    assert!(!w.home().join("human/new-dir").exists());
    assert!(!w.home().join("project/absent-key").exists());
}

#[test]
fn symlinked_note_inside_the_home_is_refused_never_followed() {
    let w = World::new();
    w.write("notes/human/real.md", &note("real", None));
    symlink(
        w.home().join("human/real.md"),
        w.home().join("human/alias.md"),
    )
    .unwrap();
    let out = dream_fs(
        &w,
        "write",
        &json!({"path": "human/alias.md", "content": "via alias\n"}),
    );
    assert_eq!(out.code, 1, "{}", out.transcript());
    assert_eq!(out.json()["error"]["code"], "outside_home");
    assert_eq!(
        fs::read_to_string(w.home().join("human/real.md")).unwrap(),
        note("real", None)
    );
    assert!(
        fs::symlink_metadata(w.home().join("human/alias.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_dream_run_reports_jail_refusals_and_leaves_the_outside_alone() {
    let w = jail_world();
    let outside_before = tree(&w.path("outside"));
    let mut cmd = w.dream(&["--force"]);
    w.script(
        &mut cmd,
        &[
            ("write", json!({"path": "../escape.md", "content": "x"})),
            (
                "write",
                json!({"path": w.path("outside/abs.md"), "content": "x"}),
            ),
            (
                "write",
                json!({"path": "escape/via-dir.md", "content": "x"}),
            ),
            (
                "edit",
                json!({"path": "human/hard.md", "edits": [{"oldText": "linked", "newText": "x"}]}),
            ),
            ("delete", json!({"path": "human/live.md"})),
        ],
    );
    let out = go(cmd);
    assert_eq!(
        out.code,
        0,
        "refusals do not fail a run: {}",
        out.transcript()
    );
    let d = data(&out);
    assert_eq!(d["changes"]["refused"], 5);
    assert_eq!(d["changes"]["applied"], 0);
    assert_eq!(tree(&w.path("outside")), outside_before);
    assert!(!w.path("escape.md").exists());
    assert!(w.home().join("human/live.md").exists());
    let report = fs::read_to_string(w.home().join("dreams/2026-11-30T12-00-00-000Z.md")).unwrap();
    for code in ["outside_home", "hard_link", "not_crumpled"] {
        assert!(
            report.contains(&format!("refused ({code})")),
            "{code} in {report}"
        );
    }
    assert_eq!(report.matches("→ refused").count(), 5);
}
