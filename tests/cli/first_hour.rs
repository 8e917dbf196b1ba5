//! What a new user meets in the first hour (issue "a user's first hour"): honest dates for
//! hand-written notes, one date grammar shared by the store and `doctor`, `~` in
//! `PI_NOTES_HOME`, words that read right in the singular, and an internal failure printed in
//! the chosen format.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::support::{Normaliser, Run, pi_context, run};

/// A notes home with hand-written notes (as a human or another tool leaves them).
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn notes(&self) -> std::path::PathBuf {
        self.dir.path().join("notes")
    }

    /// Write `human/<name>` with `text` and set its modification time to `mtime` (seconds
    /// after the epoch).
    fn hand_write(&self, name: &str, text: &str, mtime: u64) {
        let path = self.notes().join("human").join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        let file = fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(mtime))
            .unwrap();
    }

    fn call(&self, format: &str, verb: &str, request: &str) -> Run {
        let mut cmd = pi_context(self.dir.path());
        cmd.args(["--format", format, verb, "--notes-home"])
            .arg(self.notes());
        if verb.starts_with("notes-") {
            cmd.args(["--project-key", "demo-1a2b3c4d"]);
        }
        run(cmd, request)
    }

    fn data(&self, verb: &str, request: Value) -> Value {
        let out = self.call("json", verb, &request.to_string());
        // doctor exits 1 when it finds issues; its envelope is still ok:true.
        assert!(out.code == 0 || verb == "doctor", "{verb}: {}", out.stdout);
        assert_eq!(out.json()["ok"], true, "{verb}: {}", out.stdout);
        out.json()["data"].clone()
    }

    /// Snapshots name the temp directory `[TMP]`.
    fn norm(&self) -> Normaliser {
        Normaliser::new().path(self.dir.path(), "[TMP]")
    }

    fn text(&self, verb: &str, request: &str) -> String {
        let out = self.call("text", verb, request);
        out.stdout
    }
}

/// 2026-05-05T10:00:00Z.
const MTIME: u64 = 1_777_975_200;
const MTIME_TEXT: &str = "2026-05-05T10:00:00.000+00:00";

#[test]
fn notes_without_a_readable_updated_at_are_dated_by_their_file_never_1970() {
    let home = Home::new();
    home.hand_write("bare.md", "no frontmatter at all, needle", MTIME);
    home.hand_write(
        "dated.md",
        "---\norigin: user\nupdatedAt: 2026-01-01\n---\n\nneedle",
        MTIME,
    );
    home.hand_write(
        "epoch.md",
        "---\nupdatedAt: 1600000000000\n---\n\nneedle",
        MTIME,
    );
    let listed = home.data("notes-list", json!({}));
    let dates: Vec<(String, String)> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["address"].as_str().unwrap().to_string(),
                f["updated_at"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        dates,
        [
            ("@human/bare.md".to_string(), MTIME_TEXT.to_string()),
            ("@human/epoch.md".to_string(), MTIME_TEXT.to_string()),
            (
                "@human/dated.md".to_string(),
                "2026-01-01T00:00:00.000+00:00".to_string()
            ),
        ]
    );
    let found = home.data("notes-search", json!({"query": "needle"}));
    for file in found["files"].as_array().unwrap() {
        let updated = file["updated_at"].as_str().unwrap();
        assert!(!updated.starts_with("1970"), "{file}");
    }
    home.norm().bind(|| {
        insta::assert_snapshot!(home.text("notes-list", ""), @r#"
    3 notes
    - @human/bare.md | updated 2026-05-05T10:00:00.000+00:00
    - @human/epoch.md | updated 2026-05-05T10:00:00.000+00:00
    - @human/dated.md | updated 2026-01-01T00:00:00.000+00:00
    "#)
    });
}

#[test]
fn the_store_and_doctor_share_one_date_grammar() {
    let home = Home::new();
    // Valid for doctor (a date alone) and therefore kept by the store.
    home.hand_write(
        "day.md",
        "---\norigin: user\ncreatedAt: 2026-01-01\nupdatedAt: 2026-01-02T08:30\n\
         lastAccessed: 2026-01-03 09:00:00Z\naccessCount: 0\n---\n\nbody",
        MTIME,
    );
    // Epoch milliseconds: not a date for either.
    home.hand_write(
        "ms.md",
        "---\norigin: user\ncreatedAt: 1600000000000\nupdatedAt: 2026-01-01\n\
         lastAccessed: 2026-01-01\naccessCount: 0\n---\n\nbody",
        MTIME,
    );
    let doctor = home.data("doctor", json!({}));
    let flagged: Vec<(String, String)> = doctor["issues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "invalid_timestamp")
        .map(|i| {
            (
                i["path"].as_str().unwrap_or_default().to_string(),
                i["key"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        flagged,
        [("human/ms.md".to_string(), "createdAt".to_string())],
        "{doctor}"
    );

    let read = home.data("notes-read", json!({"address": "@human/day.md"}));
    assert_eq!(
        read["metadata"]["created_at"],
        "2026-01-01T00:00:00.000+00:00"
    );
    // A read leaves the file alone (its access bump waits in the journal); the next write
    // folds the bump in and rewrites the stamps in the one canonical form.
    home.data(
        "notes-update",
        json!({"address": "@human/day.md", "origin": "user"}),
    );
    let on_disk = fs::read_to_string(home.notes().join("human/day.md")).unwrap();
    assert!(
        on_disk.contains("createdAt: 2026-01-01T00:00:00.000+00:00\n")
            && on_disk.contains("accessCount: 1\n"),
        "the update rewrote createdAt and folded the read:\n{on_disk}"
    );
    assert!(on_disk.contains("updatedAt: 2026-01-02T08:30:00.000+00:00\n"));

    let read = home.data("notes-read", json!({"address": "@human/ms.md"}));
    assert_eq!(
        read["metadata"]["created_at"], MTIME_TEXT,
        "a createdAt that is not a date takes the file time, not now"
    );
}

#[test]
fn a_tilde_in_pi_notes_home_is_the_home_directory() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = pi_context(home.path());
    cmd.env("PI_NOTES_HOME", "~/my-notes")
        .args(["notes-write", "--project-key", "demo-1a2b3c4d"]);
    let out = run(cmd, r#"{"address":"@human/a.md","content":"x"}"#);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(home.path().join("my-notes/human/a.md").is_file());
    assert!(
        !home.path().join("~").exists(),
        "a directory literally named ~ was created in the working directory"
    );
    let mut cmd = pi_context(home.path());
    cmd.env("PI_NOTES_HOME", "~/my-notes")
        .args(["--format", "text", "doctor"]);
    let out = run(cmd, "");
    assert!(
        out.stdout
            .contains(&format!("({})", home.path().join("my-notes").display())),
        "{}",
        out.stdout
    );
}

#[test]
fn words_read_right_in_the_singular() {
    let home = Home::new();
    home.hand_write(
        "old.md",
        "---\norigin: user\ncrumpledAt: 2026-01-01T00:00:00.000+00:00\n---\n\nold stuff",
        MTIME,
    );
    home.hand_write("live.md", "live needle", MTIME);
    let list = home.text("notes-list", "");
    assert!(
        list.contains("1 crumpled note hidden; pass wastebasket to list it"),
        "{list}"
    );
    let search = home.text("notes-search", r#"{"query":"needle"}"#);
    assert!(
        search.contains("1 crumpled note not searched; pass wastebasket to search it"),
        "{search}"
    );
    assert!(search.starts_with("1 file\n"), "{search}");

    let session =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/history/reset-windows.jsonl");
    let mut cmd = pi_context(home.dir.path());
    cmd.args(["--format", "text", "history-list", "--session"])
        .arg(&session);
    let out = run(cmd, r#"{"limit":5}"#);
    assert!(
        out.stdout.contains("seq 39 | folded 1 event | bash 1"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("1 events"), "{}", out.stdout);

    let mut cmd = pi_context(home.dir.path());
    cmd.args(["--format", "text", "history-list", "--session"])
        .arg(&session);
    let out = run(cmd, r#"{"limit":0}"#);
    assert_eq!(out.code, 2);
    assert!(
        out.stdout.starts_with("error: invalid_request: ")
            && out.stdout.matches("invalid request").count() == 0,
        "{}",
        out.stdout
    );
    home.norm().bind(|| {
        insta::assert_snapshot!(list + "\n---\n" + &search, @r#"
    1 note
    - @human/live.md | updated 2026-05-05T10:00:00.000+00:00
    1 crumpled note hidden; pass wastebasket to list it

    ---
    1 file
    - @human/live.md | updated 2026-05-05T10:00:00.000+00:00 | 1 match
      line 1 at offset_chars 5: live needle
    1 crumpled note not searched; pass wastebasket to search it
    "#)
    });
}

#[test]
fn an_internal_failure_prints_the_chosen_format() {
    // The dream's scratch directory cannot be created under a TMPDIR that does not exist: an
    // internal failure that reaches the top level.
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    let transcripts: Vec<(String, Run)> = ["json", "text"]
        .iter()
        .map(|format| {
            let mut cmd = pi_context(dir.path());
            cmd.env("TMPDIR", dir.path().join("missing"))
                .env("PI_CONTEXT_PI_BIN", "/bin/true")
                .args(["--format", format, "dream", "--force", "--notes-home"])
                .arg(&notes);
            (format.to_string(), run(cmd, ""))
        })
        .collect();
    for (format, out) in &transcripts {
        assert_eq!(out.code, 70, "{format}: {}", out.transcript());
        assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
    }
    let json_out = &transcripts[0].1;
    assert_eq!(json_out.json()["error"]["code"], "internal");
    let text_out = &transcripts[1].1;
    assert!(
        text_out.stdout.starts_with("error: internal: "),
        "{}",
        text_out.stdout
    );
    assert!(
        !text_out.stdout.contains("\"ok\""),
        "text mode printed the JSON envelope: {}",
        text_out.stdout
    );
}
