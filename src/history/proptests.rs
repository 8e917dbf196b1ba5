//! Property tests over generated sessions (history.md §18): older walks and range walks return
//! every visible event exactly once, anchors progress, folds partition the hidden events, and
//! nothing off the active branch ever shows. The reference for branch isolation is a tiny
//! independent model of seq allocation and the parent walk.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{EventRole, ListOptions, list_in, open};

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
        let expected: Vec<u64> = opened.projection.events.iter()
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
            let foldable = opened.projection.events.iter()
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
        let visible: BTreeSet<u64> = opened.projection.events.iter().map(|e| e.seq).collect();
        prop_assert!(visible.is_subset(&on_branch));
        let consumed: HashMap<u64, u64> = opened.projection.paired_results.clone();
        for (result, call) in consumed {
            prop_assert!(call < result && !visible.contains(&result) && visible.contains(&call));
        }
    }
}
