//! Crash safety of the notes commands: processes reading, writing and updating notes are
//! killed with SIGKILL at random instants, hundreds of times; after every kill each note file is
//! one complete version of its content (never empty, torn or missing), and afterwards every note
//! still reads and writes normally.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::NOW;

const NOTES: usize = 6;
const KILLS: usize = 300;

fn command(home: &Path, verb: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pi-context"));
    cmd.env_clear()
        .env("HOME", home)
        .env("TZ", "UTC")
        .env("PI_CONTEXT_NOW", NOW)
        .current_dir(home)
        .args([verb, "--notes-home"])
        .arg(home.join("notes"))
        .args(["--session-id", "s1", "--project-key", "demo-1a2b3c4d"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn call(home: &Path, verb: &str, request: &serde_json::Value) {
    let mut child = command(home, verb).spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "{verb} {request}");
}

fn body_of(raw: &str) -> Option<&str> {
    let rest = raw.strip_prefix("---\n")?;
    let end = rest.find("\n---\n\n")?;
    Some(&rest[end + 6..])
}

#[test]
fn sigkill_at_random_instants_never_costs_note_content() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    // Every body a note may legally have: each version ever asked for.
    let mut allowed: Vec<BTreeSet<String>> = Vec::new();
    for i in 0..NOTES {
        let body = format!(
            "note {i} version 0\n{}",
            "line of text\n".repeat(40 * (i + 1))
        );
        call(
            home,
            "notes-write",
            &json!({"address": format!("@human/n{i}"), "content": body}),
        );
        allowed.push(BTreeSet::from([body]));
    }
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let (mut kills, mut spawned) = (0usize, 0usize);
    while kills < KILLS {
        spawned += 1;
        assert!(
            spawned < KILLS * 20,
            "too few processes were still running when killed"
        );
        let i = next(NOTES as u64) as usize;
        let address = format!("@human/n{i}");
        let (verb, request) = match next(4) {
            0 | 1 => ("notes-read", json!({"address": address})),
            2 => {
                let body = format!(
                    "note {i} version {spawned}\n{}",
                    "changed\n".repeat(30 + i * 50)
                );
                allowed[i].insert(body.clone());
                ("notes-write", json!({"address": address, "content": body}))
            }
            _ => (
                "notes-update",
                json!({"address": address, "crumpled": next(2) == 0}),
            ),
        };
        let mut child = command(home, verb).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(request.to_string().as_bytes());
        drop(stdin);
        std::thread::sleep(Duration::from_micros(next(4000)));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            kills += 1;
        }
        child.wait().unwrap();
        for (n, bodies) in allowed.iter().enumerate() {
            let path = home.join(format!("notes/human/n{n}.md"));
            let raw = fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("n{n} is gone after a kill of {verb}: {e}"));
            let body = body_of(&raw)
                .unwrap_or_else(|| panic!("n{n} lost its frontmatter after {verb}: {raw:?}"));
            assert!(
                bodies.contains(body),
                "n{n} holds a body that was never written whole, after a kill of {verb}"
            );
        }
    }
    eprintln!("{kills} kills over {spawned} processes");
    // Whatever the kills left in the access journal, every note still reads, updates and writes.
    for i in 0..NOTES {
        let address = format!("@human/n{i}");
        call(home, "notes-read", &json!({"address": address}));
        call(
            home,
            "notes-update",
            &json!({"address": address, "crumpled": false}),
        );
        call(
            home,
            "notes-write",
            &json!({"address": address, "content": "final"}),
        );
        let raw = fs::read_to_string(home.join(format!("notes/human/n{i}.md"))).unwrap();
        assert_eq!(body_of(&raw), Some("final"));
    }
}
