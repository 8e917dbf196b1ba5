//! Generate a deterministic notes store for benchmarks:
//! `gen_notes_store [--shape default|deep|small] DIR [COUNT]`
//! (default 10,000 notes, about 2 KB each, ≈20 MB) spread over the five homes of the
//! identity `--session-id bench-session --project-key bench-0000abcd --agent anonymous
//! --model default`, with a `MAP.md` at the top of every home, about 3 % crumpled notes, and
//! the literal `Zebrafish Lantern` (in varying case) in about 1 % of the bodies.
//!
//! Shapes (held-out layouts for the walk): `default` puts each note in one of 200 `topic-NNN/`
//! directories per home; `deep` nests each note 3 to 5 directories deep (`dK-N/…`, about 7,400
//! directories for 10,000 notes, one or two notes each); `small` writes bodies of about 200
//! bytes (use COUNT 30000 for the "small30k" store). The default shape's output is unchanged.

use std::fs;
use std::path::PathBuf;

const WORDS: &[&str] = &[
    "context",
    "window",
    "reset",
    "note",
    "agent",
    "model",
    "session",
    "project",
    "memory",
    "checkpoint",
    "budget",
    "search",
    "address",
    "frontmatter",
    "render",
    "boot",
    "dream",
    "history",
    "index",
    "token",
    "limit",
    "window",
    "plan",
    "todo",
    "fix",
    "test",
    "review",
    "merge",
    "branch",
    "commit",
    "deploy",
    "schema",
    "field",
    "value",
    "error",
    "refusal",
    "envelope",
    "offset",
    "cursor",
    "lock",
    "atomic",
    "rename",
    "update",
    "write",
    "read",
    "über",
    "café",
    "naïve",
    "日本語",
    "進捗",
    "emoji😀",
    "Σίσυφος",
];

fn main() {
    let usage = "usage: gen_notes_store [--shape default|deep|small] DIR [COUNT]";
    let mut args = std::env::args().skip(1).peekable();
    let shape = if args.peek().map(String::as_str) == Some("--shape") {
        args.next();
        args.next().expect(usage)
    } else {
        "default".to_string()
    };
    let (deep, body_len) = match shape.as_str() {
        "default" => (false, 1_800),
        "deep" => (true, 1_800),
        "small" => (false, 200),
        _ => panic!("{usage}"),
    };
    let dir = PathBuf::from(args.next().expect(usage));
    let count: usize = args
        .next()
        .map_or(10_000, |c| c.parse().expect("COUNT is a number"));
    let homes = [
        dir.join("pi/session/bench-session"),
        dir.join("project/bench-0000abcd"),
        dir.join("human"),
        dir.join("agents/anonymous"),
        dir.join("models/default"),
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize
    };
    let mut total_bytes = 0usize;
    for i in 0..count {
        let home = &homes[i % homes.len()];
        let path = if deep {
            let depth = 3 + i % 3;
            let mut sub = PathBuf::new();
            for k in 0..depth {
                sub.push(format!("d{k}-{}", (i / (5 * (k + 1))) % (4 + k)));
            }
            home.join(sub).join(format!("note-{i:05}.md"))
        } else {
            home.join(format!("topic-{:03}/note-{i:05}.md", (i / 5) % 200))
        };
        let minute = next() % 525_600;
        let stamp = format!(
            "2026-{:02}-{:02}T{:02}:{:02}:00.000+00:00",
            1 + minute / 43_800 % 12,
            1 + minute / 1_440 % 28,
            minute / 60 % 24,
            minute % 60
        );
        let crumpled = if i % 33 == 7 {
            format!("crumpledAt: {stamp}\n")
        } else {
            String::new()
        };
        let mut body = format!("# Note {i}\n\n");
        while body.len() < body_len {
            let words = 8 + next() % 10;
            let line: Vec<&str> = (0..words).map(|_| WORDS[next() % WORDS.len()]).collect();
            body.push_str(&line.join(" "));
            body.push('\n');
        }
        if i % 97 == 3 {
            let variants = [
                "Zebrafish Lantern",
                "zebrafish lantern",
                "ZEBRAFISH LANTERN",
            ];
            body.push_str(&format!("see the {} notes\n", variants[i % 3]));
        }
        // One note in a hundred was read recently: pi-context rewrote it then (access bump).
        let accessed = if i % 100 == 5 {
            "2026-11-29T09:00:00.000+00:00".to_string()
        } else {
            stamp.clone()
        };
        let text = format!(
            "---\norigin: self\n{crumpled}createdAt: {stamp}\nupdatedAt: {stamp}\nlastAccessed: {accessed}\naccessCount: {}\n---\n\n{body}",
            i % 7
        );
        fs::create_dir_all(path.parent().expect("note paths have parents")).expect("create dirs");
        fs::write(&path, &text).expect("write note");
        // The file time pi-context would have left: its last rewrite.
        set_mtime(&path, &accessed);
        total_bytes += text.len();
    }
    for home in &homes {
        fs::create_dir_all(home).expect("create home");
        let stamp = "2026-06-01T00:00:00.000+00:00";
        let map = format!(
            "---\norigin: self\ncreatedAt: {stamp}\nupdatedAt: {stamp}\nlastAccessed: {stamp}\naccessCount: 0\n---\n\n# Map\n\n- `topic-000/` early notes\n- `topic-199/` late notes\n"
        );
        fs::write(home.join("MAP.md"), map).expect("write MAP.md");
        set_mtime(&home.join("MAP.md"), stamp);
    }
    eprintln!(
        "generated {count} notes ({total_bytes} bytes) under {}",
        dir.display()
    );
}

fn set_mtime(path: &std::path::Path, rfc3339: &str) {
    let at = chrono::DateTime::parse_from_rfc3339(rfc3339).expect("generated stamps are RFC 3339");
    let when =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(at.timestamp_millis() as u64);
    fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(when))
        .expect("set the note's file time");
}
