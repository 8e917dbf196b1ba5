//! CLI tests for `budget-check`: the decision table through the real binary, settings files
//! (global under --agent-dir / PI_CODING_AGENT_DIR, project under --cwd), and refusals.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Normaliser, Run, pi_context, run};

/// A temp HOME with optional global (`<home>/agent/settings.json`) and project
/// (`<home>/proj/.pi/settings.json`) settings.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new(global: Option<&str>, project: Option<&str>) -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("agent")).unwrap();
        std::fs::create_dir_all(dir.path().join("proj/.pi")).unwrap();
        if let Some(g) = global {
            std::fs::write(dir.path().join("agent/settings.json"), g).unwrap();
        }
        if let Some(p) = project {
            std::fs::write(dir.path().join("proj/.pi/settings.json"), p).unwrap();
        }
        World { dir }
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }

    fn check(&self, extra: &[&str], request: &Value) -> Run {
        let mut cmd = pi_context(self.home());
        cmd.arg("budget-check")
            .arg("--agent-dir")
            .arg(self.home().join("agent"))
            .arg("--cwd")
            .arg(self.home().join("proj"))
            .args(extra);
        run(cmd, &request.to_string())
    }

    /// Snapshots name the temp home `[HOME]`.
    fn norm(&self) -> Normaliser {
        Normaliser::new().path(self.home(), "[HOME]")
    }
}

fn usage_at(remaining: u64) -> Value {
    json!({"tokens": 200_000 - remaining, "context_window": 200_000})
}

/// One row of the decision table: what the check answered, in one line.
fn row(label: &str, out: &Run) -> String {
    assert_eq!(out.code, 0, "{label}: {}", out.transcript());
    let d = &out.json()["data"];
    format!(
        "{label:<44} decision={:<10} remaining_tokens={:<6} arm={:<5} hard={:<5} message={} warnings={}",
        d["decision"].as_str().unwrap(),
        d["remaining_tokens"].to_string(),
        d["arm_close_out"].to_string(),
        d["hard_reserve_due"].to_string(),
        d["message"]["kind"].as_str().unwrap_or("-"),
        d["warnings"].as_array().unwrap().len(),
    )
}

#[test]
fn decision_table_with_default_settings() {
    let world = World::new(None, None);
    let mut table = Vec::new();
    let cases: &[(&str, u64, Value)] = &[
        ("far above the reminder line", 100_000, json!({})),
        ("reminder line + 1", 40_961, json!({})),
        ("at the reminder line", 40_960, json!({})),
        ("between reminder and warning", 35_000, json!({})),
        (
            "between, reminder already shown",
            35_000,
            json!({"reminder_shown": true}),
        ),
        (
            "between, warning already shown",
            35_000,
            json!({"warning_shown": true}),
        ),
        ("warning line + 1", 32_769, json!({})),
        ("at the warning line", 32_768, json!({})),
        ("below the warning line", 20_000, json!({})),
        (
            "below warning, reminder shown",
            20_000,
            json!({"reminder_shown": true}),
        ),
        (
            "below warning, warning already shown",
            20_000,
            json!({"warning_shown": true}),
        ),
        ("reserve + 1", 16_385, json!({})),
        ("at the reserve", 16_384, json!({})),
        ("below the reserve", 1_000, json!({})),
        (
            "below the reserve, warning shown",
            1_000,
            json!({"warning_shown": true}),
        ),
        ("window exhausted", 0, json!({})),
    ];
    for (label, remaining, window) in cases {
        let out = world.check(
            &[],
            &json!({"usage": usage_at(*remaining), "window": window}),
        );
        table.push(row(label, &out));
    }
    let unknowns = [
        ("usage null", json!({"usage": null})),
        ("usage absent", json!({})),
        (
            "tokens null",
            json!({"usage": {"tokens": null, "context_window": 200_000}}),
        ),
        (
            "context window null",
            json!({"usage": {"tokens": 5, "context_window": null}}),
        ),
        (
            "pi-context off, below the reserve",
            json!({"usage": usage_at(1_000), "enabled": false}),
        ),
        (
            "pi-context off, reminder zone",
            json!({"usage": usage_at(35_000), "enabled": false}),
        ),
    ];
    for (label, request) in unknowns {
        table.push(row(label, &world.check(&[], &request)));
    }
    insta::assert_snapshot!(table.join("\n"));
}

#[test]
fn decision_table_with_compaction_disabled() {
    let world = World::new(Some(r#"{"compaction": {"enabled": false}}"#), None);
    let mut table = Vec::new();
    for (label, remaining) in [
        ("at the reminder line", 40_960),
        ("at the warning line", 32_768),
        ("at the reserve", 16_384),
        ("window exhausted", 0),
    ] {
        let out = world.check(&[], &json!({"usage": usage_at(remaining)}));
        table.push(row(label, &out));
    }
    insta::assert_snapshot!(table.join("\n"));
}

#[test]
fn model_override_moves_every_line() {
    let world = World::new(
        Some(
            r#"{"compaction": {"reserveTokens": 10000,
                "modelOverrides": {"acme/big-1": {"reserveTokens": 50000}}}}"#,
        ),
        None,
    );
    let other = world.check(
        &[],
        &json!({"usage": usage_at(60_000), "model": "acme/small"}),
    );
    assert_eq!(
        other.json()["data"]["thresholds"],
        json!({"reminder": 34_576, "warning": 26_384, "reserve": 10_000})
    );
    assert_eq!(other.json()["data"]["decision"], "none");
    let big = world.check(
        &[],
        &json!({"usage": usage_at(60_000), "model": "acme/big-1"}),
    );
    assert_eq!(
        big.json()["data"]["thresholds"],
        json!({"reminder": 74_576, "warning": 66_384, "reserve": 50_000})
    );
    assert_eq!(big.json()["data"]["decision"], "warning");
    // The --model flag applies when the request has no model; the request's model wins.
    let flag = world.check(
        &["--model", "acme/big-1"],
        &json!({"usage": usage_at(49_000)}),
    );
    assert_eq!(flag.json()["data"]["decision"], "hard_reset");
    let both = world.check(
        &["--model", "acme/big-1"],
        &json!({"usage": usage_at(49_000), "model": "acme/small"}),
    );
    assert_eq!(both.json()["data"]["decision"], "none");
}

#[test]
fn invalid_settings_values_fall_back_with_one_warning_each() {
    let world = World::new(
        Some(
            r#"{"compaction": {"enabled": "yes", "reserveTokens": -1,
                "modelOverrides": {"acme/x": {"reserveTokens": "big"}}},
                "pi-context": {"reminderMarginTokens": 0, "dreamer": ""}}"#,
        ),
        None,
    );
    let out = world.check(&[], &json!({"usage": usage_at(35_000), "model": "acme/x"}));
    world
        .norm()
        .bind(|| insta::assert_snapshot!(out.transcript()));
    let data = &out.json()["data"];
    assert_eq!(data["warnings"].as_array().unwrap().len(), 5);
    assert_eq!(
        data["thresholds"],
        json!({"reminder": 40_960, "warning": 32_768, "reserve": 16_384})
    );
}

#[test]
fn malformed_settings_file_gives_defaults_and_one_warning() {
    let world = World::new(
        Some("{not json"),
        Some(r#"{"pi-context": {"dreamer": "p/m"}}"#),
    );
    let out = world.check(&["--settings-only"], &json!(null));
    world
        .norm()
        .bind(|| insta::assert_snapshot!(out.transcript()));
    let data = &out.json()["data"];
    assert_eq!(data["warnings"].as_array().unwrap().len(), 1);
    assert_eq!(
        data["settings"]["dreamer"], "p/m",
        "the readable file still applies"
    );
}

#[test]
fn project_settings_win_per_key_over_global() {
    let world = World::new(
        Some(
            r#"{"compaction": {"reserveTokens": 1000, "enabled": false},
                "pi-context": {"reminderMarginTokens": 30000, "dreamer": "global/model"}}"#,
        ),
        Some(r#"{"compaction": {"reserveTokens": 2000}, "pi-context": {"dreamer": "proj/model"}}"#),
    );
    let out = world.check(&["--settings-only"], &json!(null));
    let data = &out.json()["data"];
    assert_eq!(data["settings"]["reserve_tokens"], 2000);
    assert_eq!(data["settings"]["compaction_enabled"], false);
    assert_eq!(data["settings"]["reminder_margin_tokens"], 30000);
    assert_eq!(data["settings"]["dreamer"], "proj/model");
    // An untrusted project contributes nothing.
    let untrusted = world.check(&["--settings-only", "--untrusted-project"], &json!(null));
    let data = &untrusted.json()["data"];
    assert_eq!(data["settings"]["reserve_tokens"], 1000);
    assert_eq!(data["settings"]["dreamer"], "global/model");
    assert_eq!(data["settings"]["project_path"], Value::Null);
}

#[test]
fn settings_only_text_for_shell_users() {
    let world = World::new(
        Some(r#"{"pi-context": {"reminderMarginTokens": 8192}}"#),
        None,
    );
    let out = world.check(&["--settings-only", "--format", "text"], &json!(null));
    world
        .norm()
        .bind(|| insta::assert_snapshot!(out.transcript()));
}

#[test]
fn agent_dir_comes_from_pi_coding_agent_dir_when_no_flag() {
    let world = World::new(None, None);
    std::fs::create_dir_all(world.home().join("elsewhere")).unwrap();
    std::fs::write(
        world.home().join("elsewhere/settings.json"),
        r#"{"pi-context": {"dreamer": "env/model"}}"#,
    )
    .unwrap();
    let mut cmd = pi_context(world.home());
    cmd.env("PI_CODING_AGENT_DIR", "~/elsewhere")
        .args(["budget-check", "--settings-only"]);
    let out = run(cmd, "");
    assert_eq!(out.json()["data"]["settings"]["dreamer"], "env/model");
    // Default: ~/.pi/agent under HOME.
    std::fs::create_dir_all(world.home().join(".pi/agent")).unwrap();
    std::fs::write(
        world.home().join(".pi/agent/settings.json"),
        r#"{"pi-context": {"dreamer": "home/model"}}"#,
    )
    .unwrap();
    let mut cmd = pi_context(world.home());
    cmd.args(["budget-check", "--settings-only"]);
    assert_eq!(
        run(cmd, "").json()["data"]["settings"]["dreamer"],
        "home/model"
    );
}

#[test]
fn warning_result_in_both_formats() {
    let world = World::new(None, None);
    let out = world.check(
        &["--format", "both"],
        &json!({"usage": usage_at(30_000), "model": "acme/x", "window": {"reminder_shown": true}}),
    );
    world
        .norm()
        .bind(|| insta::assert_snapshot!(out.transcript()));
    let text = out.json()["text"].as_str().unwrap().to_string();
    assert_eq!(text, "{\n  \"remaining_tokens\": 0\n}");
}

#[test]
fn reminder_with_custom_tool_names() {
    let world = World::new(None, None);
    let out = world.check(
        &["--format", "both"],
        &json!({"usage": usage_at(40_000),
                "tools": {"notes": "memo_*", "remaining": "room_left", "wipe": "fresh_start"}}),
    );
    let data = &out.json()["data"];
    assert_eq!(data["decision"], "reminder");
    assert_eq!(data["reminder_left"], 7_232);
    let text = data["message"]["text"].as_str().unwrap();
    insta::assert_snapshot!(text);
    for default in ["notes_*", "get_context_remaining", "wipe_memory"] {
        assert!(!text.contains(default));
    }
}

#[test]
fn malformed_requests_are_refused_with_exit_2() {
    let world = World::new(None, None);
    for (label, stdin) in [
        ("unknown field", r#"{"usage": null, "bogus": 1}"#),
        (
            "negative tokens",
            r#"{"usage": {"tokens": -1, "context_window": 10}}"#,
        ),
        ("unknown window fact", r#"{"window": {"guidance": true}}"#),
        ("unknown tool binding", r#"{"tools": {"shell": "bash"}}"#),
        ("not json", "{"),
    ] {
        let mut cmd = pi_context(world.home());
        cmd.args(["budget-check", "--agent-dir"])
            .arg(world.home().join("agent"));
        let out = run(cmd, stdin);
        assert_eq!(out.code, 2, "{label}: {}", out.transcript());
        assert_eq!(out.json()["error"]["code"], "invalid_request", "{label}");
    }
}

#[test]
fn close_out_request_hands_out_the_close_out_text_whatever_the_budget() {
    // Compaction off and usage unknown: no budget message would ever be due, yet the human's
    // close-out request still gets its text; the decision fields keep the usage-based answer.
    let world = World::new(Some(r#"{"compaction": {"enabled": false}}"#), None);
    let out = world.check(
        &["--format", "both"],
        &json!({"usage": null, "close_out": true, "window": {"warning_shown": true}}),
    );
    world
        .norm()
        .bind(|| insta::assert_snapshot!(out.transcript()));
    let data = &out.json()["data"];
    assert_eq!(data["decision"], "none");
    assert_eq!(data["automatic"], false);
    assert_eq!(data["message"]["kind"], "close_out");
    assert_eq!(data["message"]["custom_type"], "pi-context/manual-wipe");

    // The budget warning's instructions with an honest first line (the human asked; the window
    // need not be full); the same text at any usage, and custom bindings reach it.
    let default_world = World::new(None, None);
    let warning = default_world.check(&[], &json!({"usage": usage_at(30_000)}));
    let warning_text = warning.json()["data"]["message"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let mut close_out_texts = Vec::new();
    for usage in [
        usage_at(150_000),
        usage_at(30_000),
        json!({"tokens": 1, "context_window": 0}),
    ] {
        let out = default_world.check(&[], &json!({"usage": usage, "close_out": true}));
        assert_eq!(out.code, 0, "{}", out.transcript());
        close_out_texts.push(
            out.json()["data"]["message"]["text"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert!(close_out_texts.iter().all(|t| *t == close_out_texts[0]));
    let close_out = &close_out_texts[0];
    assert!(
        close_out.contains("The human asked to end this context window"),
        "{close_out}"
    );
    assert!(!close_out.contains("almost full"), "{close_out}");
    let instructions = |t: &str| t.lines().skip(2).collect::<Vec<_>>().join("\n");
    assert_eq!(instructions(close_out), instructions(&warning_text));
    let custom = default_world.check(
        &[],
        &json!({"close_out": true, "tools": {"notes": "memo_*", "wipe": "fresh_start"}}),
    );
    let text = custom.json()["data"]["message"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("memo_*") && text.contains("fresh_start"),
        "{text}"
    );
    assert!(!text.contains("wipe_memory"));

    let refused = default_world.check(&[], &json!({"close_out": "yes"}));
    assert_eq!(refused.code, 2);
    assert_eq!(refused.json()["error"]["code"], "invalid_request");
}
