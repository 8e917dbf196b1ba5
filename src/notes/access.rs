//! The access journal: where a read's access bump (`lastAccessed`, `accessCount`) waits until it
//! is folded into the note's frontmatter, so that reading a note never rewrites (and never
//! flushes) the note file.
//!
//! One small append-only file per note under `<cache>/notes/<root key>/access/`, named by the
//! SHA-1 of the note's path relative to the notes root. Each line is one read:
//! `{"path": <relative path>, "created": <the note's raw createdAt value or null>, "at": <stamp>}`.
//! A read appends its line under the journal file's advisory lock (no fsync: a crash may lose
//! the newest bumps, never note content). A write, update or rename of the note takes the
//! entries under the note's own lock and folds them into the file it writes; `dream` folds every
//! pending entry before its baseline. An entry counts only for a note whose raw `createdAt`
//! equals the one it recorded, so entries of a deleted note never land on a new note at the same
//! path. Lines that do not parse (a torn append after a crash) are ignored.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::note::{NoteMeta, format_stamp, parse_stamp};

/// One recorded read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The note's path relative to the notes root (`human/a.md`).
    pub path: String,
    /// The raw `createdAt` value of the note that was read (`null` when it had none).
    pub created: Option<Value>,
    /// When it was read (the last of them, for a compacted entry).
    pub at: String,
    /// How many reads this entry stands for (more than one after compaction).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u64,
}

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

/// A note read this many times without a write has its journal compacted to one entry per
/// `createdAt`, so a read never parses an unbounded journal.
const COMPACT_AT: usize = 64;

/// The access journal of one notes root.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
}

impl Journal {
    /// The journal inside a notes root's cache directory (see [`super::cache::root_cache_dir`]).
    pub fn new(root_cache_dir: &Path) -> Journal {
        Journal {
            dir: root_cache_dir.join("access"),
        }
    }

    fn file(&self, rel: &str) -> PathBuf {
        let hex = super::digest::hex(&super::digest::sha1(rel.as_bytes()), 20);
        self.dir.join(format!("{hex}.log"))
    }

    /// Record one read of `rel` (whose raw `createdAt` is `created`) at `at`; returns the entries
    /// recorded earlier for it (not yet folded), oldest first. Creates the journal directory.
    pub fn record(
        &self,
        rel: &str,
        created: Option<&Value>,
        at: DateTime<FixedOffset>,
    ) -> io::Result<Vec<Entry>> {
        self.append(rel, created, at, true)
            .map(Option::unwrap_or_default)
    }

    /// Record one read as [`Journal::record`] does, for a caller that needs no earlier entries:
    /// they are not read back. The file is read only when it may be due for compaction (at
    /// least [`COMPACT_AT`] lines as long as this one); otherwise only its last byte is read
    /// (does it end a line?). Parsing the earlier entries cost a read about 6,500 instructions
    /// each: half the instructions of a `notes-read` with 62 pending.
    pub fn record_only(
        &self,
        rel: &str,
        created: Option<&Value>,
        at: DateTime<FixedOffset>,
    ) -> io::Result<()> {
        self.append(rel, created, at, false).map(drop)
    }

    fn append(
        &self,
        rel: &str,
        created: Option<&Value>,
        at: DateTime<FixedOffset>,
        want_earlier: bool,
    ) -> io::Result<Option<Vec<Entry>>> {
        let path = self.file(rel);
        let entry = Entry {
            path: rel.to_owned(),
            created: created.cloned(),
            at: format_stamp(at),
            count: 1,
        };
        let mut line = serde_json::to_vec(&entry).map_err(io::Error::other)?;
        line.push(b'\n');
        loop {
            let mut file = self.open_append(&path, true)?;
            file.lock()?;
            let Some(len) = linked_len(&file)? else {
                continue; // taken (unlinked) while we waited: append to the new file
            };
            let due = len >= COMPACT_AT as u64 * line.len() as u64;
            let (earlier, clean_end) = if want_earlier || due {
                let (earlier, clean_end) = read_entries(&mut file, rel, len)?;
                (Some(earlier), clean_end)
            } else {
                (None, ends_a_line(&file, len)?)
            };
            if let Some(pending) = earlier.as_deref().filter(|e| e.len() >= COMPACT_AT) {
                // Replace the file (we hold its lock; waiting readers see it unlinked and retry).
                let mut all = compact(pending);
                all.push(entry);
                let mut text = Vec::new();
                for e in &all {
                    text.extend(serde_json::to_vec(e).map_err(io::Error::other)?);
                    text.push(b'\n');
                }
                let mut tmp = tempfile::Builder::new()
                    .prefix(".compact.")
                    .suffix(".tmp")
                    .tempfile_in(&self.dir)?;
                tmp.write_all(&text)?;
                tmp.persist(&path).map_err(|e| e.error)?;
                return Ok(earlier.filter(|_| want_earlier));
            }
            if !clean_end {
                // A torn line from a crash: start ours on a line of its own.
                line.insert(0, b'\n');
            }
            // One write of one line: appends from several readers never interleave.
            file.write_all(&line)?;
            return Ok(earlier.filter(|_| want_earlier));
        }
    }

    /// Take every pending entry of `rel` (the journal file is removed), oldest first. Call with
    /// the note's lock held, then write the note with the entries folded in; if that write fails,
    /// [`Journal::restore`] them.
    pub fn take(&self, rel: &str) -> io::Result<Vec<Entry>> {
        let path = self.file(rel);
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        file.lock()?;
        let Some(len) = linked_len(&file)? else {
            return Ok(Vec::new()); // taken by someone else meanwhile
        };
        let (entries, _) = read_entries(&mut file, rel, len)?;
        fs::remove_file(&path)?;
        Ok(entries)
    }

    /// Put entries back after a failed write (best effort: they are only access counts).
    pub fn restore(&self, rel: &str, entries: &[Entry]) {
        for entry in entries {
            let _ = self.append_raw(rel, entry);
        }
    }

    fn append_raw(&self, rel: &str, entry: &Entry) -> io::Result<()> {
        let path = self.file(rel);
        let mut line0 = serde_json::to_vec(entry).map_err(io::Error::other)?;
        line0.push(b'\n');
        loop {
            let mut line = line0.clone();
            let mut file = self.open_append(&path, false)?;
            file.lock()?;
            if let Some(len) = linked_len(&file)? {
                if len > 0 {
                    line.insert(0, b'\n'); // an empty line in between is harmless
                }
                return file.write_all(&line);
            }
        }
    }

    /// Open (creating) a journal file for appending; the journal directory is created only
    /// when the open finds it missing (once per notes root, not on every read).
    fn open_append(&self, path: &Path, read: bool) -> io::Result<File> {
        let open = || {
            OpenOptions::new()
                .read(read)
                .append(true)
                .create(true)
                .open(path)
        };
        match open() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(&self.dir)?;
                open()
            }
            opened => opened,
        }
    }

    /// The relative paths of every note with pending entries (for folding them all).
    pub fn pending_paths(&self) -> io::Result<Vec<String>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut paths = Vec::new();
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            if !name.to_string_lossy().ends_with(".log") {
                continue;
            }
            let mut text = String::new();
            match File::open(entry.path()) {
                Ok(mut file) => {
                    file.read_to_string(&mut text).ok();
                }
                Err(_) => continue,
            }
            let first = text
                .lines()
                .find_map(|line| serde_json::from_str::<Entry>(line).ok());
            if let Some(first) = first {
                // Only a journal file that is where its own path says it belongs.
                if self.file(&first.path) == entry.path() {
                    paths.push(first.path);
                }
            } else {
                // Nothing usable (torn lines only): drop it.
                let _ = fs::remove_file(entry.path());
            }
        }
        paths.sort();
        Ok(paths)
    }
}

/// The entries of `file` (its first `len` bytes: its length under the lock every writer takes)
/// that belong to `rel`, torn lines skipped; and whether the file ends at a line end.
fn read_entries(file: &mut File, rel: &str, len: u64) -> io::Result<(Vec<Entry>, bool)> {
    let mut text = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    Read::by_ref(file).take(len).read_to_end(&mut text)?;
    let clean_end = text.is_empty() || text.ends_with(b"\n");
    // The empty piece after the last line end is not offered to the parser: its error would
    // locate itself with `memrchr`, whose first call probes the CPU (`cpuid`, ≈ 20 µs each
    // under a hypervisor, seven of them).
    let entries = text
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| serde_json::from_slice::<Entry>(line).ok())
        .filter(|e| e.path == rel)
        .collect();
    Ok((entries, clean_end))
}

/// Whether the first `len` bytes of `file` are empty or end with a line end (one `pread` of
/// the last byte).
fn ends_a_line(file: &File, len: u64) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    if len == 0 {
        return Ok(true);
    }
    let mut last = [0u8];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] == b'\n')
}

/// The length of the locked `file` while it is still the journal file; `None` once it was
/// taken (unlinked, or replaced by a compaction's rename) while we waited for its lock. Both
/// happen only under the file's lock and leave the old file with no link, so one `fstat` of
/// the held file answers (no second lookup of the path): journal files are never hard-linked.
fn linked_len(file: &File) -> io::Result<Option<u64>> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata()?;
    Ok((held.nlink() > 0).then_some(held.len()))
}

/// One entry per `createdAt` value (in first-seen order): the reads summed, the last time kept.
fn compact(entries: &[Entry]) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for e in entries {
        match out.iter_mut().find(|o| o.created == e.created) {
            Some(o) => {
                o.count += e.count;
                o.at = e.at.clone();
            }
            None => out.push(e.clone()),
        }
    }
    out
}

/// The entries that belong to a note whose raw `createdAt` is `created`.
pub fn matching<'a>(entries: &'a [Entry], created: Option<&Value>) -> Vec<&'a Entry> {
    entries
        .iter()
        .filter(|e| e.created.as_ref() == created)
        .collect()
}

/// Fold reads into metadata as the reads would have done on the file, one after the other:
/// each sets `lastAccessed` to its time and adds one to `accessCount`.
pub fn apply(meta: &mut NoteMeta, reads: &[&Entry]) {
    for entry in reads {
        if let Some(at) = parse_stamp(&Value::String(entry.at.clone())) {
            meta.last_accessed = at;
        }
        meta.access_count += entry.count as f64;
    }
}

/// "Now" as the first pending read saw it: a note missing a timestamp gets the time of the read
/// that would have written it, as before reads were deferred.
pub fn first_time(reads: &[&Entry]) -> Option<DateTime<FixedOffset>> {
    reads
        .first()
        .and_then(|e| DateTime::parse_from_rfc3339(&e.at).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(s).unwrap()
    }

    #[test]
    fn record_take_and_identity_matching() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        let created = Value::String("2026-01-01T00:00:00.000+00:00".into());
        assert!(
            journal
                .record("human/a.md", Some(&created), at("2026-01-02T00:00:00Z"))
                .unwrap()
                .is_empty()
        );
        let earlier = journal
            .record("human/a.md", Some(&created), at("2026-01-03T00:00:00Z"))
            .unwrap();
        assert_eq!(earlier.len(), 1);
        journal
            .record("human/b.md", None, at("2026-01-03T00:00:00Z"))
            .unwrap();
        assert_eq!(
            journal.pending_paths().unwrap(),
            ["human/a.md", "human/b.md"]
        );
        let taken = journal.take("human/a.md").unwrap();
        assert_eq!(taken.len(), 2);
        assert!(journal.take("human/a.md").unwrap().is_empty());
        assert_eq!(matching(&taken, Some(&created)).len(), 2);
        assert_eq!(matching(&taken, None).len(), 0);
        let mut meta = NoteMeta::new(super::super::Origin::Myself, at("2026-01-01T00:00:00Z"));
        apply(&mut meta, &matching(&taken, Some(&created)));
        assert_eq!(meta.access_count, 2.0);
        assert_eq!(
            format_stamp(meta.last_accessed),
            "2026-01-03T00:00:00.000+00:00"
        );
    }

    #[test]
    fn a_read_that_waited_for_a_journal_being_taken_lands_in_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        journal
            .record("human/a.md", None, at("2026-01-02T00:00:00Z"))
            .unwrap();
        // Hold the journal file's lock as `take` does, let a read wait for it, then take the
        // file (unlink it) and release: the waiting read must not append to the unlinked file.
        let path = journal.file("human/a.md");
        let held = File::open(&path).unwrap();
        held.lock().unwrap();
        let waiting = {
            let journal = journal.clone();
            std::thread::spawn(move || {
                journal.record("human/a.md", None, at("2026-01-03T00:00:00Z"))
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(200));
        fs::remove_file(&path).unwrap();
        drop(held);
        let earlier = waiting.join().unwrap().unwrap();
        assert!(earlier.is_empty(), "{earlier:?}");
        let pending = journal.take("human/a.md").unwrap();
        assert_eq!(pending.len(), 1, "{pending:?}");
        assert_eq!(pending[0].at, "2026-01-03T00:00:00.000+00:00");
    }

    #[test]
    fn a_long_journal_is_compacted_without_losing_reads() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        let created = Value::String("c".into());
        for i in 0..200 {
            journal
                .record(
                    "x.md",
                    Some(&created),
                    at("2026-01-02T00:00:00Z") + chrono::Duration::seconds(i),
                )
                .unwrap();
        }
        let text = fs::read_to_string(journal.file("x.md")).unwrap();
        assert!(text.lines().count() < COMPACT_AT + 2, "{text}");
        let taken = journal.take("x.md").unwrap();
        let mut meta = NoteMeta::new(super::super::Origin::Myself, at("2026-01-01T00:00:00Z"));
        apply(&mut meta, &matching(&taken, Some(&created)));
        assert_eq!(meta.access_count, 200.0);
        assert_eq!(
            format_stamp(meta.last_accessed),
            "2026-01-02T00:03:19.000+00:00"
        );
    }

    #[test]
    fn torn_lines_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        journal
            .record("x.md", None, at("2026-01-02T00:00:00Z"))
            .unwrap();
        let path = journal.file("x.md");
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"path\":\"x.md\",\"crea\0\0\0").unwrap();
        let earlier = journal
            .record("x.md", None, at("2026-01-03T00:00:00Z"))
            .unwrap();
        assert_eq!(earlier.len(), 1);
        assert_eq!(journal.take("x.md").unwrap().len(), 2);
    }

    #[test]
    fn record_only_keeps_every_read_compacts_and_mends_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        let created = Value::String("c".into());
        let reads = 3 * COMPACT_AT + 5;
        for i in 0..reads {
            let when = at("2026-01-01T00:00:00Z") + chrono::Duration::seconds(i as i64);
            journal.record_only("h/a.md", Some(&created), when).unwrap();
        }
        // Compacted along the way (the file never holds more than COMPACT_AT lines) and no read
        // lost: the counts add up, the last time is the last read's.
        let text = fs::read_to_string(journal.file("h/a.md")).unwrap();
        assert!(
            text.lines().count() <= COMPACT_AT,
            "{} lines",
            text.lines().count()
        );
        let taken = journal.take("h/a.md").unwrap();
        assert_eq!(taken.iter().map(|e| e.count).sum::<u64>(), reads as u64);
        let last = at("2026-01-01T00:00:00Z") + chrono::Duration::seconds(reads as i64 - 1);
        assert_eq!(taken.last().unwrap().at, format_stamp(last));
        // A torn last line (a crash mid-append): the next read still lands on a line of its own.
        journal
            .record_only("h/b.md", None, at("2026-01-02T00:00:00Z"))
            .unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(journal.file("h/b.md"))
            .unwrap();
        f.write_all(b"{\"path\":\"h/b.md\",\"crea").unwrap();
        journal
            .record_only("h/b.md", None, at("2026-01-03T00:00:00Z"))
            .unwrap();
        let taken = journal.take("h/b.md").unwrap();
        assert_eq!(taken.len(), 2, "{taken:?}");
        assert_eq!(taken[1].at, "2026-01-03T00:00:00.000+00:00");
    }
}
