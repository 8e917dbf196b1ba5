//! CLI tests for the history family: every shared fixture (real Pi 1.6.0 sessions and the v1
//! pi-mono session) through windows, branch visibility, pairing, paging walks, search/read
//! agreement and read reconstruction; snapshots of each subcommand's JSON and text for success
//! and every refusal in the spec's order. Heavy loops call the library in-process (the same
//! code the binary runs); the binary is driven for the wire contract.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pi_context::history::{self, EventRole, ListOptions, ReadOptions};
use serde_json::{Value, json};

use crate::support::{Normaliser, Run, files_in, pi_context, run};

const FIXTURES: &[&str] = &[
    "basic.jsonl",
    "branched.jsonl",
    "reset-windows.jsonl",
    "large-real.jsonl",
    "pi-mono-large-session.jsonl",
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/history")
        .join(name)
}

fn manifest() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("manifest.json")).unwrap()).unwrap()
}

/// Run one history subcommand on `session` with extra flags and a request.
fn hist(command: &str, session: &Path, extra: &[&str], request: &str) -> Run {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = pi_context(home.path());
    cmd.arg(command).arg("--session").arg(session).args(extra);
    run(cmd, request)
}

fn all_roles() -> Option<Vec<EventRole>> {
    Some(vec![
        EventRole::User,
        EventRole::Assistant,
        EventRole::Tool,
        EventRole::Context,
    ])
}

fn event_seqs(page: &Value) -> Vec<u64> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r.get("seq").is_some())
        .map(|r| r["seq"].as_u64().unwrap())
        .collect()
}

/// Walk `older_before` from the newest page to the oldest; returns every page.
fn older_walk(path: &Path, base: &ListOptions) -> Vec<Value> {
    let opened = history::open(path, None).unwrap();
    let mut options = base.clone();
    let mut pages = Vec::new();
    loop {
        let page = history::list_in(&opened, &options).unwrap().data;
        let next = page["older_before"].as_u64();
        pages.push(page);
        match next {
            Some(before) => {
                assert!(
                    options.before.is_none_or(|b| before < b),
                    "anchor must move"
                );
                options.before = Some(before);
            }
            None => return pages,
        }
    }
}

// ---------------------------------------------------------------- fixtures: facts

#[test]
fn windows_match_the_manifest_on_every_pi_fixture() {
    let manifest = manifest();
    for (name, facts) in manifest.as_object().unwrap() {
        let out = hist("history-windows", &fixture(name), &[], "{}");
        assert_eq!(out.code, 0, "{name}: {}", out.stdout);
        let data = &out.json()["data"];
        assert_eq!(data["session_id"], facts["sessionId"], "{name}");
        let ids: Vec<&Value> = data["windows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| &w["window_id"])
            .collect();
        let expected: Vec<&Value> = facts["windows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| &w["windowId"])
            .collect();
        assert_eq!(ids, expected, "{name}");
        assert_eq!(data["more"], 0);
    }
}

#[test]
fn seq_allocation_and_branch_visibility_match_the_manifest() {
    let manifest = manifest();
    for (name, facts) in manifest.as_object().unwrap() {
        let opened = history::open(&fixture(name), None).unwrap();
        let highest = facts["highestSeq"].as_u64().unwrap();
        assert_eq!(opened.projection.highest_seq, highest, "{name}");
        // Every seq is readable, a folded result slot, or on another branch; the first two
        // are exactly the active branch's seqs.
        let mut on_branch = 0;
        for seq in 1..=highest {
            match history::read::read_in(&opened, &ReadOptions::new(seq)) {
                Ok(_) => on_branch += 1,
                Err(e) if e.code() == "not_an_event" => on_branch += 1,
                Err(e) => assert_eq!(e.code(), "not_on_branch", "{name} seq {seq}"),
            }
        }
        assert_eq!(
            on_branch,
            facts["activeBranchSeqs"].as_u64().unwrap(),
            "{name}"
        );
        let past = history::read::read_in(&opened, &ReadOptions::new(highest + 1)).unwrap_err();
        assert_eq!(past.code(), "unknown_seq");
    }
}

#[test]
fn branched_session_hides_the_abandoned_branch_everywhere() {
    let path = fixture("branched.jsonl");
    let options = ListOptions {
        roles: all_roles(),
        limit: 1000,
        ..ListOptions::default()
    };
    let seqs: BTreeSet<u64> = older_walk(&path, &options)
        .iter()
        .flat_map(event_seqs)
        .collect();
    assert!(seqs.iter().all(|s| !(11..=17).contains(s)), "{seqs:?}");
    // The abandoned branch's words are not searchable, its seqs not readable.
    let out = hist("history-read", &path, &[], r#"{"seq":11}"#);
    assert_eq!(out.json()["error"]["code"], "not_on_branch");
    // The branch summary is a context event on the active branch.
    let context = history::list(
        &path,
        None,
        &ListOptions {
            roles: Some(vec![EventRole::Context]),
            ..ListOptions::default()
        },
        &history::IndexMode::Off,
    )
    .unwrap();
    assert_eq!(event_seqs(&context.data).len(), 1);
    // With --leaf on the abandoned leaf, those seqs are visible and the summary is not.
    let out = hist(
        "history-read",
        &path,
        &["--leaf", "eccc1922"],
        r#"{"seq":11}"#,
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn tool_calls_pair_with_their_results_at_the_call_seq() {
    let opened = history::open(&fixture("basic.jsonl"), None).unwrap();
    let tools = history::list_in(
        &opened,
        &ListOptions {
            roles: Some(vec![EventRole::Tool]),
            limit: 100,
            ..ListOptions::default()
        },
    )
    .unwrap()
    .data;
    let rows = tools["items"].as_array().unwrap();
    // 7 calls (each paired) + 2 standalone bash runs.
    assert_eq!(rows.len(), 9);
    let paired: Vec<&Value> = rows
        .iter()
        .filter(|r| {
            r["tool"] != "bash" || r["content"].as_str().unwrap().contains("--- output ---")
        })
        .collect();
    assert!(!paired.is_empty());
    for (result, call) in opened.projection.paired_results() {
        let err = history::read::read_in(&opened, &ReadOptions::new(result)).unwrap_err();
        assert_eq!(err.code(), "not_an_event");
        assert_eq!(err.to_refusal().details.unwrap()["read_seq"], json!(call));
    }
    assert_eq!(opened.projection.paired_results().count(), 7);
    let statuses: Vec<&str> = rows
        .iter()
        .map(|r| r["tool_status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == "error").count(),
        3,
        "{statuses:?}"
    );
}

#[test]
fn reset_windows_split_events_at_markers() {
    let opened = history::open(&fixture("reset-windows.jsonl"), None).unwrap();
    let windows = history::windows_in(&opened).unwrap().data;
    let ranges: Vec<(u64, u64)> = windows["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["first_seq"].as_u64().unwrap(),
                w["last_seq"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ranges, vec![(1, 17), (18, 34), (35, 43)]);
    // The checkpoint compaction is the last (empty) context event of the old window.
    let read = history::read::read_in(&opened, &ReadOptions::new(17))
        .unwrap()
        .data;
    assert_eq!(read["window_id"], "pcw:01a22b39:root");
    assert_eq!(read["role"], "context");
    assert_eq!(read["window"]["total_chars"], 0);
    // Window-scoped list sees only that window.
    let page = history::list_in(
        &opened,
        &ListOptions {
            window_id: Some("pcw:01a22b39:97bfc6ba".into()),
            roles: all_roles(),
            limit: 100,
            ..ListOptions::default()
        },
    )
    .unwrap()
    .data;
    let seqs = event_seqs(&page);
    assert!(seqs.iter().all(|s| (18..=34).contains(s)) && !seqs.is_empty());
    // Its conversation view folds only that window's tool and context events, the ones
    // before its first conversation event included (the fold reaching back to seq 0).
    let in_window = opened
        .projection
        .events()
        .filter(|e| (18..=34).contains(&e.seq))
        .filter(|e| matches!(e.role, EventRole::Tool | EventRole::Context))
        .count() as u64;
    let page = history::list_in(
        &opened,
        &ListOptions {
            window_id: Some("pcw:01a22b39:97bfc6ba".into()),
            limit: 100,
            ..ListOptions::default()
        },
    )
    .unwrap()
    .data;
    let folds: Vec<&Value> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["folded"] == true)
        .collect();
    assert!(!folds.is_empty() && in_window > 0);
    for fold in &folds {
        assert!(
            (18..=34).contains(&fold["first_seq"].as_u64().unwrap()),
            "{fold}"
        );
        assert!(
            (18..=34).contains(&fold["last_seq"].as_u64().unwrap()),
            "{fold}"
        );
    }
    let folded: u64 = folds.iter().map(|f| f["count"].as_u64().unwrap()).sum();
    assert_eq!(folded, in_window);
}

// ---------------------------------------------------------------- paging invariants

#[test]
fn paging_walks_return_every_visible_event_exactly_once_on_every_fixture() {
    for name in FIXTURES {
        let path = fixture(name);
        let opened = history::open(&path, None).unwrap();
        let total: usize = opened.projection.event_count();
        for limit in [1usize, 7, 20] {
            let options = ListOptions {
                roles: all_roles(),
                limit,
                max_chars_per_item: 200,
                ..ListOptions::default()
            };
            let pages = older_walk(&path, &options);
            let mut seen = Vec::new();
            for page in &pages {
                let seqs = event_seqs(page);
                assert!(
                    !seqs.is_empty() || pages.len() == 1,
                    "{name}: empty non-final page"
                );
                assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{name}: ascending");
                seen.extend(seqs);
            }
            let unique: BTreeSet<u64> = seen.iter().copied().collect();
            assert_eq!(unique.len(), seen.len(), "{name}: duplicates");
            assert_eq!(seen.len(), total, "{name} limit {limit}");
            // And back: a range walk with newer_after from the oldest seq.
            let oldest = *unique.iter().next().unwrap();
            let newest = *unique.iter().last().unwrap();
            let mut back = vec![oldest];
            let mut range = ListOptions {
                after: Some(oldest),
                before: Some(newest + 1),
                ..options.clone()
            };
            loop {
                let page = history::list_in(&opened, &range).unwrap().data;
                assert!(page["older_before"].is_null());
                back.extend(event_seqs(&page));
                match page["newer_after"].as_u64() {
                    Some(after) => range.after = Some(after),
                    None => break,
                }
            }
            assert_eq!(back, unique.iter().copied().collect::<Vec<_>>(), "{name}");
        }
    }
}

#[test]
fn conversation_view_folds_partition_the_hidden_events() {
    for name in FIXTURES {
        let path = fixture(name);
        let opened = history::open(&path, None).unwrap();
        let pages = older_walk(&path, &ListOptions::default());
        let mut folded = Vec::new();
        let mut shown = 0;
        for page in &pages {
            for row in page["items"].as_array().unwrap() {
                if row["folded"] == true {
                    folded.push((
                        row["first_seq"].as_u64().unwrap(),
                        row["last_seq"].as_u64().unwrap(),
                        row["count"].as_u64().unwrap(),
                    ));
                } else {
                    shown += 1;
                    assert!(matches!(row["role"].as_str(), Some("user" | "assistant")));
                    assert!(row["total_chars"].as_u64().unwrap() > 0);
                }
            }
        }
        let foldable = opened
            .projection
            .events()
            .filter(|e| matches!(e.role, EventRole::Tool | EventRole::Context))
            .count() as u64;
        assert_eq!(folded.iter().map(|f| f.2).sum::<u64>(), foldable, "{name}");
        folded.sort();
        assert!(
            folded.windows(2).all(|w| w[0].1 < w[1].0),
            "{name}: folds overlap"
        );
        let conversation = opened
            .projection
            .events()
            .filter(|e| matches!(e.role, EventRole::User | EventRole::Assistant) && e.has_text)
            .count();
        assert_eq!(shown, conversation, "{name}");
    }
}

// ---------------------------------------------------------------- search and read

fn read_text(opened: &history::Opened, seq: u64, offset: i64, limit: usize) -> Value {
    history::read::read_in(
        opened,
        &ReadOptions {
            seq,
            offset_chars: offset,
            limit_chars: limit,
        },
    )
    .unwrap()
    .data
}

#[test]
fn search_hits_land_on_the_match_when_read() {
    let cases: &[(&str, &[&str])] = &[
        (
            "basic.jsonl",
            &[
                "İstanbul",
                "grüsse",
                "GRÜßE",
                "read",
                "--- output",
                "\\n",
                "𝔘𝔫𝔦",
            ],
        ),
        ("branched.jsonl", &["readme", "translation"]),
        (
            "reset-windows.jsonl",
            &["plan.md", "context window", "wipe_memory"],
        ),
        ("large-real.jsonl", &["license", "compaction", "zebra"]),
        ("pi-mono-large-session.jsonl", &["theme", "selector"]),
    ];
    for (name, queries) in cases {
        let path = fixture(name);
        let opened = history::open(&path, None).unwrap();
        for query in *queries {
            let options = ListOptions {
                limit: 50,
                max_chars_per_item: 40,
                ..ListOptions::default()
            };
            let page = history::search(
                &path,
                None,
                &[query.to_string()],
                &options,
                &history::IndexMode::Off,
            )
            .unwrap()
            .data;
            let needle: String = query.chars().flat_map(char::to_lowercase).collect();
            for row in page["items"].as_array().unwrap() {
                let seq = row["seq"].as_u64().unwrap();
                let offset = row["offset_chars"].as_u64().unwrap();
                let window = read_text(&opened, seq, offset as i64, query.chars().count());
                let got: String = window["window"]["text"]
                    .as_str()
                    .unwrap()
                    .chars()
                    .flat_map(char::to_lowercase)
                    .collect();
                assert_eq!(got, needle, "{name} {query} seq {seq}");
                assert!(
                    row["content"]
                        .as_str()
                        .unwrap()
                        .to_lowercase()
                        .starts_with(&needle)
                        || needle.contains('ß')
                        || needle.contains("grüsse")
                );
            }
        }
    }
}

#[test]
fn search_prefilter_never_loses_a_hit() {
    // The raw-line prefilter is used for safe literals; a full scan (an unsafe variant of the
    // same query, ORed with a literal that never occurs) must agree with it.
    for name in FIXTURES {
        let path = fixture(name);
        for query in ["readme", "docs", "theme", "license", "plan", "bash"] {
            let options = ListOptions {
                limit: 10_000,
                max_chars_per_item: 1,
                ..ListOptions::default()
            };
            let fast = history::search(
                &path,
                None,
                &[query.into()],
                &options,
                &history::IndexMode::Off,
            )
            .unwrap()
            .data;
            let slow = history::search(
                &path,
                None,
                &[query.into(), "\u{1}never \"there\"".into()],
                &options,
                &history::IndexMode::Off,
            )
            .unwrap()
            .data;
            assert_eq!(event_seqs(&fast), event_seqs(&slow), "{name} {query}");
        }
    }
}

#[test]
fn concatenated_read_windows_reproduce_the_document() {
    for name in FIXTURES {
        let opened = history::open(&fixture(name), None).unwrap();
        // The longest documents of the fixture, plus a few short ones.
        let mut events: Vec<(u64, u64)> = Vec::new();
        for event in opened.projection.events().step_by(7) {
            let data = read_text(&opened, event.seq, 0, 1);
            events.push((data["window"]["total_chars"].as_u64().unwrap(), event.seq));
        }
        events.sort();
        for &(total, seq) in events.iter().rev().take(3).chain(events.iter().take(2)) {
            let mut by_small = String::new();
            let mut offset = 0i64;
            loop {
                let data = read_text(&opened, seq, offset, 997);
                let window = &data["window"];
                by_small.push_str(window["text"].as_str().unwrap());
                assert_eq!(window["total_chars"], total);
                match window["next_offset_chars"].as_i64() {
                    Some(next) => {
                        assert!(next > offset);
                        offset = next;
                    }
                    None => break,
                }
            }
            let mut by_large = String::new();
            let mut offset = 0i64;
            loop {
                let data = read_text(&opened, seq, offset, 50_000);
                by_large.push_str(data["window"]["text"].as_str().unwrap());
                match data["window"]["next_offset_chars"].as_i64() {
                    Some(next) => offset = next,
                    None => break,
                }
            }
            assert_eq!(by_small, by_large, "{name} seq {seq}");
            assert_eq!(by_small.chars().count() as u64, total);
            // A negative offset reads the tail.
            let tail = read_text(&opened, seq, -5, 50);
            let expected: String = by_small
                .chars()
                .skip((total as usize).saturating_sub(5))
                .collect();
            assert_eq!(tail["window"]["text"], expected.as_str());
        }
    }
}

#[test]
fn pi_mono_v1_session_reads_as_one_linear_branch() {
    let path = fixture("pi-mono-large-session.jsonl");
    let opened = history::open(&path, None).unwrap();
    assert_eq!(opened.file.header.version, 1);
    assert_eq!(opened.file.skipped_lines, 0);
    assert_eq!(
        (opened.projection.event_count() + opened.projection.paired_results().count()) as u64,
        opened.projection.highest_seq
    );
    assert_eq!(opened.projection.windows[0].window_id, "pcw:d703a1a9:root");
}

// ---------------------------------------------------------------- streaming robustness

#[test]
fn torn_and_malformed_lines_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = std::fs::read_to_string(fixture("basic.jsonl")).unwrap();
    text.push_str("this is not json\n");
    text.push_str("{\"type\":\"message\",\"id\":\"torn\",\"parentId\":\"4064ba67\",\"message\":{\"role\":\"us");
    let path = dir.path().join("torn.jsonl");
    std::fs::write(&path, text).unwrap();
    let out = hist("history-windows", &path, &[], "");
    assert_eq!(out.code, 0);
    assert_eq!(out.json()["data"]["skipped_lines"], 2);
    let out = hist("history-list", &path, &["--format", "text"], "");
    assert!(
        out.stdout
            .trim_end()
            .ends_with("[2 malformed session lines skipped]")
    );
}

#[test]
fn lines_over_ten_megabytes_work() {
    let dir = tempfile::tempdir().unwrap();
    let big = "ab🙂".repeat(11 * 1024 * 1024 / 6);
    let lines = [
        json!({"type":"session","version":3,"id":"big-session","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}),
        json!({"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":big}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert!(text.len() > 10 * 1024 * 1024);
    let path = dir.path().join("big.jsonl");
    std::fs::write(&path, text).unwrap();
    let out = hist("history-read", &path, &[], r#"{"seq":1,"offset_chars":-3}"#);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json()["data"]["window"]["text"], "ab🙂");
}

// ---------------------------------------------------------------- snapshots

/// A small session built for refusals the fixtures cannot show.
fn crafted(dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// Snapshots name the temp directory `[TMP]` and the fixtures directory `[FIXTURES]/`.
fn norm(dir: &Path) -> Normaliser {
    Normaliser::new()
        .path(dir, "[TMP]")
        .path(&fixture(""), "[FIXTURES]/")
}

/// A file snapshot of a run's transcript (long ones; short ones are inline).
fn snapshot(name: &str, out: &Run, dir: &Path) {
    norm(dir).bind(|| insta::assert_snapshot!(name, out.transcript()));
}

fn both(command: &str, session: &Path, extra: &[&str], request: &str) -> Run {
    let mut flags = vec!["--format", "both"];
    flags.extend_from_slice(extra);
    hist(command, session, &flags, request)
}

#[test]
fn snapshots_history_windows() {
    let dir = tempfile::tempdir().unwrap();
    let reset = fixture("reset-windows.jsonl");
    snapshot(
        "windows_ok",
        &both("history-windows", &reset, &[], "{}"),
        dir.path(),
    );
    let run = hist("history-windows", &reset, &["--format", "text"], "{}");
    norm(dir.path()).bind(|| {
        insta::assert_snapshot!(run.transcript(), @r#"
        exit: 0
        --- stdout
        session 01a22b39-c2d9-7247-9208-1cbe364aa249
        window pcw:01a22b39:root | seqs 1-17 | 13 events
        window pcw:01a22b39:97bfc6ba | seqs 18-34 | 14 events
        window pcw:01a22b39:c2014c22 | seqs 35-43 | 8 events
        --- stderr
        "#)
    });
    let huge_id = "x".repeat(40_000);
    let huge = crafted(
        dir.path(),
        "huge-id.jsonl",
        &[json!({"type":"session","version":3,"id":huge_id})],
    );
    let out = both("history-windows", &huge, &[], "{}");
    norm(dir.path()).bind(|| insta::assert_snapshot!(out.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"output_too_large","message":"The session identity does not fit one history_windows response."},"text":"error: output_too_large: The session identity does not fit one history_windows response."}
        --- stderr
        "#));
    let run = both("history-windows", &reset, &[], r#"{"limit":1}"#);
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 2
        --- stdout
        {"ok":false,"error":{"code":"invalid_request","message":"invalid request: unknown field `limit`, there are no fields at line 1 column 8"},"text":"error: invalid_request: unknown field `limit`, there are no fields at line 1 column 8"}
        --- stderr
        "#));
    let run = both(
        "history-windows",
        &dir.path().join("missing.jsonl"),
        &[],
        "{}",
    );
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"session_not_found","message":"session file [TMP]/missing.jsonl does not exist"},"text":"error: session_not_found: session file [TMP]/missing.jsonl does not exist"}
        --- stderr
        "#));
    let not_session = crafted(
        dir.path(),
        "not-session.jsonl",
        &[json!({"type":"message"})],
    );
    let run = both("history-windows", &not_session, &[], "{}");
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"not_a_session","message":"[TMP]/not-session.jsonl is not a Pi session: its first JSON line is not a session header with a string id"},"text":"error: not_a_session: [TMP]/not-session.jsonl is not a Pi session: its first JSON line is not a session header with a string id"}
        --- stderr
        "#));
    let run = both("history-windows", &reset, &["--leaf", "nope"], "{}");
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"unknown_leaf","message":"leaf \"nope\" names no entry of this session","details":{"leaf":"nope"}},"text":"error: unknown_leaf: leaf \"nope\" names no entry of this session {\"leaf\":\"nope\"}"}
        --- stderr
        "#));
}

/// A session of more windows than one response holds shows the longest prefix that fits:
/// within the budget, one row short of leaving it, the rest counted in `more`; the text
/// lists the same rows. (The count is searched from where the rows' own sizes put it.)
#[test]
fn windows_beyond_the_budget_show_the_longest_prefix_that_fits() {
    const BUDGET: usize = 32 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let markers = 1500;
    let mut lines = vec![json!({"type":"session","version":3,"id":"many-windows"})];
    let mut parent = Value::Null;
    for i in 0..markers {
        let (marker, user) = (format!("m{i}"), format!("u{i}"));
        lines.push(json!({"type":"custom","customType":"pi-context/reset-marker","data":{"windowId":format!("w{i}")},"id":marker,"parentId":parent,"timestamp":"2026-01-01T00:00:00.000Z"}));
        lines.push(json!({"type":"message","id":user,"parentId":marker,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":format!("turn {i}")}}));
        parent = json!(user);
    }
    let session = crafted(dir.path(), "many-windows.jsonl", &lines);
    let run = hist("history-windows", &session, &["--no-index"], "{}");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    let rows = out["data"]["windows"].as_array().unwrap();
    let more = out["data"]["more"].as_u64().unwrap() as usize;
    assert!(
        more > 0 && rows.len() > 100,
        "{} rows, {more} more",
        rows.len()
    );
    assert_eq!(
        rows.len() + more,
        markers + 1,
        "the root window and one per marker"
    );
    let bytes = run.stdout.trim_end().len();
    assert!(bytes <= BUDGET, "{bytes} bytes");
    // One more row (as long as the last, give or take a digit) would not fit.
    let last = serde_json::to_string(rows.last().unwrap()).unwrap().len();
    let text = hist(
        "history-windows",
        &session,
        &["--no-index", "--format", "text"],
        "{}",
    );
    let listed: Vec<&str> = text
        .stdout
        .lines()
        .filter(|l| l.starts_with("window "))
        .collect();
    assert_eq!(listed.len(), rows.len());
    let last_line = listed.last().unwrap().len();
    assert!(
        bytes + last + 3 > BUDGET || text.stdout.len() + last_line + 3 > BUDGET,
        "{bytes} JSON bytes and {} text bytes leave room for another row",
        text.stdout.len()
    );
    // The index answers alike.
    let cache = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let cached = hist_cached("history-windows", &session, cache.path(), &[], "{}");
        assert_eq!(without_index(&cached).0, without_index(&run).0);
    }
}

#[test]
fn snapshots_history_list() {
    let dir = tempfile::tempdir().unwrap();
    let reset = fixture("reset-windows.jsonl");
    snapshot(
        "list_conversation_page",
        &both(
            "history-list",
            &reset,
            &[],
            r#"{"limit":4,"max_chars_per_item":60}"#,
        ),
        dir.path(),
    );
    snapshot(
        "list_roles_range_text",
        &hist(
            "history-list",
            &reset,
            &["--format", "text"],
            r#"{"roles":"tool","after":3,"before":30,"limit":"3","max_chars_per_item":50}"#,
        ),
        dir.path(),
    );
    let run = both("history-list", &reset, &[], r#"{"window_id":"nope"}"#);
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"unknown_window_id","message":"unknown window_id \"nope\"","details":{"window_id":"nope","known_windows":["pcw:01a22b39:root","pcw:01a22b39:97bfc6ba","pcw:01a22b39:c2014c22"]}},"text":"error: unknown_window_id: unknown window_id \"nope\" {\"window_id\":\"nope\",\"known_windows\":[\"pcw:01a22b39:root\",\"pcw:01a22b39:97bfc6ba\",\"pcw:01a22b39:c2014c22\"]}"}
        --- stderr
        "#));
    let huge_window = "w".repeat(40_000);
    let page_too_large = crafted(
        dir.path(),
        "huge-window.jsonl",
        &[
            json!({"type":"session","version":3,"id":"s1"}),
            json!({"type":"custom","customType":"pi-context/reset-marker","data":{"windowId":huge_window},"id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}),
            json!({"type":"message","id":"u1","parentId":"m1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello"}}),
        ],
    );
    let out = both("history-list", &page_too_large, &[], "{}");
    assert_eq!(out.json()["error"]["code"], "page_too_large");
    norm(dir.path()).bind(|| insta::assert_snapshot!(out.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"page_too_large","message":"1 history rows and their fold summary do not fit one response even at their smallest; narrow the range with before/after or read one seq","details":{"rows":1}},"text":"error: page_too_large: 1 history rows and their fold summary do not fit one response even at their smallest; narrow the range with before/after or read one seq {\"rows\":1}"}
        --- stderr
        "#));
    for (name, request) in [
        ("list_invalid_request_limit_zero", r#"{"limit":0}"#),
        ("list_invalid_request_unknown_field", r#"{"cursor":"x"}"#),
        ("list_invalid_request_role", r#"{"roles":["system"]}"#),
        ("list_invalid_request_malformed", r#"{"limit":"#),
    ] {
        let out = both("history-list", &reset, &[], request);
        assert_eq!(out.code, 2, "{name}");
        snapshot(name, &out, dir.path());
    }
}

#[test]
fn snapshots_history_search() {
    let dir = tempfile::tempdir().unwrap();
    let basic = fixture("basic.jsonl");
    snapshot(
        "search_hits",
        &both(
            "history-search",
            &basic,
            &[],
            r#"{"query":["İSTANBUL","exit code"],"limit":3,"max_chars_per_item":40}"#,
        ),
        dir.path(),
    );
    snapshot(
        "search_hits_text",
        &hist(
            "history-search",
            &basic,
            &["--format", "text"],
            r#"{"query":"echo","roles":["tool"],"max_chars_per_item":60}"#,
        ),
        dir.path(),
    );
    let run = hist(
        "history-search",
        &basic,
        &["--format", "text"],
        r#"{"query":"no such words anywhere"}"#,
    );
    norm(dir.path()).bind(|| {
        insta::assert_snapshot!(run.transcript(), @r#"
        exit: 0
        --- stdout
        no events match this selection
        --- stderr
        "#)
    });
    let run = both(
        "history-search",
        &basic,
        &[],
        r#"{"query":"","window_id":"nope"}"#,
    );
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"unknown_window_id","message":"unknown window_id \"nope\"","details":{"window_id":"nope","known_windows":["pcw:01a22b39:root"]}},"text":"error: unknown_window_id: unknown window_id \"nope\" {\"window_id\":\"nope\",\"known_windows\":[\"pcw:01a22b39:root\"]}"}
        --- stderr
        "#));
    let run = both("history-search", &basic, &[], r#"{"query":["a",""]}"#);
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"invalid_query","message":"query strings must be non-empty: an empty query matches everything"},"text":"error: invalid_query: query strings must be non-empty: an empty query matches everything"}
        --- stderr
        "#));
    let run = both("history-search", &basic, &[], r#"{}"#);
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 2
        --- stdout
        {"ok":false,"error":{"code":"invalid_request","message":"invalid request: query is required"},"text":"error: invalid_request: query is required"}
        --- stderr
        "#));
    let run = both("history-search", &basic, &[], r#"{"query":[]}"#);
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 2
        --- stdout
        {"ok":false,"error":{"code":"invalid_request","message":"invalid request: query must be a string or a non-empty array of strings"},"text":"error: invalid_request: query must be a string or a non-empty array of strings"}
        --- stderr
        "#));
}

#[test]
fn snapshots_history_read() {
    let dir = tempfile::tempdir().unwrap();
    let basic = fixture("basic.jsonl");
    snapshot(
        "read_tool_event",
        &both(
            "history-read",
            &basic,
            &[],
            r#"{"seq":8,"limit_chars":120}"#,
        ),
        dir.path(),
    );
    let run = hist(
        "history-read",
        &basic,
        &["--format", "text"],
        r#"{"seq":8,"offset_chars":-40}"#,
    );
    norm(dir.path()).bind(|| {
        insta::assert_snapshot!(run.transcript(), @r#"
        exit: 0
        --- stdout
        seq 8 | window pcw:01a22b39:root | tool
        tool read | status ok

        guages: 日本語のテキスト、中文字符, 한국어, שלום مرحبا.

        --- stderr
        "#)
    });
    let run = both("history-read", &basic, &[], r#"{"seq":39}"#);
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"unknown_seq","message":"unknown seq 39: this session's items run 1..38","details":{"seq":39,"highest_seq":38}},"text":"error: unknown_seq: unknown seq 39: this session's items run 1..38 {\"seq\":39,\"highest_seq\":38}"}
        --- stderr
        "#));
    let run = both(
        "history-read",
        &fixture("branched.jsonl"),
        &[],
        r#"{"seq":12}"#,
    );
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"not_on_branch","message":"seq 12 is on another branch and is not readable here","details":{"seq":12}},"text":"error: not_on_branch: seq 12 is on another branch and is not readable here {\"seq\":12}"}
        --- stderr
        "#));
    let opened = history::open(&basic, None).unwrap();
    let (result, _) = opened.projection.paired_results().min().unwrap();
    let run = both(
        "history-read",
        &basic,
        &[],
        &format!(r#"{{"seq":{result}}}"#),
    );
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"not_an_event","message":"seq 4 is a tool result already shown inside the call at seq 3; read that seq instead","details":{"seq":4,"read_seq":3}},"text":"error: not_an_event: seq 4 is a tool result already shown inside the call at seq 3; read that seq instead {\"seq\":4,\"read_seq\":3}"}
        --- stderr
        "#));
    snapshot(
        "read_invalid_offset",
        &both(
            "history-read",
            &basic,
            &[],
            r#"{"seq":1,"offset_chars":100000}"#,
        ),
        dir.path(),
    );
    let long_name = "t".repeat(40_000);
    let nameless = crafted(
        dir.path(),
        "long-tool-name.jsonl",
        &[
            json!({"type":"session","version":3,"id":"s2"}),
            json!({"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":long_name,"arguments":{}}]}}),
        ],
    );
    let run = both("history-read", &nameless, &[], r#"{"seq":2}"#);
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 1
        --- stdout
        {"ok":false,"error":{"code":"output_too_large","message":"The response metadata leaves no room for a progressing read window.","details":{"total_chars":40003,"offset_chars":0,"budget_bytes":32768}},"text":"error: output_too_large: The response metadata leaves no room for a progressing read window. {\"total_chars\":40003,\"offset_chars\":0,\"budget_bytes\":32768}"}
        --- stderr
        "#));
    let listed = both("history-list", &nameless, &[], r#"{"roles":["tool"]}"#);
    assert_eq!(listed.json()["data"]["items"][0]["tool_name_omitted"], true);
    let run = both(
        "history-read",
        &basic,
        &[],
        r#"{"seq":1,"limit_chars":50001}"#,
    );
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 2
        --- stdout
        {"ok":false,"error":{"code":"invalid_request","message":"invalid request: limit_chars must be at most 50000, got 50001"},"text":"error: invalid_request: limit_chars must be at most 50000, got 50001"}
        --- stderr
        "#));
    let run = both("history-read", &basic, &[], r#"{"offset_chars":3}"#);
    norm(dir.path()).bind(|| insta::assert_snapshot!(run.transcript(), @r#"
        exit: 2
        --- stdout
        {"ok":false,"error":{"code":"invalid_request","message":"invalid request: seq is required"},"text":"error: invalid_request: seq is required"}
        --- stderr
        "#));
}

#[test]
fn nested_calls_and_truncated_bash_reach_rows_reads_and_search() {
    let dir = tempfile::tempdir().unwrap();
    let session = crafted(
        dir.path(),
        "nested.jsonl",
        &[
            json!({"type":"session","version":3,"id":"0197a1b2-nested"}),
            json!({"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"codemode","arguments":{"code":"x","1":true}}]}}),
            json!({"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"codemode","content":[{"type":"text","text":"done"}],"isError":false,"nestedCalls":{"calls":[{"id":"n1","name":"read","arguments":{"path":"a.md"},"status":"ok","durationMs":12},{"id":"n2","name":"grep","argumentsBytes":9000,"status":"error","error":"boom"},{"id":"n3","name":"big","arguments":{"blob":"z".repeat(9000)},"status":"unfinished"}],"complete":false}}}),
            json!({"type":"message","id":"b1","parentId":"r1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"bashExecution","command":"make","output":"lots","exitCode":0,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/full.log"}}),
        ],
    );
    snapshot(
        "read_nested_calls",
        &both(
            "history-read",
            &session,
            &[],
            r#"{"seq":2,"limit_chars":300}"#,
        ),
        dir.path(),
    );
    snapshot(
        "list_tool_rows_nested_and_truncated",
        &both(
            "history-list",
            &session,
            &[],
            r#"{"roles":["tool"],"max_chars_per_item":30}"#,
        ),
        dir.path(),
    );
    let hit = hist("history-search", &session, &[], r#"{"query":"[error]"}"#);
    assert_eq!(hit.json()["data"]["items"][0]["seq"], 2);
    let hit = hist("history-search", &session, &[], r#"{"query":"12ms"}"#);
    assert_eq!(hit.json()["data"]["items"][0]["seq"], 2);
    // `error: boom` is in the document's nested-call lines, not in the result line's bytes
    // (`"error":"boom"`): a search must know the line has nested calls, from its decode or
    // from the key's name in its bytes, whether it decodes the session or reads its index.
    let home = tempfile::tempdir().unwrap();
    for extra in [&["--no-index"][..], &[], &[]] {
        let mut cmd = pi_context(home.path());
        cmd.arg("history-search")
            .arg("--session")
            .arg(&session)
            .args(extra);
        let hit = run(cmd, r#"{"query":"error: boom"}"#).json();
        assert_eq!(hit["data"]["items"][0]["seq"], 2, "{extra:?}: {hit}");
    }
}

// ---------------------------------------------------------------- issue 9 defects

/// A session file from raw lines (no re-serialisation: number and escape forms stay as written).
fn raw_session(dir: &Path, name: &str, lines: &[&str]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

const NUM_HEADER: &str = r#"{"type":"session","version":3,"id":"num-session","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}"#;

#[test]
fn search_finds_numbers_as_the_document_prints_them() {
    let dir = tempfile::tempdir().unwrap();
    let session = raw_session(
        dir.path(),
        "num.jsonl",
        &[
            NUM_HEADER,
            r#"{"type":"message","id":"n0","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"t","arguments":{"a":1.0,"b":1e21}}],"stopReason":"toolUse","timestamp":0}}"#,
            r#"{"type":"message","id":"n1","parentId":"n0","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"d","name":"sleep","arguments":{"secs":1.5E3}}],"stopReason":"toolUse","timestamp":0}}"#,
        ],
    );
    let read = hist("history-read", &session, &[], r#"{"seq":2}"#).json();
    assert_eq!(read["data"]["window"]["text"], r#"t {"a":1,"b":1e+21}"#);
    let hit = hist("history-search", &session, &[], r#"{"query":"1e+21"}"#).json();
    assert_eq!(hit["data"]["items"][0]["seq"], 2, "{hit}");
    assert_eq!(hit["data"]["items"][0]["offset_chars"], 13);
    let hit = hist("history-search", &session, &[], r#"{"query":"1500}"}"#).json();
    assert_eq!(hit["data"]["items"][0]["seq"], 4, "{hit}");
    let hit = hist("history-search", &session, &[], r#"{"query":"\"a\":1,"}"#).json();
    assert_eq!(hit["data"]["items"][0]["seq"], 2, "{hit}");
}

#[test]
fn a_line_nested_too_deep_is_malformed_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!(
        r#"{{"type":"message","id":"d1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"c","name":"deep","arguments":{{"x":{}1{}}}}}]}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let deep_user = format!(
        r#"{{"type":"message","id":"d2","parentId":"d1","timestamp":"2026-01-01T00:00:03.000Z","message":{{"role":"user","content":[{{"type":"text","text":"deep"}},{{"type":"x","v":{}0{}}}]}}}}"#,
        "{\"k\":".repeat(150),
        "}".repeat(150)
    );
    let session = raw_session(
        dir.path(),
        "deep.jsonl",
        &[
            NUM_HEADER,
            r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello deep"}}"#,
            &deep,
            &deep_user,
        ],
    );
    let windows = hist("history-windows", &session, &[], "{}");
    assert_eq!(windows.code, 0);
    assert_eq!(windows.json()["data"]["skipped_lines"], 2);
    for (command, request) in [
        ("history-list", r#"{"roles":["tool"]}"#),
        ("history-list", "{}"),
        ("history-search", r#"{"query":"deep"}"#),
        ("history-read", r#"{"seq":1}"#),
    ] {
        let out = hist(command, &session, &[], request);
        assert_eq!(out.code, 0, "{command}: {}", out.stdout);
        assert_eq!(out.json()["data"]["skipped_lines"], 2, "{command}");
        assert!(!out.stdout.contains("changed since"), "{command}");
    }
    let search = hist("history-search", &session, &[], r#"{"query":"deep"}"#).json();
    assert_eq!(event_seqs(&search["data"]), vec![1]);
}

/// A line the full decode refuses where the light pass used to skip over it unchecked — an
/// invalid UTF-8 byte or a number out of `f64` range inside a field no history command reads —
/// is malformed for every command, with and without the index, and never "changed since".
#[test]
fn a_line_the_full_decode_refuses_is_malformed_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    for line in [
        NUM_HEADER.as_bytes(),
        br#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello odd"}}"#,
        b"{\"type\":\"message\",\"id\":\"b1\",\"parentId\":\"u1\",\"timestamp\":\"2026-01-01T00:00:02.000Z\",\"message\":{\"role\":\"user\",\"content\":\"odd byte\",\"extra\":\"\xff\"}}",
        br#"{"type":"message","id":"b2","parentId":"b1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"odd","arguments":{"n":1e400}}]}}"#,
    ] {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    let session = dir.path().join("odd.jsonl");
    std::fs::write(&session, bytes).unwrap();
    for (command, request) in [
        ("history-windows", "{}"),
        ("history-list", r#"{"roles":["tool"]}"#),
        ("history-list", "{}"),
        ("history-search", r#"{"query":"odd"}"#),
        ("history-read", r#"{"seq":1}"#),
    ] {
        for extra in [&["--no-index"][..], &[]] {
            let out = hist_cached(command, &session, cache.path(), extra, request);
            assert_eq!(out.code, 0, "{command} {extra:?}: {}", out.stdout);
            assert_eq!(
                out.json()["data"]["skipped_lines"],
                2,
                "{command} {extra:?}"
            );
            assert!(!out.stdout.contains("changed since"), "{command}");
        }
    }
    let search = hist("history-search", &session, &[], r#"{"query":"odd"}"#).json();
    assert_eq!(event_seqs(&search["data"]), vec![1]);
}

#[test]
fn read_prints_execution_arguments_like_javascript() {
    let dir = tempfile::tempdir().unwrap();
    let session = raw_session(
        dir.path(),
        "args.jsonl",
        &[
            NUM_HEADER,
            r#"{"type":"message","id":"n0","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"t","arguments":{"a":1.0,"c":1e-6,"7":"x","big":9007199254740993,"e":[1E21,-0]}}],"stopReason":"toolUse","timestamp":0}}"#,
        ],
    );
    let out = hist("history-read", &session, &[], r#"{"seq":2}"#);
    let js = r#"{"7":"x","a":1,"c":0.000001,"big":9007199254740992,"e":[1e+21,0]}"#;
    assert!(
        out.stdout.contains(&format!(r#""arguments":{js}"#)),
        "{}",
        out.stdout
    );
    assert_eq!(out.json()["data"]["window"]["text"], format!("t {js}"));
}

// ---------------------------------------------------------------- the session index

/// One history call with an explicit cache directory (and extra flags).
fn hist_cached(command: &str, session: &Path, cache: &Path, extra: &[&str], request: &str) -> Run {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = pi_context(home.path());
    cmd.env("PI_CONTEXT_CACHE_DIR", cache)
        .arg(command)
        .arg("--session")
        .arg(session)
        .args(extra);
    run(cmd, request)
}

/// stdout with `data.index` taken out, and the index use.
fn without_index(out: &Run) -> (String, String) {
    let mut value = out.json();
    let used = value["data"]
        .as_object_mut()
        .and_then(|d| d.remove("index"))
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .unwrap_or_default();
    (value.to_string(), used)
}

const INDEX_CALLS: &[(&str, &str)] = &[
    ("history-windows", "{}"),
    ("history-list", "{}"),
    ("history-list", r#"{"roles":["tool"],"limit":5}"#),
    (
        "history-search",
        r#"{"query":["rate limit","src/main.rs","error: cannot"]}"#,
    ),
    ("history-search", r#"{"query":"the","limit":3}"#),
    ("history-read", r#"{"seq":3}"#),
    ("history-read", r#"{"seq":9,"offset_chars":-200}"#),
];

#[test]
fn answers_are_identical_with_and_without_the_index_on_every_fixture() {
    for name in FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let session = dir.path().join(name);
        std::fs::copy(fixture(name), &session).unwrap();
        for (command, request) in INDEX_CALLS {
            let plain = hist_cached(command, &session, cache.path(), &["--no-index"], request);
            let (plain_out, plain_use) = without_index(&plain);
            if plain.code == 0 {
                assert_eq!(plain_use, "bypassed", "{name} {command}");
            }
            for round in 0..2 {
                let indexed = hist_cached(command, &session, cache.path(), &[], request);
                assert_eq!(indexed.code, plain.code, "{name} {command}");
                let (out, used) = without_index(&indexed);
                assert_eq!(out, plain_out, "{name} {command} {request}");
                let big = std::fs::metadata(&session).unwrap().len() > 100_000;
                if big && round == 1 && plain.code == 0 {
                    assert_eq!(used, "reused", "{name} {command}");
                }
                if plain.code == 0 {
                    assert!(
                        ["built", "reused"].contains(&used.as_str()),
                        "{name} {used}"
                    );
                }
            }
        }
    }
}

/// The id of the last entry of a session file (its last line that is an object other than a
/// `session` line), when it has one.
fn last_entry_id(session: &Path) -> Option<String> {
    let text = std::fs::read_to_string(session).unwrap();
    text.lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|entry| entry.is_object() && entry["type"] != "session")
        .and_then(|entry| entry["id"].as_str().map(str::to_string))
}

/// The Pi extension names the leaf on every history call, and it is nearly always the
/// session's last entry: such a call is the default leaf's. It writes the index file a call
/// without `--leaf` writes (with the stored projection), is answered from it (`reused`) and
/// extends it in place after an append (`extended`), answering as the call without it.
#[test]
fn naming_the_last_entry_as_the_leaf_is_the_default_leaf_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("named.jsonl");
    let full = std::fs::read(fixture("large-real.jsonl")).unwrap();
    let cut = full.len() * 2 / 3;
    let cut = cut + full[cut..].iter().position(|&b| b == b'\n').unwrap() + 1;
    std::fs::write(&session, &full[..cut]).unwrap();
    let (default_cache, named_cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let index_files = |cache: &Path| files_in(&cache.join("history"));
    for (step, expected) in [(0, "built"), (1, "reused"), (2, "extended"), (3, "reused")] {
        if step == 2 {
            std::fs::write(&session, &full).unwrap();
        }
        let leaf = last_entry_id(&session).unwrap();
        for (command, request) in INDEX_CALLS {
            let by_default = hist_cached(command, &session, default_cache.path(), &[], request);
            let named = hist_cached(
                command,
                &session,
                named_cache.path(),
                &["--leaf", &leaf],
                request,
            );
            assert_eq!(named.code, by_default.code, "{step} {command} {request}");
            assert_eq!(
                named.stdout, by_default.stdout,
                "{step} {command} {request}"
            );
            if named.code == 0 && *command == "history-windows" {
                assert_eq!(without_index(&named).1, expected, "{step}");
            }
        }
        let (named_files, default_files) = (
            index_files(named_cache.path()),
            index_files(default_cache.path()),
        );
        let names = |files: &[(String, Vec<u8>)]| -> Vec<(String, usize)> {
            files
                .iter()
                .map(|(name, bytes)| (name.clone(), bytes.len()))
                .collect()
        };
        assert!(
            named_files == default_files,
            "step {step}: the cache files differ: {:?} vs {:?}",
            names(&named_files),
            names(&default_files)
        );
    }
    // Another leaf is still its own branch, answered through the skeleton.
    let other = hist_cached(
        "history-windows",
        &session,
        named_cache.path(),
        &["--leaf", "c6ab0702"],
        "{}",
    );
    assert_eq!(other.code, 0, "{}", other.stderr);
    let plain = hist_cached(
        "history-windows",
        &session,
        named_cache.path(),
        &["--leaf", "c6ab0702", "--no-index"],
        "{}",
    );
    assert_eq!(without_index(&other).0, without_index(&plain).0);
    assert_ne!(
        without_index(&other).0,
        without_index(&hist_cached(
            "history-windows",
            &session,
            named_cache.path(),
            &[],
            "{}"
        ))
        .0
    );
}

/// A leaf named that is not the last entry (Pi's leaf after a `/tree`, until an entry is
/// appended): the first call builds its projection from the skeleton and keeps it in a leaf
/// file beside the index; the calls after it are answered from that file, as without the
/// index, and write nothing. The search memo stays the whole file's, so calls on the default
/// branch and on this leaf do not take turns rescanning it.
#[test]
fn another_leaf_is_answered_from_its_leaf_file_as_without_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let session = dir.path().join("tree.jsonl");
    std::fs::copy(fixture("large-real.jsonl"), &session).unwrap();
    let text = std::fs::read_to_string(&session).unwrap();
    let ids: Vec<String> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|entry| entry["type"] != "session")
        .filter_map(|entry| entry["id"].as_str().map(str::to_string))
        .collect();
    let leaf = &ids[ids.len() / 2];
    let index_files = || files_in(&cache.path().join("history"));
    let search = r#"{"query":["rate limit","src/main.rs","error: cannot"]}"#;
    let by_default = hist_cached("history-search", &session, cache.path(), &[], search);
    assert_eq!(without_index(&by_default).1, "built");
    // The second search scans through the stored projection and writes the memo.
    let by_default = hist_cached("history-search", &session, cache.path(), &[], search);
    assert_eq!(without_index(&by_default).1, "reused");
    let before = index_files();
    let mut after_first = None;
    for round in 0..2 {
        for (command, request) in INDEX_CALLS {
            let named = hist_cached(command, &session, cache.path(), &["--leaf", leaf], request);
            let plain = hist_cached(
                command,
                &session,
                cache.path(),
                &["--leaf", leaf, "--no-index"],
                request,
            );
            assert_eq!(named.code, plain.code, "{round} {command} {request}");
            let (out, used) = without_index(&named);
            assert_eq!(out, without_index(&plain).0, "{round} {command} {request}");
            if named.code == 0 {
                assert_eq!(used, "reused", "{round} {command} {request}");
            }
        }
        let files = index_files();
        let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
        assert!(names.iter().any(|n| n.ends_with(".leaf")), "{names:?}");
        match &after_first {
            None => after_first = Some(files),
            Some(first) => assert!(first == &files, "the second round wrote: {names:?}"),
        }
    }
    // The memo a default search leaves, unchanged by the same search on the leaf.
    let memo = |files: &[(String, Vec<u8>)]| {
        files
            .iter()
            .find(|(name, _)| name.ends_with(".hits"))
            .map(|(_, bytes)| bytes.clone())
    };
    assert!(memo(&before).is_some());
    let again = hist_cached("history-search", &session, cache.path(), &[], search);
    assert_eq!(
        without_index(&again),
        (without_index(&by_default).0, "reused".into())
    );
    let by_default_memo = memo(&index_files());
    let named = hist_cached(
        "history-search",
        &session,
        cache.path(),
        &["--leaf", leaf],
        search,
    );
    assert_eq!(named.code, 0);
    assert_eq!(memo(&index_files()), by_default_memo);
}

#[test]
fn a_growing_session_is_answered_alike_with_and_without_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let session = dir.path().join("grow.jsonl");
    let full = std::fs::read(fixture("large-real.jsonl")).unwrap();
    // Grow in steps that end mid-line as often as on a line end.
    let steps = [
        full.len() / 3,
        full.len() / 2 + 17,
        full.len() * 3 / 4,
        full.len(),
    ];
    let mut uses = Vec::new();
    for end in steps {
        std::fs::write(&session, &full[..end]).unwrap();
        for (command, request) in INDEX_CALLS {
            let plain = hist_cached(command, &session, cache.path(), &["--no-index"], request);
            let indexed = hist_cached(command, &session, cache.path(), &[], request);
            let (out, used) = without_index(&indexed);
            assert_eq!(out, without_index(&plain).0, "{end} {command} {request}");
            uses.push(used);
        }
    }
    assert_eq!(uses[0], "built");
    assert!(
        uses.iter().filter(|u| *u == "extended").count() >= 2,
        "{uses:?}"
    );
    assert!(
        uses.iter().filter(|u| *u == "reused").count() >= 20,
        "{uses:?}"
    );
}

#[test]
fn processes_extending_one_index_at_once_all_answer_right_and_leave_it_valid() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let session = dir.path().join("race.jsonl");
    let full = std::fs::read(fixture("pi-mono-large-session.jsonl")).unwrap();
    let half = full.len() / 2
        + full[full.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap()
        + 1;
    std::fs::write(&session, &full[..half]).unwrap();
    assert_eq!(
        without_index(&hist_cached(
            "history-windows",
            &session,
            cache.path(),
            &[],
            "{}"
        ))
        .1,
        "built"
    );
    std::fs::write(&session, &full).unwrap();
    // Half of them name an earlier leaf (a v1 file's entries are named by line): each of
    // those writes the index with the default projection, or its leaf file beside it.
    let leaf_flags: [&[&str]; 2] = [&[], &["--leaf", "L300"]];
    let expected: Vec<String> = leaf_flags
        .iter()
        .map(|flags| {
            let flags = [*flags, &["--no-index"][..]].concat();
            without_index(&hist_cached(
                "history-list",
                &session,
                cache.path(),
                &flags,
                "{}",
            ))
            .0
        })
        .collect();
    assert_ne!(expected[0], expected[1]);
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pi-context"));
            cmd.env_clear()
                .env("HOME", home.path())
                .env("PI_CONTEXT_CACHE_DIR", cache.path())
                .env("PI_CONTEXT_NOW", crate::support::NOW)
                .args(["history-list", "--session"])
                .arg(&session)
                .args(leaf_flags[i % 2])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped());
            let mut child = cmd.spawn().unwrap();
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"{}").unwrap();
            (i % 2, child)
        })
        .collect();
    for (which, child) in children {
        let expected = &expected[which];
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let stdout = String::from_utf8(out.stdout).unwrap();
        crate::support::check_envelope(&["history-list".to_string()], &stdout);
        let run = Run {
            code: 0,
            stdout,
            stderr: String::new(),
        };
        let (answer, used) = without_index(&run);
        assert_eq!(&answer, expected);
        assert!(["extended", "reused"].contains(&used.as_str()), "{used}");
    }
    for (flags, expected) in leaf_flags.iter().zip(expected) {
        let after = hist_cached("history-list", &session, cache.path(), flags, "{}");
        assert_eq!(without_index(&after), (expected, "reused".to_string()));
    }
    let files = files_in(&cache.path().join("history"));
    assert!(files.iter().any(|(name, _)| name.ends_with(".leaf")));
}

#[test]
fn an_unusable_cache_directory_answers_without_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let session = fixture("basic.jsonl");
    for (command, request) in INDEX_CALLS {
        let out = hist_cached(command, &session, &blocker.join("cache"), &[], request);
        let plain = hist_cached(command, &session, &blocker, &["--no-index"], request);
        assert_eq!(out.code, plain.code, "{command}");
        let (answer, used) = without_index(&out);
        assert_eq!(used, "unavailable", "{command}");
        assert_eq!(answer, without_index(&plain).0, "{command}");
    }
}
