//! Shared test plumbing: a scrubbed command, a fixed clock, and snapshot-friendly output.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use assert_cmd::Command;
use serde_json::Value;

/// The instant every test runs at (`PI_CONTEXT_NOW`), so timestamps and ages are stable.
pub const NOW: &str = "2026-11-30T12:00:00.000+00:00";

/// `pi-context` with an empty environment apart from PATH, a fake HOME, UTC, and a fixed clock:
/// tests can never see the real `~/.agents` or `~/.pi`.
pub fn pi_context(home: &Path) -> Command {
    let mut cmd =
        Command::cargo_bin("pi-context").expect("the pi-context binary is built by cargo test");
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TZ", "UTC")
        .env("PI_CONTEXT_NOW", NOW)
        .current_dir(home);
    cmd
}

/// What one run printed and how it ended, in a form that snapshots well.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as the one JSON object it must be.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim_end())
            .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {}", self.stdout))
    }

    /// A stable text block: exit code, stdout, stderr.
    pub fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Every file directly in `dir`, as `(file name, bytes)`, sorted by name.
pub fn files_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Run `cmd` with `stdin` and capture everything. A JSON envelope on stdout is checked
/// against the command's checked-in response schema ([`check_envelope`]).
pub fn run(mut cmd: Command, stdin: &str) -> Run {
    let args = args_of(&cmd);
    let output = cmd
        .write_stdin(stdin.as_bytes().to_vec())
        .output()
        .expect("the binary runs");
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    check_envelope(&args, &run.stdout);
    if run.code == 0 {
        check_request(&args, stdin);
    }
    run
}

/// The arguments `cmd` will run with.
pub fn args_of(cmd: &Command) -> Vec<String> {
    cmd.get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// The compiled response schemas of `docs/schema/`, by command.
fn response_validators() -> &'static BTreeMap<String, jsonschema::Validator> {
    static VALIDATORS: OnceLock<BTreeMap<String, jsonschema::Validator>> = OnceLock::new();
    VALIDATORS.get_or_init(|| validators(".response.json"))
}

/// The compiled request schemas of `docs/schema/`, by command (`dream-fs-<op>` per operation).
fn request_validators() -> &'static BTreeMap<String, jsonschema::Validator> {
    static VALIDATORS: OnceLock<BTreeMap<String, jsonschema::Validator>> = OnceLock::new();
    VALIDATORS.get_or_init(|| validators(".request.json"))
}

fn validators(suffix: &str) -> BTreeMap<String, jsonschema::Validator> {
    {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/schema");
        let mut validators = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).expect("docs/schema exists") {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(command) = name.strip_suffix(suffix) else {
                continue;
            };
            let text = std::fs::read_to_string(&path).unwrap();
            let schema: Value = serde_json::from_str(&text).unwrap();
            let validator = jsonschema::validator_for(&schema)
                .unwrap_or_else(|e| panic!("{name} is not a valid JSON Schema: {e}"));
            validators.insert(command.to_string(), validator);
        }
        validators
    }
}

/// A request the binary accepted (exit 0) is one its command's request schema admits: the
/// schemas are not stricter than the commands. The history commands also take Pi's coerced
/// forms (`"5"` for 5, one role string for a list), which the schemas do not advertise, so
/// those are put in canonical form first. `--settings-only` reads no request.
pub fn check_request(args: &[String], stdin: &str) {
    if args.iter().any(|a| a == "--settings-only") {
        return;
    }
    let validators = request_validators();
    let Some((command, validator)) = args.iter().enumerate().find_map(|(i, a)| {
        let name = match (a.as_str(), args.get(i + 1)) {
            ("dream-fs", Some(op)) => format!("dream-fs-{op}"),
            _ => a.clone(),
        };
        validators.get_key_value(name.as_str())
    }) else {
        return;
    };
    let text = if stdin.trim().is_empty() { "{}" } else { stdin };
    let Ok(mut request) = serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) else {
        return;
    };
    if command.starts_with("history-")
        && let Some(fields) = request.as_object_mut()
    {
        for value in fields.values_mut() {
            if let Some(n) = value.as_str().and_then(|s| s.trim().parse::<i64>().ok()) {
                *value = n.into();
            }
        }
        if let Some(role @ Value::String(_)) = fields.get("roles").cloned() {
            fields.insert("roles".into(), Value::Array(vec![role]));
        }
        fields.retain(|_, v| !v.is_null());
    }
    let problems: Vec<String> = validator
        .iter_errors(&request)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .take(5)
        .collect();
    assert!(
        problems.is_empty(),
        "`pi-context {}` accepted a request docs/schema/{command}.request.json refuses:\n  {}\n{text}",
        args.join(" "),
        problems.join("\n  ")
    );
    if let Some(tally) = std::env::var_os("PI_CONTEXT_SCHEMA_TALLY") {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(tally)
            .unwrap();
        file.write_all(format!("{command} request\n").as_bytes())
            .unwrap();
    }
}

/// Check what a run printed against the response schema of its command (the first argument
/// naming a command with a checked-in schema): every JSON envelope (`--format json` or
/// `both`) must validate; text output and commands without a schema are left alone. With
/// `PI_CONTEXT_SCHEMA_TALLY=<file>` every checked envelope appends one line
/// (`<command> ok|error`) to that file, to count them.
pub fn check_envelope(args: &[String], stdout: &str) {
    let validators = response_validators();
    let Some((command, validator)) = args
        .iter()
        .find_map(|a| validators.get_key_value(a.as_str()))
    else {
        return;
    };
    let Ok(envelope) = serde_json::from_str::<Value>(stdout.trim_end()) else {
        return;
    };
    let Some(ok) = envelope.get("ok").and_then(Value::as_bool) else {
        return;
    };
    let problems: Vec<String> = validator
        .iter_errors(&envelope)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .take(5)
        .collect();
    assert!(
        problems.is_empty(),
        "the output of `pi-context {}` breaks docs/schema/{command}.response.json:\n  {}\n{stdout}",
        args.join(" "),
        problems.join("\n  ")
    );
    if let Some(tally) = std::env::var_os("PI_CONTEXT_SCHEMA_TALLY") {
        use std::io::Write;
        let line = format!("{command} {}\n", if ok { "ok" } else { "error" });
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(tally)
            .unwrap();
        file.write_all(line.as_bytes()).unwrap();
    }
}

/// The one snapshot normaliser: what varies between runs (temp directories, the fixtures
/// directory, commit ids, a path hash) replaced by stable placeholders, as insta filters
/// applied in order to every snapshot taken under [`Normaliser::bind`].
#[derive(Debug, Clone, Default)]
pub struct Normaliser {
    /// `(regex, replacement)`, in order.
    filters: Vec<(String, String)>,
}

impl Normaliser {
    pub fn new() -> Self {
        Self::default()
    }

    /// The path `dir` (as displayed) becomes `placeholder`.
    pub fn path(self, dir: &Path, placeholder: &str) -> Self {
        self.literal(&dir.display().to_string(), placeholder)
    }

    /// The exact text `text` becomes `placeholder`.
    pub fn literal(mut self, text: &str, placeholder: &str) -> Self {
        self.filters
            .push((regex::escape(text), placeholder.replace('$', "$$")));
        self
    }

    /// Every 40-hex Git commit id becomes `[COMMIT]`.
    pub fn commits(mut self) -> Self {
        self.filters
            .push(("[0-9a-f]{40}".to_string(), "[COMMIT]".to_string()));
        self
    }

    /// Run `f` (which takes snapshots) with these filters in effect.
    pub fn bind<R>(&self, f: impl FnOnce() -> R) -> R {
        let mut settings = insta::Settings::clone_current();
        for (pattern, replacement) in &self.filters {
            settings.add_filter(pattern, replacement.as_str());
        }
        settings.bind(f)
    }
}
