//! The checked-in JSON Schemas (`docs/schema/`) must match the Rust types they are generated
//! from: any change of a request or response shape shows up as a failing test and a reviewable
//! diff. Regenerate with `PI_CONTEXT_BLESS=1 cargo test --test cli schemas`. (Every CLI test
//! also checks the envelopes it reads against these files: see `support::check_envelope`.)

use std::collections::BTreeSet;
use std::path::PathBuf;

use pi_context::cli::schema::catalog::{self, Kind};

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/schema")
}

#[test]
fn checked_in_schemas_match_the_types() {
    let dir = schema_dir();
    let bless = std::env::var_os("PI_CONTEXT_BLESS").is_some();
    if bless {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let files = catalog::files();
    let mut expected = BTreeSet::new();
    for file in &files {
        let name = file.file_name();
        let path = dir.join(&name);
        let text = file.text();
        if bless && std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            // Replaced atomically: other tests read these files meanwhile.
            let temp = dir.join(format!(".{name}.tmp"));
            std::fs::write(&temp, &text).unwrap();
            std::fs::rename(&temp, &path).unwrap();
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!("docs/schema/{name} is missing: run `PI_CONTEXT_BLESS=1 cargo test --test cli schemas`")
        });
        assert!(
            checked_in == text,
            "docs/schema/{name} drifted from the Rust types: run `PI_CONTEXT_BLESS=1 cargo test --test cli schemas`"
        );
        expected.insert(name);
    }
    let present: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let stray: Vec<&String> = present.difference(&expected).collect();
    assert!(
        stray.is_empty(),
        "docs/schema holds files no type generates: {stray:?}"
    );
}

#[test]
fn every_schema_is_a_valid_json_schema_and_every_response_describes_its_data() {
    for file in catalog::files() {
        let schema = serde_json::to_value(file.schema()).unwrap();
        jsonschema::meta::validate(&schema)
            .unwrap_or_else(|e| panic!("{}: not a valid JSON Schema: {e}", file.file_name()));
        if file.kind == Kind::Response {
            // The data branch must describe its fields, not accept anything.
            let data = &schema["oneOf"][0]["properties"]["data"];
            let target = match data.get("$ref").and_then(|r| r.as_str()) {
                Some(r) => &schema["$defs"][r.trim_start_matches("#/$defs/")],
                None => data,
            };
            let described = target.get("properties").is_some()
                || target.get("anyOf").is_some()
                || target.get("oneOf").is_some();
            assert!(
                described,
                "{}: data is not described: {target}",
                file.file_name()
            );
        }
    }
}

#[test]
fn the_response_schemas_refuse_what_the_commands_never_print() {
    let schema = |command: &str| -> serde_json::Value {
        let text =
            std::fs::read_to_string(schema_dir().join(format!("{command}.response.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let write = jsonschema::validator_for(&schema("notes-write")).unwrap();
    let good =
        serde_json::json!({"ok": true, "data": {"address": "plan.md", "outcome": "created"}});
    assert!(write.is_valid(&good));
    let refusal = serde_json::json!({"ok": false, "error": {"code": "not_found", "message": "m"}});
    assert!(write.is_valid(&refusal));
    for bad in [
        serde_json::json!({"ok": true, "data": {"address": "plan.md"}}),
        serde_json::json!({"ok": true, "data": {"address": "plan.md", "outcome": "moved"}}),
        // An optional field is left out, never null.
        serde_json::json!({"ok": true, "data": {"address": "plan.md", "project_key": null, "outcome": "created"}}),
        serde_json::json!({"ok": true, "data": {"address": "plan.md", "outcome": "created", "x": 1}}),
        serde_json::json!({"ok": false, "data": {"address": "plan.md", "outcome": "created"}}),
        serde_json::json!({"ok": true, "error": {"code": "c", "message": "m"}}),
        serde_json::json!({"ok": false, "error": {"code": "c"}}),
    ] {
        assert!(!write.is_valid(&bad), "accepted: {bad}");
    }
    let list = jsonschema::validator_for(&schema("history-list")).unwrap();
    let page = |row: serde_json::Value| {
        serde_json::json!({"ok": true, "data": {"items": [row], "older_before": null,
            "newer_after": null, "skipped_lines": 0, "index": "built"}})
    };
    let event = serde_json::json!({"seq": 1, "window_id": "w", "role": "user", "created_at": null,
        "truncated": false, "total_chars": 2, "content": "hi"});
    assert!(list.is_valid(&page(event.clone())));
    let mut bad_role = event.clone();
    bad_role["role"] = "robot".into();
    assert!(!list.is_valid(&page(bad_role)));
    let mut bad_index = page(event);
    bad_index["data"]["index"] = "cached".into();
    assert!(!list.is_valid(&bad_index));
}

#[test]
fn every_mcp_tool_input_schema_is_its_command_request_schema() {
    for spec in pi_context::cli::mcp::tools::TOOLS {
        let command = spec.name.replace('_', "-");
        let text =
            std::fs::read_to_string(schema_dir().join(format!("{command}.request.json"))).unwrap();
        let mut file: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).unwrap();
        let tool = spec.tool();
        let mut input = (*tool.input_schema).clone();
        // Only the top-level labels differ (the tool carries its own description).
        for key in ["title", "$schema", "description"] {
            file.remove(key);
            input.remove(key);
        }
        assert_eq!(
            serde_json::Value::Object(input),
            serde_json::Value::Object(file),
            "{}",
            spec.name
        );
    }
}

#[test]
fn every_default_an_mcp_tool_description_states_is_the_schema_default() {
    // "offset_chars (default 0; …)", "limit_chars characters (default 12000)".
    let stated = regex::Regex::new(r"(\w+)(?: characters)? \(default (-?\d+)").unwrap();
    let mut checked = 0;
    for spec in pi_context::cli::mcp::tools::TOOLS {
        let schema = spec.tool().input_schema;
        for m in stated.captures_iter(spec.description) {
            let default = &schema["properties"][&m[1]]["default"];
            assert_eq!(
                default.to_string(),
                m[2].to_string(),
                "{}: {} (default {})",
                spec.name,
                &m[1],
                &m[2]
            );
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked}");
}
