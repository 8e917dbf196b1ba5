//! CLI tests for the notes family: every subcommand's JSON and text (one `--format both` call
//! gives both), success and each refusal; refusals leave the tree byte-identical; concurrent
//! updates from many processes all land.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{Normaliser, Run, pi_context, run};

struct Env {
    dir: TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn notes(&self) -> PathBuf {
        self.dir.path().join("notes")
    }

    fn command(&self, verb: &str, extra: &[&str]) -> assert_cmd::Command {
        let mut cmd = pi_context(self.dir.path());
        cmd.args(["--format", "both", verb, "--notes-home"])
            .arg(self.notes())
            .args([
                "--session-id",
                "s1",
                "--project-key",
                "demo-1a2b3c4d",
                "--agent",
                "Ann",
                "--model",
                "provider/GPT.5",
            ])
            .args(extra);
        cmd
    }

    fn call(&self, verb: &str, request: &str) -> Run {
        run(self.command(verb, &[]), request)
    }

    fn ok(&self, verb: &str, request: Value) -> Value {
        let out = self.call(verb, &request.to_string());
        assert_eq!(out.code, 0, "{verb} {request}: {}", out.stdout);
        out.json()["data"].clone()
    }

    fn write(&self, address: &str, content: &str) {
        self.ok(
            "notes-write",
            json!({"address": address, "content": content}),
        );
    }

    /// Snapshots name the temp directory `[TMP]`.
    fn norm(&self) -> Normaliser {
        Normaliser::new().path(self.dir.path(), "[TMP]")
    }

    /// Exit code, the envelope (without `text`) and the text.
    fn transcript(&self, out: &Run) -> String {
        let mut envelope = out.json();
        let text = envelope
            .as_object_mut()
            .and_then(|o| o.remove("text"))
            .and_then(|t| t.as_str().map(str::to_owned))
            .unwrap_or_default();
        let body = format!(
            "exit: {}\n--- json\n{}\n--- text\n{}\n--- stderr\n{}",
            out.code,
            serde_json::to_string_pretty(&envelope).unwrap(),
            text,
            out.stderr
        );
        body
    }

    fn snap(&self, name: &str, verb: &str, request: &str) -> Run {
        let out = self.call(verb, request);
        let transcript = self.transcript(&out);
        self.norm()
            .bind(|| insta::assert_snapshot!(name, transcript));
        out
    }

    fn tree(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        let mut out = BTreeMap::new();
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
            let Ok(entries) = fs::read_dir(dir) else {
                return;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                let meta = fs::symlink_metadata(&path).unwrap();
                if meta.is_dir() {
                    out.insert(path.clone(), None);
                    walk(&path, out);
                } else {
                    out.insert(path.clone(), Some(fs::read(&path).unwrap_or_default()));
                }
            }
        }
        walk(self.dir.path(), &mut out);
        out
    }

    /// Run a request that must be refused with `code`; the tree must not change.
    fn refused(&self, name: &str, verb: &str, request: &str, code: &str, exit: i32) {
        let before = self.tree();
        let out = self.snap(name, verb, request);
        assert_eq!(out.code, exit, "{name}: {}", out.stdout);
        assert_eq!(out.json()["error"]["code"], code, "{name}");
        assert_eq!(
            self.tree(),
            before,
            "{name}: the tree changed after a refusal"
        );
    }
}

#[test]
fn write_outcomes_and_receipts() {
    let env = Env::new();
    env.snap(
        "write_created_session",
        "notes-write",
        r#"{"address":"plan","content":"---\nscope: human\ninjected: true\n---\nreal body"}"#,
    );
    env.snap(
        "write_created_project",
        "notes-write",
        r#"{"address":"@project/design","content":"x","origin":"user"}"#,
    );
    env.snap(
        "write_overwritten_self",
        "notes-write",
        r#"{"address":"@self/plan.md","content":"v1"}"#,
    );
    env.snap(
        "write_overwritten_explicit",
        "notes-write",
        r#"{"address":"@agents/ann/plan","content":"v2"}"#,
    );
    let file = fs::read_to_string(env.notes().join("pi/session/s1/plan.md")).unwrap();
    assert!(file.ends_with("---\n\nreal body"), "{file}");
    assert!(!file.contains("injected"));
    assert!(file.contains("project: demo-1a2b3c4d"));
    env.write("@model/m", "one");
    env.ok(
        "notes-update",
        json!({"address": "@model/m", "crumpled": true}),
    );
    let out = env.snap(
        "write_uncrumpled",
        "notes-write",
        r#"{"address":"@model/m","content":"two"}"#,
    );
    assert_eq!(out.json()["data"]["address"], "@models/gpt-5/m.md");
}

#[test]
fn write_refusals_change_nothing() {
    let env = Env::new();
    env.write("@human/keep", "kept");
    env.refused(
        "write_invalid_address",
        "notes-write",
        r#"{"address":"../evil","content":"x"}"#,
        "invalid_address",
        1,
    );
    env.refused(
        "write_invalid_address_head",
        "notes-write",
        r#"{"address":"@global/x","content":"x"}"#,
        "invalid_address",
        1,
    );
    env.refused(
        "write_foreign_home",
        "notes-write",
        r#"{"address":"@agents/bob/x","content":"x"}"#,
        "invalid_scope",
        1,
    );
    let big = json!({"address": "@human/big/deep/x", "content": "x".repeat(1_000_000)}).to_string();
    let before = env.tree();
    let out = env.call("notes-write", &big);
    assert_eq!(
        (out.code, out.json()["error"]["code"].as_str()),
        (1, Some("too_large"))
    );
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("note exceeds 1000000 UTF-8 bytes (serialized ")
    );
    assert_eq!(env.tree(), before, "no directories left behind");
    let long = json!({"address": "a".repeat(513), "content": "x"}).to_string();
    let out = env.call("notes-write", &long);
    assert_eq!(
        out.json()["error"]["message"],
        "note path exceeds 512 UTF-8 bytes (got 513)"
    );
    env.refused(
        "write_bad_origin",
        "notes-write",
        r#"{"address":"x","content":"x","origin":"robot"}"#,
        "invalid_request",
        2,
    );
    env.refused(
        "write_unknown_field",
        "notes-write",
        r#"{"address":"x","content":"x","crumpled":true}"#,
        "invalid_request",
        2,
    );
    env.refused(
        "write_wrong_type",
        "notes-write",
        r#"{"address":"x","content":7}"#,
        "invalid_request",
        2,
    );
    env.refused(
        "write_malformed",
        "notes-write",
        r#"{"address":"#,
        "invalid_request",
        2,
    );
    // Without a session id, bare addresses are refused; other homes still work.
    let out = run(
        {
            let mut c = pi_context(env.dir.path());
            c.args(["notes-write", "--notes-home"]).arg(env.notes());
            c
        },
        r#"{"address":"x","content":"x"}"#,
    );
    assert_eq!(
        (out.code, out.json()["error"]["code"].as_str()),
        (1, Some("no_session"))
    );
}

#[test]
fn symlinks_leaving_the_root_are_refused() {
    let env = Env::new();
    let outside = env.dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("secret.md"), "secret").unwrap();
    fs::create_dir_all(env.notes().join("human")).unwrap();
    std::os::unix::fs::symlink(&outside, env.notes().join("human/link")).unwrap();
    env.refused(
        "write_symlink_escape",
        "notes-write",
        r#"{"address":"@human/link/x","content":"x"}"#,
        "path_escapes_root",
        1,
    );
    env.refused(
        "read_symlink_escape",
        "notes-read",
        r#"{"address":"@human/link/secret"}"#,
        "path_escapes_root",
        1,
    );
    // Listings never follow symlinks either.
    let listed = env.ok("notes-list", json!({"pattern": "@human/**"}));
    assert_eq!(listed["files"], json!([]));
}

#[test]
fn read_windows_metadata_and_access_bookkeeping() {
    let env = Env::new();
    env.write("@project/w", "héllo 😀 wörld\nline two");
    fs::write(
        env.notes().join("project/demo-1a2b3c4d/hand.md"),
        "---\norigin: user\ncreated_at: 2020-01-01\nbig: \"".to_owned()
            + &"z".repeat(1100)
            + "\"\nsmall: [1,2]\n---\n\nhand body",
    )
    .unwrap();
    // A note without timestamps is dated by its file: pin the file time (a day before the test
    // clock, so the snapshot shows the file time is what dates it).
    fs::File::options()
        .write(true)
        .open(env.notes().join("project/demo-1a2b3c4d/hand.md"))
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_953_600))
        .unwrap();
    env.snap("read_whole", "notes-read", r#"{"address":"@project/w"}"#);
    env.snap(
        "read_limited",
        "notes-read",
        r#"{"address":"@project/w","offset_chars":2,"limit_chars":5}"#,
    );
    env.snap(
        "read_negative_offset",
        "notes-read",
        r#"{"address":"@project/w","offset_chars":-3}"#,
    );
    env.snap(
        "read_end",
        "notes-read",
        r#"{"address":"@project/w","offset_chars":22}"#,
    );
    env.snap(
        "read_extras",
        "notes-read",
        r#"{"address":"@project/hand"}"#,
    );
    // Reads never rewrite the note: their bumps wait in the access journal of the cache
    // directory until the note's next write folds them in.
    let w_path = env.notes().join("project/demo-1a2b3c4d/w.md");
    let hand_path = env.notes().join("project/demo-1a2b3c4d/hand.md");
    let file = fs::read_to_string(&w_path).unwrap();
    assert!(file.contains("accessCount: 0"), "{file}");
    let hand = fs::read_to_string(&hand_path).unwrap();
    assert!(!hand.contains("accessCount"), "{hand}");
    let journal = env.dir.path().join(".cache/pi-context/notes");
    assert!(journal.is_dir(), "the journal lives in the cache directory");
    env.ok(
        "notes-update",
        json!({"address": "@project/w", "origin": "self"}),
    );
    env.ok(
        "notes-update",
        json!({"address": "@project/hand", "origin": "user"}),
    );
    let file = fs::read_to_string(&w_path).unwrap();
    assert!(
        file.contains("accessCount: 4")
            && file.contains("updatedAt: 2026-11-30T12:00:00.000+00:00"),
        "{file}"
    );
    let hand = fs::read_to_string(&hand_path).unwrap();
    assert!(
        hand.contains("created_at: 2020-01-01") && hand.contains("accessCount: 1"),
        "{hand}"
    );
    // --no-cache bumps the note itself, durably, as it is read.
    let out = run(
        env.command("notes-read", &["--no-cache"]),
        r#"{"address":"@project/w"}"#,
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let file = fs::read_to_string(&w_path).unwrap();
    assert!(file.contains("accessCount: 5"), "{file}");
    // The offset refusal still bumps access (the read happened), as the original.
    let out = env.snap(
        "read_invalid_offset",
        "notes-read",
        r#"{"address":"@project/w","offset_chars":23}"#,
    );
    assert_eq!(out.code, 1);
    env.refused(
        "read_not_found",
        "notes-read",
        r#"{"address":"@human/nope/missing"}"#,
        "not_found",
        1,
    );
    env.refused(
        "read_limit_out_of_range",
        "notes-read",
        r#"{"address":"x","limit_chars":50001}"#,
        "invalid_request",
        2,
    );
}

#[test]
fn read_window_is_cut_by_bytes_and_continues_exactly() {
    let env = Env::new();
    let body: String = (0..40_000).map(|i| ['é', '漢', 'a', '😀'][i % 4]).collect();
    env.write("@human/long", &body);
    let mut offset = 0usize;
    let mut joined = String::new();
    let mut first = true;
    loop {
        let out = env.call(
            "notes-read",
            &json!({"address": "@human/long", "offset_chars": offset, "limit_chars": 50000})
                .to_string(),
        );
        assert_eq!(out.code, 0);
        assert!(out.stdout.len() < 2 * 32_768 + 1024);
        let data = &out.json()["data"];
        joined.push_str(data["text"].as_str().unwrap());
        if first {
            assert_eq!(data["limited_by"], "bytes");
            let text = out.json()["text"].as_str().unwrap().to_owned();
            assert!(text.len() <= 32_768);
            assert!(text.ends_with(&format!(
                "(32KB limit). Use offset_chars={} to continue.]",
                data["next_offset_chars"]
            )));
            first = false;
        }
        match data["next_offset_chars"].as_u64() {
            Some(next) => offset = next as usize,
            None => break,
        }
    }
    assert_eq!(joined, body);
}

#[test]
fn update_edits_metadata_and_refusals() {
    let env = Env::new();
    env.write("@human/u", "alpha\nbeta\ngamma beta\n");
    env.snap("update_edit", "notes-update", r#"{"address":"@human/u","edits":[{"oldText":"alpha","newText":"ALPHA"},{"oldText":"gamma","newText":"GAMMA"}]}"#);
    env.refused("update_ambiguous", "notes-update", r#"{"address":"@human/u","edits":[{"oldText":"ALPHA","newText":"a"},{"oldText":"beta","newText":"b"}]}"#, "ambiguous_edit", 1);
    env.refused("update_no_match", "notes-update", r#"{"address":"@human/u","edits":[{"oldText":"ALPHA","newText":"a"},{"oldText":"zeta","newText":"b"}]}"#, "no_match", 1);
    env.refused(
        "update_empty_old_text",
        "notes-update",
        r#"{"address":"@human/u","edits":[{"oldText":"","newText":"b"}]}"#,
        "no_match",
        1,
    );
    env.snap(
        "update_replace_all",
        "notes-update",
        r#"{"address":"@human/u","edits":[{"oldText":"beta","newText":"B"}],"replace_all":true}"#,
    );
    env.snap(
        "update_crumple",
        "notes-update",
        r#"{"address":"@human/u","crumpled":true}"#,
    );
    env.snap(
        "update_unchanged",
        "notes-update",
        r#"{"address":"@human/u","crumpled":true}"#,
    );
    env.snap(
        "update_origin_and_smooth",
        "notes-update",
        r#"{"address":"@human/u","crumpled":false,"origin":"user"}"#,
    );
    env.refused(
        "update_nothing_to_do",
        "notes-update",
        r#"{"address":"@human/u","replace_all":true}"#,
        "nothing_to_do",
        1,
    );
    env.refused(
        "update_not_found",
        "notes-update",
        r#"{"address":"@human/nope/x","crumpled":true}"#,
        "not_found",
        1,
    );
    env.refused(
        "update_foreign",
        "notes-update",
        r#"{"address":"@models/other/x","crumpled":true}"#,
        "invalid_scope",
        1,
    );
    env.refused(
        "update_unknown_edit_key",
        "notes-update",
        r#"{"address":"@human/u","edits":[{"oldText":"a","newText":"b","x":1}]}"#,
        "invalid_request",
        2,
    );
    let mut many = String::new();
    for _ in 0..25 {
        many.push_str("dup\n");
    }
    env.write("@human/dups", &many);
    env.refused(
        "update_ambiguous_many",
        "notes-update",
        r#"{"address":"@human/dups","edits":[{"oldText":"dup","newText":"x"}]}"#,
        "ambiguous_edit",
        1,
    );
}

#[test]
fn rename_moves_and_guards_live_targets() {
    let env = Env::new();
    env.write("draft", "d");
    env.write("@human/live", "l");
    env.write("@human/old", "o");
    env.ok(
        "notes-update",
        json!({"address": "@human/old", "crumpled": true}),
    );
    env.refused(
        "rename_onto_live",
        "notes-update",
        r#"{"address":"draft","rename_to":"@human/live"}"#,
        "already_exists",
        1,
    );
    env.refused(
        "rename_with_edits",
        "notes-update",
        r#"{"address":"draft","rename_to":"x","crumpled":false}"#,
        "invalid_scope",
        1,
    );
    env.refused(
        "rename_same_note",
        "notes-update",
        r#"{"address":"draft","rename_to":"draft.md"}"#,
        "nothing_to_do",
        1,
    );
    env.refused(
        "rename_missing_source",
        "notes-update",
        r#"{"address":"nope/x","rename_to":"@human/new/y"}"#,
        "not_found",
        1,
    );
    env.snap(
        "rename_over_crumpled",
        "notes-update",
        r#"{"address":"draft","rename_to":"@human/old","edits":[],"replace_all":false}"#,
    );
    let moved = fs::read_to_string(env.notes().join("human/old.md")).unwrap();
    assert!(
        !moved.contains("project:"),
        "leaving the session drops project: {moved}"
    );
    assert!(!env.notes().join("pi/session/s1/draft.md").exists());
    env.snap(
        "rename_into_session",
        "notes-update",
        r#"{"address":"@human/live","rename_to":"back/here"}"#,
    );
    let back = fs::read_to_string(env.notes().join("pi/session/s1/back/here.md")).unwrap();
    assert!(back.contains("project: demo-1a2b3c4d"), "{back}");
}

fn seeded() -> Env {
    let env = Env::new();
    let stamp = |n: u32| format!("2026-11-{n:02}T10:00:00.000+00:00");
    let note = |path: &Path, updated: &str, extra: &str, body: &str| {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, format!("---\norigin: self\n{extra}createdAt: {updated}\nupdatedAt: {updated}\n---\n\n{body}")).unwrap();
    };
    let n = env.notes();
    note(
        &n.join("pi/session/s1/a.md"),
        &stamp(3),
        "",
        "session a needle",
    );
    note(
        &n.join("pi/session/s1/deep/B.md"),
        &stamp(3),
        "",
        "NEEDLE in B\nsecond Needle line\nthird",
    );
    note(
        &n.join("project/demo-1a2b3c4d/p.md"),
        &stamp(5),
        "",
        "project İİ needle 😀",
    );
    note(&n.join("human/h.md"), &stamp(1), "", "human text");
    note(
        &n.join("human/gone.md"),
        &stamp(9),
        "crumpledAt: 2026-11-10T00:00:00.000+00:00\n",
        "crumpled needle",
    );
    note(&n.join("agents/ann/mine.md"), &stamp(7), "", "my needle");
    note(
        &n.join("agents/bob/theirs.md"),
        &stamp(8),
        "",
        "bob's needle",
    );
    note(&n.join("models/gpt-5/m.md"), &stamp(2), "", "model notes");
    env
}

#[test]
fn list_orders_filters_and_reports() {
    let env = seeded();
    env.snap("list_default", "notes-list", "");
    env.snap("list_wastebasket", "notes-list", r#"{"wastebasket":true}"#);
    env.snap("list_limit", "notes-list", r#"{"limit":2}"#);
    env.snap(
        "list_pattern_namespace",
        "notes-list",
        r#"{"pattern":"@agents/*/**"}"#,
    );
    env.snap(
        "list_pattern_self",
        "notes-list",
        r#"{"pattern":"@self/*.md"}"#,
    );
    env.snap(
        "list_pattern_session_subtree",
        "notes-list",
        r#"{"pattern":"deep/**"}"#,
    );
    env.snap(
        "list_scope_who",
        "notes-list",
        r#"{"scope":"agent","who":"bob"}"#,
    );
    env.refused(
        "list_bad_scope",
        "notes-list",
        r#"{"scope":"global"}"#,
        "invalid_scope",
        1,
    );
    env.refused(
        "list_who_without_scope",
        "notes-list",
        r#"{"who":"bob"}"#,
        "invalid_scope",
        1,
    );
    env.refused(
        "list_bad_pattern",
        "notes-list",
        r#"{"pattern":"a\\b"}"#,
        "invalid_pattern",
        1,
    );
    env.refused(
        "list_limit_zero",
        "notes-list",
        r#"{"limit":0}"#,
        "invalid_request",
        2,
    );
    // A home that cannot be read is reported, the others still listed.
    fs::remove_dir_all(env.notes().join("human")).unwrap();
    fs::write(env.notes().join("human"), "not a directory").unwrap();
    env.snap("list_home_unavailable", "notes-list", "");
}

#[test]
fn list_of_many_notes_stops_at_the_budget() {
    let env = Env::new();
    let dir = env.notes().join("human/many");
    fs::create_dir_all(&dir).unwrap();
    for i in 0..2000 {
        fs::write(
            dir.join(format!("note-{i:04}.md")),
            format!(
                "---\nupdatedAt: 2026-01-01T00:00:{:02}.000+00:00\n---\n\nx",
                i % 60
            ),
        )
        .unwrap();
    }
    let out = env.call("notes-list", "");
    assert_eq!(out.code, 0);
    let data = &out.json()["data"];
    let shown = data["files"].as_array().unwrap().len();
    assert!(shown > 100 && shown < 2000, "{shown}");
    assert_eq!(data["more"].as_u64().unwrap() as usize, 2000 - shown);
    let envelope_bytes = serde_json::to_string(&json!({"ok": true, "data": data}))
        .unwrap()
        .len();
    assert!(envelope_bytes <= 32_768 && out.json()["text"].as_str().unwrap().len() <= 32_768);
}

#[test]
fn search_matches_literals_case_insensitively_with_code_point_offsets() {
    let env = seeded();
    env.snap("search_one", "notes-search", r#"{"query":"needle"}"#);
    env.snap(
        "search_many_max",
        "notes-search",
        r#"{"query":["THIRD","needle"],"max_matches_per_file":1,"pattern":"**"}"#,
    );
    env.snap(
        "search_wastebasket",
        "notes-search",
        r#"{"query":"needle","wastebasket":true}"#,
    );
    env.snap(
        "search_limit",
        "notes-search",
        r#"{"query":"needle","limit":1}"#,
    );
    env.snap(
        "search_literal_metachars",
        "notes-search",
        r#"{"query":"needle.*"}"#,
    );
    env.refused(
        "search_empty_query",
        "notes-search",
        r#"{"query":""}"#,
        "invalid_query",
        1,
    );
    env.refused(
        "search_empty_array",
        "notes-search",
        r#"{"query":[]}"#,
        "invalid_request",
        2,
    );
    env.refused(
        "search_bad_element",
        "notes-search",
        r#"{"query":["a",1]}"#,
        "invalid_request",
        2,
    );
    env.refused(
        "search_missing_query",
        "notes-search",
        r#"{}"#,
        "invalid_request",
        2,
    );
    env.refused(
        "search_bad_who",
        "notes-search",
        r#"{"query":"x","scope":"model","who":"Not A Slug"}"#,
        "invalid_scope",
        1,
    );
}

#[test]
fn search_shrinks_an_oversized_first_file() {
    let env = Env::new();
    let line = format!("needle {}", "w".repeat(100));
    let body = vec![line.as_str(); 1000].join("\n");
    env.write("@human/huge", &body);
    let data = env.ok("notes-search", json!({"query": "needle"}));
    let file = &data["files"][0];
    assert_eq!(file["matches_total"], 1000);
    let shown = file["matches"].as_array().unwrap().len();
    assert!(shown > 10 && shown < 1000, "{shown}");
    let long_line = format!("needle {}", "w".repeat(40_000));
    env.write("@human/huge", &long_line);
    let data = env.ok("notes-search", json!({"query": "needle"}));
    let m = &data["files"][0]["matches"][0];
    assert_eq!(m["truncated"], true);
    assert!(m["text"].as_str().unwrap().len() < 32_768);
}

#[test]
fn a_search_matching_every_note_shows_the_newest_with_their_lines() {
    // 400 notes, each with long lines holding the word: far more than a response shows. The
    // search copies lines only for the leading rows; the ones shown still have all of theirs.
    let env = Env::new();
    let home = env.notes().join("human");
    fs::create_dir_all(&home).unwrap();
    let line = format!("common {}", "w".repeat(300));
    for i in 0..400 {
        let stamp = format!("2026-01-01T00:{:02}:{:02}.000Z", i / 60, i % 60);
        fs::write(
            home.join(format!("n{i:03}.md")),
            format!("---\nupdatedAt: {stamp}\n---\n\n{line}\n{line}\n"),
        )
        .unwrap();
    }
    let data = env.ok("notes-search", json!({"query": "COMMON"}));
    let files = data["files"].as_array().unwrap();
    assert!(!files.is_empty() && files.len() < 400, "{}", files.len());
    assert_eq!(data["more"], 400 - files.len());
    for (k, file) in files.iter().enumerate() {
        assert_eq!(file["address"], format!("@human/n{:03}.md", 399 - k));
        assert_eq!(file["matches_total"], 2);
        assert_eq!(file["matches"].as_array().unwrap().len(), 2, "{file}");
    }
    let data = env.ok("notes-search", json!({"query": "common", "limit": 3}));
    assert_eq!(data["files"].as_array().unwrap().len(), 3);
    assert_eq!(data["files"][2]["matches"].as_array().unwrap().len(), 2);
    assert_eq!(data["more"], 397);
}

#[test]
fn project_key_names_the_main_checkout() {
    let env = Env::new();
    let main = env.dir.path().join("repo");
    fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
    let wt = env.dir.path().join("wt");
    fs::create_dir_all(wt.join("sub")).unwrap();
    fs::write(
        wt.join(".git"),
        format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
    )
    .unwrap();
    let key = |dir: &Path, format: &str| {
        let mut c = pi_context(env.dir.path());
        c.args(["--format", format, "project-key", "--cwd"])
            .arg(dir);
        run(c, "")
    };
    let from_main = key(&main, "json");
    let from_wt = key(&wt.join("sub"), "json");
    assert_eq!(from_main.stdout, from_wt.stdout);
    let main_key = from_main.json()["data"]["project_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let hash = main_key.strip_prefix("repo-").unwrap();
    assert!(
        hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "{main_key}"
    );
    env.norm().literal(hash, "[SHA1-8]").bind(|| {
        insta::assert_snapshot!(from_main.transcript(), @r#"
            exit: 0
            --- stdout
            {"ok":true,"data":{"project_key":"repo-[SHA1-8]","root":"[TMP]/repo"}}
            --- stderr
            "#)
    });
    let text = key(&main, "text");
    assert!(text.stdout.starts_with("repo-") && text.stdout.trim().len() == "repo-".len() + 8);
}

#[test]
fn default_home_listing_works_from_a_shell() {
    let env = Env::new();
    let mut cmd = pi_context(env.dir.path());
    cmd.args(["--format", "text", "notes-list"]);
    let out = run(cmd, "");
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.stdout, "0 notes\n");
    assert!(
        !env.dir.path().join(".agents").exists(),
        "listing creates nothing"
    );
}

#[test]
fn concurrent_processes_never_lose_an_update() {
    const PROCESSES: usize = 8;
    const EDITS: usize = 50;
    let env = Env::new();
    env.write("@human/shared", "END");
    let notes = env.notes();
    let home = env.dir.path().to_path_buf();
    let bin = assert_cmd::cargo::cargo_bin("pi-context");
    let workers: Vec<_> = (0..PROCESSES)
        .map(|p| {
            let (bin, notes, home) = (bin.clone(), notes.clone(), home.clone());
            std::thread::spawn(move || {
                for i in 0..EDITS {
                    let request = json!({"address": "@human/shared", "edits": [{"oldText": "END", "newText": format!("p{p}-e{i}\nEND")}]});
                    let mut child = std::process::Command::new(&bin)
                        .env_clear()
                        .env("HOME", &home)
                        .args(["notes-update", "--notes-home"])
                        .arg(&notes)
                        .stdin(std::process::Stdio::piped())
                        .stdout(std::process::Stdio::piped())
                        .spawn()
                        .unwrap();
                    use std::io::Write;
                    child.stdin.take().unwrap().write_all(request.to_string().as_bytes()).unwrap();
                    let out = child.wait_with_output().unwrap();
                    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let file = fs::read_to_string(notes.join("human/shared.md")).unwrap();
    for p in 0..PROCESSES {
        for i in 0..EDITS {
            assert!(file.contains(&format!("p{p}-e{i}\n")), "lost p{p}-e{i}");
        }
    }
    assert_eq!(
        file.lines().filter(|l| l.starts_with('p')).count(),
        PROCESSES * EDITS
    );
}
