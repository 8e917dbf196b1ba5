//! Every request field the protocol and the request schemas describe as an object refuses a
//! JSON array (serde's derived decoders alone would read `[]` as the struct's fields in order,
//! so `"window": []` passed as the defaults): `invalid_request`, exit 2, the field named, and
//! nothing written.

use std::fs;

use crate::support::{Normaliser, pi_context, run};

#[test]
fn an_array_never_stands_in_for_an_object_field() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("notes");
    fs::create_dir_all(home.join("human")).unwrap();
    let note = "---\norigin: self\ncreatedAt: 2026-11-01T00:00:00.000+00:00\nupdatedAt: 2026-11-01T00:00:00.000+00:00\n---\n\nalpha\n";
    fs::write(home.join("human/a.md"), note).unwrap();
    let home_arg = home.display().to_string();
    let cases: [(&[&str], &str); 8] = [
        (&["boot-render", "--session-id", "s1"], r#"{"tools": []}"#),
        (&["budget-check"], r#"{"window": []}"#),
        (&["budget-check"], r#"{"tools": []}"#),
        (&["budget-check"], r#"{"usage": [1, 2]}"#),
        (
            &["notes-update", "--notes-home", &home_arg],
            r#"{"address": "@human/a", "edits": [["alpha", "beta"]]}"#,
        ),
        (
            &["dream-fs", "edit", "--notes-home", &home_arg],
            r#"{"path": "human/a.md", "edits": [["alpha", "beta"]]}"#,
        ),
        (&["notes-read", "--notes-home", &home_arg], r#"[]"#),
        // The same fields as objects are accepted.
        (&["budget-check"], r#"{"window": {}, "tools": {}}"#),
    ];
    let mut transcripts = Vec::new();
    for (args, stdin) in cases {
        let mut cmd = pi_context(dir.path());
        cmd.args(args);
        let out = run(cmd, stdin);
        if stdin.contains("{}") {
            assert_eq!(out.code, 0, "{}", out.transcript());
            continue;
        }
        assert_eq!(out.code, 2, "{}", out.transcript());
        assert_eq!(out.json()["error"]["code"], "invalid_request");
        transcripts.push(format!(
            "$ {} <<< {stdin}\n{}",
            args[0],
            out.stdout.trim_end()
        ));
    }
    assert_eq!(
        fs::read_to_string(home.join("human/a.md")).unwrap(),
        note,
        "a refused request changed the note"
    );
    Normaliser::new()
        .path(dir.path(), "[TMP]")
        .bind(|| insta::assert_snapshot!(transcripts.join("\n"), @r#"
    $ boot-render <<< {"tools": []}
    {"ok":false,"error":{"code":"invalid_request","message":"invalid request: field `tools`: invalid type: array, expected an object at line 1 column 12"}}
    $ budget-check <<< {"window": []}
    {"ok":false,"error":{"code":"invalid_request","message":"invalid request: field `window`: invalid type: array, expected an object at line 1 column 13"}}
    $ budget-check <<< {"tools": []}
    {"ok":false,"error":{"code":"invalid_request","message":"invalid request: field `tools`: invalid type: array, expected an object at line 1 column 12"}}
    $ budget-check <<< {"usage": [1, 2]}
    {"ok":false,"error":{"code":"invalid_request","message":"invalid request: field `usage`: invalid type: array, expected an object at line 1 column 11"}}
    $ notes-update <<< {"address": "@human/a", "edits": [["alpha", "beta"]]}
    {"ok":false,"error":{"code":"invalid_request","message":"invalid request: field `edits[0]`: invalid type: array, expected an object at line 1 column 35"}}
    $ dream-fs <<< {"path": "human/a.md", "edits": [["alpha", "beta"]]}
    {"ok":false,"error":{"code":"invalid_request","message":"invalid request: field `edits[0]`: invalid type: array, expected an object"}}
    $ notes-read <<< []
    {"ok":false,"error":{"code":"invalid_request","message":"invalid request: the request must be one JSON object {…}, got an array"}}
    "#));
}
