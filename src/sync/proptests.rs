//! The convergence property: two homes doing random edits, inserts, line replacements,
//! crumples, reads, deletes and renames, syncing in random orders through one bare
//! repository over at least 50 rounds, end up with the same notes, and every line ever
//! written is still in a live note or a conflict note unless a deliberate delete or line
//! replacement removed it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, FixedOffset};
use proptest::prelude::*;

use super::{Options, is_synced_path, sync};
use crate::notes::frontmatter;

#[derive(Debug, Clone)]
enum Op {
    Append(u8),
    Insert(u8),
    Replace(u8, u8),
    Crumple(u8),
    Read(u8),
    Delete(u8),
    Rename(u8, u8),
}

#[derive(Debug, Clone)]
struct Round {
    a: Vec<Op>,
    b: Vec<Op>,
    /// 0 none, 1 A, 2 B, 3 A then B, 4 B then A.
    syncs: u8,
}

const NOTES: u8 = 6;

fn op() -> impl Strategy<Value = Op> {
    let n = 0..NOTES;
    prop_oneof![
        4 => n.clone().prop_map(Op::Append),
        2 => n.clone().prop_map(Op::Insert),
        3 => (n.clone(), any::<u8>()).prop_map(|(i, j)| Op::Replace(i, j)),
        1 => n.clone().prop_map(Op::Crumple),
        2 => n.clone().prop_map(Op::Read),
        1 => n.clone().prop_map(Op::Delete),
        1 => (n.clone(), n).prop_map(|(i, j)| Op::Rename(i, j)),
    ]
}

fn round() -> impl Strategy<Value = Round> {
    (
        prop::collection::vec(op(), 0..3),
        prop::collection::vec(op(), 0..3),
        0u8..5,
    )
        .prop_map(|(a, b, syncs)| Round { a, b, syncs })
}

/// What the model remembers: every line written, and those removed on purpose.
#[derive(Default)]
struct Ledger {
    written: BTreeSet<String>,
    removed: BTreeSet<String>,
    next: usize,
}

struct Home {
    dir: PathBuf,
    host: &'static str,
}

fn note_path(home: &Home, i: u8) -> PathBuf {
    home.dir.join(format!("human/n{i}.md"))
}

fn read_note(path: &Path) -> Option<(serde_json::Map<String, serde_json::Value>, Vec<String>)> {
    let text = fs::read_to_string(path).ok()?;
    let parsed = frontmatter::parse(&text);
    let lines = parsed.body.lines().map(str::to_owned).collect();
    Some((parsed.fields, lines))
}

fn write_note(path: &Path, fields: &serde_json::Map<String, serde_json::Value>, lines: &[String]) {
    let mut body = lines.join("\n");
    body.push('\n');
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, frontmatter::serialize(fields, &body)).unwrap();
}

fn fresh_fields(now: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut f = serde_json::Map::new();
    for (k, v) in [
        ("origin", "self"),
        ("createdAt", now),
        ("updatedAt", now),
        ("lastAccessed", now),
    ] {
        f.insert(k.into(), v.into());
    }
    f.insert("accessCount".into(), 0.into());
    f
}

fn apply(home: &Home, op: &Op, ledger: &mut Ledger, now: &str) {
    let new_line = |ledger: &mut Ledger| {
        ledger.next += 1;
        let line = format!("{}-line-{}", home.host, ledger.next);
        ledger.written.insert(line.clone());
        line
    };
    match *op {
        Op::Append(i) | Op::Insert(i) => {
            let path = note_path(home, i);
            let line = new_line(ledger);
            let (mut fields, mut lines) =
                read_note(&path).unwrap_or_else(|| (fresh_fields(now), Vec::new()));
            if matches!(op, Op::Append(_)) {
                lines.push(line);
            } else {
                lines.insert(0, line);
            }
            fields.insert("updatedAt".into(), now.into());
            write_note(&path, &fields, &lines);
        }
        Op::Replace(i, j) => {
            let path = note_path(home, i);
            if let Some((mut fields, mut lines)) = read_note(&path)
                && !lines.is_empty()
            {
                let k = j as usize % lines.len();
                let old = std::mem::replace(&mut lines[k], new_line(ledger));
                ledger.removed.insert(old);
                fields.insert("updatedAt".into(), now.into());
                write_note(&path, &fields, &lines);
            }
        }
        Op::Crumple(i) => {
            let path = note_path(home, i);
            if let Some((mut fields, lines)) = read_note(&path)
                && !fields.contains_key("crumpledAt")
            {
                fields.insert("crumpledAt".into(), now.into());
                write_note(&path, &fields, &lines);
            }
        }
        Op::Read(i) => {
            let path = note_path(home, i);
            if let Some((mut fields, lines)) = read_note(&path) {
                let n = fields
                    .get("accessCount")
                    .and_then(|v| v.as_i64())
                    .unwrap_or(0);
                fields.insert("accessCount".into(), (n + 1).into());
                fields.insert("lastAccessed".into(), now.into());
                write_note(&path, &fields, &lines);
            }
        }
        Op::Delete(i) => {
            let path = note_path(home, i);
            if let Some((_, lines)) = read_note(&path) {
                ledger.removed.extend(lines);
                fs::remove_file(&path).unwrap();
            }
        }
        Op::Rename(i, j) => {
            let (from, to) = (note_path(home, i), note_path(home, j));
            if i != j && from.exists() && !to.exists() {
                fs::rename(from, to).unwrap();
            }
        }
    }
}

/// Every synced file of a home: relative path → bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel.starts_with('.') {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else if is_synced_path(&rel, false) {
                out.push((rel, fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[derive(Default, Debug)]
struct Tally {
    lines_written: usize,
    lines_removed_on_purpose: usize,
    final_notes: usize,
    syncs: usize,
    merged: usize,
    conflicts: usize,
    kept_edits: usize,
}

fn run_sync(home: &Home, remote: &Path, now: DateTime<FixedOffset>, tally: &mut Tally) {
    let url = remote.display().to_string();
    let outcome = sync(&Options {
        home: &home.dir,
        remote: Some(&url),
        branch: "main",
        adopt_remote: false,
        include_sessions: false,
        host: home.host,
        now,
        pid: std::process::id(),
        token: "proptest",
    })
    .unwrap_or_else(|e| panic!("sync of {} failed: {e}", home.host));
    tally.syncs += 1;
    tally.merged += outcome.counts.merged;
    tally.conflicts += outcome.counts.conflicts;
    tally.kept_edits += outcome.counts.kept_edits;
}

fn converge(rounds: &[Round]) -> Result<Tally, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote.git");
    git2::Repository::init_bare(&remote).unwrap();
    let a = Home {
        dir: dir.path().join("a"),
        host: "a",
    };
    let b = Home {
        dir: dir.path().join("b"),
        host: "b",
    };
    let mut ledger = Ledger::default();
    let mut tally = Tally::default();
    let mut now = DateTime::parse_from_rfc3339("2026-11-30T12:00:00.000+00:00").unwrap();
    let tick = |now: &mut DateTime<FixedOffset>| {
        *now += Duration::seconds(1);
        *now
    };
    for round in rounds {
        for op in &round.a {
            let t = tick(&mut now);
            apply(&a, op, &mut ledger, &crate::notes::format_stamp(t));
        }
        for op in &round.b {
            let t = tick(&mut now);
            apply(&b, op, &mut ledger, &crate::notes::format_stamp(t));
        }
        let order: &[&Home] = match round.syncs {
            1 => &[&a],
            2 => &[&b],
            3 => &[&a, &b],
            4 => &[&b, &a],
            _ => &[],
        };
        for home in order {
            let t = tick(&mut now);
            run_sync(home, &remote, t, &mut tally);
        }
    }
    for home in [&a, &b, &a, &b] {
        let t = tick(&mut now);
        run_sync(home, &remote, t, &mut tally);
    }
    let (sa, sb) = (snapshot(&a.dir), snapshot(&b.dir));
    prop_assert_eq!(&sa, &sb, "the homes did not converge");
    let mut present = BTreeSet::new();
    for (_, bytes) in &sa {
        let text = String::from_utf8_lossy(bytes);
        present.extend(frontmatter::parse(&text).body.lines().map(str::to_owned));
    }
    for line in &ledger.written {
        prop_assert!(
            present.contains(line) || ledger.removed.contains(line),
            "line {} was lost",
            line
        );
    }
    tally.lines_written = ledger.written.len();
    tally.lines_removed_on_purpose = ledger.removed.len();
    tally.final_notes = sa.len();
    Ok(tally)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3,
        max_shrink_iters: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn two_homes_converge_and_lose_no_line(rounds in prop::collection::vec(round(), 50..=60)) {
        let tally = converge(&rounds)?;
        eprintln!("convergence: {} rounds, {:?}", rounds.len(), tally);
    }
}
