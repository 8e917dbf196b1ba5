//! The metadata cache never changes an answer: over random stores and random edits between
//! calls (new content, deletions of files and directories, renames, new subdirectories, every mtime made equal, and in-place edits that keep
//! the size and restore the mtime), `notes-list`'s rows and status and `boot-render`'s snapshot
//! are the same with the cache as without it, whether the cache's entries are fresh (racy, so
//! re-read) or old enough to be trusted.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use proptest::prelude::*;

use super::{Identity, Query, Store};
use crate::boot::load::{Layout, load_snapshot, load_snapshot_cached};

const HOMES: [&str; 5] = [
    "human",
    "agents/ann",
    "project/k-1",
    "pi/session/s1",
    "models/m",
];

/// One note file's text, from a few shapes listing and boot treat differently.
fn content(kind: u8, stamp: u8, filler: usize) -> String {
    let updated = format!("2026-01-{:02}T10:00:00.000+00:00", 1 + stamp % 5);
    let body = "body text ".repeat(filler);
    match kind % 7 {
        0 => format!(
            "---\norigin: self\ncreatedAt: {}\nupdatedAt: {updated}\nlastAccessed: {updated}\naccessCount: 0\n---\n\n{body}",
            updated.replace("+00:00", "-05:30")
        ),
        1 => {
            format!("---\norigin: user\ncrumpledAt: {updated}\nupdatedAt: {updated}\n---\n\n{body}")
        }
        2 => format!("no block at all {body}"),
        3 => format!("---\r\nupdatedAt: {updated}\r\n---\r\n\r\n{body}\r\n"),
        4 => format!(
            "---\nupdatedAt: {updated}\nbig: \"{}\"\n---\n\n{body}é",
            "z".repeat(5000)
        ),
        5 => format!(
            "---\nextra: [1, 2.5]\nupdatedAt: {}\n---\n\n{body}",
            updated.replace("+00:00", "+02:00")
        ),
        _ => format!("---\nupdatedAt: not a date\n---\n\n{body}😀"),
    }
}

#[derive(Debug, Clone)]
enum Edit {
    /// (Re)write a file with new content (a new inode, as an editor or pi-context does).
    Write(usize, u8, u8, u8, usize),
    /// Change bytes in place keeping the size, then put the old mtime back.
    SameSizeSameMtime(usize, usize),
    Delete(usize, usize),
    /// A whole subdirectory removed.
    DeleteSub(usize),
    Rename(usize, usize, usize),
    /// Every note file gets the same mtime (a clone, a restore, a `touch`).
    TouchAll,
    /// Time passes: the cache files become old enough for their entries to be trusted.
    AgeCache,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0..5usize, any::<u8>(), any::<u8>(), 0u8..4, 0..40usize)
            .prop_map(|(h, k, s, n, f)| Edit::Write(h, k, s, n, f)),
        (0..5usize, 0..6usize).prop_map(|(h, n)| Edit::SameSizeSameMtime(h, n)),
        (0..5usize, 0..6usize).prop_map(|(h, n)| Edit::Delete(h, n)),
        (0..5usize).prop_map(Edit::DeleteSub),
        (0..5usize, 0..6usize, 0..6usize).prop_map(|(h, a, b)| Edit::Rename(h, a, b)),
        Just(Edit::TouchAll),
        Just(Edit::AgeCache),
        Just(Edit::AgeCache),
    ]
}

fn note_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for home in HOMES {
        let mut files = Vec::new();
        let _ = super::store::walk(&root.join(home), "", &mut files);
        out.extend(files.into_iter().map(|(_, p)| p));
    }
    out.sort();
    out
}

fn nth_file(root: &Path, home: usize, n: usize) -> Option<PathBuf> {
    let mut files = Vec::new();
    let _ = super::store::walk(&root.join(HOMES[home]), "", &mut files);
    files.sort();
    (!files.is_empty()).then(|| files[n % files.len()].1.clone())
}

fn apply(root: &Path, cache: &Path, edit: &Edit) {
    match *edit {
        Edit::Write(home, kind, stamp, name, filler) => {
            let names = ["a.md", "sub/b.md", "MAP.md", "sub/deep/c.md"];
            let path = root.join(HOMES[home]).join(names[name as usize]);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            crate::fsio::write_atomic(&path, content(kind, stamp, filler).as_bytes()).unwrap();
        }
        Edit::SameSizeSameMtime(home, n) => {
            let Some(path) = nth_file(root, home, n) else {
                return;
            };
            let before = fs::metadata(&path).unwrap();
            let mut bytes = fs::read(&path).unwrap();
            // A new ctime tick, as any later edit by another program would have.
            std::thread::sleep(Duration::from_millis(12));
            for (from, to) in [
                (&b"crumpledAt"[..], &b"crumpledAx"[..]),
                (b"crumpledAx", b"crumpledAt"),
                (b"-01T", b"-02T"),
                (b"-02T", b"-03T"),
                (b"body", b"BODY"),
            ] {
                if let Some(at) = bytes.windows(from.len()).position(|w| w == from) {
                    bytes[at..at + from.len()].copy_from_slice(to);
                    break;
                }
            }
            let mut file = fs::OpenOptions::new().write(true).open(&path).unwrap();
            std::io::Write::write_all(&mut file, &bytes).unwrap();
            file.set_modified(before.modified().unwrap()).unwrap();
            assert_eq!(fs::metadata(&path).unwrap().len(), before.len());
        }
        Edit::Delete(home, n) => {
            if let Some(path) = nth_file(root, home, n) {
                fs::remove_file(path).unwrap();
            }
        }
        Edit::DeleteSub(home) => {
            let _ = fs::remove_dir_all(root.join(HOMES[home]).join("sub"));
        }
        Edit::Rename(home, a, b) => {
            if let Some(path) = nth_file(root, home, a) {
                let target = root.join(HOMES[home]).join(format!("moved-{b}.md"));
                fs::rename(path, target).unwrap();
            }
        }
        Edit::TouchAll => {
            let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
            for path in note_files(root) {
                let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
                file.set_modified(when).unwrap();
            }
        }
        Edit::AgeCache => {
            let later = SystemTime::now() + Duration::from_secs(3600);
            for entry in walk_all(cache) {
                if let Ok(file) = fs::OpenOptions::new().write(true).open(&entry) {
                    let _ = file.set_modified(later);
                }
            }
        }
    }
}

fn walk_all(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk_all(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

fn identity(root: &Path) -> Identity {
    Identity::new(root, Some("s1"), "k-1", "ann", "m").unwrap()
}

fn listing(store: &Store, wastebasket: bool) -> String {
    let query = Query {
        wastebasket,
        ..Query::default()
    };
    let listing = store.list_with_status(&query).unwrap();
    format!("{:?} {:?}", listing.rows, listing.status)
}

/// Compare every cached answer with the uncached one.
fn check(root: &Path, cache: &Path) -> Result<(), TestCaseError> {
    let plain = Store::new(identity(root));
    let cached = Store::new(identity(root)).with_cache_dir(Some(cache));
    for wastebasket in [false, true] {
        prop_assert_eq!(listing(&cached, wastebasket), listing(&plain, wastebasket));
    }
    let layout = Layout {
        root: root.to_path_buf(),
        session_id: "s1".into(),
        project_key: "k-1".into(),
        agent: "ann".into(),
        model: "m".into(),
    };
    let now_ms = 1_767_312_000_000;
    prop_assert_eq!(
        load_snapshot_cached(&layout, now_ms, Some(cache)),
        load_snapshot(&layout, now_ms)
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn cached_answers_equal_uncached_ones(
        initial in proptest::collection::vec(
            (0..5usize, any::<u8>(), any::<u8>(), 0u8..4, 0..40usize), 1..14),
        steps in proptest::collection::vec(proptest::collection::vec(edit(), 0..4), 1..7),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        let cache = dir.path().join("cache");
        for (h, k, s, n, f) in initial {
            apply(&root, &cache, &Edit::Write(h, k, s, n, f));
        }
        check(&root, &cache)?;
        for edits in steps {
            for edit in &edits {
                apply(&root, &cache, edit);
            }
            check(&root, &cache)?;
            // The same again: now answered from the cache written just before.
            apply(&root, &cache, &Edit::AgeCache);
            check(&root, &cache)?;
        }
    }
}

/// The walk's threads never change an answer: a store with one home holding most notes —
/// nested directories, one large flat directory (split into chunks between workers), and
/// decoys the walk must skip (a symlinked directory and note, a directory named `*.md`, a
/// name that is not UTF-8) — gives the same listing rows and status, the same boot snapshot
/// and the same files, with and without the cache (cold, racy, trusted, trusted listings),
/// walked by one thread or by several with tiny chunks (helpers started once items wait, or at
/// once when a home's cache file is met), before and after every mtime is made equal; and the
/// walk finds exactly the files an independent `std::fs` walk finds.
#[test]
fn the_parallel_walk_answers_as_the_serial_one() {
    use super::store::walk::{Tuning, with_tuning};
    use std::os::unix::ffi::OsStrExt;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("notes");
    let mut n = 0usize;
    let mut write = |rel: String| {
        let path = root.join(&rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let kind = (n * 5 % 7) as u8;
        fs::write(&path, content(kind, (n * 3 % 11) as u8, n % 9)).unwrap();
        n += 1;
    };
    let big = "agents/ann";
    for a in 0..4 {
        for b in 0..3 {
            for f in 0..6 {
                write(format!("{big}/d{a}/e{b}/n{f}.md"));
            }
        }
        write(format!("{big}/d{a}/top.md"));
    }
    for f in 0..90 {
        write(format!("{big}/flat/f{f:03}.md"));
    }
    for f in 0..4 {
        write(format!("{big}/t{f}.md"));
    }
    write(format!("{big}/MAP.md"));
    for home in HOMES.iter().filter(|h| **h != big) {
        write(format!("{home}/a.md"));
        write(format!("{home}/sub/b.md"));
    }
    write("human/MAP.md".into());
    let ann = root.join(big);
    std::os::unix::fs::symlink(ann.join("d0"), ann.join("linked-dir")).unwrap();
    std::os::unix::fs::symlink(ann.join("t0.md"), ann.join("linked.md")).unwrap();
    fs::create_dir_all(ann.join("dir.md")).unwrap();
    fs::write(ann.join("d1").join("x.txt"), "not a note").unwrap();
    fs::write(
        ann.join(std::ffi::OsStr::from_bytes(b"bad-\xff.md")),
        "---\nupdatedAt: 2026-01-01T00:00:00Z\n---\n",
    )
    .unwrap();

    let serial = Tuning {
        threads: 1,
        start_at: usize::MAX,
        chunk: usize::MAX,
        large_cache: 0,
    };
    let tunings = [
        serial,
        Tuning {
            threads: 4,
            start_at: 0,
            chunk: 3,
            // Helpers start while the first home's cache loads, whenever there is one.
            large_cache: 0,
        },
        Tuning {
            threads: 2,
            start_at: 1,
            chunk: 16,
            large_cache: u64::MAX,
        },
    ];
    let layout = Layout {
        root: root.clone(),
        session_id: "s1".into(),
        project_key: "k-1".into(),
        agent: "ann".into(),
        model: "m".into(),
    };
    let now_ms = 1_767_312_000_000;
    let answers = |cache: Option<&Path>| {
        let store = Store::new(identity(&root)).with_cache_dir(cache);
        let snapshot = match cache {
            Some(cache) => load_snapshot_cached(&layout, now_ms, Some(cache)),
            None => load_snapshot(&layout, now_ms),
        };
        (
            listing(&store, false),
            listing(&store, true),
            format!("{snapshot:?}"),
        )
    };
    // The files, with their `lstat`s, as a walk of the big home hands them over.
    let walked = || {
        let home = crate::confine::Dir::open_root(&ann).unwrap().unwrap();
        let mut files = Vec::new();
        super::store::walk_files(std::sync::Arc::new(home), "", true, &mut files).unwrap();
        let mut files: Vec<(String, String)> = files
            .into_iter()
            .map(|f| (f.rel.clone(), format!("{:?}", f.stat)))
            .collect();
        files.sort();
        files
    };
    // An independent reference: regular `*.md` files with UTF-8 names, no symlink followed.
    fn reference(dir: &Path, rel: &str, out: &mut Vec<String>) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let kind = entry.file_type().unwrap();
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if kind.is_dir() {
                reference(&entry.path(), &path, out);
            } else if kind.is_file() && name.ends_with(".md") {
                out.push(path);
            }
        }
    }
    let mut expected_files = Vec::new();
    reference(&ann, "", &mut expected_files);
    expected_files.sort();
    assert_eq!(expected_files.len(), 4 * 3 * 6 + 4 + 90 + 4 + 1);

    for layout_round in 0..2 {
        if layout_round == 1 {
            apply(&root, dir.path(), &Edit::TouchAll);
        }
        let expected = with_tuning(serial, || answers(None));
        let expected_walk = with_tuning(serial, walked);
        assert_eq!(
            expected_walk
                .iter()
                .map(|f| f.0.clone())
                .collect::<Vec<_>>(),
            expected_files
        );
        for (t, tuning) in tunings.into_iter().enumerate() {
            with_tuning(tuning, || {
                assert_eq!(walked(), expected_walk, "tuning {tuning:?}");
                assert_eq!(answers(None), expected, "--no-cache, tuning {tuning:?}");
                let cache = dir.path().join(format!("cache-{layout_round}-{t}"));
                for round in 0..4 {
                    assert_eq!(
                        answers(Some(&cache)),
                        expected,
                        "cache round {round}, tuning {tuning:?}"
                    );
                    // Old enough to trust its entries (and, from the next round, its listings).
                    apply(&root, &cache, &Edit::AgeCache);
                }
            });
        }
    }
}
