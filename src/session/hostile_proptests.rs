//! Hostile-input property tests for the session line decoders: arbitrary bytes and JSON-like
//! lines never panic (a malformed line is skipped and counted by the reader, never a crash),
//! and the fast light decoder agrees with the full decoders on every line it decides.
//! 3 properties × 256 cases, plus every line of the history fixtures.

use proptest::prelude::*;

use super::light::{self, Light};

fn jsonish_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        proptest::string::string_regex(
            "\\{(\"(type|id|parentId|timestamp|message|role|content|toolCallId|toolName|customType|data|version|text|arguments)\":(null|true|-?[0-9]{1,25}|\"[a-z\\\\u0-9]{0,10}\"|\\[(\\{\"type\":\"(text|toolCall)\",\"text\":\"x\"\\},?){0,3}\\]|\\{\"role\":\"(user|assistant|toolResult)\"(,\"nestedCalls\":(\\{\\}|null|1))?\\}),?){0,8}\\}?"
        )
        .expect("a valid regex")
        .prop_map(String::into_bytes),
    ]
}

/// A piece of a JSON string's contents, hostile ones included.
fn string_piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        40 => "[a-zA-Z0-9 _./:-]{0,12}".prop_map(String::into_bytes),
        4 => Just("é😀ß".as_bytes().to_vec()),
        8 => prop::sample::select(vec![
            "\\n", "\\\"", "\\\\", "\\/", "\\t", "\\b", "\\f", "\\r", "\\u0041", "\\u001f",
            "\\u0008", "\\u000a", "\\u00e9", "\\ud800", "\\udc00", "\\ud83d\\ude00", "\\\\\\/",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
    ]
}

/// One defect inserted somewhere in a line: a raw control or invalid byte, a bad escape, an
/// out-of-range or ill-formed number, stray punctuation.
fn defect() -> impl Strategy<Value = Vec<u8>> {
    prop::sample::select(vec![
        &[1u8][..],
        &[0x1f],
        &[0xff],
        &[0xc3],
        &[0xed, 0xa0, 0x80],
        &[0x7f],
        b"\t",
        b"\\x",
        b"\\u12",
        b"\\uZZZZ",
        b"\\",
        b"1e400",
        b",",
        b"]",
        b"}",
        b"{",
        b"\"",
        b":",
        b" ",
        b"\t",
        b"-",
        b"0",
        b".",
        b"e5",
    ])
    .prop_map(<[u8]>::to_vec)
}

fn json_string() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(string_piece(), 0..4).prop_map(|pieces| {
        let mut out = vec![b'"'];
        for piece in pieces {
            out.extend(piece);
        }
        out.push(b'"');
        out
    })
}

fn number() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        12 => prop::sample::select(vec![
            "0", "-0", "7", "42", "-3.25", "0.5", "1e-7", "2E+2", "1.7976931348623157e308",
            "1e308", "-0.0", "123456789012345678901234567890",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::sample::select(vec![
            "0", "-0", "1.0", "1e21", "1E400", "-1e400", "1e-400", "01", "1.", "-", ".5", "1e+5",
            "1.5e-7", "18446744073709551616", "-9223372036854775809", "3", "2.5E+3", "1e", "1e+",
            "0.0000001", "1.7976931348623157e308", "1.7976931348623159e308", "00", "-01", "+1",
            "123456789012345678901234567890", "1e99999999999999999999", "0e99999",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => "[1-9][0-9]{290,320}".prop_map(String::into_bytes),
    ]
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        16 => prop::sample::select(vec![
            "type", "id", "parentId", "timestamp", "customType", "data", "message", "version",
            "role", "content", "toolCallId", "toolName", "name", "text", "windowId", "arguments",
            "nestedCalls",
        ])
        .prop_map(|k| format!("\"{k}\"").into_bytes()),
        1 => json_string(),
        1 => Just(b"\"t\\u0079pe\"".to_vec()),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop_oneof![
        3 => json_string(),
        2 => number(),
        2 => prop::sample::select(vec!["true", "false", "null"]).prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::sample::select(vec![
            "\"message\"", "\"session\"", "\"custom\"", "\"text\"", "\"toolCall\"", "\"user\"",
            "\"assistant\"", "\"\"",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec((key(), inner.clone(), ws()), 0..6).prop_map(|members| {
                let mut out = vec![b'{'];
                for (i, (k, v, w)) in members.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(w);
                    out.extend(k);
                    out.push(b':');
                    out.extend(v);
                }
                out.push(b'}');
                out
            }),
            prop::collection::vec(inner, 0..5).prop_map(|items| {
                let mut out = vec![b'['];
                for (i, v) in items.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(v);
                }
                out.push(b']');
                out
            }),
        ]
    })
}

fn ws() -> impl Strategy<Value = Vec<u8>> {
    prop::sample::select(vec![
        "", "", "", "", "", "", "", "", "", "", "", "", " ", "\t", "\r", " \n", "\x0c",
    ])
    .prop_map(|s| s.as_bytes().to_vec())
}

/// A line shaped like a session entry, with hostile values, nesting, whitespace and tears.
fn hostile_line() -> impl Strategy<Value = Vec<u8>> {
    let block = (
        prop::sample::select(vec!["\"text\"", "\"toolCall\"", "\"thinking\"", "7"]),
        prop::option::of(value()),
        prop::option::of(value()),
        prop::option::of(value()),
    )
        .prop_map(|(kind, id, name, text)| {
            let mut out = format!("{{\"type\":{kind}").into_bytes();
            for (k, v) in [("id", id), ("name", name), ("text", text)] {
                if let Some(v) = v {
                    out.extend(format!(",\"{k}\":").into_bytes());
                    out.extend(v);
                }
            }
            out.push(b'}');
            out
        });
    let content = prop_oneof![
        value(),
        prop::collection::vec(block, 0..4).prop_map(|blocks| {
            let mut out = vec![b'['];
            for (i, b) in blocks.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend(b);
            }
            out.push(b']');
            out
        }),
    ];
    (
        prop::sample::select(vec!["message", "session", "custom", "label"]),
        prop::collection::vec((key(), value()), 0..4),
        content,
        value(),
        (0usize..8, 100usize..135),
        ws(),
        prop::option::weighted(0.1, any::<prop::sample::Index>()),
        prop::option::weighted(0.3, (any::<prop::sample::Index>(), defect())),
        any::<bool>(),
    )
        .prop_map(
            |(kind, extra, content, data, (nest, depth), space, tear, defect, nested)| {
                let mut out = space.clone();
                out.extend(
                    format!("{{\"type\":\"{kind}\",\"id\":\"e1\",\"version\":3,").into_bytes(),
                );
                for (k, v) in extra {
                    out.extend(k);
                    out.push(b':');
                    out.extend(v);
                    out.push(b',');
                }
                out.extend(b"\"data\":{\"windowId\":");
                out.extend(data);
                out.extend(b"},\"message\":{\"role\":\"assistant\",");
                if nested {
                    // A message-level `nestedCalls` key, which both decoders note.
                    out.extend(b"\"nestedCalls\":{\"calls\":[]},");
                }
                out.extend(b"\"content\":");
                // Deep nesting around the content, of arrays or of objects, at and around
                // the limit.
                match nest {
                    1 => out.extend("[".repeat(depth).into_bytes()),
                    2 => out.extend("{\"k\":".repeat(depth).into_bytes()),
                    3 => out.extend("[{\"k\":".repeat(depth / 2).into_bytes()),
                    _ => {}
                }
                out.extend(content);
                match nest {
                    1 => out.extend("]".repeat(depth).into_bytes()),
                    2 => out.extend("}".repeat(depth).into_bytes()),
                    3 => out.extend("}]".repeat(depth / 2).into_bytes()),
                    _ => {}
                }
                out.extend(b"}}");
                out.extend(space);
                if let Some((at, defect)) = defect {
                    let at = at.index(out.len() + 1);
                    out.splice(at..at, defect);
                }
                if let Some(tear) = tear {
                    out.truncate(tear.index(out.len() + 1));
                }
                out
            },
        )
}

/// The reference: the full decode's verdict, and the serde skeleton of the line (or of its
/// repaired form) when valid.
fn reference(line: &[u8]) -> Option<(String, bool)> {
    match super::slow_decode(line)? {
        Ok(raw) => Some((format!("{raw:?}"), super::has_foreign_escape(line))),
        Err(fixed) => super::skeleton::decode(&fixed)
            .ok()
            .map(|raw| (format!("{raw:?}"), super::has_foreign_escape(line))),
    }
}

fn agrees(line: &[u8]) -> Result<(), TestCaseError> {
    let expected = reference(line);
    match light::decode(line) {
        Light::Entry(mut raw, escapes) => {
            // Only the light decoder knows where a result's id lies: the line holds the id
            // there, then its closing quote.
            if let Some(message) = &mut raw.message
                && let Some(at) = message.tool_call_id_at.take()
            {
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                let (at, quoted) = (at as usize, [id.as_bytes(), b"\""].concat());
                prop_assert_eq!(line.get(at..at + id.len() + 1), Some(quoted.as_slice()));
            }
            prop_assert_eq!(Some((format!("{raw:?}"), escapes)), expected)
        }
        Light::Malformed => prop_assert_eq!(expected, None),
        Light::Unsure => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_skeleton_decoder_never_panics(line in jsonish_line()) {
        let _ = super::skeleton::decode(&line);
        let _ = light::decode(&line);
    }

    #[test]
    fn the_value_decoder_never_panics(line in jsonish_line()) {
        let _ = super::parse_value(&line);
    }

    #[test]
    fn the_light_decoder_agrees_with_the_full_decoders(line in hostile_line(), raw in jsonish_line()) {
        agrees(&line)?;
        agrees(&raw)?;
    }
}

/// Every line of the history fixtures: the fast decoder decides almost all of them, and agrees.
#[test]
fn the_light_decoder_agrees_on_every_fixture_line() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/history");
    let (mut lines, mut unsure) = (0usize, 0usize);
    for file in std::fs::read_dir(&dir).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in std::fs::read(&path).unwrap().split(|&b| b == b'\n') {
            lines += 1;
            unsure += usize::from(matches!(light::decode(line), Light::Unsure));
            agrees(line).unwrap();
        }
    }
    assert!(lines > 1000, "the fixtures were read: {lines}");
    assert!(
        unsure * 100 < lines,
        "{unsure} of {lines} lines left to the slow decode"
    );
}

/// The string scan looks at 32 (AVX2), 16 and 8 bytes at a time and passes over short
/// escapes inside a block: a `"`, `\`, control byte, non-ASCII sequence (valid, split across
/// two blocks, or invalid), and runs of escapes followed by what must stop the scan, at every
/// offset relative to a block boundary (the second 64-byte block too: the scan takes 16
/// bytes, then blocks of 64), and near the end of the line, in a key and in a value, are
/// judged as the full decoders judge them. Runs of backslashes of every length up to five
/// cross a boundary at some offset (which bytes they escape is carried to the next block).
#[test]
fn the_light_decoder_agrees_at_every_offset_from_a_block_boundary() {
    let pieces: [&[u8]; 30] = [
        b"\"",
        b"\\",
        b"\\\\",
        b"\\\"",
        b"\\n",
        b"\\/",
        b"\\u00e9",
        b"\\ud800",
        b"\\x",
        &[0x01],
        &[0x1f],
        &[0x7f],
        "é".as_bytes(),
        "😀".as_bytes(),
        "€€".as_bytes(),
        &[0xff],
        &[0xc3],
        &[0xc3, b'x'],
        &[0xed, 0xa0, 0x80],
        &[0xf0, 0x9f, 0x98],
        // Short escapes side by side, and followed by what must still stop the scan.
        b"\\n\\t\\\"\\\\",
        b"\\n\\u00e9",
        b"\\n\\/",
        b"\\t\"",
        b"\\r\x01",
        "\\bé\\f".as_bytes(),
        // Runs of backslashes: `\\\"` is `\\` then `\"`; five then `n` is two `\\` and
        // `\n`; three then the padding's `z` is `\\` and a bad `\z`.
        b"\\\\\\\"",
        b"\\\\\\\\",
        b"\\\\\\\\\\n",
        b"\\\\\\",
    ];
    let (mut lines, mut decided) = (0usize, 0usize);
    for piece in pieces {
        for before in 0..150 {
            for after in 0..40 {
                let inner = [&b"a".repeat(before)[..], piece, &b"z".repeat(after)[..]].concat();
                for line in [
                    [&b"{\"id\":\""[..], &inner, b"\"}"].concat(),
                    [&b"{\"x\":\""[..], &inner, b"\",\"type\":\"message\"}"].concat(),
                    [&b"{\""[..], &inner, b"\":1}"].concat(),
                ] {
                    lines += 1;
                    decided += usize::from(!matches!(light::decode(&line), Light::Unsure));
                    agrees(&line).unwrap();
                }
            }
        }
    }
    assert!(decided * 2 > lines, "{decided} of {lines} lines decided");
}
