//! `pi-context sync`: two notes homes on one machine standing in for two machines, syncing
//! through a bare repository (a path) and through `git daemon` on 127.0.0.1 (`git://`).

use std::fs;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Run, pi_context, run};

/// A temp world: homes `a` and `b`, a bare remote `remote.git`.
pub struct World {
    dir: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        let w = World {
            dir: tempfile::tempdir().unwrap(),
        };
        git2::Repository::init_bare(w.remote()).unwrap();
        w
    }
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    pub fn remote(&self) -> PathBuf {
        self.path("remote.git")
    }
    pub fn home(&self, name: &str) -> PathBuf {
        self.path(name)
    }
    pub fn write(&self, home: &str, rel: &str, text: &str) {
        let p = self.home(home).join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    pub fn read(&self, home: &str, rel: &str) -> String {
        fs::read_to_string(self.home(home).join(rel)).unwrap()
    }
    /// `pi-context sync` for `home` against `url`, as host `home`.
    pub fn sync_with(&self, home: &str, url: &str, extra: &[&str]) -> Run {
        let mut cmd = pi_context(self.dir.path());
        cmd.env("PI_CONTEXT_HOST", home)
            .arg("sync")
            .arg("--notes-home")
            .arg(self.home(home))
            .arg("--remote")
            .arg(url)
            .args(extra);
        run(cmd, "")
    }
    pub fn sync(&self, home: &str) -> Run {
        let url = self.remote().display().to_string();
        self.sync_with(home, &url, &[])
    }
}

pub fn note(body: &str) -> String {
    format!(
        "---\norigin: self\ncreatedAt: 2026-11-01T00:00:00.000+00:00\nupdatedAt: 2026-11-01T00:00:00.000+00:00\nlastAccessed: 2026-11-01T00:00:00.000+00:00\naccessCount: 0\n---\n\n{body}"
    )
}

pub fn ok(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.transcript());
    let json = run.json();
    assert_eq!(json["ok"], true, "{}", run.transcript());
    json["data"].clone()
}

const FIVE: &str = "one\ntwo\nthree\nfour\nfive\n";

/// The three basic stories against one remote URL.
fn notes_travel_merge_and_conflict(w: &World, url: &str) {
    w.write("a", "human/plan.md", &note(FIVE));
    w.write("a", "agents/bot/diary.md", &note("day one\n"));
    let first = ok(&w.sync_with("a", url, &[]));
    assert_eq!(first["integration"], "pushed");
    assert_eq!(first["counts"]["local_changes"], 2);

    // A's notes appear on B.
    let got = ok(&w.sync_with("b", url, &[]));
    assert_eq!(got["integration"], "fast_forward");
    assert_eq!(w.read("b", "human/plan.md"), note(FIVE));
    assert_eq!(w.read("b", "agents/bot/diary.md"), note("day one\n"));

    // Different lines of one note: merged.
    w.write(
        "a",
        "human/plan.md",
        &note("ONE (a)\ntwo\nthree\nfour\nfive\n"),
    );
    w.write(
        "b",
        "human/plan.md",
        &note("one\ntwo\nthree\nfour\nFIVE (b)\n"),
    );
    ok(&w.sync_with("a", url, &[]));
    let merged = ok(&w.sync_with("b", url, &[]));
    assert_eq!(merged["integration"], "merged");
    assert_eq!(merged["counts"]["merged"], 1);
    assert_eq!(merged["conflicts"], serde_json::json!([]));
    ok(&w.sync_with("a", url, &[]));
    let both = note("ONE (a)\ntwo\nthree\nfour\nFIVE (b)\n");
    assert_eq!(w.read("a", "human/plan.md"), both);
    assert_eq!(w.read("b", "human/plan.md"), both);

    // The same line: the live note stays local, the other side is a conflict note.
    w.write(
        "a",
        "human/plan.md",
        &note("ONE (a)\ntwo\nthree by a\nfour\nFIVE (b)\n"),
    );
    w.write(
        "b",
        "human/plan.md",
        &note("ONE (a)\ntwo\nthree by b\nfour\nFIVE (b)\n"),
    );
    ok(&w.sync_with("a", url, &[]));
    let clash = ok(&w.sync_with("b", url, &[]));
    assert_eq!(clash["counts"]["conflicts"], 1, "{clash}");
    let conflict = &clash["conflicts"][0];
    assert_eq!(conflict["path"], "human/plan.md");
    assert_eq!(conflict["reason"], "body");
    let conflict_path = conflict["conflict_path"].as_str().unwrap().to_string();
    assert!(
        conflict_path.starts_with("human/plan.conflict-b-") && conflict_path.ends_with(".md"),
        "{conflict_path}"
    );
    let live_b = w.read("b", "human/plan.md");
    assert!(live_b.contains("three by b") && !live_b.contains("three by a"));
    assert!(
        !live_b.contains("<<<<<<<"),
        "no conflict markers in a live note"
    );
    let other = w.read("b", &conflict_path);
    assert!(other.contains("three by a") && other.contains("syncConflictOf: plan.md"));
    // A receives both: nothing lost anywhere.
    ok(&w.sync_with("a", url, &[]));
    assert_eq!(w.read("a", "human/plan.md"), live_b);
    assert_eq!(w.read("a", &conflict_path), other);
}

#[test]
fn two_homes_through_a_bare_repository() {
    let w = World::new();
    let url = w.remote().display().to_string();
    notes_travel_merge_and_conflict(&w, &url);
    // A no-op sync changes nothing and pushes nothing.
    let noop = ok(&w.sync("a"));
    assert_eq!(noop["integration"], "up_to_date");
    assert_eq!(noop["pushed"], false);
}

/// `git daemon` on a free port of 127.0.0.1, killed when dropped.
struct Daemon {
    child: Child,
    port: u16,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // `git daemon` runs `git-daemon` as a child: end the whole process group.
        if let Some(group) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = self.child.wait();
    }
}

fn git_daemon(base: &Path) -> Result<Daemon, String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let child = StdCommand::new("git")
        .arg("daemon")
        .arg("--reuseaddr")
        .arg("--listen=127.0.0.1")
        .arg(format!("--port={port}"))
        .arg(format!("--base-path={}", base.display()))
        .arg("--export-all")
        .arg("--enable=receive-pack")
        .arg(base)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start git daemon: {e}"))?;
    let mut daemon = Daemon { child, port };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(daemon);
        }
        if let Ok(Some(status)) = daemon.child.try_wait() {
            return Err(format!("git daemon exited: {status}"));
        }
        if Instant::now() > deadline {
            return Err("git daemon did not listen within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_homes_through_git_daemon_on_loopback() {
    let w = World::new();
    let daemon = match git_daemon(w.dir.path()) {
        Ok(d) => d,
        Err(reason) => {
            eprintln!("skipped: git daemon unavailable: {reason}");
            return;
        }
    };
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    notes_travel_merge_and_conflict(&w, &url);
    drop(daemon);
    // The same remote, now unreachable: its own exit code and code, nothing changed.
    w.write("a", "human/new.md", &note("offline\n"));
    let offline = w.sync_with("a", &url, &[]);
    assert_eq!(offline.code, 69, "{}", offline.transcript());
    assert_eq!(offline.json()["error"]["code"], "remote_unreachable");
    assert!(!w.home("a").join(".dream.lock").exists());
}

#[test]
fn a_force_pushed_remote_is_refused_until_adopted_and_the_old_line_stays_reachable() {
    let w = World::new();
    w.write("a", "human/keep.md", &note("precious\n"));
    ok(&w.sync("a"));
    let old_tip = ok(&w.sync("b"))["head"].as_str().unwrap().to_string();

    // Someone replaces the remote's history with an unrelated one.
    let stranger = w.path("stranger");
    let repo = git2::Repository::init(&stranger).unwrap();
    fs::write(stranger.join("other.md"), note("rewritten\n")).unwrap();
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("other.md")).unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("x", "x@x").unwrap();
    let c = repo
        .commit(None, &sig, &sig, "rewrite", &tree, &[])
        .unwrap();
    repo.reference("refs/heads/main", c, true, "").unwrap();
    let mut remote = repo
        .remote_anonymous(&w.remote().display().to_string())
        .unwrap();
    remote
        .push(&["+refs/heads/main:refs/heads/main"], None)
        .unwrap();

    let refused = w.sync("a");
    assert_eq!(refused.code, 1, "{}", refused.transcript());
    let err = refused.json()["error"].clone();
    assert_eq!(err["code"], "remote_rewritten");
    assert_eq!(err["details"]["last_synced"], old_tip.as_str());
    assert_eq!(w.read("a", "human/keep.md"), note("precious\n"));
    assert!(!w.home("a").join("other.md").exists());

    let adopted = ok(&w.sync_with("a", &w.remote().display().to_string(), &["--adopt-remote"]));
    let tag = adopted["adopted_tag"].as_str().unwrap().to_string();
    assert!(
        tag.starts_with("refs/tags/pi-context/before-adopt-"),
        "{tag}"
    );
    // Adopting merges this machine's notes into the new line: nothing is deleted.
    assert_eq!(w.read("a", "human/keep.md"), note("precious\n"));
    assert_eq!(w.read("a", "other.md"), note("rewritten\n"));
    let home = git2::Repository::open(w.home("a")).unwrap();
    let tagged = home.find_reference(&tag).unwrap().target().unwrap();
    assert_eq!(tagged.to_string(), old_tip);
    // The remote now has both, and the next sync is ordinary again.
    let again = ok(&w.sync("a"));
    assert_eq!(again["integration"], "up_to_date");
}

#[test]
fn lock_files_temp_files_and_session_homes_stay_out_unless_asked() {
    let w = World::new();
    w.write("a", "human/n.md", &note("x\n"));
    w.write("a", "human/.n.md.abc.tmp", "half written");
    w.write("a", "pi/session/s1/checkpoint.md", &note("session only\n"));
    w.write("a", "human/notes.txt", "not a note");
    fs::write(w.home("a").join(".dream.lock.last-run"), "t").unwrap();
    ok(&w.sync("a"));
    ok(&w.sync("b"));
    assert!(w.home("b").join("human/n.md").exists());
    assert!(!w.home("b").join("human/.n.md.abc.tmp").exists());
    assert!(!w.home("b").join("human/notes.txt").exists());
    assert!(!w.home("b").join(".dream.lock.last-run").exists());
    assert!(!w.home("b").join("pi/session").exists());
    let exclude = fs::read_to_string(w.home("a").join(".git/info/exclude")).unwrap();
    assert!(exclude.contains(".dream.lock*") && exclude.contains(".*.tmp"));

    let url = w.remote().display().to_string();
    ok(&w.sync_with("a", &url, &["--include-sessions"]));
    ok(&w.sync_with("b", &url, &["--include-sessions"]));
    assert_eq!(
        w.read("b", "pi/session/s1/checkpoint.md"),
        note("session only\n")
    );
    // Without the flag again, the session notes stay as they are on both sides.
    ok(&w.sync("a"));
    assert!(w.home("b").join("pi/session/s1/checkpoint.md").exists());

    // A third machine carries the session notes without writing them; when it opts in
    // later they are written, not taken for deletions.
    ok(&w.sync("c"));
    assert!(!w.home("c").join("pi/session").exists());
    ok(&w.sync_with("c", &url, &["--include-sessions"]));
    assert_eq!(
        w.read("c", "pi/session/s1/checkpoint.md"),
        note("session only\n")
    );
    ok(&w.sync_with("a", &url, &["--include-sessions"]));
    assert_eq!(
        w.read("a", "pi/session/s1/checkpoint.md"),
        note("session only\n")
    );
}

#[test]
fn a_held_lock_is_refused_with_75_and_left_alone() {
    let w = World::new();
    w.write("a", "human/n.md", &note("x\n"));
    fs::write(w.home("a").join(".dream.lock"), "1 a-dream").unwrap();
    let held = w.sync("a");
    assert_eq!(held.code, 75, "{}", held.transcript());
    assert_eq!(held.json()["error"]["code"], "lock_held");
    assert_eq!(
        fs::read_to_string(w.home("a").join(".dream.lock")).unwrap(),
        "1 a-dream"
    );
}

#[test]
fn no_remote_is_refused_and_origin_or_the_setting_is_used() {
    let w = World::new();
    w.write("a", "human/n.md", &note("x\n"));
    let mut cmd = pi_context(w.dir.path());
    cmd.env("PI_CONTEXT_HOST", "a")
        .args(["sync", "--notes-home"])
        .arg(w.home("a"));
    let none = run(cmd, "");
    assert_eq!(none.code, 1, "{}", none.transcript());
    assert_eq!(none.json()["error"]["code"], "no_remote");
    assert!(
        !w.home("a").join(".git").exists(),
        "a refusal creates nothing"
    );

    // Pi's settings name the remote.
    let agent = w.path(".pi/agent");
    fs::create_dir_all(&agent).unwrap();
    fs::write(
        agent.join("settings.json"),
        format!(
            r#"{{"pi-context": {{"syncRemote": "{}"}}}}"#,
            w.remote().display()
        ),
    )
    .unwrap();
    let mut cmd = pi_context(w.dir.path());
    cmd.env("PI_CONTEXT_HOST", "a")
        .args(["sync", "--notes-home"])
        .arg(w.home("a"));
    let data = ok(&run(cmd, ""));
    assert_eq!(data["remote"]["url"], w.remote().display().to_string());

    // A Git remote named origin in the home.
    let repo = git2::Repository::open(w.home("b"))
        .or_else(|_| git2::Repository::init(w.home("b")))
        .unwrap();
    repo.remote("origin", &w.remote().display().to_string())
        .unwrap();
    let mut cmd = pi_context(w.dir.path());
    cmd.env("PI_CONTEXT_HOST", "b")
        .args(["sync", "--notes-home"])
        .arg(w.home("b"));
    fs::remove_file(agent.join("settings.json")).unwrap();
    let data = ok(&run(cmd, ""));
    assert_eq!(data["remote"]["name"], "origin");
    assert_eq!(w.read("b", "human/n.md"), note("x\n"));

    let bad = w.sync_with(
        "a",
        &w.remote().display().to_string(),
        &["--branch", "a..b"],
    );
    assert_eq!(bad.code, 2, "{}", bad.transcript());
    let unknown = {
        let mut cmd = pi_context(w.dir.path());
        cmd.args(["sync", "--notes-home"]).arg(w.home("a"));
        run(cmd, "{\"x\":1}")
    };
    assert_eq!(unknown.code, 2);
}

fn notes_update(w: &World, home: &str, address: &str, old: &str, new: &str) -> Run {
    let mut cmd = pi_context(w.dir.path());
    cmd.args(["notes-update", "--notes-home"]).arg(w.home(home));
    let request =
        serde_json::json!({"address": address, "edits": [{"oldText": old, "newText": new}]});
    run(cmd, &request.to_string())
}

#[test]
fn notes_update_appends_running_during_syncs_are_all_kept() {
    let w = World::new();
    w.write("a", "human/log.md", &note("top\nm1\nm2\nm3\nm4\nEND\n"));
    ok(&w.sync("a"));
    ok(&w.sync("b"));
    // The writer keeps appending until the syncing side has finished its rounds (and at least
    // `min_appends` times), so every sync round below overlaps appends however slow the machine.
    let min_appends = 30;
    let sync_rounds = 3;
    let syncs_done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let home = w.home("a");
        let dir = w.dir.path().to_path_buf();
        let syncs_done = std::sync::Arc::clone(&syncs_done);
        std::thread::spawn(move || {
            let mut k = 0;
            while k < min_appends || !syncs_done.load(std::sync::atomic::Ordering::SeqCst) {
                let mut cmd = pi_context(&dir);
                cmd.args(["notes-update", "--notes-home"]).arg(&home);
                let request = serde_json::json!({"address": "@human/log",
                    "edits": [{"oldText": "END", "newText": format!("append {k}\nEND")}]});
                let r = run(cmd, &request.to_string());
                assert_eq!(r.code, 0, "{}", r.transcript());
                k += 1;
            }
            k
        })
    };
    // Meanwhile B keeps changing the top of the note, so A's syncs keep bringing that note in.
    for k in 1..=sync_rounds {
        let top = w.read("b", "human/log.md");
        w.write(
            "b",
            "human/log.md",
            &top.replacen("\n\n", &format!("\n\nb edit {k}\n"), 1),
        );
        ok(&w.sync("b"));
        let during = w.sync("a");
        assert!(
            during.code == 0 || during.code == 75,
            "{}",
            during.transcript()
        );
    }
    syncs_done.store(true, std::sync::atomic::Ordering::SeqCst);
    let appends = writer.join().unwrap();
    ok(&w.sync("a"));
    ok(&w.sync("b"));
    ok(&w.sync("a"));
    for home in ["a", "b"] {
        let text = w.read(home, "human/log.md");
        for k in 0..appends {
            assert!(
                text.contains(&format!("append {k}\n")),
                "{home} lost append {k}:\n{text}"
            );
        }
        assert!(text.contains("b edit 1\n"), "{text}");
    }
    assert_eq!(w.read("a", "human/log.md"), w.read("b", "human/log.md"));
    let _ = notes_update; // the helper also serves the kill test
}

fn fsck(repo: &Path) {
    let out = StdCommand::new("git")
        .arg("-C")
        .arg(repo)
        .args(["fsck", "--full", "--no-progress"])
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git fsck {}: {}{}",
        repo.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn kill_9_at_many_points_of_a_sync_then_a_second_sync_loses_nothing() {
    let w = World::new();
    let n = 150;
    for i in 0..n {
        w.write(
            "a",
            &format!("human/n{i}.md"),
            &note(&format!("top {i}\nmiddle\nmore\nend {i}\n")),
        );
    }
    ok(&w.sync("a"));
    ok(&w.sync("b"));
    // B appends to every note and adds new ones; A edits the top of every note.
    for i in 0..n {
        let t = w.read("b", &format!("human/n{i}.md"));
        w.write("b", &format!("human/n{i}.md"), &format!("{t}b line {i}\n"));
        w.write(
            "b",
            &format!("human/new{i}.md"),
            &note(&format!("new {i}\n")),
        );
        let t = w.read("a", &format!("human/n{i}.md"));
        w.write(
            "a",
            &format!("human/n{i}.md"),
            &t.replace(&format!("top {i}\n"), &format!("top {i} by a\n")),
        );
    }
    ok(&w.sync("b"));
    let url = w.remote().display().to_string();
    // Pseudo-random kill points spread over the run (a fixed sequence: reproducible).
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut killed = 0;
    for _ in 0..8 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(seed % 1200);
        let mut cmd = StdCommand::new(env!("CARGO_BIN_EXE_pi-context"));
        cmd.env_clear()
            .env("HOME", w.dir.path())
            .env("PI_CONTEXT_HOST", "a")
            .args(["sync", "--notes-home"])
            .arg(w.home("a"))
            .args(["--remote", &url])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(delay);
        let was_running = child.try_wait().unwrap().is_none();
        if was_running {
            child.kill().unwrap(); // SIGKILL
            killed += 1;
        }
        child.wait().unwrap();
        let repo = git2::Repository::open(w.home("a")).ok();
        let state = |name: &str| {
            repo.as_ref()
                .and_then(|r| r.find_reference(name).ok())
                .and_then(|r| r.target())
                .map(|t| t.to_string()[..8].to_string())
        };
        eprintln!(
            "kill test: after {delay:?} {}: local {:?} applying {:?} lock {}",
            if was_running { "killed" } else { "finished" },
            state("refs/pi-context/sync/local"),
            state("refs/pi-context/sync/applying"),
            w.home("a").join(".dream.lock").exists()
        );
        // What the README says to do after a crash: remove the lock once no run is left.
        let _ = fs::remove_file(w.home("a").join(".dream.lock"));
        let _ = fs::remove_file(w.remote().join("refs/heads/main.lock"));
    }
    eprintln!("kill test: {killed} of 8 runs killed mid-sync");
    let last = ok(&w.sync("a"));
    assert!(last["head"].is_string());
    fsck(&w.home("a"));
    fsck(&w.remote());
    ok(&w.sync("b"));
    for home in ["a", "b"] {
        for i in 0..n {
            let text = w.read(home, &format!("human/n{i}.md"));
            assert!(
                text.contains(&format!("top {i} by a\n"))
                    && text.contains(&format!("b line {i}\n")),
                "{home} n{i}:\n{text}"
            );
            assert_eq!(
                w.read(home, &format!("human/new{i}.md")),
                note(&format!("new {i}\n"))
            );
        }
    }
}

#[test]
fn conflict_notes_are_listed_reported_by_doctor_and_the_boot_notice_until_crumpled() {
    let w = World::new();
    w.write("a", "human/plan.md", &note("shared\n"));
    ok(&w.sync("a"));
    ok(&w.sync("b"));
    w.write("a", "human/plan.md", &note("from a\n"));
    w.write("b", "human/plan.md", &note("from b\n"));
    ok(&w.sync("a"));
    let clash = ok(&w.sync("b"));
    let conflict = clash["conflicts"][0]["conflict_path"]
        .as_str()
        .unwrap()
        .to_string();
    let address = format!("@human/{}", conflict.strip_prefix("human/").unwrap());

    let list = {
        let mut cmd = pi_context(w.dir.path());
        cmd.args(["notes-list", "--notes-home"]).arg(w.home("b"));
        ok(&run(cmd, "{}"))
    };
    let listed: Vec<&str> = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["address"].as_str().unwrap())
        .collect();
    assert!(listed.contains(&address.as_str()), "{listed:?}");

    let doctor = |home: &str| {
        let mut cmd = pi_context(w.dir.path());
        cmd.args(["doctor", "--notes-home"]).arg(w.home(home));
        run(cmd, "")
    };
    let report = doctor("b");
    assert_eq!(report.code, 1, "{}", report.transcript());
    let data = report.json()["data"].clone();
    assert_eq!(data["issues_by_kind"]["sync_conflict"], 1, "{data}");
    assert_eq!(data["issues"][0]["path"], conflict.as_str());
    assert_eq!(data["sync"]["remotes"][0]["unpushed_commits"], 0);
    assert_eq!(data["sync"]["remotes"][0]["branch"], "main");

    let boot = |home: &str| {
        let mut cmd = pi_context(w.dir.path());
        cmd.args(["boot-render", "--session-id", "s1", "--notes-home"])
            .arg(w.home(home));
        ok(&run(cmd, ""))
    };
    let notice = boot("b")["notice"].as_str().unwrap().to_string();
    assert!(
        notice.contains("1 sync conflict note") && notice.contains(&address),
        "{notice}"
    );

    // Crumpling the conflict note ends the notice and the doctor issue.
    let crumple = {
        let mut cmd = pi_context(w.dir.path());
        cmd.args(["notes-update", "--notes-home"]).arg(w.home("b"));
        run(
            cmd,
            &serde_json::json!({"address": address, "crumpled": true}).to_string(),
        )
    };
    assert_eq!(crumple.code, 0, "{}", crumple.transcript());
    assert_eq!(boot("b")["notice"], Value::Null);
    let report = doctor("b");
    assert_eq!(report.code, 0, "{}", report.transcript());
    w.write("b", "human/offline.md", &note("not pushed yet\n"));
    let offline = w.sync_with("b", "git://127.0.0.1:1/nowhere.git", &[]);
    assert_eq!(offline.code, 69, "{}", offline.transcript());
    // The unreachable remote is not a doctor issue.
    assert_eq!(doctor("b").code, 0);
}

fn cron(w: &World, home: &str, extra: &[&str]) -> Run {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bin/pi-context-sync-cron");
    let mut cmd = assert_cmd::Command::new("/bin/sh");
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", w.dir.path())
        .env("TZ", "UTC")
        .env("PI_CONTEXT_HOST", home)
        .env("PI_CONTEXT_BIN", env!("CARGO_BIN_EXE_pi-context"))
        .env("PI_NOTES_HOME", w.home(home))
        .current_dir(w.dir.path())
        .arg(script)
        .args(extra);
    run(cmd, "")
}

#[test]
fn cron_wrapper_is_quiet_on_sync_conflict_offline_and_lock_and_loud_on_failure() {
    let w = World::new();
    let url = w.remote().display().to_string();
    let log = || fs::read_to_string(w.path(".local/state/pi-context/sync.log")).unwrap_or_default();
    let quiet = |r: &Run, code: i32| {
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (code, "", ""),
            "{}",
            r.transcript()
        )
    };
    w.write("a", "human/n.md", &note("shared\n"));
    quiet(&cron(&w, "a", &["--remote", &url]), 0);
    quiet(&cron(&w, "b", &["--remote", &url]), 0);
    w.write("a", "human/n.md", &note("from a\n"));
    w.write("b", "human/n.md", &note("from b\n"));
    quiet(&cron(&w, "a", &["--remote", &url]), 0);
    // A conflict is logged, not mailed, and the next runs go on syncing.
    quiet(&cron(&w, "b", &["--remote", &url]), 0);
    assert!(log().contains("\"conflicts\":1"), "{}", log());
    w.write("b", "human/later.md", &note("after the conflict\n"));
    quiet(&cron(&w, "b", &["--remote", &url]), 0);
    quiet(&cron(&w, "a", &["--remote", &url]), 0);
    assert!(w.home("a").join("human/later.md").exists());

    quiet(
        &cron(&w, "a", &["--remote", "git://127.0.0.1:1/offline.git"]),
        69,
    );
    assert!(
        log()
            .lines()
            .any(|l| l.ends_with("remote unreachable (git://127.0.0.1:1/offline.git); will retry")),
        "{}",
        log()
    );

    fs::write(w.home("a").join(".dream.lock"), "1 a-dream").unwrap();
    quiet(&cron(&w, "a", &["--remote", &url]), 75);
    let old = fs::File::options()
        .write(true)
        .open(w.home("a").join(".dream.lock"))
        .unwrap();
    old.set_modified(std::time::SystemTime::now() - Duration::from_secs(3 * 86_400))
        .unwrap();
    let hinted = cron(&w, "a", &["--remote", &url]);
    assert_eq!(hinted.code, 75);
    assert!(
        hinted.stderr.contains("more than a day old"),
        "{}",
        hinted.transcript()
    );
    fs::remove_file(w.home("a").join(".dream.lock")).unwrap();

    let failed = cron(&w, "a", &["--branch", "a..b", "--remote", &url]);
    assert_eq!(failed.code, 2);
    assert_eq!(failed.stderr.lines().count(), 1, "{}", failed.transcript());
    assert!(failed.stderr.contains("sync failed (exit 2)"));
}
