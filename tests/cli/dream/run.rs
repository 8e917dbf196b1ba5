//! `dream` runs with the fake dreamer: lock, gates, force, failure, timeout, signals, audit.

use std::fs;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{World, data, go, note, now};

#[test]
fn held_lock_exits_75_and_leaves_the_lock_bytes_and_starts_no_dreamer() {
    let w = World::new();
    w.sessions(3);
    let lock = b"999999 0f0e0d0c-0000-4000-8000-000000000000\ngarbage \xff".to_vec();
    fs::write(w.home().join(".dream.lock"), &lock).unwrap();
    let out = go(w.dream(&[]));
    w.norm()
        .bind(|| crate::dream_snapshot!("held_lock", out.transcript()));
    assert_eq!(out.code, 75);
    assert_eq!(fs::read(w.home().join(".dream.lock")).unwrap(), lock);
    assert!(w.dreamer_args().is_none(), "no dreamer started");
    assert!(
        !w.home().join(".git").exists(),
        "no audit repository touched"
    );
    assert!(
        w.last_run_mtime().is_none(),
        "a refused run writes no sidecar"
    );
}

#[test]
fn force_never_bypasses_the_lock() {
    let w = World::new();
    fs::write(w.home().join(".dream.lock"), "1 x").unwrap();
    let out = go(w.dream(&["--force"]));
    assert_eq!(out.code, 75, "{}", out.transcript());
    assert_eq!(out.json()["error"]["code"], "lock_held");
    assert_eq!(fs::read(w.home().join(".dream.lock")).unwrap(), b"1 x");
    assert!(w.dreamer_args().is_none());
}

#[test]
fn closed_gates_skip_quietly_with_reasons_and_no_commit() {
    let w = World::new();
    w.sessions(2);
    let out = go(w.dream(&[]));
    w.norm()
        .bind(|| insta::assert_snapshot!(out.transcript(), @r#"
            exit: 0
            --- stdout
            {"ok":true,"data":{"outcome":"skipped","notes_home":"[ROOT]/notes","gates":{"time":{"ok":true,"reason":"no prior dream","min_hours":24.0},"material":{"ok":false,"reason":"only 2 changed sessions","changed_sessions":2,"min_sessions":3},"forced":false}}}
            --- stderr
            "#));
    assert_eq!(out.code, 0);
    assert!(out.stderr.is_empty());
    assert!(w.dreamer_args().is_none());
    assert!(!w.home().join(".git").exists());
    assert!(!w.home().join(".dream.lock").exists());

    // Time gate: a run one hour ago closes it even with enough material.
    w.sessions(3);
    w.write("notes/.dream.lock.last-run", "earlier");
    fs::File::options()
        .write(true)
        .open(w.home().join(".dream.lock.last-run"))
        .unwrap()
        .set_modified(now() - Duration::from_secs(3600))
        .unwrap();
    let out = go(w.dream(&["--min-sessions", "0"]));
    assert_eq!(out.code, 0);
    let d = data(&out);
    assert_eq!(d["outcome"], "skipped");
    assert_eq!(d["gates"]["time"]["reason"], "last dream is too recent");
    assert_eq!(d["gates"]["time"]["hours_since_last_run"], 1.0);
    assert!(w.log().is_empty());
    // --min-hours 1 opens it again (exactly one hour counts).
    let out = go(w.dream(&["--min-sessions", "0", "--min-hours", "1"]));
    assert_eq!(data(&out)["outcome"], "dreamed", "{}", out.transcript());
}

#[test]
fn a_completed_run_commits_baseline_and_dream_with_the_report() {
    let w = World::new();
    w.sessions(3);
    w.write("notes/human/a.md", &note("alpha", None));
    w.write(
        "notes/human/old.md",
        &note("old", Some("2026-11-01T00:00:00.000+00:00")),
    );
    let mut cmd = w.dream(&[]);
    w.script(
        &mut cmd,
        &[
            ("write", json!({"path": "project/app-0123abcd/MAP.md", "content": "- `b.md` — b\n"})),
            ("edit", json!({"path": "human/a.md", "edits": [{"oldText": "alpha", "newText": "alpha, verified"}]})),
            ("delete", json!({"path": w.home().join("human/old.md")})),
            ("delete", json!({"path": "human/a.md"})),
        ],
    );
    let out = go(cmd);
    w.norm()
        .bind(|| crate::dream_snapshot!("completed_run", out.transcript()));
    assert_eq!(out.code, 0);
    assert_eq!(
        w.log(),
        vec![
            "dream 2026-11-30T12-00-00-000Z".to_string(),
            "baseline 2026-11-30T12-00-00-000Z".to_string()
        ]
    );
    let report = fs::read_to_string(w.home().join("dreams/2026-11-30T12-00-00-000Z.md")).unwrap();
    w.norm()
        .bind(|| crate::dream_snapshot!("completed_report", report));
    assert!(!w.home().join("human/old.md").exists());
    assert!(w.home().join("human/a.md").exists(), "live note kept");
    assert!(!w.home().join(".dream.lock").exists(), "lock released");
    assert_eq!(w.last_run_mtime(), Some(now()), "last run advanced");
    let repo = git2::Repository::open(w.home()).unwrap();
    let dirty: Vec<String> = repo
        .statuses(Some(
            git2::StatusOptions::new()
                .include_ignored(false)
                .include_untracked(true),
        ))
        .unwrap()
        .iter()
        .map(|s| format!("{:?} {}", s.status(), s.path().unwrap()))
        .collect();
    assert!(dirty.is_empty(), "git status clean after a run: {dirty:?}");
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(
        head.author().name().unwrap(),
        "pi-context",
        "fixed identity without git config"
    );
    let args = w.dreamer_args().unwrap();
    assert!(
        args.contains("arg: --tools\narg: read,grep,find,ls,write,edit,delete\n"),
        "{args}"
    );
    assert!(args.contains("arg: -p\n") && args.contains("arg: --no-session\n"));
    assert!(!args.contains("--model"), "automatic model: {args}");
    assert!(args.contains(&format!("cwd {}\n", w.path("work").display())));
    assert!(
        args.contains("Crumple before delete"),
        "the playbook is the task"
    );
    let key = pi_context::notes::project_key(&w.path("work"));
    assert!(
        args.contains(&format!("Scope: project dream for project key `{key}`")),
        "{args}"
    );
    assert!(args.contains(&format!("env PI_NOTES_HOME={}\n", w.home().display())));

    // A second run right away with --force: the tree is clean, so there is no new baseline
    // commit; the new report is a change, so the dream commit exists.
    let out = go(w.dream(&["--force"]));
    assert_eq!(out.code, 0, "{}", out.transcript());
    let d = data(&out);
    assert_eq!(d["stamp"], "2026-11-30T12-00-00-000Z-2");
    assert_eq!(
        w.log().len(),
        3,
        "no new baseline on a clean tree: {:?}",
        w.log()
    );
}

#[test]
fn git_identity_from_config_is_used() {
    let w = World::new();
    w.write(
        ".gitconfig",
        "[user]\n\tname = Ada\n\temail = ada@example.com\n",
    );
    let out = go(w.dream(&["--force"]));
    assert_eq!(out.code, 0, "{}", out.transcript());
    let repo = git2::Repository::open(w.home()).unwrap();
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(head.author().email().unwrap(), "ada@example.com");
}

#[test]
fn failed_dreamer_commits_failed_rolls_back_last_run_and_releases() {
    let w = World::new();
    w.write("notes/.dream.lock.last-run", "two days ago");
    let before = now() - Duration::from_secs(48 * 3600);
    fs::File::options()
        .write(true)
        .open(w.home().join(".dream.lock.last-run"))
        .unwrap()
        .set_modified(before)
        .unwrap();
    let mut cmd = w.dream(&["--force"]);
    cmd.env("FAKE_PI_MODE", "fail");
    w.script(
        &mut cmd,
        &[("write", json!({"path": "human/partial.md", "content": "x"}))],
    );
    let out = go(cmd);
    w.norm()
        .bind(|| crate::dream_snapshot!("failed_dreamer", out.transcript()));
    assert_eq!(out.code, 1);
    assert_eq!(w.log()[0], "dream 2026-11-30T12-00-00-000Z (failed)");
    assert_eq!(w.last_run_mtime(), Some(before), "last run rolled back");
    assert_eq!(
        fs::read_to_string(w.home().join(".dream.lock.last-run")).unwrap(),
        "two days ago"
    );
    assert!(!w.home().join(".dream.lock").exists(), "lock released");
    let report = fs::read_to_string(w.home().join("dreams/2026-11-30T12-00-00-000Z.md")).unwrap();
    assert!(report.starts_with("# Dream 2026-11-30T12-00-00-000Z (failed)\n"));
    assert!(report.contains("Insufficient Balance"));
    assert!(report.contains("- write `human/partial.md` → created"));
}

#[test]
fn an_unreadable_journal_fails_the_run_visibly_instead_of_reporting_no_changes() {
    let w = World::new();
    let mut cmd = w.dream(&["--force"]);
    cmd.env("FAKE_PI_MODE", "badjournal");
    let out = go(cmd);
    assert_eq!(out.code, 1, "{}", out.transcript());
    let v = out.json();
    assert_eq!(v["error"]["code"], "journal_unreadable");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot read the dream journal"),
        "{v}"
    );
    let d = data(&out);
    assert_eq!(d["outcome"], "failed");
    assert_eq!(d["changes"], serde_json::Value::Null, "unknown, not zero");
    assert!(out.stderr.contains("dream: cannot read the dream journal"));
    assert_eq!(w.log()[0], "dream 2026-11-30T12-00-00-000Z (failed)");
    let report = fs::read_to_string(w.home().join("dreams/2026-11-30T12-00-00-000Z.md")).unwrap();
    assert!(
        report.contains("- outcome: failed (journal_unreadable)\n"),
        "{report}"
    );
    assert!(report.contains("## Attempted changes\n\n- unknown: cannot read"));
    assert!(!w.home().join(".dream.lock").exists());
    assert!(
        w.last_run_mtime().is_none(),
        "a failed run rolls the sidecar back"
    );
}

#[test]
fn timeout_ends_the_dreamer_and_records_a_failed_run() {
    let w = World::new();
    let mut cmd = w.dream(&["--force", "--timeout", "1s"]);
    cmd.env("FAKE_PI_MODE", "sleep");
    let started = Instant::now();
    let out = go(cmd);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the dreamer was ended"
    );
    assert_eq!(out.code, 1, "{}", out.transcript());
    assert_eq!(out.json()["error"]["code"], "timeout");
    assert_eq!(w.log()[0], "dream 2026-11-30T12-00-00-000Z (failed)");
    assert!(
        w.last_run_mtime().is_none(),
        "no prior run: the sidecar is removed again"
    );
    assert!(!w.home().join(".dream.lock").exists());
}

#[test]
fn sigterm_ends_the_dreamer_records_a_failed_run_and_releases_the_lock() {
    let w = World::new();
    let mut std_cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pi-context"));
    std_cmd
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", w.root())
        .env("TZ", "UTC")
        .env("PI_CONTEXT_NOW", crate::support::NOW)
        .env("FAKE_PI_ARGS", w.path("fake-args.txt"))
        .env("FAKE_PI_MODE", "sleep")
        .current_dir(w.path("work"))
        .arg("dream")
        .arg("--notes-home")
        .arg(w.home())
        .arg("--pi-bin")
        .arg(super::fake_pi())
        .arg("--force");
    std_cmd.stdout(std::process::Stdio::piped());
    let child = std_cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while w.dreamer_args().is_none() {
        assert!(Instant::now() < deadline, "the dreamer never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(v["error"]["code"], "interrupted");
    assert_eq!(w.log()[0], "dream 2026-11-30T12-00-00-000Z (failed)");
    assert!(!w.home().join(".dream.lock").exists());
    assert!(w.last_run_mtime().is_none());
}

#[test]
fn baseline_failure_starts_no_dreamer_and_releases() {
    let w = World::new();
    w.write("notes/.git", "gitdir: /nowhere\n");
    let out = go(w.dream(&["--force"]));
    assert_eq!(out.code, 1, "{}", out.transcript());
    assert_eq!(out.json()["error"]["code"], "baseline_failed");
    assert!(out.stderr.contains("baseline audit failed"));
    assert!(w.dreamer_args().is_none());
    assert!(!w.home().join(".dream.lock").exists());
    assert!(w.last_run_mtime().is_none());
    assert!(!w.home().join("dreams").exists(), "no report");
}

#[test]
fn dreamer_model_precedence_flag_then_settings_then_automatic() {
    let w = World::new();
    w.write(
        "agent/settings.json",
        r#"{"pi-context": {"dreamer": " global/model "}}"#,
    );
    let out = go(w.dream(&["--force"]));
    assert_eq!(
        data(&out)["dreamer"],
        json!({"model": "global/model", "source": "settings"})
    );
    assert!(
        w.dreamer_args()
            .unwrap()
            .contains("arg: --model\narg: global/model\n")
    );

    w.write(
        "work/.pi/settings.json",
        r#"{"pi-context": {"dreamer": "project/model"}}"#,
    );
    let out = go(w.dream(&["--force"]));
    assert_eq!(data(&out)["dreamer"]["model"], "project/model");

    let out = go(w.dream(&["--force", "--dreamer", "flag/model"]));
    assert_eq!(
        data(&out)["dreamer"],
        json!({"model": "flag/model", "source": "flag"})
    );
    assert!(
        w.dreamer_args()
            .unwrap()
            .contains("arg: --model\narg: flag/model\n")
    );

    w.write(
        "work/.pi/settings.json",
        r#"{"pi-context": {"dreamer": 7}}"#,
    );
    let out = go(w.dream(&["--force"]));
    assert_eq!(out.code, 0, "{}", out.transcript());
    assert_eq!(
        data(&out)["dreamer"],
        json!({"model": null, "source": "automatic"})
    );
    assert_eq!(
        out.stderr.lines().count(),
        1,
        "exactly one warning: {}",
        out.stderr
    );
    assert!(out.stderr.contains("pi-context.dreamer"));
    assert!(!w.dreamer_args().unwrap().contains("--model"));
}

#[test]
fn missing_pi_binary_is_refused_before_any_lock_or_commit() {
    let w = World::new();
    // Through the environment variable this time (the flag is tested everywhere else).
    let mut cmd = crate::support::pi_context(w.root());
    cmd.current_dir(w.path("work"))
        .env("PI_CONTEXT_PI_BIN", "/nonexistent/pi")
        .args(["dream", "--force", "--notes-home"])
        .arg(w.home());
    let out = go(cmd);
    assert_eq!(out.code, 1);
    assert_eq!(out.json()["error"]["code"], "dreamer_unavailable");
    assert!(
        w.log().is_empty(),
        "no baseline or dream commit: {:?}",
        w.log()
    );
    assert!(!w.home().join(".dream.lock").exists());
    assert!(!w.home().join(".git").exists());
}

#[test]
fn usage_errors_exit_2() {
    let w = World::new();
    for bad in [
        &["--timeout", "soon"][..],
        &["--min-hours", "-1"],
        &["--min-sessions", "x"],
    ] {
        let out = go(w.dream(bad));
        assert_eq!(out.code, 2, "{bad:?}: {}", out.transcript());
    }
}

#[test]
fn invoked_inside_the_notes_home_it_is_a_store_wide_dream() {
    let w = World::new();
    let mut cmd = w.dream(&["--force"]);
    cmd.current_dir(w.home());
    let out = go(cmd);
    assert_eq!(out.code, 0, "{}", out.transcript());
    let args = w.dreamer_args().unwrap();
    assert!(args.contains("Scope: store-wide dream"), "{args}");
}
