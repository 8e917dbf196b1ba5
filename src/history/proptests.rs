//! Property tests over generated sessions (docs/spec/history.md §18): older walks and range walks return
//! every visible event exactly once, anchors progress, folds partition the hidden events, and
//! nothing off the active branch ever shows. The reference for branch isolation is a tiny
//! independent model of seq allocation and the parent walk.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{EventRole, IndexMode, ListOptions, ReadOptions, list_in, open, search_with};

#[derive(Debug, Clone)]
enum Kind {
    User(bool),
    Assistant { text: bool, calls: usize },
    Result { call: usize },
    Bash,
    Context,
    Marker,
    Label,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => any::<bool>().prop_map(Kind::User),
        3 => (any::<bool>(), 0usize..3).prop_map(|(text, calls)| Kind::Assistant { text, calls }),
        3 => (0usize..40).prop_map(|call| Kind::Result { call }),
        1 => Just(Kind::Bash),
        1 => Just(Kind::Context),
        1 => Just(Kind::Marker),
        1 => Just(Kind::Label),
    ]
}

/// (kind, parent choice): parent choice 0 = previous entry, 1 = a random earlier one, 2 = root.
fn session() -> impl Strategy<Value = Vec<(Kind, u8, usize)>> {
    prop::collection::vec(
        (
            kind(),
            prop_oneof![8 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)],
            any::<usize>(),
        ),
        1..60,
    )
}

/// Write the session; return (file, on-branch seqs per the reference model).
fn write(spec: &[(Kind, u8, usize)]) -> (tempfile::NamedTempFile, BTreeSet<u64>) {
    let mut lines = vec![json!({"type":"session","version":3,"id":"0197prop-session"})];
    let mut parents: Vec<Option<usize>> = Vec::new();
    let mut seqs: Vec<Vec<u64>> = Vec::new();
    let mut next = 1u64;
    let mut call_ids = 0usize;
    for (i, (kind, parent_choice, pick)) in spec.iter().enumerate() {
        let parent = match (parent_choice, i) {
            (_, 0) | (2, _) => None,
            (1, _) => Some(pick % i),
            _ => Some(i - 1),
        };
        parents.push(parent);
        let ts = format!("2026-01-01T00:00:{:02}.000Z", i % 60);
        let base = json!({"id": format!("e{i}"), "parentId": parent.map(|p| format!("e{p}")), "timestamp": ts});
        let (body, count) = match kind {
            Kind::User(text) => (
                json!({"type":"message","message":{"role":"user","content": if *text { format!("user {i}") } else { String::new() }}}),
                1,
            ),
            Kind::Assistant { text, calls } => {
                let mut content = vec![];
                if *text {
                    content.push(json!({"type":"text","text": format!("assistant {i}")}));
                }
                for _ in 0..*calls {
                    content.push(json!({"type":"toolCall","id": format!("c{}", call_ids % 30),"name": format!("tool{}", call_ids % 4),"arguments":{"n": call_ids}}));
                    call_ids += 1;
                }
                (
                    json!({"type":"message","message":{"role":"assistant","content": content}}),
                    1 + *calls as u64,
                )
            }
            Kind::Result { call } => (
                json!({"type":"message","message":{"role":"toolResult","toolCallId": format!("c{call}"),"toolName":"tool","content":[{"type":"text","text": format!("out {i}")}],"isError": call % 5 == 0}}),
                1,
            ),
            Kind::Bash => (
                json!({"type":"message","message":{"role":"bashExecution","command":"ls","output":"x","exitCode":0,"cancelled":false,"truncated":false}}),
                1,
            ),
            Kind::Context => (
                json!({"type":"custom_message","customType":"pi-context/boot","content":"boot","display":false}),
                1,
            ),
            Kind::Marker => (
                json!({"type":"custom","customType":"pi-context/reset-marker","data":{"windowId": format!("w{}", i % 3)}}),
                0,
            ),
            Kind::Label => (json!({"type":"label","targetId":"e0","label":"x"}), 0),
        };
        let mut entry = body;
        for (k, v) in base.as_object().unwrap() {
            entry[k] = v.clone();
        }
        lines.push(entry);
        seqs.push((next..next + count).collect());
        next += count;
    }
    let mut on_branch = BTreeSet::new();
    let mut current = Some(spec.len() - 1);
    let mut guard = 0;
    while let Some(i) = current {
        on_branch.extend(seqs[i].iter().copied());
        current = parents[i];
        guard += 1;
        assert!(guard <= spec.len(), "parents always point backwards");
    }
    let mut file = tempfile::NamedTempFile::new().unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
    (file, on_branch)
}

fn rows(page: &Value) -> Vec<&Value> {
    page["items"].as_array().unwrap().iter().collect()
}

fn seqs_of(page: &Value) -> Vec<u64> {
    rows(page)
        .into_iter()
        .filter_map(|r| r.get("seq").and_then(Value::as_u64))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn walks_return_every_visible_event_once(spec in session(), limit in 1usize..6, roles_pick in 0usize..4) {
        let (file, on_branch) = write(&spec);
        let opened = open(file.path(), None).unwrap();
        let roles = match roles_pick {
            0 => None,
            1 => Some(vec![EventRole::User, EventRole::Assistant, EventRole::Tool, EventRole::Context]),
            2 => Some(vec![EventRole::Tool]),
            _ => Some(vec![EventRole::User, EventRole::Context]),
        };
        let base = ListOptions { limit, roles: roles.clone(), max_chars_per_item: 8, ..ListOptions::default() };
        // Expected: the filtered events of the projection.
        let expected: Vec<u64> = opened.projection.events()
            .filter(|e| match &roles {
                Some(r) => r.contains(&e.role),
                None => matches!(e.role, EventRole::User | EventRole::Assistant) && e.has_text,
            })
            .map(|e| e.seq)
            .collect();
        // Older walk.
        let mut options = base.clone();
        let mut seen = Vec::new();
        let mut fold_count = 0u64;
        loop {
            let page = list_in(&opened, &options).unwrap().data;
            let seqs = seqs_of(&page);
            prop_assert!(seqs.windows(2).all(|w| w[0] < w[1]));
            for s in &seqs {
                prop_assert!(on_branch.contains(s), "seq {} is off the active branch", s);
            }
            for row in rows(&page) {
                if row["folded"] == true {
                    fold_count += row["count"].as_u64().unwrap();
                }
            }
            seen.extend(seqs.iter().copied());
            match page["older_before"].as_u64() {
                Some(before) => {
                    prop_assert!(!seqs.is_empty());
                    prop_assert!(options.before.is_none_or(|b| before < b));
                    prop_assert!(page["newer_after"].is_null());
                    options.before = Some(before);
                }
                None => break,
            }
        }
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        prop_assert_eq!(&sorted, &expected);
        if roles.is_none() {
            let foldable = opened.projection.events()
                .filter(|e| matches!(e.role, EventRole::Tool | EventRole::Context)).count() as u64;
            prop_assert_eq!(fold_count, foldable);
        }
        // Range walk back up with newer_after.
        if let (Some(&first), Some(&last)) = (expected.first(), expected.last()) {
            let mut range = ListOptions { after: Some(first), before: Some(last + 1), ..base.clone() };
            let mut back = vec![first];
            loop {
                let page = list_in(&opened, &range).unwrap().data;
                prop_assert!(page["older_before"].is_null());
                let seqs = seqs_of(&page);
                back.extend(seqs.iter().copied());
                match page["newer_after"].as_u64() {
                    Some(after) => {
                        prop_assert!(after > range.after.unwrap());
                        range.after = Some(after);
                    }
                    None => break,
                }
            }
            prop_assert_eq!(&back, &expected);
        }
        // Every visible event is on the branch, and every on-branch call+result pair counts once.
        let visible: BTreeSet<u64> = opened.projection.events().map(|e| e.seq).collect();
        prop_assert!(visible.is_subset(&on_branch));
        let consumed: HashMap<u64, u64> = opened.projection.paired_results().collect();
        for (result, call) in consumed {
            prop_assert!(call < result && !visible.contains(&result) && visible.contains(&call));
        }
    }
}

// ------------------------------------------------ prefilter soundness over raw session lines

/// Words of generated text: a small vocabulary so that queries often hit, with case and
/// non-ASCII variants, generated-looking words and characters the case folding relates.
const WORDS: &[&str] = &[
    "quokka",
    "Rate",
    "limit",
    "zebra-quokka-7731",
    "src/main.rs",
    "error:",
    "ERROR",
    "cannot",
    "fn",
    "main()",
    "café",
    "İstanbul",
    "straße",
    "ſtop",
    "Kelvin",
    "output",
    "recorded",
    "null",
    "1e21",
    "1.0",
    "-0",
    "1500",
    "ms",
    "[x]",
    "a,b",
    "object",
    "complete",
    "calls",
    "grep",
    "ok",
    "x\\\"y",
    "tab\\tend",
    "a\\\\b",
    "\\\"quokka\\\"",
];

/// Raw JSON text pieces for string contents: verbatim words and escapes of every kind.
fn json_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        6 => prop::sample::select(WORDS).prop_map(str::to_string),
        1 => Just("\\n".to_string()),
        1 => Just("\\u001b[0m".to_string()),
        1 => Just("caf\\u00e9".to_string()),
        1 => Just("a\\/b".to_string()),
        1 => Just("\\u0071uokka".to_string()),
        1 => Just("\\\\".to_string()),
        1 => Just("\\ud83d\\ude00".to_string()),
        1 => Just("\\u000aquokka".to_string()),
    ];
    prop::collection::vec(
        (
            piece,
            prop::sample::select(&[" ", "-", "", ": ", "/", ".", "\\n"][..]),
        ),
        0..6,
    )
    .prop_map(|parts| {
        parts
            .into_iter()
            .map(|(w, sep)| format!("{w}{sep}"))
            .collect()
    })
}

/// Raw JSON values for tool-call arguments: numbers in non-canonical forms, strings, nesting.
fn json_arg() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(
            &[
                "1.0",
                "1e21",
                "1E21",
                "1.5E3",
                "-0",
                "1e-6",
                "9007199254740993",
                "0.5",
                "12",
                "100",
                "-1.50e+2",
                "true",
                "null"
            ][..]
        )
        .prop_map(str::to_string),
        json_text().prop_map(|t| format!("\"{t}\"")),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(
                (
                    prop::sample::select(&["a", "7", "10", "path", "2", "b c"][..]),
                    inner
                ),
                0..3
            )
            .prop_map(|kv| format!(
                "{{{}}}",
                kv.into_iter()
                    .map(|(k, v)| format!("\"{k}\": {v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        ]
    })
}

#[derive(Debug, Clone)]
enum RawKind {
    User(String),
    Assistant {
        text: String,
        calls: Vec<(String, String)>,
    },
    Result {
        call: usize,
        text: String,
        /// A nested-call record's raw name, status, error (or none) and arguments.
        nested: Option<(String, String, Option<String>, String)>,
    },
    Bash {
        command: String,
        output: String,
    },
    Summary(String),
}

fn raw_kind() -> impl Strategy<Value = RawKind> {
    prop_oneof![
        2 => json_text().prop_map(RawKind::User),
        3 => (json_text(), prop::collection::vec((prop::sample::select(&["bash", "read", "error", "output", "rate limit", "grep [ok", "a,b"][..]).prop_map(str::to_string), json_arg()), 0..3))
            .prop_map(|(text, calls)| RawKind::Assistant { text, calls }),
        3 => (0usize..12, json_text(), prop::option::of(nested_record()))
            .prop_map(|(call, text, nested)| RawKind::Result { call, text, nested }),
        1 => (json_text(), json_text()).prop_map(|(command, output)| RawKind::Bash { command, output }),
        1 => json_text().prop_map(RawKind::Summary),
    ]
}

/// A nested-call record's fields as raw JSON: names, statuses and errors of every type the
/// document displays (strings with spaces, arrays JavaScript joins with commas, numbers).
fn nested_record() -> impl Strategy<Value = (String, String, Option<String>, String)> {
    let display =
        |values: &'static [&'static str]| prop::sample::select(values).prop_map(str::to_string);
    (
        display(&[
            r#""grep""#,
            r#""rate limit""#,
            r#"["rate","limit"]"#,
            r#"["a",null,"b"]"#,
            "5",
            r#""Kelvin""#,
        ]),
        display(&[r#""ok""#, r#""limit""#, r#"["ok","x"]"#, r#""""#, "true"]),
        prop::option::of(display(&[
            r#""cannot borrow""#,
            r#"["rate","limit"]"#,
            "{}",
            r#""ok] rate""#,
        ])),
        json_arg(),
    )
}

fn write_raw(spec: &[RawKind]) -> tempfile::NamedTempFile {
    // Padding keeps the index of these small sessions under its 10 % share.
    write_raw_padded(spec, 1200)
}

/// [`write_raw`] with `pad` bytes of padding in every entry line.
fn write_raw_padded(spec: &[RawKind], pad: usize) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, r#"{{"type":"session","version":3,"id":"prefilter","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}}"#).unwrap();
    let mut calls = 0usize;
    for (i, kind) in spec.iter().enumerate() {
        let parent = if i == 0 {
            "null".to_string()
        } else {
            format!("\"e{}\"", i - 1)
        };
        let pad = "p".repeat(pad);
        let head = format!(
            r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","pad":"{pad}","message":"#
        );
        let line = match kind {
            RawKind::User(text) => format!(r#"{head}{{"role":"user","content":"{text}"}}}}"#),
            RawKind::Assistant { text, calls: list } => {
                let mut blocks = vec![format!(r#"{{"type":"text","text":"{text}"}}"#)];
                for (name, args) in list {
                    blocks.push(format!(
                        r#"{{"type":"toolCall","id":"c{}","name":"{name}","arguments":{args}}}"#,
                        calls % 12
                    ));
                    calls += 1;
                }
                format!(
                    r#"{head}{{"role":"assistant","content":[{}]}}}}"#,
                    blocks.join(",")
                )
            }
            RawKind::Result { call, text, nested } => {
                let nested = nested.as_ref().map_or(String::new(), |(name, status, error, args)| {
                    let error = error.as_ref().map_or(String::new(), |e| format!(r#","error":{e}"#));
                    format!(r#","nestedCalls":{{"complete":true,"calls":[{{"id":"n","name":{name},"status":{status},"durationMs":1.5E3{error},"arguments":{args}}}]}}"#)
                });
                format!(
                    r#"{head}{{"role":"toolResult","toolCallId":"c{call}","toolName":"read","content":[{{"type":"text","text":"{text}"}}],"isError":false{nested}}}}}"#
                )
            }
            RawKind::Bash { command, output } => format!(
                r#"{head}{{"role":"bashExecution","command":"{command}","output":"{output}","exitCode":1.0}}}}"#
            ),
            RawKind::Summary(text) => format!(
                r#"{{"type":"compaction","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","pad":"{pad}","summary":"{text}"}}"#
            ),
        };
        writeln!(file, "{line}").unwrap();
    }
    file
}

/// Queries: vocabulary words joined by separators, numbers as JavaScript prints them, and
/// generated-text pieces.
fn query() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        6 => prop::sample::select(WORDS).prop_map(str::to_string),
        1 => prop::sample::select(&["1e+21", "1500", "1", "0.000001", "-150", "9007199254740992", "--- output ---", "1 recorded", "(arguments", "[ok]", "1500ms", "\"a\":1", "é", "QUOKKA", "K", "ſ", "\n", "\u{1b}[0m", "/b", "\"7\":", "grep [ok]", "rate,limit", "a,,b [", "[object Object]", "error: cannot", "rate limit [", "x\"y", "a\\b", "\"quokka\"", "\\", "say \"", "C:\\x"][..]).prop_map(str::to_string),
    ];
    prop::collection::vec(
        (
            word,
            prop::sample::select(&["", " ", "-", ": ", "/", ".", "\n", ",", " [", "] ", ", "][..]),
        ),
        1..4,
    )
    .prop_map(|parts| {
        let q: String = parts
            .into_iter()
            .map(|(w, sep)| format!("{w}{sep}"))
            .collect();
        q
    })
    .prop_filter("queries are non-empty", |q| !q.is_empty())
}

/// The events naming each line, found by binary search, are those naming it found by reading
/// every event (a call names its entry line and its result's).
fn check_events_naming(projection: &super::projection::Projection) -> Result<(), TestCaseError> {
    use super::projection::Source;
    prop_assert!(projection.lines_in_runs());
    for line in 0..projection.line_count() {
        let mut found = Vec::new();
        projection.events_naming(line, &mut found);
        found.sort_unstable();
        let expected: Vec<usize> = projection
            .events()
            .enumerate()
            .filter(|(_, e)| {
                e.source.entry() == line
                    || matches!(e.source, Source::Call { result: Some(r), .. } if r == line)
            })
            .map(|(k, _)| k)
            .collect();
        prop_assert_eq!(found, expected, "line {}", line);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn the_events_naming_a_line_are_found_by_binary_search(
        spec in session(),
        raw in prop::collection::vec(raw_kind(), 1..14),
    ) {
        let (file, _) = write(&spec);
        check_events_naming(&open(file.path(), None).unwrap().projection)?;
        let file = write_raw(&raw);
        check_events_naming(&open(file.path(), None).unwrap().projection)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn search_with_the_prefilter_equals_search_without(
        spec in prop::collection::vec(raw_kind(), 1..14),
        mut queries in prop::collection::vec(query(), 1..3),
        cuts in prop::collection::vec((any::<usize>(), any::<usize>(), 1usize..30), 0..3),
        roles_pick in 0usize..3,
        limit in 1usize..4,
        bound in (0usize..3, 1u64..20),
    ) {
        let file = write_raw(&spec);
        // Also query pieces of the documents themselves, so that hits are common.
        let opened = open(file.path(), None).unwrap();
        let mut loader = super::Loader::new(&opened.file, &opened.projection);
        let docs: Vec<String> = opened.projection.events()
            .map(|e| super::document::build(&mut loader, &e).unwrap().text)
            .collect();
        for (pick, start, len) in cuts {
            if docs.is_empty() { break; }
            let doc = &docs[pick % docs.len()];
            let n = super::document::char_len(doc);
            if n == 0 { continue; }
            let piece = super::document::char_slice(doc, start % n, len).to_string();
            queries.push(piece);
        }
        let roles = match roles_pick {
            0 => None,
            1 => Some(vec![EventRole::Tool]),
            _ => Some(vec![EventRole::User, EventRole::Assistant, EventRole::Context]),
        };
        // Small pages and anchors: the early stop must leave the page and its anchors as they are.
        let (after, before) = match bound {
            (1, seq) => (Some(seq), None),
            (2, seq) => (None, Some(seq)),
            _ => (None, None),
        };
        let options = ListOptions { limit, roles, after, before, max_chars_per_item: 40, ..ListOptions::default() };
        let off = super::IndexMode::Off;
        let with = search_with(file.path(), None, &queries, &options, true, &off).map(|r| (r.data, r.text));
        let without = search_with(file.path(), None, &queries, &options, false, &off).map(|r| (r.data, r.text));
        // The whole-file scan of a warm index (`scan`): the first call stores the projection,
        // the second scans.
        let cache = tempfile::tempdir().unwrap();
        let mode = IndexMode::In { dir: cache.path(), now: std::time::SystemTime::UNIX_EPOCH };
        let strip = |r: Result<super::Rendered, super::HistoryError>| r.map(|mut r| {
            let used = r.data.as_object_mut().and_then(|m| m.remove("index"));
            r.data.as_object_mut().map(|m| m.insert("index".into(), json!("bypassed")));
            (r.data, r.text, used)
        });
        let _ = strip(search_with(file.path(), None, &queries, &options, true, &mode));
        let scanned = strip(search_with(file.path(), None, &queries, &options, true, &mode));
        // The third call finds the hits in the memo the second one wrote.
        let memoed = strip(search_with(file.path(), None, &queries, &options, true, &mode));
        prop_assert_eq!(
            memoed.as_ref().map(|(d, t, _)| (d, t)).map_err(|e| e.code()),
            scanned.as_ref().map(|(d, t, _)| (d, t)).map_err(|e| e.code())
        );
        // And the scan itself, line by line: never a fragment fewer than the line test.
        if let Ok(matcher) = super::matcher::Matcher::new(&queries)
            && let Some(p) = matcher.prefilter()
        {
            for block in [3, 17, 200, 1 << 20] {
                let masks = super::scan::line_masks_in_blocks(&opened.file, &opened.projection, p, block)
                    .unwrap();
                for i in 0..opened.projection.line_count() {
                    let mask = masks.get(&opened.projection, i);
                    let line = opened.projection.line(i);
                    let raw = opened.file.raw_at(line.offset, line.len).unwrap();
                    let tested = p.line_mask_scanning(&raw);
                    prop_assert!(mask & tested == tested, "block {}, line {}: scan {:x} test {:x}", block, i, mask, tested);
                }
                // The memo's scan of whole lines, written then read: the same masks.
                let fresh = tempfile::tempdir().unwrap();
                let memo = super::scan::Memo::new(fresh.path(), file.path(), &opened.file);
                // Rounds 2 and 3 take the early scan of the whole file (as a search extending
                // its index does), from a memo and from none: the same masks, and the same
                // memo written as a scan up to the event lines' end writes.
                let early_dir = tempfile::tempdir().unwrap();
                let early_memo = super::scan::Memo::new(early_dir.path(), file.path(), &opened.file);
                let len = opened.file.file.metadata().unwrap().len();
                for round in 0..4 {
                    let memo = if round == 3 { early_memo.as_ref() } else { memo.as_ref() };
                    let early = (round >= 2).then(|| {
                        super::scan::early_hits(&opened.file.file, p, memo.unwrap(), len, &Default::default()).unwrap()
                    });
                    let memoed = super::scan::line_masks_memo_in_blocks(
                        &opened.file, &opened.projection, p, memo, early, 0, block,
                    ).unwrap();
                    for i in 0..opened.projection.line_count() {
                        prop_assert_eq!(
                            memoed.get(&opened.projection, i),
                            masks.get(&opened.projection, i),
                            "block {}, round {}, line {}", block, round, i
                        );
                    }
                }
                let hits = |dir: &std::path::Path| {
                    let dir = crate::session::index::index_path(dir, std::path::Path::new("/x"));
                    let dir = dir.parent().unwrap().to_path_buf();
                    std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| {
                        e.path().extension().is_some_and(|x| x == "hits")
                    }).map(|e| std::fs::read(e.path()).unwrap()).collect::<Vec<_>>()
                };
                let fresh_only = tempfile::tempdir().unwrap();
                let plain = super::scan::Memo::new(fresh_only.path(), file.path(), &opened.file);
                super::scan::line_masks_memo_in_blocks(
                    &opened.file, &opened.projection, p, plain.as_ref(), None, 0, block,
                ).unwrap();
                prop_assert_eq!(hits(early_dir.path()), hits(fresh_only.path()), "block {}", block);
            }
        }
        let scanned = scanned.map(|(data, text, _)| (data, text));
        match (&scanned, &without) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert_eq!(a.as_ref().err().map(|e| e.code()), b.as_ref().err().map(|e| e.code())),
        }
        match (with, without) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert_eq!(a.err().map(|e| e.code()), b.err().map(|e| e.code())),
        }
    }
}

/// Every substring of every document that starts or ends next to a separator (where copied
/// and generated text meet) is a query the prefilter must let through for its event: a
/// deterministic sweep over documents holding every kind of generated text (nested-call lines
/// with string, array, number and object displays; names with spaces, commas and brackets;
/// arguments with numbers and strings; output; summaries).
/// Text documents with `"` and `\\` (written `\\"` and `\\\\` in their lines): a query holding them
/// finds the same events with the prefilter (whose text literal is the query so escaped) as
/// without, cold and through a warm index; a prefilter that dropped the escaping would miss
/// them.
#[test]
fn queries_with_quotes_and_backslashes_find_text_alike_with_the_prefilter() {
    let spec = vec![
        RawKind::User(r#"say \"hi\" to C:\\temp\\x now"#.into()),
        RawKind::Assistant {
            text: r#"a \\\" b and \"quokka\"\nC:\\Temp"#.into(),
            calls: vec![(
                "read".into(),
                r#"{"path":"C:\\temp\\x","q":"say \"hi\""}"#.into(),
            )],
        },
        RawKind::Result {
            call: 0,
            text: r#"said \"hi\" to C:\\temp"#.into(),
            nested: None,
        },
        RawKind::Summary(r#"\\\\ and \"\""#.into()),
        RawKind::User("plain text".into()),
    ];
    let file = write_raw(&spec);
    let cache = tempfile::tempdir().unwrap();
    let mode = IndexMode::In {
        dir: cache.path(),
        now: std::time::SystemTime::UNIX_EPOCH,
    };
    let options = ListOptions {
        limit: 20,
        ..ListOptions::default()
    };
    let strip = |r: Result<super::Rendered, super::HistoryError>| {
        let mut r = r.unwrap();
        r.data.as_object_mut().unwrap().remove("index");
        format!("{}\n{}", r.data, r.text)
    };
    for query in [
        r#"say "hi""#,
        r#"C:\temp\x"#,
        r#"C:\temp"#,
        r#""hi" to"#,
        r#"a \" b"#,
        r#""quokka""#,
        r#"\\"#,
        "\"\"",
        "\"",
        "\\",
        "\"quokka\"\nC:\\temp",
    ] {
        let queries = vec![query.to_string()];
        let without = strip(search_with(
            file.path(),
            None,
            &queries,
            &options,
            false,
            &IndexMode::Off,
        ));
        assert!(
            !without.contains(r#""items":[]"#),
            "{query}: no match at all"
        );
        for pass in 0..2 {
            for index in [&IndexMode::Off, &mode] {
                let with = strip(search_with(
                    file.path(),
                    None,
                    &queries,
                    &options,
                    true,
                    index,
                ));
                assert_eq!(with, without, "{query} (pass {pass})");
            }
        }
    }
}

#[test]
fn every_boundary_substring_of_a_document_passes_the_prefilter() {
    use super::matcher::{DocKind, Matcher};
    use super::projection::Source;
    let mut spec = Vec::new();
    let names = ["rate limit", "grep [ok", "a,b", "error", "x"];
    for (i, name) in names.iter().enumerate() {
        spec.push(RawKind::Assistant {
            text: format!("call {i}: rate limit [x] error: cannot"),
            calls: vec![(
                name.to_string(),
                r#"{"b c": ["rate limit", 1.5E3, null, true], "7": {"k": "v w"}, "n": -0}"#.into(),
            )],
        });
        let records = [
            (r#""grep""#, r#""ok""#, Some(r#""cannot borrow""#)),
            (
                r#"["rate","limit"]"#,
                r#"["ok","x"]"#,
                Some(r#"["rate",null,"limit"]"#),
            ),
            (r#""rate limit""#, r#""""#, Some("{}")),
            ("5", "true", None),
            (r#""Kelvin""#, r#""limit""#, Some(r#""ok] rate""#)),
        ];
        let (n, st, er) = records[i % records.len()];
        spec.push(RawKind::Result {
            call: i,
            text: "out: rate limit, error: cannot (x) [y]".into(),
            nested: Some((
                n.into(),
                st.into(),
                er.map(str::to_string),
                r#"{"q": "rate limit", "m": [1, "a b"]}"#.into(),
            )),
        });
    }
    spec.push(RawKind::Result {
        call: 40,
        text: "orphan rate limit".into(),
        nested: None,
    });
    spec.push(RawKind::Bash {
        command: "grep -n rate limit".into(),
        output: "a: b, c [d]".into(),
    });
    spec.push(RawKind::Summary("summary: rate limit\\nnext [line]".into()));
    let file = write_raw(&spec);
    let opened = open(file.path(), None).unwrap();
    let mut loader = super::Loader::new(&opened.file, &opened.projection);
    let raw = |line: usize| {
        let l = opened.projection.line(line);
        opened.file.raw_at(l.offset, l.len).unwrap()
    };
    let mut tried = 0usize;
    for event in opened.projection.events() {
        let doc = super::document::build(&mut loader, &event).unwrap().text;
        let (kind, lines) = match event.source {
            Source::Text { entry } => (DocKind::Text, vec![entry]),
            Source::Call { entry, result, .. } => (
                DocKind::Tool,
                std::iter::once(entry).chain(result).collect(),
            ),
            Source::Result { entry } | Source::Bash { entry } => (DocKind::Tool, vec![entry]),
        };
        let chars: Vec<(usize, char)> = doc.char_indices().collect();
        let sep = |c: char| !c.is_alphanumeric();
        for (a, &(start, c)) in chars.iter().enumerate() {
            let at_boundary = sep(c) || a == 0 || sep(chars[a - 1].1);
            for b in a + 1..(a + 24).min(chars.len() + 1) {
                let end = chars.get(b).map_or(doc.len(), |&(i, _)| i);
                let ends_at_boundary = b == chars.len() || sep(chars[b].1) || sep(chars[b - 1].1);
                if !at_boundary && !ends_at_boundary {
                    continue;
                }
                let query = doc[start..end].to_string();
                let matcher = Matcher::new(std::slice::from_ref(&query)).unwrap();
                let Some(p) = matcher.prefilter() else {
                    continue;
                };
                let mask = lines
                    .iter()
                    .fold(0, |m, &l| m | p.line_mask_scanning(&raw(l)));
                tried += 1;
                assert!(
                    p.candidate(kind, mask),
                    "query {query:?} of seq {} ({kind:?}) was filtered out; document:\n{doc}",
                    event.seq
                );
                // The nested rule's phrases without a bit, looked for in the lines.
                let lines_raw: Vec<Vec<u8>> = lines.iter().map(|&l| raw(l)).collect();
                assert!(
                    !p.rests_on_lines(kind, mask) || p.candidate_in_lines(kind, mask, &lines_raw),
                    "query {query:?} of seq {} ({kind:?}) was refused in its lines; document:\n{doc}",
                    event.seq
                );
            }
        }
    }
    assert!(tried > 1000, "{tried}");
}

// ------------------------------------------------ the index never changes an answer

/// Every history answer for `path`, with `data.index` removed, through `mode`; also the index
/// uses reported.
fn answers(
    path: &std::path::Path,
    queries: &[String],
    mode: &IndexMode<'_>,
) -> (Vec<String>, Vec<String>) {
    answers_at(path, None, queries, mode)
}

/// [`answers`] on the branch ending at `leaf` (default: the last entry).
fn answers_at(
    path: &std::path::Path,
    leaf: Option<&str>,
    queries: &[String],
    mode: &IndexMode<'_>,
) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut uses = Vec::new();
    let mut push = |r: Result<super::Rendered, super::HistoryError>| match r {
        Ok(mut r) => {
            if let Some(map) = r.data.as_object_mut() {
                uses.push(
                    map.remove("index")
                        .map(|v| v.to_string())
                        .unwrap_or_default(),
                );
            }
            out.push(format!("{}\n{}", r.data, r.text));
        }
        Err(e) => out.push(format!("{:?}", e.to_refusal())),
    };
    push(super::windows(path, leaf, mode));
    push(super::list(path, leaf, &ListOptions::default(), mode));
    let tools = ListOptions {
        roles: Some(vec![EventRole::Tool]),
        limit: 7,
        max_chars_per_item: 30,
        ..ListOptions::default()
    };
    push(super::list(path, leaf, &tools, mode));
    push(super::search(
        path,
        leaf,
        queries,
        &ListOptions {
            limit: 50,
            ..ListOptions::default()
        },
        mode,
    ));
    for seq in [1, 2, 3, 5, 8, 13] {
        push(super::read(path, leaf, &ReadOptions::new(seq), mode));
    }
    (out, uses)
}

/// The id of the last entry of a session's text (its last line that is an object other
/// than a `session` line), when it has one.
fn last_entry_id(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|entry| entry.is_object() && entry["type"] != "session")
        .and_then(|entry| entry["id"].as_str().map(str::to_string))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn answers_with_the_index_equal_answers_without_while_the_file_grows(
        spec in prop::collection::vec(raw_kind(), 1..16),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..4),
        queries in prop::collection::vec(query(), 1..3),
        // Shorter padding: an index kept without its skeleton (or without the projection,
        // or none at all) as well as a whole one.
        pad in prop_oneof![3 => Just(1200usize), 1 => 0usize..1200],
    ) {
        let full = write_raw_padded(&spec, pad);
        let bytes = std::fs::read(full.path()).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.push(bytes.len());
        points.sort_unstable();
        let mode = IndexMode::In { dir: cache.path(), now: std::time::SystemTime::UNIX_EPOCH };
        for point in points {
            // Grow the file (sometimes mid-line: a torn last line) and answer both ways.
            std::fs::write(&path, &bytes[..point]).unwrap();
            let (plain, _) = answers(&path, &queries, &IndexMode::Off);
            let (indexed, _) = answers(&path, &queries, &mode);
            prop_assert_eq!(&plain, &indexed);
            let (again, uses) = answers(&path, &queries, &mode);
            prop_assert_eq!(&plain, &again);
            if plain[0].starts_with('{') && point == bytes.len() && point >= 4096 && pad == 1200 {
                prop_assert!(uses.iter().all(|u| u == "\"reused\""), "{:?}", uses);
            }
        }
    }
}

/// A session with calls, results, bash runs and summaries, long enough that its index (with
/// the stored projection) stays under its share of the file.
fn stored_projection_session() -> tempfile::NamedTempFile {
    write_raw(&stored_projection_spec(6))
}

/// `rounds` rounds of a question, an answer with two calls, a result, a bash run, then a
/// summary.
fn stored_projection_spec(rounds: usize) -> Vec<RawKind> {
    let mut spec = Vec::new();
    for i in 0..rounds {
        spec.push(RawKind::User(format!("question {i} about quokka")));
        spec.push(RawKind::Assistant {
            text: format!("answer {i}"),
            calls: vec![
                ("read".into(), format!(r#"{{"path":"src/{i}.rs","n":1.0}}"#)),
                ("grep".into(), r#"{"q":"x"}"#.into()),
            ],
        });
        spec.push(RawKind::Result {
            call: (2 * i) % 12,
            text: format!("output {i}"),
            nested: None,
        });
        spec.push(RawKind::Bash {
            command: format!("ls {i}"),
            output: "a b".into(),
        });
    }
    spec.push(RawKind::Summary("summary of quokka".into()));
    spec
}

#[test]
fn the_stored_projection_answers_alike_and_every_damage_of_the_index_is_harmless() {
    let file = stored_projection_session();
    let cache = tempfile::tempdir().unwrap();
    let mode = IndexMode::In {
        dir: cache.path(),
        now: std::time::SystemTime::UNIX_EPOCH,
    };
    let queries = vec!["quokka".to_string(), "src/3.rs".to_string()];
    let (plain, _) = answers(file.path(), &queries, &IndexMode::Off);
    let (built, uses) = answers(file.path(), &queries, &mode);
    assert_eq!(built, plain);
    assert_eq!(uses[0], "\"built\"");
    let target = crate::session::index::index_path(
        cache.path(),
        &std::fs::canonicalize(file.path()).unwrap(),
    );
    let good = std::fs::read(&target).unwrap();
    // Magic, format, front length and checksum, side length and checksum, then the front
    // section (head and the stored projection), the side data, then the skeleton.
    let front_end = 44 + u64::from_le_bytes(good[12..20].try_into().unwrap()) as usize;
    let side_end = front_end + u64::from_le_bytes(good[28..36].try_into().unwrap()) as usize;
    assert!(front_end < side_end, "the side data is stored");
    assert!(side_end < good.len(), "the projection is stored");
    // A damaged skeleton is not even read while the stored projection covers the file: the
    // answers come from the stored projection alone.
    let mut skeleton_damaged = good.clone();
    skeleton_damaged[side_end + 3] ^= 0x5a;
    std::fs::write(&target, &skeleton_damaged).unwrap();
    let (reused, uses) = answers(file.path(), &queries, &mode);
    assert_eq!(reused, plain);
    // (`answers` runs the search fourth; it still reads the skeleton, so it rebuilds.)
    let not_search = uses.iter().enumerate().filter(|(i, _)| *i != 3);
    assert!(
        not_search.clone().all(|(_, u)| u == "\"reused\""),
        "{uses:?}"
    );
    // Every flipped byte and every truncation: the same answers; a damaged preamble or front
    // is rebuilt; a damaged skeleton (or its checksum) is only met, and rebuilt, when the
    // skeleton is needed (the file grew, another leaf, a search).
    let quick = |mode: &IndexMode<'_>| -> (Vec<String>, String) {
        let mut out = Vec::new();
        let mut first_use = String::new();
        for r in [
            super::windows(file.path(), None, mode),
            super::list(file.path(), None, &ListOptions::default(), mode),
            super::read(file.path(), None, &ReadOptions::new(3), mode),
        ] {
            let mut r = r.unwrap();
            let used = r.data.as_object_mut().unwrap().remove("index").unwrap();
            if first_use.is_empty() {
                first_use = used.to_string();
            }
            out.push(format!("{}\n{}", r.data, r.text));
        }
        (out, first_use)
    };
    let (expected, _) = quick(&IndexMode::Off);
    // Every byte of the preamble and front, every 5th of the skeleton.
    for at in (0..good.len()).filter(|&at| at < front_end || at % 5 == 0) {
        let mut flipped = good.clone();
        flipped[at] ^= 0x5a;
        for (damaged, what) in [(flipped, "flipped"), (good[..at].to_vec(), "truncated")] {
            std::fs::write(&target, &damaged).unwrap();
            let (answer, used) = quick(&mode);
            assert_eq!(answer, expected, "{what} at {at}");
            // Bytes 28..44 are the side data's length and checksum.
            if at < front_end && !(28..44).contains(&at) {
                assert_eq!(used, "\"built\"", "{what} at {at}");
                assert_eq!(std::fs::read(&target).unwrap(), good, "{what} at {at}");
            } else {
                assert!(
                    used == "\"built\"" || used == "\"reused\"",
                    "{what} at {at}"
                );
            }
        }
    }
}

/// An index whose skeleton, stored projection and side data together would pass its share of
/// the file keeps the projection and side without the skeleton (a session of many small
/// entries, each with several events): default-leaf calls and extensions in place use it, a
/// call that needs the skeleton (another leaf) decodes the file and leaves the index as it
/// is, and every answer equals the answer without the index while the file grows.
#[test]
fn an_index_kept_without_its_skeleton_answers_alike_while_the_file_grows() {
    let spec = stored_projection_spec(48);
    let queries = vec!["quokka".to_string(), "src/3.rs".to_string()];
    let omitted = |cache: &std::path::Path, path: &std::path::Path| {
        let target =
            crate::session::index::index_path(cache, &std::fs::canonicalize(path).unwrap());
        crate::session::index::keeps_skeleton(&std::fs::read(target).unwrap()) == Some(false)
    };
    // The longest padding at which the whole index no longer fits, but the projection does.
    let mut found = None;
    for pad in (0..=1200).rev().step_by(20) {
        let file = write_raw_padded(&spec, pad);
        let cache = tempfile::tempdir().unwrap();
        let mode = IndexMode::In {
            dir: cache.path(),
            now: std::time::SystemTime::UNIX_EPOCH,
        };
        let (_, uses) = answers(file.path(), &queries, &mode);
        if uses[0] == "\"built\"" && omitted(cache.path(), file.path()) {
            found = Some(file);
            break;
        }
    }
    let file = found.expect("some padding keeps the index without its skeleton");
    let bytes = std::fs::read(file.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let cache = tempfile::tempdir().unwrap();
    let mode = IndexMode::In {
        dir: cache.path(),
        now: std::time::SystemTime::UNIX_EPOCH,
    };
    // Line ends from two thirds of the file on: each cut appends whole lines.
    let ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\n' && i * 3 >= bytes.len() * 2)
        .map(|(i, _)| i + 1)
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for (k, &end) in ends.iter().enumerate().step_by(3) {
        std::fs::write(&path, &bytes[..end]).unwrap();
        let (plain, _) = answers(&path, &queries, &IndexMode::Off);
        let (indexed, uses) = answers(&path, &queries, &mode);
        assert_eq!(indexed, plain, "cut {k}");
        seen.insert(uses[0].clone());
        if k > 0 {
            assert!(omitted(cache.path(), &path), "cut {k}: {uses:?}");
        }
        // Another leaf needs the skeleton: the file is decoded, the index left as it is.
        let before = std::fs::read(crate::session::index::index_path(
            cache.path(),
            &std::fs::canonicalize(&path).unwrap(),
        ))
        .unwrap();
        let leaf = Some("e5");
        let other = |mode: &IndexMode<'_>| {
            let mut r = super::windows(&path, leaf, mode).unwrap();
            r.data.as_object_mut().unwrap().remove("index");
            format!("{}\n{}", r.data, r.text)
        };
        assert_eq!(other(&mode), other(&IndexMode::Off), "cut {k}");
        let after = std::fs::read(crate::session::index::index_path(
            cache.path(),
            &std::fs::canonicalize(&path).unwrap(),
        ))
        .unwrap();
        assert_eq!(before, after, "cut {k}: another leaf replaced the index");
    }
    assert!(seen.contains("\"extended\""), "{seen:?}");
}

/// The growth file (`<index>.grow`): appends that continue the branch rewrite only it (the
/// index file stays as it is) while it is small beside the index file, then everything is
/// folded into a new index file and the growth file removed; the answers always equal those
/// without the index, and every flipped byte and truncation of a growth file (and a growth
/// file of another index file) is harmless.
#[test]
fn the_growth_file_answers_alike_folds_and_every_damage_of_it_is_harmless() {
    // Eight times the stored projection session: an index file large enough that a few
    // appends fit in its growth file before a fold.
    let spec = stored_projection_spec(48);
    let file = write_raw(&spec);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::copy(file.path(), &path).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mode = IndexMode::In {
        dir: cache.path(),
        now: std::time::SystemTime::UNIX_EPOCH,
    };
    let queries = vec!["quokka".to_string(), "late 7".to_string()];
    let idx =
        crate::session::index::index_path(cache.path(), &std::fs::canonicalize(&path).unwrap());
    let grow = crate::session::index::grow_path(&idx);
    let (_, uses) = answers(&path, &queries, &mode);
    assert_eq!(uses[0], "\"built\"");
    let pad = "q".repeat(1200);
    // Each step appends a user line, a call, its result or the result of a call of the
    // index file still open (c1, c3, … are), and now and then a reset marker.
    let line = |i: usize, parent: &str| -> String {
        let head = format!(
            r#""id":"late{i}","parentId":"{parent}","timestamp":"2026-01-01T00:20:00.000Z","pad":"{pad}""#
        );
        let message = match i % 4 {
            0 => format!(r#"{{"role":"user","content":"late {i} quokka"}}"#),
            1 => format!(
                r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"d{i}","name":"read","arguments":{{"path":"late/{i}"}}}}]}}"#
            ),
            2 => format!(
                r#"{{"role":"toolResult","toolCallId":"d{}","toolName":"read","content":[{{"type":"text","text":"late {i} output"}}],"isError":false}}"#,
                i - 1
            ),
            _ => format!(
                r#"{{"role":"toolResult","toolCallId":"c{}","toolName":"grep","content":[{{"type":"text","text":"late {i} grep"}}],"isError":false}}"#,
                (i / 4 % 6) * 2 + 1
            ),
        };
        if i % 9 == 8 {
            format!(
                r#"{{"type":"custom","customType":"pi-context/reset-marker","data":{{"windowId":"w{i}"}},{head}}}"#
            )
        } else {
            format!(r#"{{"type":"message",{head},"message":{message}}}"#)
        }
    };
    let mut parent = format!("e{}", spec.len() - 1);
    let (mut deltas, mut folds) = (0, 0);
    let mut i = 0;
    let mut last_delta = None;
    while i < 400 && (folds < 2 || last_delta.is_none()) {
        let before = std::fs::read(&idx).unwrap();
        for _ in 0..1 + i % 3 {
            append(&path, &format!("{}\n", line(i, &parent)));
            parent = format!("late{i}");
            i += 1;
        }
        let (plain, _) = answers(&path, &queries, &IndexMode::Off);
        let (indexed, uses) = answers(&path, &queries, &mode);
        assert_eq!(plain, indexed, "after late{}", i - 1);
        assert_eq!(uses[0], "\"extended\"", "after late{}", i - 1);
        assert!(uses[1..].iter().all(|u| u == "\"reused\""), "{uses:?}");
        let after = std::fs::read(&idx).unwrap();
        if grow.exists() {
            assert_eq!(before, after, "a growth file leaves the index file alone");
            deltas += 1;
            last_delta = Some((after, std::fs::read(&grow).unwrap()));
        } else {
            assert_ne!(before, after, "folded into a new index file");
            folds += 1;
            last_delta = None;
        }
    }
    assert!(deltas >= 3 && folds >= 2, "{deltas} deltas, {folds} folds");
    let (good_idx, good) = last_delta.unwrap();
    let (expected, _) = answers(&path, &queries, &IndexMode::Off);
    let quick = |mode: &IndexMode<'_>| -> Vec<String> {
        let mut out = Vec::new();
        for r in [
            super::windows(&path, None, mode),
            super::list(&path, None, &ListOptions::default(), mode),
            super::read(&path, None, &ReadOptions::new(3), mode),
            super::search(&path, None, &queries, &ListOptions::default(), mode),
        ] {
            let mut r = r.unwrap();
            r.data.as_object_mut().unwrap().remove("index");
            out.push(format!("{}\n{}", r.data, r.text));
        }
        out
    };
    let want = quick(&IndexMode::Off);
    assert_eq!(quick(&mode), want);
    assert_eq!(answers(&path, &queries, &mode).0, expected);
    for at in 0..good.len() {
        let mut flipped = good.clone();
        flipped[at] ^= 0x5a;
        for (damaged, what) in [(flipped, "flipped"), (good[..at].to_vec(), "truncated")] {
            std::fs::write(&idx, &good_idx).unwrap();
            std::fs::write(&grow, &damaged).unwrap();
            assert_eq!(quick(&mode), want, "{what} at {at}");
        }
    }
    // A whole growth file of another index file (the one before a fold): not used.
    std::fs::write(&idx, &good_idx).unwrap();
    std::fs::write(&grow, &good).unwrap();
    append(&path, &format!("{}\n", line(i, &parent)));
    let stale = good.clone();
    let mut folded = false;
    for k in 1..40 {
        let parent = format!("late{}", i + k - 1);
        append(&path, &format!("{}\n", line(i + k, &parent)));
        answers(&path, &queries, &mode);
        if !grow.exists() {
            folded = true;
            break;
        }
    }
    assert!(folded);
    std::fs::write(&grow, &stale).unwrap();
    assert_eq!(
        answers(&path, &queries, &mode).0,
        answers(&path, &queries, &IndexMode::Off).0
    );
}

/// The memo of line hits (`scan::Memo`): searches through it answer as without the index
/// while the file grows, and every flipped byte and truncation of the memo file, a rewritten
/// session and an unwritable memo are harmless.
#[test]
fn the_memo_of_line_hits_answers_alike_and_every_damage_of_it_is_harmless() {
    let file = stored_projection_session();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::copy(file.path(), &path).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mode = IndexMode::In {
        dir: cache.path(),
        now: std::time::SystemTime::UNIX_EPOCH,
    };
    let queries = vec!["quokka".to_string(), "src/3.rs".to_string()];
    let search = |mode: &IndexMode<'_>| -> String {
        let options = ListOptions {
            limit: 50,
            ..ListOptions::default()
        };
        let mut r = super::search(&path, None, &queries, &options, mode).unwrap();
        r.data.as_object_mut().unwrap().remove("index");
        format!("{}\n{}", r.data, r.text)
    };
    let memo =
        crate::session::index::index_path(cache.path(), &std::fs::canonicalize(&path).unwrap())
            .with_extension("hits");
    // Built, then reused: the second search writes the memo, the third reads it.
    let expected = search(&IndexMode::Off);
    assert_eq!(search(&mode), expected);
    assert_eq!(search(&mode), expected);
    let good = std::fs::read(&memo).expect("the memo is written");
    assert!(good.len() > 28 + 40);
    assert_eq!(search(&mode), expected);
    assert_eq!(
        std::fs::read(&memo).unwrap(),
        good,
        "an up-to-date memo is not rewritten"
    );
    for at in 0..good.len() {
        let mut flipped = good.clone();
        flipped[at] ^= 0x5a;
        for (damaged, what) in [(flipped, "flipped"), (good[..at].to_vec(), "truncated")] {
            std::fs::write(&memo, &damaged).unwrap();
            assert_eq!(search(&mode), expected, "{what} at {at}");
            assert_eq!(
                std::fs::read(&memo).unwrap(),
                good,
                "{what} at {at}: rewritten"
            );
        }
    }
    // A well-formed memo that lies (its hits dropped) changes the answer: it is used.
    super::scan::forget_memo_hits(cache.path(), &path);
    assert_ne!(search(&mode), expected);
    std::fs::write(&memo, &good).unwrap();
    // Appends: only the new bytes are scanned, and the memo grows with them.
    append(
        &path,
        &format!(
            "{}\n",
            json!({"type": "message", "id": "late", "parentId": "e24", "timestamp": "2026-01-01T00:10:00.000Z",
                "message": {"role": "user", "content": "late quokka in src/3.rs"}})
        ),
    );
    let expected = search(&IndexMode::Off);
    assert_eq!(search(&mode), expected);
    assert_eq!(search(&mode), expected);
    assert_ne!(
        std::fs::read(&memo).unwrap(),
        good,
        "the memo covers the appended line"
    );
    // The session rewritten with other bytes at the end of the covered range: not trusted.
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    let at = n - 20;
    bytes[at] = if bytes[at] == b'q' { b'x' } else { b'q' };
    std::fs::write(&path, &bytes).unwrap();
    let expected = search(&IndexMode::Off);
    assert_eq!(search(&mode), expected);
    assert_eq!(search(&mode), expected);
    // A memo path that cannot be written (a directory in its place): the same answers.
    std::fs::remove_file(&memo).unwrap();
    std::fs::create_dir(&memo).unwrap();
    assert_eq!(search(&mode), expected);
    assert_eq!(search(&mode), expected);
}

// ------------------------------------- the stored projection extended in place by appends

/// Lines of a session for `spec` (kind, parent choice as in [`session`], pick, and whether
/// the entry reuses an earlier entry's id), padded so its index stays under its share.
fn grown_lines(spec: &[(Kind, u8, usize, bool)]) -> Vec<String> {
    let mut lines = vec![
        json!({"type":"session","version":3,"id":"0197grow-session","timestamp":"2026-01-01T00:00:00.000Z"})
            .to_string(),
    ];
    let mut call_ids = 0usize;
    for (i, (kind, parent_choice, pick, dup)) in spec.iter().enumerate() {
        let parent = match (parent_choice, i) {
            (_, 0) | (2, _) => None,
            (1, _) => Some(pick % i),
            _ => Some(i - 1),
        };
        let id = if *dup && i > 0 {
            format!("e{}", pick % i)
        } else {
            format!("e{i}")
        };
        let ts = format!("2026-01-01T00:{:02}:{:02}.000Z", i / 60 % 60, i % 60);
        let mut entry = match kind {
            Kind::User(text) => {
                json!({"type":"message","message":{"role":"user","content": if *text { format!("user {i}") } else { String::new() }}})
            }
            Kind::Assistant { text, calls } => {
                let mut content = vec![];
                if *text {
                    content.push(json!({"type":"text","text": format!("assistant {i}")}));
                }
                for _ in 0..*calls {
                    content.push(json!({"type":"toolCall","id": format!("c{}", call_ids % 30),"name": format!("tool{}", call_ids % 4),"arguments":{"n": call_ids}}));
                    call_ids += 1;
                }
                json!({"type":"message","message":{"role":"assistant","content": content}})
            }
            Kind::Result { call } => {
                json!({"type":"message","message":{"role":"toolResult","toolCallId": format!("c{call}"),"toolName": format!("tool{}", call % 4),"content":[{"type":"text","text": format!("out {i}")}],"isError": call % 5 == 0}})
            }
            Kind::Bash => {
                json!({"type":"message","message":{"role":"bashExecution","command":"ls","output":"x","exitCode":0,"cancelled":false,"truncated":false}})
            }
            Kind::Context => {
                if i % 2 == 0 {
                    json!({"type":"compaction","summary": format!("summary {i}"),"firstKeptEntryId":"e0","tokensBefore":10})
                } else {
                    json!({"type":"branch_summary","fromId":"e0","summary": format!("branch {i}")})
                }
            }
            Kind::Marker => {
                json!({"type":"custom","customType":"pi-context/reset-marker","data":{"windowId": format!("w{}", i % 3)}})
            }
            Kind::Label => json!({"type":"model_change","provider":"p","modelId":"m"}),
        };
        entry["id"] = json!(id);
        entry["parentId"] = json!(parent.map(|p| format!("e{p}")));
        entry["timestamp"] = json!(ts);
        entry["pad"] = json!("p".repeat(2500));
        lines.push(entry.to_string());
    }
    lines
}

/// The projection's facts with line indexes resolved to the lines themselves (the order of
/// `lines` may differ between an extended and a rebuilt projection).
fn projection_facts(p: &super::Projection) -> String {
    use super::projection::Source;
    let mut out = format!("highest {}\nwindows {:?}\n", p.highest_seq, p.windows);
    for e in p.events() {
        let source = match e.source {
            Source::Text { entry } => format!("text {:?}", p.line(entry)),
            Source::Call {
                entry,
                block,
                result,
            } => format!(
                "call {:?} #{block} -> {:?}",
                p.line(entry),
                result.map(|r| p.line(r))
            ),
            Source::Result { entry } => format!("result {:?}", p.line(entry)),
            Source::Bash { entry } => format!("bash {:?}", p.line(entry)),
        };
        out.push_str(&format!(
            "{} w{} {:?} {} {:?} {source}\n",
            e.seq,
            e.window,
            e.role,
            e.has_text,
            p.tool_name(&e)
        ));
    }
    out.push_str(&format!(
        "paired {:?}\n",
        p.paired_results().collect::<Vec<_>>()
    ));
    // The scan's shortcuts over the records must say what the lines say (the order itself
    // may differ between an extended projection and a rebuilt one).
    let in_order = p.lines().map(|line| line.offset).is_sorted();
    assert_eq!(p.lines_in_file_order(), in_order);
    for nested in [false, true] {
        let flagged: Vec<usize> = p
            .lines()
            .enumerate()
            .filter(|(_, line)| line.escapes || (nested && line.nested_calls))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(p.flagged_lines(nested), flagged);
    }
    out
}

/// Append `text` to `path`.
fn append(path: &std::path::Path, text: &str) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Open `path` through the index in `cache` as a history call does: whether the stored
/// projection was extended in place, and (then) that it equals the projection built from
/// the whole file.
fn extended_in_place(path: &std::path::Path, cache: &std::path::Path) -> bool {
    let mode = IndexMode::In {
        dir: cache,
        now: std::time::SystemTime::UNIX_EPOCH,
    };
    match super::open_reused(path, None, &mode).unwrap() {
        Some(opened) if opened.index == super::IndexUse::Extended => {
            let plain = open(path, None).unwrap();
            assert_eq!(
                projection_facts(&opened.projection),
                projection_facts(&plain.projection)
            );
            true
        }
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn appends_of_every_kind_between_calls_answer_as_without_the_index(
        spec in prop::collection::vec(
            (kind(), prop_oneof![12 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)], any::<usize>(), prop::bool::weighted(0.04)),
            2..40,
        ),
        steps in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4), 1..5),
        queries in prop::collection::vec(query(), 1..2),
        other in any::<prop::sample::Index>(),
    ) {
        let lines = grown_lines(&spec);
        let cache = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mode = IndexMode::In { dir: cache.path(), now: std::time::SystemTime::UNIX_EPOCH };
        let mut points: Vec<(usize, u8)> = steps.iter().map(|(at, extra)| (1 + at.index(lines.len()), *extra)).collect();
        points.push((lines.len(), 0));
        points.sort_unstable();
        let mut written = 0;
        let mut text = String::new();
        for (point, extra) in points {
            // Whole lines up to `point`, then sometimes a blank or malformed line, or half of
            // the next line (torn: it waits).
            for line in &lines[written..point.max(written)] {
                text.push_str(line);
                text.push('\n');
            }
            written = point.max(written);
            let mut now = text.clone();
            match extra {
                1 => { text.push_str("not json\n"); now = text.clone(); }
                2 => { text.push('\n'); now = text.clone(); }
                3 => if let Some(next) = lines.get(written) { now.push_str(&next[..next.len() / 2]); },
                _ => {}
            }
            std::fs::write(&path, &now).unwrap();
            // Stays the same file (inode) as it grows, as Pi's appends do.
            extended_in_place(&path, cache.path());
            let (plain, _) = answers(&path, &queries, &IndexMode::Off);
            let (indexed, _) = answers(&path, &queries, &mode);
            prop_assert_eq!(&plain, &indexed);
            // As the Pi extension asks: the leaf named, the last entry (the same branch),
            // through the same index as the calls without it.
            if let Some(last) = last_entry_id(&now) {
                let (named, _) = answers_at(&path, Some(&last), &queries, &mode);
                prop_assert_eq!(&plain, &named);
            }
            // Another entry named as the leaf (after a `/tree`): built from the skeleton and
            // kept in the leaf file, then read from it, between the calls above and the next
            // appends.
            let ids = entry_ids(&now);
            if !ids.is_empty() {
                let leaf = &ids[other.index(ids.len())];
                let (plain, _) = answers_at(&path, Some(leaf), &queries, &IndexMode::Off);
                for _ in 0..2 {
                    let (named, _) = answers_at(&path, Some(leaf), &queries, &mode);
                    prop_assert_eq!(&plain, &named);
                }
            }
        }
    }
}

/// The ids of the session's entries, in file order (duplicates kept).
fn entry_ids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry.is_object() && entry["type"] != "session")
        .filter_map(|entry| entry["id"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn pi_appends_extend_the_stored_projection_in_place() {
    use Kind::*;
    let c = |kind| (kind, 0u8, 0usize, false);
    // A call (c0) still open when the index is built; later its result, a compaction, a
    // reset marker, more calls paired out of order, bash, a model change.
    let spec = vec![
        c(User(true)),
        c(Assistant {
            text: true,
            calls: 1,
        }),
        c(User(true)),
        c(Context),
        c(Result { call: 0 }),
        c(Marker),
        c(User(true)),
        c(Assistant {
            text: false,
            calls: 2,
        }),
        c(Result { call: 2 }),
        c(Result { call: 1 }),
        c(Bash),
        c(Label),
        c(Context),
        c(User(false)),
        // Off the branch: a summary whose parent is not the leaf (Pi's tree navigation).
        (Context, 1, 2, false),
        c(User(true)),
        // Reuses a branch entry's id (e1); the next entry's parent (e16) then names nothing.
        (User(true), 0, 1, true),
        c(User(true)),
        c(User(true)),
    ];
    let lines = grown_lines(&spec);
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let queries = vec!["user".to_string(), "out 9".to_string()];
    let mode = IndexMode::In {
        dir: cache.path(),
        now: std::time::SystemTime::UNIX_EPOCH,
    };
    std::fs::write(&path, lines[..5].join("\n") + "\n").unwrap();
    assert_eq!(answers(&path, &queries, &mode).1[0], "\"built\"");
    let mut expect = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(5) {
        append(&path, &format!("{line}\n"));
        // The entries are e0.. (line i is entry i - 1).
        let fast = extended_in_place(&path, cache.path());
        expect.push((i - 1, fast));
        let (plain, _) = answers(&path, &queries, &IndexMode::Off);
        let (indexed, uses) = answers(&path, &queries, &mode);
        assert_eq!(plain, indexed, "after entry {}", i - 1);
        // Extended in place, or else rebuilt from the skeleton by the first call.
        let first = if fast { "\"reused\"" } else { "\"extended\"" };
        assert_eq!(uses[0], first, "after entry {}", i - 1);
        assert!(uses[1..].iter().all(|u| u == "\"reused\""), "{uses:?}");
    }
    // Every entry continuing the branch extends in place; the branch summary (e14), the
    // reused id (e16) and the new root after it (e17) rebuild; the entry after a rebuild
    // extends in place again.
    let slow: Vec<usize> = expect.iter().filter(|e| !e.1).map(|e| e.0).collect();
    assert_eq!(slow, vec![14, 16, 17]);
}

/// Index `lines[..built]` (a fresh index: `built`), then append the other lines one by one:
/// each must extend the stored projection in place, and `queries` answer as without the index
/// after each. The session file (and its directory, which holds it) is handed back.
fn extends_in_place_line_by_line(
    lines: &[String],
    built: usize,
    queries: &[&str],
) -> (tempfile::TempDir, std::path::PathBuf) {
    let queries: Vec<String> = queries.iter().map(|q| q.to_string()).collect();
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mode = IndexMode::In {
        dir: cache.path(),
        now: std::time::SystemTime::UNIX_EPOCH,
    };
    std::fs::write(&path, lines[..built].join("\n") + "\n").unwrap();
    assert_eq!(answers(&path, &queries, &mode).1[0], "\"built\"");
    for line in &lines[built..] {
        append(&path, &format!("{line}\n"));
        assert!(extended_in_place(&path, cache.path()), "{line}");
        let (plain, _) = answers(&path, &queries, &IndexMode::Off);
        let (indexed, _) = answers(&path, &queries, &mode);
        assert_eq!(plain, indexed);
    }
    (dir, path)
}

#[test]
fn a_call_reusing_an_id_whose_result_is_stored_stays_unpaired_in_place() {
    use Kind::*;
    let c = |kind| (kind, 0u8, 0usize, false);
    // Call ids cycle through c0..c29: the third assistant's call is c0 again, whose result
    // is on the stored branch. The index keeps result ids as hashes and lines: the hit is
    // read back from its line, so the append extends in place with the call unpaired.
    // The first users pad the file, so the 29 open calls' records fit the index's share.
    let mut spec = vec![c(User(true)); 8];
    spec.extend([
        c(User(true)),
        c(Assistant {
            text: true,
            calls: 1,
        }),
        c(Result { call: 0 }),
        c(Assistant {
            text: false,
            calls: 29,
        }),
        c(User(true)),
        c(Assistant {
            text: false,
            calls: 1,
        }),
        c(Result { call: 0 }),
        c(User(true)),
    ]);
    let lines = grown_lines(&spec);
    let built = lines.len() - 4;
    assert!(
        lines[built + 1].contains(r#""id":"c0""#),
        "{}",
        lines[built + 1]
    );
    extends_in_place_line_by_line(&lines, built, &["assistant", "out 1"]);
}

#[test]
fn a_call_whose_id_only_shares_a_stored_results_hash_is_paired_in_place() {
    // Two call ids with the same 32-bit side hash: the stored result of the first must not
    // make the second look answered.
    let mut seen = std::collections::HashMap::new();
    let (first, second) = (0u32..)
        .find_map(|n| {
            let id = format!("toolu_{n:08}");
            let hash = super::flat::side_hash(&id);
            seen.insert(hash, id.clone()).map(|earlier| (earlier, id))
        })
        .unwrap();
    let pad = "p".repeat(2500);
    let line = |v: serde_json::Value| {
        let mut v = v;
        v["pad"] = json!(pad);
        v.to_string()
    };
    let call = |id: &str, entry: &str, parent: &str, call: &str| {
        line(
            json!({"type":"message","id":entry,"parentId":parent,"timestamp":"2026-01-01T00:00:01.000Z",
            "message":{"role":"assistant","content":[{"type":"toolCall","id":call,"name":"t","arguments":{"n":id}}]}}),
        )
    };
    let result = |entry: &str, parent: &str, call: &str, text: &str| {
        line(
            json!({"type":"message","id":entry,"parentId":parent,"timestamp":"2026-01-01T00:00:02.000Z",
            "message":{"role":"toolResult","toolCallId":call,"toolName":"t","content":[{"type":"text","text":text}],"isError":false}}),
        )
    };
    let mut lines = vec![
        json!({"type":"session","version":3,"id":"0197hash-session","timestamp":"2026-01-01T00:00:00.000Z"}).to_string(),
        line(json!({"type":"message","id":"e0","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"go"}})),
    ];
    for i in 1..6 {
        lines.push(line(json!({"type":"message","id":format!("u{i}"),"parentId": if i == 1 { "e0".to_string() } else { format!("u{}", i - 1) },"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"more"}})));
    }
    lines.push(call("a", "e1", "u5", &first));
    lines.push(result("e2", "e1", &first, "first output"));
    let built = lines.len();
    lines.push(call("b", "e3", "e2", &second));
    lines.push(result("e4", "e3", &second, "second output"));
    let (_dir, path) = extends_in_place_line_by_line(&lines, built, &["second output", "t"]);
    // The second call is shown with its result (paired), not as an open call.
    let opened = open(&path, None).unwrap();
    assert_eq!(opened.projection.paired_results().count(), 2);
}

/// A named leaf that is not the default one: its projection is kept in the leaf file by the
/// call that builds it beside a reused index, read by the next call naming that leaf (and no
/// other), equal to the one built from the whole file; any write of the index makes it
/// stale, a stale or damaged leaf file is never read.
#[test]
fn another_leafs_projection_is_kept_for_exactly_the_index_state_it_was_built_from() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/history/large-real.jsonl"
    );
    let text = std::fs::read_to_string(fixture).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, &text).unwrap();
    let mode = IndexMode::In {
        dir: cache.path(),
        now: std::time::SystemTime::UNIX_EPOCH,
    };
    let ids = entry_ids(&text);
    let (leaf, other) = (&ids[ids.len() / 2], &ids[ids.len() / 3]);
    let leaf_file = crate::session::index::leaf_path(&crate::session::index::index_path(
        cache.path(),
        &std::fs::canonicalize(&path).unwrap(),
    ));
    let facts = |leaf: &str| projection_facts(&open(&path, Some(leaf)).unwrap().projection);
    let from_leaf_file = |leaf: &str| {
        super::open_reused(&path, Some(leaf), &mode)
            .unwrap()
            .map(|opened| projection_facts(&opened.projection))
    };
    assert_eq!(
        super::open_with(&path, None, &mode).unwrap().index,
        super::IndexUse::Built
    );
    assert_eq!(from_leaf_file(leaf), None);
    // Built from the skeleton, then kept.
    assert_eq!(
        super::open_with(&path, Some(leaf), &mode).unwrap().index,
        super::IndexUse::Reused
    );
    assert!(leaf_file.exists());
    let expected = facts(leaf);
    assert_ne!(expected, facts(ids.last().unwrap()));
    assert_eq!(from_leaf_file(leaf).as_ref(), Some(&expected));
    assert_eq!(from_leaf_file(other), None);
    // Damaged: every truncation and flipped bytes through the whole file are never read.
    let kept = std::fs::read(&leaf_file).unwrap();
    let mut cuts: Vec<usize> = (0..200.min(kept.len())).collect();
    cuts.extend((200..kept.len()).step_by(997));
    for &cut in &cuts {
        std::fs::write(&leaf_file, &kept[..cut]).unwrap();
        assert_eq!(from_leaf_file(leaf), None, "cut at {cut}");
        let mut flipped = kept.clone();
        flipped[cut] ^= 0x10;
        std::fs::write(&leaf_file, &flipped).unwrap();
        assert_eq!(from_leaf_file(leaf), None, "byte {cut} flipped");
    }
    std::fs::write(&leaf_file, &kept).unwrap();
    assert_eq!(from_leaf_file(leaf).as_ref(), Some(&expected));
    // An entry reusing the leaf's id is appended, and a child of it: the leaf now names the
    // first. The default call extends the index (rewritten from the skeleton, as an id named
    // twice asks) and removes the leaf file; put back, it is bound to the index state before
    // and not read.
    let last = ids.last().unwrap();
    for (id, parent) in [(leaf.as_str(), last.as_str()), ("after", leaf.as_str())] {
        append(
            &path,
            &format!(
                "{}\n",
                json!({"type": "message", "id": id, "parentId": parent,
                    "timestamp": "2026-11-30T07:00:00.000Z",
                    "message": {"role": "user", "content": "again", "timestamp": 1}})
            ),
        );
    }
    assert_eq!(
        super::open_with(&path, None, &mode).unwrap().index,
        super::IndexUse::Extended
    );
    assert!(!leaf_file.exists());
    std::fs::write(&leaf_file, &kept).unwrap();
    assert_eq!(from_leaf_file(leaf), None);
    let now = facts(leaf);
    assert_ne!(now, expected);
    // Named again: built anew (the index rewritten from the skeleton), then kept.
    for _ in 0..3 {
        let opened = super::open_with(&path, Some(leaf), &mode).unwrap();
        assert_eq!(projection_facts(&opened.projection), now);
    }
    assert_eq!(from_leaf_file(leaf).as_ref(), Some(&now));
    // Lines appended, and the leaf named first: that call extends the index with the
    // default branch's projection (so calls on the default leaf still read only it) and
    // keeps the leaf's beside it at once.
    append(
        &path,
        &format!(
            "{}\n",
            json!({"type": "message", "id": "later", "parentId": "after",
                "timestamp": "2026-11-30T07:00:01.000Z",
                "message": {"role": "user", "content": "later", "timestamp": 2}})
        ),
    );
    let opened = super::open_with(&path, Some(leaf), &mode).unwrap();
    assert_eq!(opened.index, super::IndexUse::Extended);
    let now = facts(leaf);
    assert_eq!(projection_facts(&opened.projection), now);
    assert_eq!(from_leaf_file(leaf).as_ref(), Some(&now));
    let by_default = super::open_reused(&path, None, &mode).unwrap().unwrap();
    assert_eq!(
        projection_facts(&by_default.projection),
        projection_facts(&open(&path, None).unwrap().projection)
    );
}
