//! CLI fuzz smoke test: for every subcommand that reads a request, a few hundred mutated
//! requests (random JSON, wrong types, huge numbers, deep nesting, invalid UTF-8, truncation,
//! an oversized stdin) run in-process through `cli::run`, plus a smaller sample through the
//! real binary. Never a panic, an exit 101 or a signal; always a documented exit code; and the
//! notes home byte-identical after every request that did not succeed (and after every
//! request of a command that never writes).

use std::fs;
use std::path::{Path, PathBuf};

use clap::Parser;
use pi_context::cli::{Cli, Ctx, Format, Io, run};
use serde_json::{Value, json};

use crate::support::{NOW, args_of, check_envelope, pi_context};

/// Mutated requests per subcommand, in-process.
const IN_PROCESS: usize = 300;
/// Mutated requests per subcommand through the real binary.
const PROCESS_SAMPLE: usize = 12;

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random JSON value of any type, with the awkward ones over-represented.
fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 9 } else { 12 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(-1),
        3 => serde_json::from_str("18446744073709551616").unwrap(),
        4 => json!(1e308),
        5 => json!(-9_223_372_036_854_775_808i64),
        6 => json!(""),
        7 => json!(
            [
                "@human/a",
                "..",
                "/etc/passwd",
                &"*".repeat(3000),
                "é\u{0}\u{feff}"
            ][rng.below(5)]
        ),
        8 => json!("x".repeat(rng.below(70_000))),
        9 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        10 => {
            let keys = [
                "oldText", "newText", "path", "address", "x", "query", "limit",
            ];
            Value::Object(
                (0..rng.below(4))
                    .map(|_| {
                        (
                            keys[rng.below(keys.len())].to_owned(),
                            random_value(rng, depth + 1),
                        )
                    })
                    .collect(),
            )
        }
        _ => json!(rng.next() as f64 / 7.0),
    }
}

/// One mutation of `base` (a valid request), as stdin bytes.
fn mutate(rng: &mut Rng, base: &Value) -> Vec<u8> {
    let object = base.as_object().cloned().unwrap_or_default();
    let keys: Vec<String> = object.keys().cloned().collect();
    let text = base.to_string();
    match rng.below(12) {
        // A field's value replaced by a value of another type.
        0..=2 if !keys.is_empty() => {
            let mut o = object.clone();
            o.insert(keys[rng.below(keys.len())].clone(), random_value(rng, 0));
            Value::Object(o).to_string().into_bytes()
        }
        // An unknown field added, or a field removed.
        3 => {
            let mut o = object.clone();
            o.insert("unexpected".into(), random_value(rng, 0));
            Value::Object(o).to_string().into_bytes()
        }
        4 if !keys.is_empty() => {
            let mut o = object.clone();
            o.remove(&keys[rng.below(keys.len())]);
            Value::Object(o).to_string().into_bytes()
        }
        // Truncated, or a random byte inserted or overwritten.
        5 => text.as_bytes()[..rng.below(text.len() + 1)].to_vec(),
        6 => {
            let mut bytes = text.into_bytes();
            let at = rng.below(bytes.len() + 1);
            bytes.insert(at, rng.next() as u8);
            bytes
        }
        // Deep nesting, inside a field or as the whole request.
        7 => {
            let depth = 100_000;
            let mut s = String::from("{\"query\":");
            s.push_str(&"[".repeat(depth));
            s.push_str(&"]".repeat(depth));
            s.push('}');
            s.into_bytes()
        }
        8 => "{\"a\":".repeat(20_000).into_bytes(),
        // Invalid UTF-8 inside a string, or random bytes.
        9 => {
            let mut bytes = b"{\"address\":\"@human/".to_vec();
            bytes.extend_from_slice(&[0xff, 0xfe, 0xc3]);
            bytes.extend_from_slice(b"\"}");
            bytes
        }
        10 => (0..rng.below(200)).map(|_| rng.next() as u8).collect(),
        // Not an object at all.
        _ => random_value(rng, 1).to_string().into_bytes(),
    }
}

/// Everything under `dir`: relative path → bytes (directories as empty, symlinks as targets).
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn visit(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if meta.is_dir() {
                out.push((rel, Vec::new()));
                visit(root, &path, out);
            } else if meta.file_type().is_symlink() {
                out.push((
                    rel,
                    fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                ));
            } else {
                out.push((rel, fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    visit(dir, dir, &mut out);
    out.sort();
    out
}

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let world = World {
            dir: tempfile::tempdir().unwrap(),
        };
        let notes = world.notes();
        for (rel, body) in [
            ("human/a.md", "x and x"),
            ("human/f.md", "x"),
            ("agents/ann/todo.md", "x"),
            ("pi/session/s1/n.md", "x"),
        ] {
            let path = notes.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(
                &path,
                format!(
                    "---\norigin: self\ncreatedAt: 2026-01-01T00:00:00.000+00:00\nupdatedAt: 2026-01-01T00:00:00.000+00:00\nlastAccessed: 2026-01-01T00:00:00.000+00:00\naccessCount: 0\n---\n\n{body}\n"
                ),
            )
            .unwrap();
        }
        fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/history/basic.jsonl"),
            world.dir.path().join("session.jsonl"),
        )
        .unwrap();
        fs::create_dir_all(world.dir.path().join("agent")).unwrap();
        world
    }

    fn notes(&self) -> PathBuf {
        self.dir.path().join("notes")
    }

    /// The arguments of `command` (after the binary name).
    fn args(&self, command: &str) -> Vec<String> {
        let d = self.dir.path().display().to_string();
        let notes = self.notes().display().to_string();
        let identity = [
            "--notes-home",
            &notes,
            "--session-id",
            "s1",
            "--project-key",
            "demo-1a2b3c4d",
            "--agent",
            "ann",
            "--model",
            "gpt",
        ];
        let mut args: Vec<String> = command.split(' ').map(str::to_owned).collect();
        let extra: Vec<String> = match command {
            c if c.starts_with("notes-") || c == "boot-render" => {
                identity.iter().map(|s| s.to_string()).collect()
            }
            c if c.starts_with("history-") => {
                vec!["--session".into(), format!("{d}/session.jsonl")]
            }
            "budget-check" => vec![
                "--agent-dir".into(),
                format!("{d}/agent"),
                "--cwd".into(),
                d.clone(),
            ],
            "doctor" | "sync" => vec!["--notes-home".into(), notes.clone()],
            c if c.starts_with("dream-fs") => vec!["--notes-home".into(), notes.clone()],
            _ => Vec::new(),
        };
        args.extend(extra);
        args
    }

    /// Run one request in-process; the exit code, or `None` after a panic.
    fn in_process(&self, command: &str, stdin: &[u8]) -> Option<u8> {
        let mut argv = vec!["pi-context".to_owned()];
        argv.extend(self.args(command));
        let cli = Cli::try_parse_from(&argv).unwrap();
        let ctx = Ctx {
            env: Default::default(),
            cwd: self.dir.path().to_path_buf(),
            now: chrono::DateTime::parse_from_rfc3339(NOW).unwrap(),
            format: Format::Json,
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let mut input = stdin;
            let mut io = Io {
                stdin: &mut input,
                stdout: &mut out,
                stderr: &mut err,
                stderr_is_terminal: false,
                stdin_is_terminal: false,
            };
            let code = match run(cli, &ctx, &mut io) {
                Ok(exit) => exit.code(),
                Err(_) => 70,
            };
            // Whatever happened, stdout is one JSON envelope.
            let printed: Value = serde_json::from_slice(&out).unwrap_or_else(|e| {
                panic!(
                    "{command}: stdout is not one JSON value ({e}): {}",
                    String::from_utf8_lossy(&out)
                )
            });
            assert!(printed["ok"].is_boolean(), "{command}: {printed}");
            (code, out)
        }));
        let (code, out) = outcome.ok()?;
        // ... and that envelope has its command's documented shape.
        check_envelope(&argv, &String::from_utf8_lossy(&out));
        Some(code)
    }
}

/// Subcommands that read a request, each with a valid request to mutate and whether a
/// successful run may change the notes home.
const COMMANDS: &[(&str, &str, bool)] = &[
    (
        "notes-write",
        r#"{"address":"@human/a","content":"x"}"#,
        true,
    ),
    (
        "notes-read",
        r#"{"address":"@human/a","offset_chars":0,"limit_chars":5}"#,
        true,
    ),
    (
        "notes-update",
        r#"{"address":"@human/a","edits":[{"oldText":"x","newText":"y"}],"replace_all":true}"#,
        true,
    ),
    (
        "notes-list",
        r#"{"pattern":"**","scope":"human","wastebasket":false,"limit":5}"#,
        false,
    ),
    (
        "notes-search",
        r#"{"query":["x"],"pattern":"@human/**","limit":3,"max_matches_per_file":2}"#,
        false,
    ),
    ("history-windows", "{}", false),
    (
        "history-list",
        r#"{"limit":3,"roles":["user"],"before":10}"#,
        false,
    ),
    (
        "history-read",
        r#"{"seq":1,"offset_chars":0,"limit_chars":100}"#,
        false,
    ),
    ("history-search", r#"{"query":"x","limit":3}"#, false),
    ("boot-render", r#"{"tools":{}}"#, false),
    (
        "budget-check",
        r#"{"usage":{"tokens":1000,"context_window":200000},"window":{},"tools":{}}"#,
        false,
    ),
    ("doctor", r#"{"all_issues":true}"#, false),
    // Without a remote every sync is refused (no_remote) before anything is created.
    ("sync", "{}", false),
    (
        "dream-fs write",
        r#"{"path":"human/f.md","content":"x"}"#,
        true,
    ),
    (
        "dream-fs edit",
        r#"{"path":"human/f.md","edits":[{"oldText":"x","newText":"y"}]}"#,
        true,
    ),
    ("dream-fs delete", r#"{"path":"human/f.md"}"#, true),
];

#[test]
fn every_subcommand_survives_mutated_requests_in_process() {
    let world = World::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut report = Vec::new();
    for (command, base, writes) in COMMANDS {
        let base: Value = serde_json::from_str(base).unwrap();
        let mut oversized = base.to_string().into_bytes();
        oversized.resize(16 * 1024 * 1024 + 1, b' ');
        let mut inputs: Vec<Vec<u8>> = (0..IN_PROCESS).map(|_| mutate(&mut rng, &base)).collect();
        inputs.push(oversized);
        let (mut panics, mut by_code) = (0, std::collections::BTreeMap::<u8, usize>::new());
        for stdin in &inputs {
            let before = tree(&world.notes());
            let code = world.in_process(command, stdin);
            let Some(code) = code else {
                panics += 1;
                continue;
            };
            *by_code.entry(code).or_default() += 1;
            assert!(
                [0, 1, 2].contains(&code),
                "{command}: exit {code} for {:?}",
                String::from_utf8_lossy(&stdin[..stdin.len().min(300)])
            );
            if code != 0 || !writes {
                assert_eq!(
                    tree(&world.notes()),
                    before,
                    "{command} changed the notes home (exit {code}) for {:?}",
                    String::from_utf8_lossy(&stdin[..stdin.len().min(300)])
                );
            }
        }
        assert_eq!(panics, 0, "{command} panicked");
        report.push(format!(
            "{command}: {} requests, exits {by_code:?}, panics 0",
            inputs.len()
        ));
    }
    eprintln!("fuzz (in-process):\n  {}", report.join("\n  "));
}

#[test]
fn a_process_level_sample_never_crashes_or_dies_by_signal() {
    let world = World::new();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut total = 0;
    let mut commands: Vec<(&str, &str)> = COMMANDS.iter().map(|(c, b, _)| (*c, *b)).collect();
    // Commands that read no request must ignore whatever is on stdin.
    commands.extend([("project-key", "{}"), ("completions bash", "{}")]);
    for (command, base) in commands {
        let base: Value = serde_json::from_str(base).unwrap();
        for _ in 0..PROCESS_SAMPLE {
            let stdin = mutate(&mut rng, &base);
            let mut cmd = pi_context(world.dir.path());
            cmd.args(world.args(command));
            let args = args_of(&cmd);
            let output = cmd.write_stdin(stdin.clone()).output().unwrap();
            check_envelope(&args, &String::from_utf8_lossy(&output.stdout));
            let code = output.status.code();
            assert!(
                matches!(code, Some(0..=2)),
                "{command}: {:?} (signal or undocumented exit) for {:?}\n{}",
                output.status,
                String::from_utf8_lossy(&stdin[..stdin.len().min(300)]),
                String::from_utf8_lossy(&output.stderr)
            );
            total += 1;
        }
    }
    eprintln!("fuzz (process-level): {total} runs, no crash, no signal");
}
