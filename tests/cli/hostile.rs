//! Hostile input at the CLI boundary (issue: containment by construction): bounded and
//! well-shaped requests, glob patterns that cannot panic, over-long path segments, symlinked
//! homes, check-then-use races, stale temp files, and a fuzz smoke test over every subcommand.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{Run, args_of, check_envelope, pi_context, run};

/// A scratch directory with a notes home inside it (`notes/`) and room for "outside" files.
struct Scratch {
    dir: TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let scratch = Scratch {
            dir: tempfile::tempdir().unwrap(),
        };
        fs::create_dir_all(scratch.notes()).unwrap();
        scratch
    }

    fn notes(&self) -> PathBuf {
        self.dir.path().join("notes")
    }

    #[allow(dead_code)]
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A notes command with a full identity.
    fn command(&self, verb: &str) -> assert_cmd::Command {
        let mut cmd = pi_context(self.dir.path());
        cmd.arg(verb);
        match verb {
            "dream-fs" | "doctor" | "budget-check" => {}
            _ => {
                cmd.args(["--session-id", "s1", "--project-key", "demo-1a2b3c4d"]);
                cmd.args(["--agent", "ann", "--model", "gpt"]);
            }
        }
        if verb.starts_with("notes-") || verb == "boot-render" || verb == "doctor" {
            cmd.arg("--notes-home").arg(self.notes());
        }
        cmd
    }

    fn call(&self, verb: &str, stdin: impl AsRef<[u8]>) -> Run {
        let mut cmd = self.command(verb);
        let args = args_of(&cmd);
        let output = cmd.write_stdin(stdin.as_ref().to_vec()).output().unwrap();
        let run = Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        check_envelope(&args, &run.stdout);
        run
    }

    fn dream_fs(&self, op: &str, request: Value) -> Run {
        let mut cmd = pi_context(self.dir.path());
        cmd.args(["dream-fs", op, "--notes-home"]).arg(self.notes());
        run(cmd, &request.to_string())
    }
}

/// `(exit code, error code)` of a run.
fn outcome(out: &Run) -> (i32, String) {
    let code = out.json()["error"]["code"]
        .as_str()
        .unwrap_or("ok")
        .to_owned();
    (out.code, code)
}

fn refused(out: &Run, exit: i32, code: &str) {
    assert_eq!(
        outcome(out),
        (exit, code.to_owned()),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
}

/// Every regular file and symlink under `dir`, with its bytes (links: their target).
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn visit(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.push((path, target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                out.push((path.clone(), Vec::new()));
                visit(&path, out);
            } else {
                out.push((path.clone(), fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    visit(dir, &mut out);
    out.sort();
    out
}

// ----- 4. requests: bounded, objects only, clear messages -------------------------------------

#[test]
fn oversized_stdin_is_too_large_without_reading_it_all() {
    let s = Scratch::new();
    // One byte over the 16 MiB cap: refused before any decoding.
    let mut big = br#"{"address":"@human/x","content":""#.to_vec();
    big.resize(16 * 1024 * 1024 + 1, b'a');
    let out = s.call("notes-write", &big);
    refused(&out, 1, "too_large");
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("16777216")
    );
    assert!(tree(&s.notes()).is_empty());
    // A 1,000,000-byte note whose every byte needs escaping is still a valid request.
    let content: String = "\u{1}".repeat(999_000);
    let request = json!({"address": "@human/x", "content": content}).to_string();
    assert!(request.len() > 5_000_000);
    let out = s.call("notes-write", &request);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn only_a_json_object_is_a_request() {
    let s = Scratch::new();
    for (verb, stdin) in [
        ("notes-write", r#"["@human/x","t"]"#),
        ("notes-list", "[]"),
        ("doctor", "[]"),
        ("notes-search", r#""needle""#),
        ("budget-check", "3"),
        ("boot-render", "null"),
    ] {
        let out = s.call(verb, stdin);
        refused(&out, 2, "invalid_request");
        let message = out.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains("must be one JSON object"),
            "{verb}: {message}"
        );
    }
    assert!(tree(&s.notes()).is_empty(), "nothing written");
    let out = s.dream_fs("write", json!(["human/x.md", "t"]));
    refused(&out, 2, "invalid_request");
    assert!(tree(&s.notes()).is_empty(), "nothing written");
}

#[test]
fn a_utf8_bom_before_the_request_is_accepted() {
    let s = Scratch::new();
    let out = s.call(
        "notes-write",
        "\u{feff}{\"address\":\"@human/bom\",\"content\":\"x\"}",
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(s.notes().join("human/bom.md").is_file());
    let out = s.call("notes-list", "\u{feff}");
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn type_errors_name_the_field_and_a_json_type_not_rust_internals() {
    let s = Scratch::new();
    for (verb, stdin, field, expected) in [
        (
            "notes-list",
            r#"{"limit":-1}"#,
            "limit",
            "a non-negative integer",
        ),
        (
            "notes-list",
            r#"{"wastebasket":"yes"}"#,
            "wastebasket",
            "a boolean",
        ),
        (
            "notes-update",
            r#"{"address":"@human/x","edits":[3]}"#,
            "edits[0]",
            "an object",
        ),
        (
            "notes-update",
            r#"{"address":"@human/x","edits":{}}"#,
            "edits",
            "an array",
        ),
    ] {
        let out = s.call(verb, stdin);
        refused(&out, 2, "invalid_request");
        let message = out.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains(&format!("`{field}`")) && message.contains(expected),
            "{verb} {stdin}: {message}"
        );
        for rust in ["u64", "struct", "Request", "sequence", "usize"] {
            assert!(!message.contains(rust), "{verb} {stdin}: {message}");
        }
    }
    let out = s.call("notes-read", [b'{', 0xff, b'}']);
    refused(&out, 2, "invalid_request");
    assert!(out.stdout.contains("not valid UTF-8"), "{}", out.stdout);
}

#[test]
fn search_query_shapes_are_invalid_requests_and_empty_strings_invalid_queries() {
    let s = Scratch::new();
    for query in [
        json!([]),
        json!([{"n": 1}]),
        json!(5),
        json!(null),
        json!([""]),
    ] {
        let out = s.call("notes-search", json!({"query": query}).to_string());
        if query == json!([""]) {
            refused(&out, 1, "invalid_query");
        } else {
            refused(&out, 2, "invalid_request");
        }
    }
    refused(
        &s.call("notes-search", r#"{"query":""}"#),
        1,
        "invalid_query",
    );
}

#[test]
fn a_terminal_on_stdin_gets_one_line_saying_what_is_awaited() {
    use clap::Parser;
    use pi_context::cli::{Cli, Ctx, Format, Io, run as run_cli};
    let s = Scratch::new();
    let cli = Cli::try_parse_from([
        "pi-context",
        "notes-list",
        "--notes-home",
        s.notes().to_str().unwrap(),
        "--project-key",
        "k",
    ])
    .unwrap();
    let ctx = Ctx {
        env: Default::default(),
        cwd: s.dir.path().to_path_buf(),
        now: chrono::DateTime::parse_from_rfc3339(crate::support::NOW).unwrap(),
        format: Format::Json,
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut stdin: &[u8] = b"";
    let mut io = Io {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
        stderr_is_terminal: true,
        stdin_is_terminal: true,
    };
    run_cli(cli, &ctx, &mut io).unwrap();
    let stderr = String::from_utf8(stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("JSON request on stdin"), "{stderr}");
    // Not a terminal (every other test): nothing on stderr.
    assert!(s.call("notes-list", "").stderr.is_empty());
}

// ----- 3. glob patterns never panic -----------------------------------------------------------

#[test]
fn huge_or_explosive_glob_patterns_are_refused_not_panics() {
    let s = Scratch::new();
    let patterns = [
        "*".repeat(30_000),
        "**/".repeat(12_000),
        "a".repeat(400_000),
        "é".repeat(300_000),
        "*".repeat(2048),
        "*a".repeat(1024),
    ];
    for pattern in &patterns {
        for (verb, request) in [
            ("notes-list", json!({"pattern": pattern})),
            ("notes-search", json!({"pattern": pattern, "query": "x"})),
        ] {
            let out = s.call(verb, request.to_string());
            let (exit, code) = outcome(&out);
            assert!(
                (exit, code.as_str()) == (1, "invalid_pattern") || exit == 0,
                "{verb} pattern of {} bytes: {}",
                pattern.len(),
                out.stdout
            );
            if pattern.len() > 2048 {
                assert_eq!(code, "invalid_pattern");
            }
        }
    }
}

// ----- 5. caller errors get caller codes ------------------------------------------------------

#[test]
fn over_long_path_segments_are_invalid_addresses_up_front() {
    let s = Scratch::new();
    let long = "a".repeat(300);
    let out = s.call(
        "notes-write",
        json!({"address": format!("@human/{long}"), "content": "x"}).to_string(),
    );
    refused(&out, 1, "invalid_address");
    assert!(out.stdout.contains("255"), "{}", out.stdout);
    let out = s.call(
        "notes-read",
        json!({"address": format!("@human/{long}")}).to_string(),
    );
    refused(&out, 1, "invalid_address");
    // 253 bytes + ".md" is 256: too long once the extension is added.
    let out = s.call(
        "notes-write",
        json!({"address": format!("@human/d/{}", "b".repeat(253)), "content": "x"}).to_string(),
    );
    refused(&out, 1, "invalid_address");
    // A 600-byte segment is over the whole-path cap too: too_large, home or no home.
    let out = s.call(
        "notes-read",
        json!({"address": format!("@human/{}", "c".repeat(600))}).to_string(),
    );
    refused(&out, 1, "too_large");
    let out = s.dream_fs(
        "write",
        json!({"path": format!("human/{long}.md"), "content": "x"}),
    );
    refused(&out, 1, "invalid_path");
    assert!(tree(&s.notes()).is_empty(), "nothing created");
}

// ----- 1. listings, boot, doctor and gates never read through a symlinked home ---------------

/// Every home and namespace directory that may be a symlink, as (link path under the notes
/// root, the label listings report).
const SYMLINKABLE: &[(&str, &str)] = &[
    ("human", "@human"),
    ("agents", "@agents/ann"),
    ("agents/ann", "@agents/ann"),
    ("models/gpt", "@models/gpt"),
    ("project/demo-1a2b3c4d", "@project"),
    ("pi", "session"),
    ("pi/session/s1", "session"),
];

#[test]
fn a_symlinked_home_or_namespace_is_never_read_through() {
    for (link, label) in SYMLINKABLE {
        let s = Scratch::new();
        let outside = s.path("outside");
        fs::create_dir_all(&outside).unwrap();
        // Whatever the link stands for, the outside holds a note that would be found there.
        let note =
            "---\norigin: user\nupdatedAt: 2026-01-01T00:00:00.000+00:00\n---\n\nTOPSECRET\n";
        fs::write(outside.join("a.md"), note).unwrap();
        fs::write(outside.join("MAP.md"), note).unwrap();
        for sub in ["ann", "s1", "session/s1"] {
            fs::create_dir_all(outside.join(sub)).unwrap();
            fs::write(outside.join(sub).join("a.md"), note).unwrap();
            fs::write(outside.join(sub).join("MAP.md"), note).unwrap();
        }
        let at = s.notes().join(link);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &at).unwrap();
        let before = tree(&outside);

        let listed = s.call("notes-list", "{}");
        assert_eq!(listed.code, 0, "{link}: {}", listed.stdout);
        let data = &listed.json()["data"];
        assert_eq!(data["files"], json!([]), "{link}: {}", listed.stdout);
        assert!(
            data["homes_unavailable"]
                .as_array()
                .unwrap()
                .contains(&json!(label)),
            "{link}: {}",
            listed.stdout
        );
        assert!(
            data["homes_symlinked"]
                .as_array()
                .unwrap()
                .contains(&json!(label)),
            "{link}: {}",
            listed.stdout
        );
        let searched = s.call("notes-search", r#"{"query":"TOPSECRET"}"#);
        assert_eq!(searched.code, 0, "{link}: {}", searched.stdout);
        assert!(
            !searched.stdout.contains("TOPSECRET\""),
            "{link}: {}",
            searched.stdout
        );
        assert_eq!(searched.json()["data"]["files"], json!([]), "{link}");
        if link.starts_with("agents") {
            let all = s.call("notes-list", r#"{"pattern":"@agents/*/**"}"#);
            assert_eq!(
                all.json()["data"]["files"],
                json!([]),
                "{link}: {}",
                all.stdout
            );
            assert!(
                all.stdout.contains("homes_symlinked"),
                "{link}: {}",
                all.stdout
            );
        }
        let boot = s.call("boot-render", "{}");
        assert_eq!(boot.code, 0, "{link}: {}", boot.stdout);
        assert!(
            !boot.stdout.contains("TOPSECRET"),
            "{link}: {}",
            boot.stdout
        );
        assert!(
            boot.stdout.contains("home_is_symlink"),
            "{link}: {}",
            boot.stdout
        );
        let doctor = s.call("doctor", "{}");
        assert_eq!(doctor.code, 1, "{link}: {}", doctor.stdout);
        assert!(
            doctor.stdout.contains("not_a_directory"),
            "{link}: {}",
            doctor.stdout
        );
        // Writes and reads through it are refused, and nothing outside changed.
        let address = match *label {
            "session" => "a".to_owned(),
            "@agents/ann" => "@self/a".to_owned(),
            "@models/gpt" => "@model/a".to_owned(),
            other => format!("{other}/a"),
        };
        let read = s.call("notes-read", json!({"address": address}).to_string());
        refused(&read, 1, "path_escapes_root");
        let write = s.call(
            "notes-write",
            json!({"address": address, "content": "x"}).to_string(),
        );
        refused(&write, 1, "path_escapes_root");
        let jail = s.dream_fs(
            "write",
            json!({"path": format!("{link}/b.md"), "content": "x"}),
        );
        refused(&jail, 1, "outside_home");
        assert_eq!(tree(&outside), before, "{link}: nothing outside changed");
    }
}

#[test]
fn a_dangling_symlinked_directory_is_outside_the_home_for_the_jail() {
    let s = Scratch::new();
    fs::create_dir_all(s.notes().join("human")).unwrap();
    std::os::unix::fs::symlink(s.path("nowhere"), s.notes().join("human/dangdir")).unwrap();
    let out = s.dream_fs(
        "write",
        json!({"path": "human/dangdir/x.md", "content": "x"}),
    );
    refused(&out, 1, "outside_home");
    let out = s.call(
        "notes-write",
        json!({"address": "@human/dangdir/x", "content": "x"}).to_string(),
    );
    refused(&out, 1, "path_escapes_root");
    assert!(!s.path("nowhere").exists());
    // The `..` refusal names the notes home, as the absolute-path refusal does.
    let out = s.dream_fs("write", json!({"path": "human/../../x.md", "content": "x"}));
    refused(&out, 1, "outside_home");
    let home = s.notes().display().to_string();
    assert!(out.stdout.contains(&home), "{}", out.stdout);
}

// ----- 7. io_error names the operation and the path on stderr ---------------------------------

#[test]
fn io_errors_name_the_operation_and_the_path_on_stderr() {
    let s = Scratch::new();
    fs::remove_dir(s.notes()).unwrap();
    fs::write(s.notes(), "a file, not a directory").unwrap();
    let out = s.call(
        "notes-write",
        json!({"address": "@human/x", "content": "x"}).to_string(),
    );
    refused(&out, 70, "io_error");
    let notes = s.notes().display().to_string();
    assert!(
        !out.stdout.contains(&notes),
        "the envelope stays path-free: {}",
        out.stdout
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(&notes) && out.stderr.contains("create"),
        "{}",
        out.stderr
    );
    let out = s.call("notes-read", json!({"address": "@human/x"}).to_string());
    refused(&out, 70, "io_error");
    assert!(
        out.stderr.contains(&notes) && out.stderr.contains("open"),
        "{}",
        out.stderr
    );
}

// ----- 6. stale temp files --------------------------------------------------------------------

#[test]
fn a_write_sweeps_its_directory_of_our_own_stale_temp_files_and_doctor_reports_them() {
    let s = Scratch::new();
    let human = s.notes().join("human");
    fs::create_dir_all(&human).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 3600);
    let aged = |name: &str| {
        fs::write(human.join(name), "torn").unwrap();
        fs::File::options()
            .write(true)
            .open(human.join(name))
            .unwrap()
            .set_modified(old)
            .unwrap();
    };
    aged(".n1.md.Ab3dE9.tmp");
    aged(".n2.md.zzzzzz.tmp");
    aged("keep.tmp");
    aged(".keep.md.short.tmp");
    fs::write(human.join(".fresh.md.Q1w2E3.tmp"), "in flight").unwrap();
    let doctor = s.call("doctor", "{}");
    let stale = doctor.stdout.matches("stale_temp_file").count();
    assert!(stale >= 3, "{}", doctor.stdout);
    let out = s.call(
        "notes-write",
        json!({"address": "@human/x", "content": "x"}).to_string(),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let mut left: Vec<String> = fs::read_dir(&human)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            ".fresh.md.Q1w2E3.tmp",
            ".keep.md.short.tmp",
            "keep.tmp",
            "x.md"
        ]
    );
}

// ----- 2. the symlink-swap race ---------------------------------------------------------------

/// Threads swap `human/race` between a real directory and a symlink to an outside directory
/// while `notes-write` and `dream-fs write` loop into it: nothing may ever land outside.
#[test]
fn the_symlink_swap_race_never_writes_outside() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    let s = Scratch::new();
    let outside = s.path("outside");
    fs::create_dir_all(&outside).unwrap();
    let human = s.notes().join("human");
    fs::create_dir_all(&human).unwrap();
    let race = human.join("race");
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (stop, swaps, race, outside, human) = (
            stop.clone(),
            swaps.clone(),
            race.clone(),
            outside.clone(),
            human.clone(),
        );
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                // A real directory (possibly holding notes) is moved aside, a symlink put in
                // its place, then the real one put back, each step an atomic rename.
                let aside = human.join(format!(".aside{n}"));
                let link = human.join(format!(".link{n}"));
                let _ = std::os::unix::fs::symlink(&outside, &link);
                if fs::rename(&race, &aside).is_ok() {
                    let _ = fs::rename(&link, &race);
                    std::thread::yield_now();
                    let _ = fs::remove_file(&race);
                    let _ = fs::rename(&aside, &race);
                } else {
                    let _ = fs::create_dir(&race);
                    let _ = fs::remove_file(&link);
                }
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let seconds = 10;
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let rounds = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for worker in 0..2 {
            let (s, rounds) = (&s, &rounds);
            scope.spawn(move || {
                let mut i = 0;
                while Instant::now() < deadline {
                    i += 1;
                    let out = if worker == 0 {
                        s.call(
                            "notes-write",
                            json!({"address": format!("@human/race/n{i}"), "content": "x"})
                                .to_string(),
                        )
                    } else {
                        s.dream_fs(
                            "write",
                            json!({"path": format!("human/race/f{i}.md"), "content": "x"}),
                        )
                    };
                    // Written inside, refused, or failed because the directory it opened was
                    // replaced meanwhile: never a crash, never outside.
                    assert!(
                        [0, 1, 70].contains(&out.code),
                        "a race is refused, never a crash: {}",
                        out.stdout
                    );
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let outside_files = tree(&outside);
    eprintln!(
        "symlink-swap race: {seconds} s, {} write rounds, {} swaps, {} files outside",
        rounds.load(Ordering::Relaxed),
        swaps.load(Ordering::Relaxed),
        outside_files.len()
    );
    assert!(
        outside_files.is_empty(),
        "written outside: {outside_files:?}"
    );
    assert!(rounds.load(Ordering::Relaxed) > 10);
}
