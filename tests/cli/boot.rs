//! CLI tests for `boot-render`: the boot text as snapshots (empty store, all five homes with
//! MAPs, an unreadable home, more notes than the caps), determinism, bindings and refusals.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::{Normaliser, Run, pi_context, run};

const SESSION: &str = "0123456789abcdef-session";
const PROJECT: &str = "demo-1a2b3c4d";
/// `PI_CONTEXT_NOW` of the test harness, as the `--opened-at` default.
const OPENED_AT: &str = "2026-11-30T12:00:00.000+00:00";

struct Store {
    dir: tempfile::TempDir,
}

impl Store {
    fn new() -> Store {
        Store {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("notes")
    }

    fn home(&self, home: &str) -> PathBuf {
        let root = self.root();
        match home {
            "session" => root.join("pi/session").join(SESSION),
            "project" => root.join("project").join(PROJECT),
            "human" => root.join("human"),
            "agent" => root.join("agents/test-agent"),
            "model" => root.join("models/first-model"),
            other => panic!("unknown home {other}"),
        }
    }

    /// Write a note file directly, updated `minutes_ago` before the opening instant.
    fn note(&self, home: &str, vpath: &str, body: &str, minutes_ago: i64) {
        self.note_with(home, vpath, body, minutes_ago, "")
    }

    fn note_with(&self, home: &str, vpath: &str, body: &str, minutes_ago: i64, extra: &str) {
        let path = self.home(home).join(vpath);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let opened = chrono::DateTime::parse_from_rfc3339(OPENED_AT).unwrap();
        let updated = (opened - chrono::Duration::minutes(minutes_ago))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
        let text = format!(
            "---\norigin: self\n{extra}createdAt: {updated}\nupdatedAt: {updated}\nlastAccessed: {updated}\naccessCount: 0\n---\n\n{body}"
        );
        std::fs::write(&path, text).unwrap();
        // As pi-context writes it: the file's time is not earlier than its `updatedAt` (the
        // boot ranks by the smaller of the two, see boot::load::load_home).
        set_mtime(&path, opened - chrono::Duration::minutes(minutes_ago));
    }

    fn render(&self, extra: &[&str], request: &str) -> Run {
        let mut cmd = pi_context(self.dir.path());
        cmd.arg("boot-render")
            .arg("--notes-home")
            .arg(self.root())
            .args(["--session-id", SESSION, "--project-key", PROJECT])
            .args(["--agent", "Test Agent", "--model", "provider/First.Model"])
            .args(extra);
        run(cmd, request)
    }

    /// Snapshots name the store's temp directory `[TMP]`.
    fn norm(&self) -> Normaliser {
        Normaliser::new().path(self.dir.path(), "[TMP]")
    }
}

/// The text and the JSON data of one render, in one snapshot-friendly block.
fn both(store: &Store, extra: &[&str]) -> (String, Value) {
    let mut args = vec!["--format", "both"];
    args.extend_from_slice(extra);
    let out = store.render(&args, "");
    assert_eq!(out.code, 0, "{}", out.transcript());
    let mut envelope = out.json();
    let text = envelope["text"].as_str().unwrap().to_string();
    envelope.as_object_mut().unwrap().remove("text");
    (text, envelope["data"].take())
}

#[test]
fn empty_store() {
    let store = Store::new();
    let (text, data) = both(&store, &[]);
    insta::assert_snapshot!(text);
    assert!(text.starts_with("<context_window>"));
    assert!(!text.contains(&store.dir.path().display().to_string()));
    insta::assert_json_snapshot!(data);
}

fn five_homes(store: &Store) {
    store.note(
        "human",
        "MAP.md",
        "- @human/style.md: how they like reviews",
        600,
    );
    store.note("human", "style.md", "Prefers small commits.", 120);
    store.note(
        "agent",
        "MAP.md",
        "- @self/habits.md: what works for me",
        3000,
    );
    store.note("agent", "habits.md", "Run the tests before committing.", 2);
    store.note(
        "model",
        "quirks.md",
        "I over-explain; be brief.",
        60 * 24 * 3,
    );
    store.note(
        "project",
        "MAP.md",
        "- @project/arch.md: module layout\n- @project/decisions/db.md: why SQLite",
        45,
    );
    store.note(
        "project",
        "arch.md",
        "Domains are pure; the CLI is thin. 日本語 ✓",
        30,
    );
    store.note(
        "project",
        "decisions/db.md",
        "SQLite, because one file.",
        90,
    );
    store.note(
        "project",
        "sub/MAP.md",
        "A nested MAP is an ordinary note.",
        10,
    );
    store.note_with(
        "project",
        "old.md",
        "crumpled: never shown",
        1,
        "crumpledAt: 2026-11-30T11:59:00.000+00:00\n",
    );
    store.note(
        "session",
        "checkpoint-boot-render.md",
        "Goal: boot. Next: bench. seq 42.",
        0,
    );
    store.note("session", "MAP.md", "- checkpoint-boot-render.md", 5);
    // Not notes: other extensions, and a note of another session.
    std::fs::write(store.home("project").join("README.txt"), "not a note").unwrap();
    std::fs::create_dir_all(store.root().join("pi/session/other")).unwrap();
    std::fs::write(store.root().join("pi/session/other/x.md"), "other session").unwrap();
}

#[test]
fn notes_in_all_five_homes_with_maps() {
    let store = Store::new();
    five_homes(&store);
    let (text, data) = both(
        &store,
        &[
            "--window-id",
            "pcw:01234567:feedbeef",
            "--previous-window-id",
            "pcw:01234567:root",
        ],
    );
    insta::assert_snapshot!(text);
    insta::assert_json_snapshot!(data);
    assert!(!text.contains("crumpled: never shown"));
    assert!(!text.contains("other session"));
}

#[test]
fn same_inputs_render_byte_identical_text() {
    let store = Store::new();
    five_homes(&store);
    let first = store.render(&["--format", "text"], "");
    let second = store.render(&["--format", "text"], "");
    assert_eq!(first.code, 0);
    assert_eq!(first.stdout, second.stdout);
    // A different opening instant changes only the ages, never the order.
    let later = store.render(
        &["--format", "text", "--opened-at", "2026-12-01T12:00:00Z"],
        "",
    );
    assert_ne!(first.stdout, later.stdout);
    assert!(
        later
            .stdout
            .contains("- @project/sub/MAP.md | 33 chars | 1d ago")
    );
}

/// Root can read a chmod-000 directory, so these homes fail in ways that hold for root too: the
/// project home is a regular file (ENOTDIR) and the model home a symlink pointing at itself
/// (ELOOP). The other homes still render.
#[test]
fn unreadable_homes_are_omitted_with_a_retry_notice() {
    let store = Store::new();
    five_homes(&store);
    let project = store.home("project");
    std::fs::remove_dir_all(&project).unwrap();
    std::fs::write(&project, "a file where the home should be").unwrap();
    let model = store.home("model");
    std::fs::remove_dir_all(&model).unwrap();
    std::os::unix::fs::symlink(&model, &model).unwrap();
    let (text, data) = both(&store, &[]);
    insta::assert_snapshot!(text);
    let data = serde_json::to_string_pretty(&data).unwrap();
    store.norm().bind(|| insta::assert_snapshot!(data));
    assert!(text.contains("## The human | @human"));
    assert!(text.contains("Goal: boot") || text.contains("checkpoint-boot-render.md"));
}

/// chmod 000 on a home does stop a non-root user; checked only when the tests do not run as
/// root (where the kernel ignores the mode).
#[test]
fn chmod_000_home_is_unavailable_when_not_root() {
    use std::os::unix::fs::PermissionsExt;
    let store = Store::new();
    five_homes(&store);
    let human = store.home("human");
    std::fs::set_permissions(&human, std::fs::Permissions::from_mode(0o000)).unwrap();
    let readable_anyway = std::fs::read_dir(&human).is_ok();
    let (text, data) = both(&store, &[]);
    std::fs::set_permissions(&human, std::fs::Permissions::from_mode(0o755)).unwrap();
    if readable_anyway {
        assert_eq!(
            data["unavailable"],
            json!([]),
            "root reads it: nothing is unavailable"
        );
        return;
    }
    assert_eq!(data["unavailable"][0]["label"], "@human");
    assert!(text.contains("## The human | @human\nThis home could not be opened"));
}

#[test]
fn more_notes_than_the_caps() {
    let store = Store::new();
    for home in ["human", "agent", "model", "project", "session"] {
        for i in 0..8 {
            // Two notes share each age so the tie-break shows: case-insensitive puts `a-0` before
            // `B-1` (bytewise would not).
            let name = if i % 2 == 0 {
                format!("a-{i}.md")
            } else {
                format!("B-{i}.md")
            };
            store.note(home, &name, &"x".repeat(i * 10), (i as i64 / 2) * 7);
        }
    }
    let (text, data) = both(&store, &[]);
    insta::assert_snapshot!(text);
    let shown: Vec<u64> = data["homes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["shown"].as_u64().unwrap())
        .collect();
    assert_eq!(shown, [5, 5, 3, 5, 5]);
    assert!(
        data["homes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["note_files"] == 8)
    );
}

#[test]
fn long_map_is_cut_at_4096_code_points() {
    let store = Store::new();
    let body = format!("{}TAIL", "é".repeat(4096));
    store.note("human", "MAP.md", &body, 1);
    let (text, data) = both(&store, &[]);
    assert!(!text.contains("TAIL"));
    assert!(text.contains(&format!(
        "{}\n[MAP cut at 4096 chars: slim it down; the rest is in @human/MAP.md]",
        "é".repeat(4096)
    )));
    assert_eq!(data["homes"][0]["map_cut"], true);
}

#[test]
fn custom_tool_bindings() {
    let store = Store::new();
    std::fs::create_dir_all(store.root().join("project")).unwrap();
    std::fs::write(store.home("project"), "not a dir").unwrap();
    let request = json!({"tools": {
        "notes": "memo_*", "notes_list": "memo_ls", "history": "past_*",
        "history_windows": "past_windows", "history_list": "past_ls",
        "history_search": "past_grep", "history_read": "past_cat",
        "remaining": "room_left", "wipe": "fresh_start"}});
    let out = store.render(&["--format", "both"], &request.to_string());
    let envelope = out.json();
    let text = envelope["text"].as_str().unwrap();
    let continuation = envelope["data"]["continuation"].as_str().unwrap();
    for default in [
        "notes_*",
        "notes_list",
        "history_*",
        "history_list",
        "history_search",
        "history_read",
        "get_context_remaining",
        "wipe_memory",
    ] {
        assert!(!text.contains(default), "{default} in the boot");
        assert!(
            !continuation.contains(default),
            "{default} in the continuation"
        );
    }
    assert!(continuation.contains("past_grep, past_ls and past_cat"));
    assert!(continuation.contains("memo_*"));
    assert!(
        !text.contains("context_window_continuation"),
        "the boot never holds the continuation"
    );
    assert!(text.contains("memo_ls can retry"));
    assert!(
        envelope["data"]["notice"]
            .as_str()
            .unwrap()
            .contains("memo_ls")
    );
}

#[test]
fn refusals() {
    let store = Store::new();
    let mut transcripts = Vec::new();
    for (label, extra, stdin) in [
        ("bad --opened-at", vec!["--opened-at", "yesterday"], ""),
        ("unknown request field", vec![], r#"{"tool": {}}"#),
        ("unknown binding", vec![], r#"{"tools": {"shell": "bash"}}"#),
    ] {
        let out = store.render(&extra, stdin);
        transcripts.push(format!("## {label}\n{}", out.transcript()));
    }
    let mut cmd = pi_context(store.dir.path());
    cmd.args(["boot-render", "--session-id", "a/b"]);
    let out = run(cmd, "");
    transcripts.push(format!("## session id with a slash\n{}", out.transcript()));
    let mut cmd = pi_context(store.dir.path());
    cmd.arg("boot-render");
    let out = run(cmd, "");
    assert_eq!(out.code, 2, "missing --session-id is a usage error");
    store
        .norm()
        .bind(|| insta::assert_snapshot!(transcripts.join("\n")));
}

#[test]
fn project_key_derives_from_cwd_and_the_notes_home_from_env() {
    let store = Store::new();
    let work = store.dir.path().join("my-project");
    std::fs::create_dir_all(&work).unwrap();
    let key = {
        let mut cmd = pi_context(store.dir.path());
        cmd.env("PI_NOTES_HOME", store.root())
            .args(["boot-render", "--session-id", SESSION, "--cwd"])
            .arg(&work);
        let out = run(cmd, "");
        out.json()["data"]["identity"]["project_key"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(key.starts_with("my-project-"), "{key}");
    let dir = store.root().join("project").join(&key);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.md"), "plain note without frontmatter").unwrap();
    // No `updatedAt`: the store dates it "now", the boot by its file time.
    let opened = chrono::DateTime::parse_from_rfc3339(OPENED_AT).unwrap();
    set_mtime(&dir.join("x.md"), opened - chrono::Duration::minutes(5));
    let mut cmd = pi_context(store.dir.path());
    cmd.env("PI_NOTES_HOME", store.root())
        .current_dir(&work)
        .args(["boot-render", "--session-id", SESSION, "--format", "text"]);
    let out = run(cmd, "");
    assert!(
        out.stdout.contains("- @project/x.md | 30 chars | 5m ago"),
        "{}",
        out.stdout
    );
}

fn set_mtime(path: &std::path::Path, at: chrono::DateTime<chrono::FixedOffset>) {
    let when =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(at.timestamp_millis() as u64);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

/// A store at full caps: four MAPs of 4,096+ code points and more notes than every cap.
fn full_store() -> Store {
    let store = Store::new();
    for (i, home) in ["human", "agent", "model", "project"]
        .into_iter()
        .enumerate()
    {
        let map: String = (0..200)
            .map(|n| format!("- @{home}/topic-{n}.md: gist number {n} of home {i}\n"))
            .collect();
        store.note(home, "MAP.md", &map, 10);
    }
    for home in ["human", "agent", "model", "project", "session"] {
        for i in 0..8 {
            store.note(home, &format!("notes/n-{i}.md"), "body", i);
        }
    }
    store
}

/// The text up to the notes index: identity and protocol, which a budget never cuts.
fn head(text: &str) -> &str {
    &text[..text.find("# Your notes").expect("the index heading")]
}

#[test]
fn max_chars_trims_maps_to_fit_a_hook_cap_and_keeps_identity_and_protocol() {
    let store = full_store();
    let (plain, plain_data) = both(&store, &[]);
    assert!(plain.chars().count() > 15_000, "a store at full caps");
    assert!(plain_data.get("budget").is_none());
    let (text, data) = both(&store, &["--max-chars", "10000"]);
    let chars = text.chars().count();
    assert!(chars <= 10_000, "{chars} chars");
    assert!(chars > 9_000, "the budget is used, not wasted: {chars}");
    assert_eq!(data["text_chars"], chars);
    assert_eq!(head(&text), head(&plain));
    assert_eq!(data["budget"]["fits"], true);
    assert_eq!(data["budget"]["trimmed"], true);
    assert!(data["budget"]["map_chars"].as_u64().unwrap() < 4096);
    for address in [
        "@human/MAP.md",
        "@agents/test-agent/MAP.md",
        "@models/first-model/MAP.md",
        "@project/MAP.md",
    ] {
        let notice = format!("more chars of this MAP, trimmed to fit: {address}]");
        assert!(text.contains(&notice), "no trim notice for {address}");
    }
    // Rows are kept while MAP trimming suffices.
    assert_eq!(text.matches(" | 4 chars | ").count(), 23);
}

#[test]
fn max_chars_at_the_exact_limit() {
    let store = full_store();
    let (plain, _) = both(&store, &[]);
    let full = plain.chars().count();
    let (same, data) = both(&store, &["--max-chars", &full.to_string()]);
    assert_eq!(same, plain);
    assert_eq!(data["budget"]["trimmed"], false);
    let (cut, data) = both(&store, &["--max-chars", &(full - 1).to_string()]);
    assert!(cut.chars().count() < full);
    assert_eq!(data["budget"]["trimmed"], true);
    assert_eq!(data["budget"]["fits"], true);
}

#[test]
fn max_chars_trims_rows_visibly_once_maps_are_gone() {
    let store = full_store();
    let (plain, _) = both(&store, &[]);
    // Room for identity, protocol and a little of the index only.
    let budget = head(&plain).chars().count() + 900;
    let (text, data) = both(&store, &["--max-chars", &budget.to_string()]);
    assert!(text.chars().count() <= budget);
    assert_eq!(head(&text), head(&plain));
    assert_eq!(data["budget"]["map_chars"], 0);
    let rows = data["budget"]["rows_per_home"].as_u64().unwrap();
    assert!(rows < 5);
    assert!(text.contains(&format!("- … {} more: notes_list", 5 - rows)));
    assert!(text.contains("- … "));
}

#[test]
fn max_chars_never_cuts_identity_and_protocol() {
    let store = full_store();
    let (plain, _) = both(&store, &[]);
    let (text, data) = both(&store, &["--max-chars", "100"]);
    assert_eq!(data["budget"]["fits"], false);
    assert_eq!(head(&text), head(&plain));
    assert!(!text.contains("topic-0"));
}
