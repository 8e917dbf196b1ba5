//! The notes metadata cache at the CLI boundary: a corrupt, truncated, altered or foreign cache
//! file is never trusted (the answer is the uncached one, and the cache is rebuilt), and a cache
//! directory that cannot be written means working without it (same answers, and `notes-read`
//! then bumps the note file itself).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::support::{pi_context, run};

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let env = Env {
            dir: tempfile::tempdir().unwrap(),
        };
        for (address, content, origin) in [
            ("@human/style", "prefers short answers", "user"),
            ("@self/lesson", "run the tests first", "self"),
            ("@project/plan", "ship the cache", "self"),
            ("todo", "measure", "self"),
            ("@model/quirk", "likes lists", "self"),
        ] {
            let out = env.call(
                "notes-write",
                &[],
                &json!({"address": address, "content": content, "origin": origin}).to_string(),
                None,
            );
            assert_eq!(out.code, 0, "{}", out.stdout);
        }
        env
    }

    fn notes(&self) -> PathBuf {
        self.dir.path().join("notes")
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    fn call(
        &self,
        verb: &str,
        extra: &[&str],
        request: &str,
        cache: Option<&Path>,
    ) -> crate::support::Run {
        let mut cmd = pi_context(self.dir.path());
        cmd.env(
            "PI_CONTEXT_CACHE_DIR",
            cache.map_or_else(|| self.cache(), Path::to_path_buf),
        )
        .args([verb, "--notes-home"])
        .arg(self.notes())
        .args([
            "--session-id",
            "s1",
            "--project-key",
            "demo-1a2b3c4d",
            "--agent",
            "ann",
            "--model",
            "m",
        ])
        .args(extra);
        run(cmd, request)
    }

    /// stdout of list (live and wastebasket) and boot, with the cache directory `cache`.
    fn answers(&self, extra: &[&str], cache: Option<&Path>) -> Vec<String> {
        let mut out = Vec::new();
        for request in [
            "{}",
            r#"{"wastebasket":true}"#,
            r#"{"pattern":"@human/**"}"#,
        ] {
            let run = self.call("notes-list", extra, request, cache);
            assert_eq!(run.code, 0, "{}", run.stdout);
            out.push(run.stdout);
        }
        let run = self.call("boot-render", extra, "", cache);
        assert_eq!(run.code, 0, "{}", run.stdout);
        out.push(run.stdout);
        out
    }

    fn cache_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        for entry in fs::read_dir(self.cache().join("notes")).unwrap() {
            let homes = entry.unwrap().path().join("homes");
            if let Ok(list) = fs::read_dir(homes) {
                files.extend(list.map(|e| e.unwrap().path()));
            }
        }
        files.sort();
        files
    }

    /// Make every cache file old enough for its entries to be trusted.
    fn age_cache(&self) {
        for file in self.cache_files() {
            fs::File::options()
                .write(true)
                .open(&file)
                .unwrap()
                .set_modified(SystemTime::now() + Duration::from_secs(3600))
                .unwrap();
        }
    }
}

#[test]
fn corrupt_altered_truncated_and_foreign_caches_are_rebuilt_never_trusted() {
    let env = Env::new();
    let truth = env.answers(&["--no-cache"], None);
    assert_eq!(env.answers(&[], None), truth, "first run fills the cache");
    let files = env.cache_files();
    assert_eq!(files.len(), 5, "one cache file per home: {files:?}");
    env.age_cache();
    assert_eq!(env.answers(&[], None), truth, "answered from the cache");

    // A second store whose cache files are valid, but for another notes root.
    let other = Env::new();
    other.answers(&[], None);
    let foreign = other.cache_files();

    type Damage = fn(&[u8], &[u8]) -> Vec<u8>;
    let damages: [(&str, Damage); 5] = [
        // Same length, would change every note's date if it were believed.
        // Same length, every note's dates a year later: believed, it would change every answer.
        ("altered dates", |bytes, _| {
            let now = chrono::DateTime::parse_from_rfc3339(crate::support::NOW).unwrap();
            let year = 365 * 86_400;
            let mut out = bytes.to_vec();
            for (from, to) in [
                (now.timestamp(), now.timestamp() + year),
                (now.timestamp_millis(), now.timestamp_millis() + year * 1000),
            ] {
                let (from, to) = (from.to_le_bytes(), to.to_le_bytes());
                let mut at = 0;
                while let Some(i) = out[at..].windows(8).position(|w| w == from) {
                    out[at + i..at + i + 8].copy_from_slice(&to);
                    at += i + 8;
                }
            }
            out
        }),
        ("truncated", |bytes, _| bytes[..bytes.len() / 2].to_vec()),
        ("garbage", |bytes, _| vec![0xA5; bytes.len()]),
        ("empty", |_, _| Vec::new()),
        ("foreign root", |_, foreign| foreign.to_vec()),
    ];
    for (what, damage) in damages {
        for (file, foreign_file) in files.iter().zip(&foreign) {
            let bytes = fs::read(file).unwrap();
            let damaged = damage(&bytes, &fs::read(foreign_file).unwrap());
            assert_ne!(damaged, bytes, "{what}");
            fs::write(file, &damaged).unwrap();
        }
        env.age_cache();
        assert_eq!(env.answers(&[], None), truth, "{what}");
        for file in &files {
            assert!(
                fs::read(file).unwrap().starts_with(b"PICTXNMC"),
                "{what}: {} was rebuilt",
                file.display()
            );
        }
        env.age_cache();
        assert_eq!(
            env.answers(&[], None),
            truth,
            "{what}: from the rebuilt cache"
        );
    }
}

#[test]
fn an_unwritable_cache_directory_means_working_without_it() {
    let env = Env::new();
    let truth = env.answers(&["--no-cache"], None);
    // A cache directory below a regular file cannot be created, not even by root.
    let blocker = env.dir.path().join("not-a-dir");
    fs::write(&blocker, "x").unwrap();
    let unwritable = blocker.join("cache");
    assert_eq!(env.answers(&[], Some(&unwritable)), truth);
    // notes-read falls back to bumping the note file itself.
    let out = env.call(
        "notes-read",
        &[],
        r#"{"address":"@human/style"}"#,
        Some(&unwritable),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let raw = fs::read_to_string(env.notes().join("human/style.md")).unwrap();
    assert!(raw.contains("accessCount: 1"), "{raw}");
    // A cache file that cannot be replaced (a directory in its place) is only not saved.
    env.answers(&[], None);
    for file in env.cache_files() {
        fs::remove_file(&file).unwrap();
        fs::create_dir(&file).unwrap();
    }
    assert_eq!(env.answers(&[], None), truth);
}

/// A home with more directories than the soft open-file limit: every note is listed and
/// searched (the walk holds a handle per directory with files still to read, so the
/// binary raises its soft limit to the hard one). Fails without that: the home shows as
/// unavailable.
#[test]
fn a_home_with_more_directories_than_the_soft_open_file_limit_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    let dirs = 300;
    for i in 0..dirs {
        let sub = notes.join("human").join(format!("t{i:03}"));
        fs::create_dir_all(&sub).unwrap();
        fs::write(
            sub.join("n.md"),
            format!(
                "---\norigin: self\ncreatedAt: 2026-01-01T00:00:00.000Z\nupdatedAt: 2026-01-01T00:00:00.000Z\n---\n\nneedle {i}\n"
            ),
        )
        .unwrap();
    }
    let bin = assert_cmd::cargo::cargo_bin("pi-context");
    let call = |verb: &str, request: &str, cache: &[&str]| {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c")
            .arg("ulimit -S -n 64 && exec \"$@\"")
            .arg("sh")
            .arg(&bin)
            .arg(verb)
            .args(cache)
            .arg("--notes-home")
            .arg(&notes)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("PI_CONTEXT_CACHE_DIR", dir.path().join("cache"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(request.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{verb}: {:?}", out);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    // Cold, warm (the cache written by the first call) and without the cache.
    let counted = |answer: &serde_json::Value| {
        assert_eq!(answer["data"]["homes_unavailable"], json!([]), "{answer}");
        answer["data"]["files"].as_array().unwrap().len() as u64
            + answer["data"]["more"].as_u64().unwrap()
    };
    for cache in [&["--no-cache"][..], &[], &[]] {
        let list = call("notes-list", r#"{"limit": 1000}"#, cache);
        assert_eq!(counted(&list), dirs as u64, "notes-list {cache:?}");
        // notes-search reads every file and has no cache flag.
        let search = call("notes-search", r#"{"query": "needle", "limit": 1000}"#, &[]);
        assert_eq!(counted(&search), dirs as u64, "notes-search {cache:?}");
    }
}
