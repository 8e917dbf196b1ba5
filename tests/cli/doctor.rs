//! CLI tests for `pi-context doctor`: a clean store exits 0, every kind of issue is found by
//! its own test (each fails if its check is removed), JSON and text snapshots, usage errors,
//! and the read-only proof (bytes, mtimes and listings identical before and after).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::support::{Normaliser, Run, pi_context, run};

const TS: &str = "2026-11-01T09:30:00.000+00:00";
const LOCK: &str = "4242 0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0";
const PROJECT: &str = "project/demo-1a2b3c4d";

/// A note exactly as the notes store writes it, with `extra` metadata lines appended.
fn note_with(extra: &str, body: &str) -> String {
    format!(
        "---\norigin: self\ncreatedAt: {TS}\nupdatedAt: {TS}\nlastAccessed: {TS}\naccessCount: 0\n{extra}---\n\n{body}"
    )
}

fn note(body: &str) -> String {
    note_with("", body)
}

fn put(home: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = home.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// A store with every home, maps, cross-references of every resolvable form, unknown and
/// legacy metadata, and every dream artifact doctor must ignore: clean.
fn clean_store(home: &Path) {
    put(
        home,
        "human/prefs.md",
        note("Prefers short notes; see `@human/deep/rule.md`.\n"),
    );
    put(
        home,
        "human/MAP.md",
        note("- `prefs.md`: preferences\n- `deep/rule.md`: a nested rule\n"),
    );
    put(
        home,
        "human/deep/rule.md",
        note_with("status: stale\ncreated_at: 2020\n", "rule\n"),
    );
    put(
        home,
        &format!("{PROJECT}/design.md"),
        note("See `@human/prefs.md`, `@agents/ann/lesson.md`, `@models/m-1/quirk.md`.\n"),
    );
    put(
        home,
        &format!("{PROJECT}/MAP.md"),
        note("- `design.md`: the design\n- `@project/design.md`: again\n- `logs/day.md`\n"),
    );
    put(
        home,
        &format!("{PROJECT}/logs/day.md"),
        note(
            "Examples are skipped: `@human/<topic>.md`, `@human/*.md`, `notes/x.md` outside a map.\n",
        ),
    );
    put(
        home,
        "agents/ann/lesson.md",
        note("I am `@self/lesson.md`; `@model/quirk.md` too.\n"),
    );
    put(
        home,
        "models/m-1/quirk.md",
        note_with(&format!("crumpledAt: {TS}\n"), "crumpled\n"),
    );
    put(
        home,
        "pi/session/s1/todo.md",
        note_with(
            "project: demo-1a2b3c4d\n",
            "bare `x.md` outside a map is prose\n",
        ),
    );
    put(home, "dreams/2026-11-01.md", "report, not a note");
    put(home, ".git/HEAD", "ref: refs/heads/main\n");
    put(home, "snapshots/old.json", "{}");
    put(home, "trash/old.md", "no frontmatter: legacy, ignored");
    put(home, ".dream.lock.last-run", "2026-11-01T00:00:00.000Z");
}

fn doctor(home: &Path, stdin: &str) -> Run {
    doctor_with(home, &[], stdin)
}

fn doctor_with(home: &Path, extra: &[&str], stdin: &str) -> Run {
    let mut cmd = pi_context(home.parent().unwrap());
    cmd.arg("doctor").arg("--notes-home").arg(home).args(extra);
    run(cmd, stdin)
}

/// A fresh temp dir holding `notes/` (the home) built by `setup`.
fn store(setup: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("notes");
    fs::create_dir(&home).unwrap();
    setup(&home);
    (dir, home)
}

/// `(path, kind)` of every issue, after checking the envelope and the exit code agree.
fn issues(run: &Run) -> Vec<(String, String)> {
    let value = run.json();
    assert_eq!(value["ok"], json!(true), "{}", run.stdout);
    let list = value["data"]["issues"].as_array().unwrap();
    let clean = value["data"]["clean"].as_bool().unwrap();
    assert_eq!(clean, list.is_empty());
    assert_eq!(run.code, if clean { 0 } else { 1 }, "{}", run.stdout);
    assert_eq!(value["data"]["counts"]["issues"], json!(list.len()));
    list.iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap().to_string(),
                i["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(p, k)| (p.to_string(), k.to_string()))
        .collect()
}

/// A clean store plus one defect yields exactly `expected`.
fn assert_defect(defect: impl FnOnce(&Path), expected: &[(&str, &str)]) -> Run {
    let (_dir, home) = store(|home| {
        clean_store(home);
        defect(home);
    });
    let out = doctor(&home, "");
    assert_eq!(issues(&out), pairs(expected), "{}", out.stdout);
    out
}

fn message_of(run: &Run, index: usize) -> String {
    run.json()["data"]["issues"][index]["message"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Snapshots name the temp directory `[TMP]`.
fn norm(dir: &Path) -> Normaliser {
    Normaliser::new().path(dir, "[TMP]")
}

// ---- clean store ------------------------------------------------------------------------

#[test]
fn clean_store_exits_zero_json() {
    let (dir, home) = store(clean_store);
    let out = doctor(&home, "");
    assert_eq!(issues(&out), vec![]);
    let data = &out.json()["data"];
    assert_eq!(data["counts"]["notes"], json!(9));
    assert_eq!(data["counts"]["maps"], json!(2));
    norm(dir.path()).bind(|| insta::assert_snapshot!(out.transcript(), @r#"
        exit: 0
        --- stdout
        {"ok":true,"data":{"home":"[TMP]/notes","clean":true,"counts":{"notes":9,"maps":2,"addresses_checked":9,"addresses_skipped":2,"issues":0},"issues_by_kind":{},"issues":[],"omitted_issues":0}}
        --- stderr
        "#));
}

#[test]
fn clean_store_text() {
    let (dir, home) = store(clean_store);
    let out = doctor_with(&home, &["--format", "text"], "{}");
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("doctor: OK ("));
    norm(dir.path()).bind(|| {
        insta::assert_snapshot!(out.transcript(), @r#"
        exit: 0
        --- stdout
        doctor: OK ([TMP]/notes): 9 notes (2 maps), 9 addresses checked, 2 skipped (@self/, @model/)
        --- stderr
        "#)
    });
}

#[test]
fn empty_home_is_clean() {
    let (_dir, home) = store(|_| {});
    assert_eq!(issues(&doctor(&home, "")), vec![]);
}

// ---- the home itself ----------------------------------------------------------------------

#[test]
fn home_missing_is_reported_and_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("absent");
    let out = doctor(&home, "");
    assert_eq!(issues(&out), pairs(&[(".", "home_missing")]));
    assert!(!home.exists(), "doctor created the home");
    let out = doctor_with(&home, &["--format", "text"], "");
    norm(dir.path()).bind(|| insta::assert_snapshot!(out.transcript(), @r#"
        exit: 1
        --- stdout
        .: cannot inspect: the notes home does not exist (doctor does not create it)
        doctor: 1 issue ([TMP]/absent): 0 notes (0 maps), 0 addresses checked, 0 skipped (@self/, @model/)
        --- stderr
        "#));
    assert!(!home.exists());
}

#[test]
fn default_home_is_resolved_from_env_then_home_dir() {
    let dir = tempfile::tempdir().unwrap();
    let env_home = dir.path().join("env-notes");
    fs::create_dir(&env_home).unwrap();
    put(&env_home, "stray.txt", "x");
    let mut cmd = pi_context(dir.path());
    cmd.arg("doctor").env("PI_NOTES_HOME", &env_home);
    assert_eq!(
        issues(&run(cmd, "")),
        pairs(&[("stray.txt", "unexpected_root_entry")])
    );
    // An empty PI_NOTES_HOME is ignored: ~/.agents/notes, missing here, and left missing.
    let mut cmd = pi_context(dir.path());
    cmd.arg("doctor").env("PI_NOTES_HOME", "");
    let out = run(cmd, "");
    assert_eq!(issues(&out), pairs(&[(".", "home_missing")]));
    assert_eq!(
        out.json()["data"]["home"],
        json!(dir.path().join(".agents/notes").display().to_string())
    );
    assert!(!dir.path().join(".agents").exists());
}

#[test]
fn home_not_directory_file_and_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    fs::write(&file, "x").unwrap();
    assert_eq!(
        issues(&doctor(&file, "")),
        pairs(&[(".", "home_not_directory")])
    );
    let (_real_dir, real) = store(clean_store);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(
        issues(&doctor(&link, "")),
        pairs(&[(".", "home_not_directory")])
    );
}

// ---- root layout ----------------------------------------------------------------------------

#[test]
fn lock_present_when_well_formed() {
    let out = assert_defect(
        |home| put(home, ".dream.lock", LOCK),
        &[(".dream.lock", "lock_present")],
    );
    assert_eq!(
        message_of(&out, 0),
        "lock present; verify no dream is running before manual removal; liveness not inferred"
    );
}

#[test]
fn lock_malformed_content_or_type() {
    let out = assert_defect(
        |home| put(home, ".dream.lock", "12 not-a-uuid"),
        &[(".dream.lock", "lock_malformed")],
    );
    assert!(message_of(&out, 0).starts_with("malformed lock"));
    assert_defect(
        |home| fs::create_dir(home.join(".dream.lock")).unwrap(),
        &[(".dream.lock", "lock_malformed")],
    );
}

#[test]
fn unexpected_root_entries_including_legacy_homes() {
    assert_defect(
        |home| {
            put(home, "global/x.md", note(""));
            put(home, "personal/y.md", note(""));
            put(home, "README.md", note(""));
        },
        &[
            ("README.md", "unexpected_root_entry"),
            ("global", "unexpected_root_entry"),
            ("personal", "unexpected_root_entry"),
        ],
    );
}

#[test]
fn homes_and_owner_homes_must_be_directories() {
    let (_dir, home) = store(|home| {
        put(home, "human", "a file");
        put(home, "agents/ann", "a file");
        put(home, "pi/session/s1", "a file");
        put(home, "project", "a file");
    });
    assert_eq!(
        issues(&doctor(&home, "")),
        pairs(&[
            ("agents/ann", "not_a_directory"),
            ("human", "not_a_directory"),
            ("pi/session/s1", "not_a_directory"),
            ("project", "not_a_directory"),
        ])
    );
}

#[test]
fn invalid_agent_and_model_slugs() {
    let out = assert_defect(
        |home| {
            put(home, "agents/Ann_B/x.md", note(""));
            put(
                home,
                "models/gpt--4/x.md",
                note_with("", "`@human/gone.md`\n"),
            );
        },
        &[
            ("agents/Ann_B", "invalid_slug"),
            ("models/gpt--4", "invalid_slug"),
            // The badly named home is still walked.
            ("models/gpt--4/x.md", "target_missing"),
        ],
    );
    assert_eq!(
        message_of(&out, 0),
        "invalid agent slug; expected [a-z0-9-]"
    );
    assert_eq!(
        message_of(&out, 1),
        "invalid model slug; expected [a-z0-9-]"
    );
}

#[test]
fn invalid_project_key_is_reported_and_walked() {
    assert_defect(
        |home| {
            put(home, "project/nohash/a.md", "no frontmatter");
            put(home, "project/demo-1A2B3C4D/b.md", note(""));
        },
        &[
            ("project/demo-1A2B3C4D", "invalid_project_key"),
            ("project/nohash", "invalid_project_key"),
            ("project/nohash/a.md", "frontmatter_missing"),
        ],
    );
}

#[test]
fn unexpected_pi_entries() {
    assert_defect(
        |home| {
            put(home, "pi/agent/settings.json", "{}");
            put(home, "pi/notes.md", note(""));
        },
        &[
            ("pi/agent", "unexpected_pi_entry"),
            ("pi/notes.md", "unexpected_pi_entry"),
        ],
    );
}

// ---- inside a home --------------------------------------------------------------------------

#[test]
fn symlinks_inside_homes_are_not_followed() {
    assert_defect(
        |home| {
            std::os::unix::fs::symlink(home.join("human/prefs.md"), home.join("human/alias.md"))
                .unwrap();
            std::os::unix::fs::symlink("/", home.join("human/escape")).unwrap();
            // A reference through the symlink resolves (existence follows symlinks).
            put(home, "human/refs.md", note("`@human/alias.md`\n"));
        },
        &[("human/alias.md", "symlink"), ("human/escape", "symlink")],
    );
}

#[test]
fn unexpected_files_inside_homes() {
    assert_defect(
        |home| {
            put(home, "human/notes.txt", "x");
            put(home, "agents/ann/.lesson.md.abc123.tmp", "torn write");
        },
        &[
            ("agents/ann/.lesson.md.abc123.tmp", "stale_temp_file"),
            ("human/notes.txt", "unexpected_file"),
        ],
    );
}

#[test]
fn not_utf8_notes() {
    assert_defect(
        |home| {
            put(
                home,
                "human/latin1.md",
                b"---\norigin: self\n---\ncaf\xe9\n",
            )
        },
        &[("human/latin1.md", "not_utf8")],
    );
}

#[test]
fn note_too_large() {
    // The store's limit is on the whole file: this body fits, the file does not.
    let body = "x".repeat(1_000_000 - note("").len() + 1);
    assert_defect(
        |home| put(home, "human/big.md", note(&body)),
        &[("human/big.md", "note_too_large")],
    );
    assert_defect(|home| put(home, "human/big.md", note(&body[1..])), &[]);
    // Size is checked whatever else is wrong with the file.
    assert_defect(
        |home| put(home, "human/big.md", "x".repeat(1_000_001)),
        &[
            ("human/big.md", "note_too_large"),
            ("human/big.md", "frontmatter_missing"),
        ],
    );
}

// ---- frontmatter ----------------------------------------------------------------------------

#[test]
fn frontmatter_missing_unclosed_or_after_a_bom() {
    let out = assert_defect(
        |home| {
            put(home, "human/a-none.md", "just text\n");
            put(home, "human/b-unclosed.md", "---\norigin: self\n\nbody\n");
            put(home, "human/c-bom.md", format!("\u{feff}{}", note("")));
        },
        &[
            ("human/a-none.md", "frontmatter_missing"),
            ("human/b-unclosed.md", "frontmatter_missing"),
            ("human/c-bom.md", "frontmatter_missing"),
        ],
    );
    assert_eq!(
        message_of(&out, 0),
        "missing or unclosed frontmatter; add a valid metadata block"
    );
}

#[test]
fn crlf_frontmatter_is_accepted() {
    assert_defect(
        |home| put(home, "human/crlf.md", note("body\n").replace('\n', "\r\n")),
        &[],
    );
}

#[test]
fn duplicate_keys() {
    let out = assert_defect(
        |home| {
            put(
                home,
                "human/dup.md",
                note_with("origin: user\norigin: self\n", ""),
            )
        },
        &[
            ("human/dup.md", "duplicate_key"),
            ("human/dup.md", "duplicate_key"),
        ],
    );
    assert_eq!(
        message_of(&out, 0),
        "duplicate metadata key origin; keep one value"
    );
    assert_eq!(out.json()["data"]["issues"][1]["line"], json!(8));
}

#[test]
fn invalid_origin() {
    assert_defect(
        |home| {
            put(
                home,
                "human/o.md",
                note("").replace("origin: self", "origin: robot"),
            )
        },
        &[("human/o.md", "invalid_origin")],
    );
    assert_defect(
        |home| put(home, "human/o.md", note("").replace("origin: self\n", "")),
        &[("human/o.md", "invalid_origin")],
    );
}

#[test]
fn invalid_access_count() {
    assert_defect(
        |home| {
            put(
                home,
                "human/c.md",
                note("").replace("accessCount: 0", "accessCount: 1.5"),
            )
        },
        &[("human/c.md", "invalid_access_count")],
    );
}

#[test]
fn invalid_timestamps() {
    let out = assert_defect(
        |home| {
            put(
                home,
                "human/bad.md",
                note_with("crumpledAt: yesterday\n", ""),
            );
            put(
                home,
                "human/missing.md",
                note("").replace(&format!("lastAccessed: {TS}\n"), ""),
            );
        },
        &[
            ("human/bad.md", "invalid_timestamp"),
            ("human/missing.md", "invalid_timestamp"),
        ],
    );
    assert_eq!(
        message_of(&out, 0),
        "missing/invalid crumpledAt; use an ISO timestamp"
    );
    assert_eq!(
        out.json()["data"]["issues"][1]["key"],
        json!("lastAccessed")
    );
}

#[test]
fn obsolete_scope() {
    assert_defect(
        |home| put(home, "human/s.md", note_with("scope: human\n", "")),
        &[("human/s.md", "obsolete_scope")],
    );
}

// ---- addresses ------------------------------------------------------------------------------

#[test]
fn invalid_addresses() {
    let out = assert_defect(
        |home| {
            put(
                home,
                "human/refs.md",
                note("`@global/x.md` and `@agents/Bad/x.md`\n"),
            );
            put(home, "human/MAP.md", note("- `../escape.md`\n"));
        },
        &[
            ("human/MAP.md", "invalid_address"),
            ("human/refs.md", "invalid_address"),
            ("human/refs.md", "invalid_address"),
        ],
    );
    assert!(message_of(&out, 0).starts_with("../escape.md: invalid address; "));
    assert_eq!(
        out.json()["data"]["issues"][1]["address"],
        json!("@global/x.md")
    );
}

#[test]
fn project_context_unavailable_outside_project_homes() {
    assert_defect(
        |home| {
            put(home, "human/p.md", note("`@project/design.md`\n"));
            // A session note without a well-formed `project` key has no project context.
            put(home, "pi/session/s2/p.md", note("`@project/design.md`\n"));
            put(
                home,
                "pi/session/s2/q.md",
                note_with("project: ../../human\n", "`@project/design.md`\n"),
            );
        },
        &[
            ("human/p.md", "project_context_unavailable"),
            ("pi/session/s2/p.md", "project_context_unavailable"),
            ("pi/session/s2/q.md", "project_context_unavailable"),
        ],
    );
}

#[test]
fn session_notes_resolve_project_addresses_through_their_project_key() {
    assert_defect(
        |home| {
            put(
                home,
                "pi/session/s2/a.md",
                note_with("project: demo-1a2b3c4d\n", "`@project/design.md`\n"),
            );
            put(
                home,
                "pi/session/s2/b.md",
                note_with("project: other-00000000\n", "`@project/design.md`\n"),
            );
        },
        &[("pi/session/s2/b.md", "target_missing")],
    );
}

#[test]
fn target_missing_in_bodies_and_maps() {
    let out = assert_defect(
        |home| {
            put(
                home,
                &format!("{PROJECT}/logs/refs.md"),
                note("`@human/gone.md` twice: `@human/gone.md`; `@project/nope.md`\n"),
            );
            // Bare map entries resolve at the home's root, not beside a nested map.
            put(
                home,
                &format!("{PROJECT}/logs/MAP.md"),
                note("- `day.md`\n"),
            );
        },
        &[
            (&format!("{PROJECT}/logs/MAP.md"), "target_missing"),
            (&format!("{PROJECT}/logs/refs.md"), "target_missing"),
            (&format!("{PROJECT}/logs/refs.md"), "target_missing"),
        ],
    );
    assert_eq!(
        message_of(&out, 1),
        "@human/gone.md: target missing; update or remove the reference"
    );
    assert_eq!(out.json()["data"]["issues"][1]["line"], json!(9));
}

// ---- output forms and requests --------------------------------------------------------------

/// One store with an issue of most kinds, for the JSON, text and both snapshots.
fn messy_store(home: &Path) {
    clean_store(home);
    put(home, ".dream.lock", LOCK);
    put(home, "global/old.md", note(""));
    put(home, "agents/Bad/x.md", note(""));
    put(home, "project/nohash/a.md", "no frontmatter");
    put(home, "pi/agent/x", "");
    put(home, "human/notes.txt", "x");
    put(
        home,
        "human/bad.md",
        note_with("crumpledAt: yesterday\nscope: human\n", ""),
    );
    put(home, "human/dup.md", note_with("origin: user\n", ""));
    put(
        home,
        "human/refs.md",
        note("`@global/x.md` `@project/x.md` `@human/gone.md`\n"),
    );
    std::os::unix::fs::symlink("/", home.join("human/escape")).unwrap();
}

#[test]
fn messy_store_json_snapshot() {
    let (dir, home) = store(messy_store);
    let out = doctor(&home, "");
    assert_eq!(out.code, 1);
    let pretty = serde_json::to_string_pretty(&out.json()).unwrap();
    let transcript = format!("exit: {}\n{pretty}\n--- stderr\n{}", out.code, out.stderr);
    norm(dir.path()).bind(|| insta::assert_snapshot!("messy_json", transcript));
}

#[test]
fn messy_store_text_snapshot() {
    let (dir, home) = store(messy_store);
    let out = doctor_with(&home, &["--format", "text"], "");
    assert_eq!(out.code, 1);
    norm(dir.path()).bind(|| insta::assert_snapshot!("messy_text", out.transcript()));
}

#[test]
fn format_both_carries_the_same_text() {
    let (_dir, home) = store(messy_store);
    let both = doctor_with(&home, &["--format", "both"], "").json();
    let text = doctor_with(&home, &["--format", "text"], "");
    assert_eq!(both["ok"], json!(true));
    assert_eq!(
        both["text"].as_str().unwrap(),
        text.stdout.trim_end_matches('\n')
    );
    let issues = both["data"]["issues"].as_array().unwrap();
    assert_eq!(text.stdout.lines().count(), issues.len() + 1);
}

#[test]
fn many_issues_are_bounded_unless_all_issues_is_requested() {
    let (_dir, home) = store(|home| {
        for i in 0..600 {
            put(home, &format!("human/broken-{i:04}.md"), "no frontmatter");
        }
    });
    let bounded = doctor(&home, "");
    let data = &bounded.json()["data"];
    assert_eq!(bounded.code, 1);
    assert!(bounded.stdout.len() <= 32 * 1024 + 1);
    let listed = data["issues"].as_array().unwrap().len();
    assert!(listed > 0 && listed < 600);
    assert_eq!(data["omitted_issues"], json!(600 - listed));
    assert_eq!(data["counts"]["issues"], json!(600));
    assert_eq!(data["issues_by_kind"], json!({"frontmatter_missing": 600}));

    let all = doctor(&home, r#"{"all_issues":true}"#);
    assert_eq!(all.code, 1);
    let data = &all.json()["data"];
    assert_eq!(data["issues"].as_array().unwrap().len(), 600);
    assert_eq!(data["omitted_issues"], json!(0));
}

#[test]
fn usage_errors_exit_two() {
    let (dir, home) = store(clean_store);
    let malformed = doctor(&home, "{not json");
    assert_eq!(malformed.code, 2);
    assert_eq!(malformed.json()["error"]["code"], json!("invalid_request"));
    let unknown = doctor(&home, r#"{"repair":true}"#);
    assert_eq!(unknown.code, 2);
    norm(dir.path()).bind(|| insta::assert_snapshot!(unknown.transcript(), @r#"
        exit: 2
        --- stdout
        {"ok":false,"error":{"code":"invalid_request","message":"invalid request: unknown field `repair`, expected `all_issues` at line 1 column 9"}}
        --- stderr
        "#));
    let wrong_type = doctor(&home, r#"{"all_issues":"yes"}"#);
    assert_eq!(wrong_type.code, 2);
    let bad_flag = doctor_with(&home, &["--fix"], "");
    assert_eq!(bad_flag.code, 2);
}

// ---- read-only proof ------------------------------------------------------------------------

/// Every entry under `root` (symlinks not followed): kind, bytes (files and link targets) and
/// mtime, plus each directory's listing through its entries' paths.
fn tree_state(root: &Path) -> BTreeMap<PathBuf, (String, Vec<u8>, SystemTime)> {
    fn visit(path: &Path, out: &mut BTreeMap<PathBuf, (String, Vec<u8>, SystemTime)>) {
        let meta = fs::symlink_metadata(path).unwrap();
        let mtime = meta.modified().unwrap();
        let (kind, bytes) = if meta.file_type().is_symlink() {
            (
                "symlink",
                fs::read_link(path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes(),
            )
        } else if meta.is_dir() {
            for entry in fs::read_dir(path).unwrap() {
                visit(&entry.unwrap().path(), out);
            }
            ("dir", Vec::new())
        } else {
            ("file", fs::read(path).unwrap())
        };
        out.insert(path.to_path_buf(), (kind.to_string(), bytes, mtime));
    }
    let mut out = BTreeMap::new();
    visit(root, &mut out);
    out
}

#[test]
fn doctor_changes_nothing_on_disk() {
    for setup in [clean_store as fn(&Path), messy_store] {
        let (dir, home) = store(setup);
        let before = tree_state(dir.path());
        for format in ["json", "text", "both"] {
            let out = doctor_with(&home, &["--format", format], r#"{"all_issues":true}"#);
            assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
        }
        let after = tree_state(dir.path());
        assert_eq!(before.len(), after.len());
        assert!(before == after, "doctor changed the tree");
    }
    // A home holding only `human` still holds only `human`.
    let (dir, home) = store(|home| fs::create_dir(home.join("human")).unwrap());
    let before = tree_state(dir.path());
    assert_eq!(issues(&doctor(&home, "")), vec![]);
    assert_eq!(tree_state(dir.path()), before);
}

#[test]
fn doctor_output_is_deterministic() {
    let (_dir, home) = store(messy_store);
    let first = doctor(&home, "");
    let second = doctor(&home, "");
    assert_eq!(first.stdout, second.stdout);
    let value: Value = first.json();
    assert_eq!(value["data"]["clean"], json!(false));
}

// ---- agreement with the notes store ---------------------------------------------------------

/// What the notes commands write, in every home (crumpled and read notes too), is clean.
#[test]
fn notes_written_by_the_store_are_clean() {
    let (dir, home) = store(|_| {});
    let notes = |verb: &str, request: Value| {
        let mut cmd = pi_context(dir.path());
        cmd.arg(verb)
            .arg("--notes-home")
            .arg(&home)
            .args(["--session-id", "s1", "--project-key", "demo-1a2b3c4d"])
            .args(["--agent", "ann", "--model", "prov/M-1"]);
        let out = run(cmd, &request.to_string());
        assert_eq!(out.code, 0, "{verb}: {}", out.stdout);
    };
    for (address, content) in [
        ("todo", "session note, see `@project/plan.md`"),
        ("@project/plan", "plan, see `@human/style.md` and `todo.md`"),
        ("@project/MAP", "- `plan.md`: the plan"),
        ("@human/style", "short"),
        ("@self/lesson", "see `@self/lesson.md`"),
        ("@model/quirk", "see `@models/m-1/quirk.md`"),
    ] {
        notes(
            "notes-write",
            json!({"address": address, "content": content}),
        );
    }
    notes("notes-read", json!({"address": "@human/style"}));
    notes(
        "notes-update",
        json!({"address": "@model/quirk", "crumpled": true}),
    );
    let out = doctor(&home, "");
    assert_eq!(issues(&out), vec![], "{}", out.stdout);
    let counts = &out.json()["data"]["counts"];
    assert_eq!(counts["notes"], json!(6));
    assert_eq!(counts["addresses_checked"], json!(4));
    assert_eq!(counts["addresses_skipped"], json!(1));
}
