//! CLI tests for `dream` and `dream-fs`. `dream` runs against a fake dreamer
//! (`tests/fixtures/dream/fake-pi.sh`, standing in for `pi`: it performs scripted `dream-fs`
//! calls like the dreamer extension would); `e2e` drives the real Pi 1.6.0 with a scripted
//! faux model.

mod cron;
mod e2e;
mod fs;
mod run;

use std::fs as stdfs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use assert_cmd::Command;
use serde_json::Value;

use crate::support::{Run, pi_context, run};

/// The fake dreamer script.
pub fn fake_pi() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dream/fake-pi.sh")
}

/// `PI_CONTEXT_NOW` of every test, as a `SystemTime`.
pub fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH
        + Duration::from_secs(
            chrono::DateTime::parse_from_rfc3339(crate::support::NOW)
                .unwrap()
                .timestamp() as u64,
        )
}

/// A temp world: `<root>/notes` (the notes home), `<root>/work` (the invocation directory),
/// `<root>/agent` (Pi's agent dir), `<root>/outside` (a directory the jail must protect);
/// HOME is `<root>`.
pub struct World {
    pub dir: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        for d in ["notes", "work", "agent", "outside"] {
            stdfs::create_dir_all(dir.path().join(d)).unwrap();
        }
        World { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("notes")
    }

    /// A file path relative to the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        stdfs::create_dir_all(p.parent().unwrap()).unwrap();
        stdfs::write(p, text).unwrap();
    }

    /// `n` session homes, each with one note.
    pub fn sessions(&self, n: usize) {
        for i in 0..n {
            self.write(
                &format!("notes/pi/session/s{i}/log.md"),
                &note("session log", None),
            );
        }
    }

    /// `dream` with the fake dreamer, run from `<root>/work`.
    pub fn dream(&self, extra: &[&str]) -> Command {
        let mut cmd = pi_context(self.root());
        cmd.current_dir(self.path("work"))
            .arg("dream")
            .arg("--notes-home")
            .arg(self.home())
            .arg("--pi-bin")
            .arg(fake_pi())
            .arg("--agent-dir")
            .arg(self.path("agent"))
            .env("FAKE_PI_ARGS", self.path("fake-args.txt"))
            .args(extra);
        cmd
    }

    /// Script the fake dreamer's `dream-fs` calls.
    pub fn script(&self, cmd: &mut Command, calls: &[(&str, Value)]) {
        let text: String = calls
            .iter()
            .map(|(op, req)| format!("{op}\t{req}\n"))
            .collect();
        stdfs::write(self.path("calls.tsv"), text).unwrap();
        cmd.env("FAKE_PI_CALLS", self.path("calls.tsv"));
    }

    /// Whether the fake dreamer was started, and with what.
    pub fn dreamer_args(&self) -> Option<String> {
        stdfs::read_to_string(self.path("fake-args.txt")).ok()
    }

    /// Snapshots name the notes root `[ROOT]` and every commit id `[COMMIT]`.
    pub fn norm(&self) -> crate::support::Normaliser {
        crate::support::Normaliser::new()
            .path(self.root(), "[ROOT]")
            .commits()
    }

    /// `git log` of the notes home: one `subject` line per commit, newest first.
    pub fn log(&self) -> Vec<String> {
        let Ok(repo) = git2::Repository::open(self.home()) else {
            return Vec::new();
        };
        let mut walk = repo.revwalk().unwrap();
        if walk.push_head().is_err() {
            return Vec::new();
        }
        walk.map(|id| {
            let c = repo.find_commit(id.unwrap()).unwrap();
            c.summary().unwrap().unwrap_or_default().to_string()
        })
        .collect()
    }

    pub fn last_run_mtime(&self) -> Option<SystemTime> {
        stdfs::metadata(self.home().join(".dream.lock.last-run"))
            .ok()
            .map(|m| m.modified().unwrap())
    }
}

/// A note file with valid frontmatter, crumpled when `crumpled_at` is given.
pub fn note(body: &str, crumpled_at: Option<&str>) -> String {
    let crumpled = crumpled_at
        .map(|at| format!("crumpledAt: {at}\n"))
        .unwrap_or_default();
    format!(
        "---\norigin: self\ncreatedAt: 2026-11-01T10:00:00.000+00:00\nupdatedAt: 2026-11-01T10:00:00.000+00:00\nlastAccessed: 2026-11-01T10:00:00.000+00:00\naccessCount: 1\n{crumpled}---\n\n{body}\n"
    )
}

/// Run and return the outcome.
pub fn go(cmd: Command) -> Run {
    run(cmd, "")
}

/// Every file under `dir` with its bytes (sorted), for "nothing changed" checks.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let mut entries: Vec<_> = stdfs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().display().to_string();
            let ft = stdfs::symlink_metadata(&p).unwrap().file_type();
            if ft.is_dir() {
                out.push((format!("{rel}/"), Vec::new()));
                walk(base, &p, out);
            } else if ft.is_symlink() {
                out.push((
                    format!("{rel} -> {}", stdfs::read_link(&p).unwrap().display()),
                    Vec::new(),
                ));
            } else {
                out.push((rel, stdfs::read(&p).unwrap()));
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

pub fn data(run: &Run) -> Value {
    let v = run.json();
    if v["ok"] == Value::Bool(true) {
        v["data"].clone()
    } else {
        v["error"]["details"].clone()
    }
}

/// Assert a snapshot under `tests/cli/snapshots/` (the suite's one snapshot directory).
#[macro_export]
macro_rules! dream_snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => true}, {
            insta::assert_snapshot!($name, $value);
        })
    };
}
