//! End to end with the real Pi 1.6.0 CLI (`extension/node_modules/.bin/pi`, installed by
//! `scripts/test`) and a scripted faux model: the dreamer crumples then deletes one note,
//! edits another, is refused once, and writes the MAP; the notes home's Git log shows the
//! baseline and the dream commit with the report; `doctor` finds the store clean before and
//! after.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{World, data, go, note};
use crate::support::{pi_context, run};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The real pi and its Node 22, or a clear failure saying how to get them.
fn pi_bin_dir() -> PathBuf {
    let bin = repo().join("extension/node_modules/.bin");
    assert!(
        bin.join("pi").exists() && bin.join("node").exists(),
        "the real Pi 1.6.0 is not installed at {}: run `(cd extension && npm ci)` \
         (scripts/test does this before cargo test)",
        bin.display()
    );
    bin
}

fn doctor(w: &World) -> crate::support::Run {
    let mut cmd = pi_context(w.root());
    cmd.args(["doctor", "--notes-home"]).arg(w.home());
    run(cmd, "")
}

#[test]
fn real_pi_dreamer_crumples_deletes_edits_is_refused_and_is_audited() {
    let bin = pi_bin_dir();
    let w = World::new();
    w.sessions(3);
    w.write("notes/human/keep.md", &note("Indentation: Use tabs.", None));
    w.write(
        "notes/human/old.md",
        &note("Indentation: tabs, Makefiles too.", None),
    );
    w.write("notes/human/live.md", &note("A live note.", None));
    let clean = doctor(&w);
    assert_eq!(clean.code, 0, "doctor before: {}", clean.transcript());

    // `pi` as the dream launches it, plus the test-only faux provider (offline).
    let wrapper = w.path("pi-faux");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' --offline -e '{}' \"$@\"\n",
            bin.join("pi").display(),
            repo()
                .join("tests/fixtures/dream/faux-provider.ts")
                .display()
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();

    let mut cmd = pi_context(w.root());
    cmd.current_dir(w.path("work"))
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("PI_OFFLINE", "1")
        .env("PI_TELEMETRY", "0")
        .env(
            "PI_FAUX_SCRIPT",
            repo().join("tests/fixtures/dream/e2e-script.json"),
        )
        .args([
            "dream",
            "--dreamer",
            "faux/faux-1",
            "--timeout",
            "120s",
            "--notes-home",
        ])
        .arg(w.home())
        .arg("--pi-bin")
        .arg(&wrapper)
        .arg("--agent-dir")
        .arg(w.path("agent"));
    let out = go(cmd);
    assert_eq!(out.code, 0, "{}", out.transcript());
    let d = data(&out);
    assert_eq!(d["outcome"], "dreamed");
    assert_eq!(
        d["changes"],
        serde_json::json!({"attempted": 5, "applied": 4, "refused": 1, "written": 1, "edited": 2, "deleted": 1})
    );

    assert!(
        !w.home().join("human/old.md").exists(),
        "crumpled, then deleted"
    );
    assert!(
        fs::read_to_string(w.home().join("human/keep.md"))
            .unwrap()
            .contains("Use tabs (also in Makefiles).")
    );
    assert!(
        w.home().join("human/live.md").exists(),
        "the refused delete changed nothing"
    );

    let report_path = w.home().join("dreams/2026-11-30T12-00-00-000Z.md");
    let report = fs::read_to_string(&report_path).unwrap();
    w.norm()
        .bind(|| crate::dream_snapshot!("e2e_report", report));

    // git log: baseline then dream, and the dream commit carries the report and the changes.
    assert_eq!(
        w.log(),
        vec![
            "dream 2026-11-30T12-00-00-000Z".to_string(),
            "baseline 2026-11-30T12-00-00-000Z".to_string()
        ]
    );
    let repo = git2::Repository::open(w.home()).unwrap();
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    let diff = repo
        .diff_tree_to_tree(
            Some(&head.parent(0).unwrap().tree().unwrap()),
            Some(&head.tree().unwrap()),
            None,
        )
        .unwrap();
    let mut changed: Vec<String> = diff
        .deltas()
        .map(|delta| {
            format!(
                "{:?} {}",
                delta.status(),
                delta
                    .new_file()
                    .path()
                    .or(delta.old_file().path())
                    .unwrap()
                    .display()
            )
        })
        .collect();
    changed.sort();
    assert_eq!(
        changed,
        vec![
            "Added dreams/2026-11-30T12-00-00-000Z.md",
            "Added human/MAP.md",
            "Deleted human/old.md",
            "Modified human/keep.md",
        ]
    );
    assert!(!w.home().join(".dream.lock").exists());

    let after = doctor(&w);
    assert_eq!(after.code, 0, "doctor after: {}", after.transcript());
}
