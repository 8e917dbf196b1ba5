//! `notes-search`'s scan: walk the selected homes and search their note files on a few worker
//! threads that share one queue of work (a directory to list, or a batch of one directory's
//! files), so the cores stay busy whatever the shape of the store — one home holding most
//! notes, one huge directory, many small ones. Each worker reads files into one buffer it
//! reuses, checks the frontmatter for `crumpledAt` (counted for the status), tests the raw
//! bytes with [`Matcher::may_match`] and decodes and parses only the files that can match; a
//! row is built only for a file with a matching body line. The rows are then put in recency
//! order, which is total (time, address, home), so the order in which workers finish never
//! shows in the answer.
//!
//! Which files are notes is the rule of [`super::walk_each`]: regular files named `*.md`
//! with UTF-8 names, in directories with UTF-8 names, never through a symlink (a directory
//! swapped for a symlink while walking is skipped). A home that cannot be walked or read
//! (any other error) is reported unavailable and contributes no rows and no counts.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::ops::Range;
use std::sync::Arc;

use super::work_queue::WorkQueue;
use super::{
    Address, Dir, EntryKind, Home, LinesKept, NoteError, NoteMeta, Origin, Query, SearchRow,
    Status, Store, confine, epoch, file_time_or, frontmatter, open_home, stamp_fallback,
};
use crate::notes::note::parse_stamp;
use crate::notes::query::{Matcher, recency_order};

/// Files per work item: small enough that a large directory is shared between workers,
/// large enough that the queue's lock is taken rarely.
const BATCH: usize = 64;

/// Helper threads start only once this many files, or an eighth as many subdirectories, are
/// known: a small store is searched on the calling thread alone, without paying for a thread.
const SPAWN_AFTER: usize = 64;

/// What a search found, before the rows are handed out.
pub(super) struct Searched {
    pub rows: Vec<SearchRow>,
    pub status: Status,
    /// Some home (or namespace) could not be read.
    pub failed: bool,
}

impl Store {
    /// Search the homes `query` selects for `matcher`, keeping at most `max` lines per file,
    /// and lines only in the leading rows `kept` describes.
    pub(super) fn search_scan(
        &self,
        matcher: &Matcher,
        query: &Query,
        max: Option<usize>,
        kept: LinesKept,
    ) -> Result<Searched, NoteError> {
        let plan = query.plan(&self.identity)?;
        let homes = self.homes_of(&plan, query)?;
        let mut failed = vec![false; homes.len()];
        let mut symlinked = vec![false; homes.len()];
        let mut roots = Vec::new();
        for (index, home) in homes.iter().enumerate() {
            let Ok(home) = home else { continue };
            let Some(components) = home.components(&self.identity) else {
                continue;
            };
            match open_home(&self.identity.root, &components) {
                Ok(Some(dir)) => roots.push(Work::List(Listing {
                    home: index,
                    dir,
                    rel: String::new(),
                })),
                Ok(None) => {}
                Err(e) => {
                    failed[index] = true;
                    symlinked[index] = e.kind == confine::Kind::Symlink;
                }
            }
        }
        let prefixes: Vec<String> = homes
            .iter()
            .map(|h| h.as_ref().map(Home::prefix).unwrap_or_default())
            .collect();
        let job = Job {
            matcher,
            max,
            kept,
            pattern: plan.pattern.as_ref(),
            wastebasket: plan.wastebasket,
            prefixes: &prefixes,
        };
        let found = run(&job, roots, homes.len());
        let mut crumpled = vec![0usize; homes.len()];
        let mut parts: Vec<Vec<Option<Hit>>> = Vec::with_capacity(found.len());
        for part in found {
            for (index, n) in part.crumpled.iter().enumerate() {
                crumpled[index] += n;
                failed[index] |= part.failed[index];
            }
            // Same size as `Hit` (a niche): collected in place, nothing copied.
            parts.push(part.hits.into_iter().map(Some).collect());
        }
        // Recency, then the address; the home breaks the one tie left (a session note whose
        // path looks like another home's address), in home order as a listing has it. A
        // common word makes nearly every note a hit: the sort moves small keys, and each hit
        // moves once, from its worker's list into its row (each copy of every row used to
        // touch fresh pages: ≈ 1,000 page faults per copy of 10,000 rows).
        let mut order: Vec<(chrono::DateTime<chrono::FixedOffset>, usize, usize)> = Vec::new();
        for (part, hits) in parts.iter().enumerate() {
            for (index, hit) in hits.iter().enumerate() {
                if let Some(hit) = hit
                    && !failed[hit.home]
                    && homes[hit.home].is_ok()
                {
                    order.push((hit.updated_at, part, index));
                }
            }
        }
        let hit_at = |part: usize, index: usize| parts[part][index].as_ref();
        order.sort_by(|&(at, ap, ai), &(bt, bp, bi)| {
            let (Some(a), Some(b)) = (hit_at(ap, ai), hit_at(bp, bi)) else {
                return Ordering::Equal; // every key names a hit
            };
            row_order((at, &a.display, a.home), (bt, &b.display, b.home))
        });
        let mut rows: Vec<SearchRow> = Vec::with_capacity(order.len());
        for (_, part, index) in order {
            let Some(hit) = parts[part][index].take() else {
                continue;
            };
            let Ok(home) = &homes[hit.home] else {
                continue;
            };
            rows.push(SearchRow {
                address: Address {
                    home: home.clone(),
                    vpath: hit.rel,
                },
                display: hit.display,
                meta: hit
                    .meta
                    .map_or_else(|| past_leading(hit.updated_at), |meta| *meta),
                matches_total: hit.total,
                matches: hit.matches,
            });
        }
        drop(parts);
        // The workers kept lines for a superset of the leading rows (see `Kept`); the rest
        // drop theirs here, so which rows have lines never depends on thread timing.
        let mut bytes_before = 0usize;
        for (index, row) in rows.iter_mut().enumerate() {
            if kept.keeps(index, bytes_before) {
                bytes_before += line_bytes(&row.matches);
            } else {
                row.matches = Vec::new();
                row.meta = past_leading(row.meta.updated_at);
            }
        }
        let mut status = Status::default();
        let mut extra_unavailable = Vec::new();
        let mut extra_symlinked = Vec::new();
        for (index, home) in homes.iter().enumerate() {
            match home {
                Ok(home) if failed[index] => {
                    if symlinked[index] {
                        status.homes_symlinked.push(home.label());
                    }
                    status.homes_unavailable.push(home.label());
                }
                Ok(_) => status.crumpled_excluded += crumpled[index],
                Err((label, symlink)) => {
                    extra_unavailable.push(label.clone());
                    if *symlink {
                        extra_symlinked.push(label.clone());
                    }
                }
            }
        }
        status.homes_unavailable.extend(extra_unavailable);
        status.homes_symlinked.extend(extra_symlinked);
        let failed = !status.homes_unavailable.is_empty();
        Ok(Searched {
            rows,
            status,
            failed,
        })
    }
}

/// The order of a search's rows, each given as (`updatedAt`, address, home): recency, then the
/// address, then the home. A worker's [`Kept`] ranks its hits by this same order, which its
/// dropping of lines relies on.
fn row_order(
    a: (chrono::DateTime<chrono::FixedOffset>, &str, usize),
    b: (chrono::DateTime<chrono::FixedOffset>, &str, usize),
) -> Ordering {
    recency_order(a.0, a.1, b.0, b.1).then(a.2.cmp(&b.2))
}

/// The metadata of a row past the leading rows (see [`SearchRow::meta`]).
fn past_leading(updated_at: chrono::DateTime<chrono::FixedOffset>) -> NoteMeta {
    NoteMeta::new(Origin::Myself, updated_at)
}

/// The bytes of the line texts of `matches`.
fn line_bytes(matches: &[crate::notes::query::LineMatch]) -> usize {
    matches.iter().map(|m| m.text.len()).sum()
}

/// What every worker needs to know about the search.
struct Job<'a> {
    matcher: &'a Matcher,
    max: Option<usize>,
    kept: LinesKept,
    pattern: Option<&'a regex::Regex>,
    wastebasket: bool,
    /// Per home: its address prefix.
    prefixes: &'a [String],
}

/// A directory under a home: its handle and its path relative to the home (`""` for the home).
struct Listing {
    home: usize,
    dir: Dir,
    rel: String,
}

/// A listed directory's note file names (one string, split at `ends`).
struct Listed {
    at: Listing,
    names: String,
    ends: Vec<usize>,
}

impl Listed {
    fn name(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.names[start..self.ends[i]]
    }
}

enum Work {
    /// List a directory already open (a home).
    List(Listing),
    /// Open a subdirectory of a listed directory, then list it.
    Open(Arc<Listed>, OsString),
    /// Search some of a listed directory's files.
    Files(Arc<Listed>, Range<usize>),
}

/// What listings have discovered (the work queue's tally).
#[derive(Debug, Clone, Copy, Default)]
struct Discovered {
    files: usize,
    dirs: usize,
}

impl Discovered {
    fn add(&mut self, found: Discovered) {
        self.files += found.files;
        self.dirs += found.dirs;
    }

    /// Enough work that helper threads pay for themselves.
    fn worth_helpers(self) -> bool {
        self.files >= SPAWN_AFTER || self.dirs >= SPAWN_AFTER / 8
    }
}

/// Run the search over `roots` on the calling thread, joined by helper threads once the
/// store turns out large enough; one part per worker.
#[allow(
    clippy::expect_used,
    reason = "search workers only read files and do not panic"
)]
fn run(job: &Job<'_>, roots: Vec<Work>, homes: usize) -> Vec<Found> {
    let queue = WorkQueue::new(roots, Discovered::default());
    let threads = crate::threads::worker_threads();
    let helper = || {
        let mut worker = Worker::new(job, homes);
        let mut more = Vec::new();
        while let Some(item) = queue.next(|_| false) {
            let found = worker.work(item, &mut more);
            queue.finish(&mut more, |tally| tally.add(found));
        }
        worker.found
    };
    std::thread::scope(|scope| {
        let mut main = Worker::new(job, homes);
        let mut helpers = Vec::new();
        let mut more = Vec::new();
        while let Some(item) = queue.next(|_| false) {
            let found = main.work(item, &mut more);
            let (_, discovered) = queue.finish(&mut more, |tally| tally.add(found));
            if helpers.is_empty() && threads > 1 && discovered.worth_helpers() {
                for _ in 1..threads {
                    helpers.push(scope.spawn(helper));
                }
            }
        }
        let mut found = vec![main.found];
        found.extend(helpers.into_iter().map(|h| {
            h.join()
                .expect("search workers only read files and do not panic")
        }));
        found
    })
}

/// A matching file, as a worker found it.
struct Hit {
    home: usize,
    rel: String,
    /// The address as shown: the home's prefix, then `rel`.
    display: String,
    updated_at: chrono::DateTime<chrono::FixedOffset>,
    /// Parsed only for a hit its worker admitted among the rows that keep lines (boxed: most
    /// hits of a common word have none, and every hit is moved twice).
    meta: Option<Box<NoteMeta>>,
    matches: Vec<crate::notes::query::LineMatch>,
    total: usize,
}

/// One worker's findings.
struct Found {
    hits: Vec<Hit>,
    /// Per home: crumpled notes skipped (outside wastebasket mode).
    crumpled: Vec<usize>,
    /// Per home: something in it could not be read.
    failed: Vec<bool>,
}

/// Where one of a worker's hits ranks (the final order: recency, address, home).
struct Rank {
    updated_at: chrono::DateTime<chrono::FixedOffset>,
    display: String,
    home: usize,
    /// Its index in the worker's hits, and the bytes of its kept lines.
    hit: usize,
    bytes: usize,
}

impl Ord for Rank {
    fn cmp(&self, other: &Rank) -> Ordering {
        row_order(
            (self.updated_at, &self.display, self.home),
            (other.updated_at, &other.display, other.home),
        )
        .then(self.hit.cmp(&other.hit))
    }
}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Rank) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Rank {
    fn eq(&self, other: &Rank) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Rank {}

/// A worker's hits that still keep their lines, in rank order. A hit leaves (its lines are
/// dropped, or never copied) once this worker alone holds `kept.rows` hits before it, or hits
/// before it whose lines exceed `kept.text_bytes`: all workers together hold at least as many
/// before it, so it cannot be a leading row. Without this, a common word would copy every
/// matching line of every note, though a response shows a few rows.
#[derive(Default)]
struct Kept {
    ranks: BTreeSet<Rank>,
    bytes: usize,
}

impl Kept {
    /// No hit ranked after the last one kept can keep lines any more.
    fn saturated(&self, kept: LinesKept) -> bool {
        self.ranks.len() >= kept.rows || self.bytes > kept.text_bytes
    }

    /// Whether a hit ranked `rank` would be kept now.
    fn admits(&self, rank: &Rank, kept: LinesKept) -> bool {
        !self.saturated(kept) || self.ranks.last().is_some_and(|last| rank < last)
    }

    /// Keep `rank`'s lines; returns the hits whose lines must now be dropped.
    fn insert(&mut self, rank: Rank, kept: LinesKept, dropped: &mut Vec<usize>) {
        self.bytes += rank.bytes;
        self.ranks.insert(rank);
        while let Some(last) = self.ranks.last() {
            let before = self.bytes - last.bytes;
            if kept.keeps(self.ranks.len() - 1, before) {
                break;
            }
            self.bytes = before;
            dropped.extend(self.ranks.pop_last().map(|r| r.hit));
        }
    }
}

struct Worker<'a> {
    job: &'a Job<'a>,
    kept: Kept,
    dropped: Vec<usize>,
    /// The file being searched (kept at its largest length: no zeroing per file).
    buf: Vec<u8>,
    /// The address being tested against the glob.
    display: String,
    found: Found,
}

impl<'a> Worker<'a> {
    fn new(job: &'a Job<'a>, homes: usize) -> Worker<'a> {
        Worker {
            job,
            kept: Kept::default(),
            dropped: Vec::new(),
            buf: Vec::new(),
            display: String::new(),
            found: Found {
                hits: Vec::new(),
                crumpled: vec![0; homes],
                failed: vec![false; homes],
            },
        }
    }

    /// Do one item, pushing what it produces onto `more`; returns what it discovered.
    fn work(&mut self, item: Work, more: &mut Vec<Work>) -> Discovered {
        match item {
            Work::List(listing) => self.list(listing, more),
            Work::Open(parent, name) => {
                let at = &parent.at;
                let opened = at.dir.child(&name);
                let rel = child_rel(&at.rel, name.to_str().unwrap_or_default());
                let home = at.home;
                drop(parent);
                match opened {
                    Ok(Some(dir)) => self.list(Listing { home, dir, rel }, more),
                    Ok(None) => Discovered::default(),
                    Err(e) if e.kind == confine::Kind::Symlink => Discovered::default(),
                    Err(_) => {
                        self.found.failed[home] = true;
                        Discovered::default()
                    }
                }
            }
            Work::Files(listed, range) => {
                for i in range {
                    self.file(&listed, i);
                }
                Discovered::default()
            }
        }
    }

    /// List a directory: its subdirectories and batches of its note files become work.
    fn list(&mut self, at: Listing, more: &mut Vec<Work>) -> Discovered {
        let mut subdirs: Vec<OsString> = Vec::new();
        let mut names = String::new();
        let mut ends = Vec::new();
        let listed = at.dir.for_each_entry(|name, kind| {
            let Some(text) = name.to_str() else {
                return Ok(()); // not addressable
            };
            match kind {
                EntryKind::Dir => subdirs.push(name.to_os_string()),
                EntryKind::File if text.ends_with(".md") => {
                    names.push_str(text);
                    ends.push(names.len());
                }
                _ => {}
            }
            Ok(())
        });
        if listed.is_err() {
            self.found.failed[at.home] = true;
            return Discovered::default();
        }
        let count = ends.len();
        let found = Discovered {
            files: count,
            dirs: subdirs.len(),
        };
        let listed = Arc::new(Listed { at, names, ends });
        for name in subdirs {
            more.push(Work::Open(Arc::clone(&listed), name));
        }
        // Pushed last, taken first: the directory's files are searched (and its handle
        // closed) before the walk goes deeper.
        let mut start = 0;
        while start < count {
            let end = (start + BATCH).min(count);
            more.push(Work::Files(Arc::clone(&listed), start..end));
            start = end;
        }
        found
    }

    /// Search one note file of a listed directory.
    fn file(&mut self, listed: &Listed, i: usize) {
        let job = self.job;
        let home = listed.at.home;
        let name = listed.name(i);
        if let Some(glob) = job.pattern {
            self.display.clear();
            self.display.push_str(&job.prefixes[home]);
            if !listed.at.rel.is_empty() {
                self.display.push_str(&listed.at.rel);
                self.display.push('/');
            }
            self.display.push_str(name);
            if !glob.is_match(&self.display) {
                return;
            }
        }
        let len = match read_whole(&listed.at.dir, OsStr::new(name), &mut self.buf) {
            Ok(Some(len)) => len,
            Ok(None) => return, // vanished since the directory was listed
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(_) => {
                self.found.failed[home] = true;
                return;
            }
        };
        let bytes = &self.buf[..len];
        let crumpled = frontmatter::block_has_key(bytes, "crumpledAt");
        if crumpled != job.wastebasket {
            if crumpled {
                self.found.crumpled[home] += 1;
            }
            return;
        }
        // Most files cannot match: they are never decoded or parsed.
        if !job.matcher.may_match(bytes) {
            return;
        }
        // `from_utf8_lossy` checks byte by byte; `from_utf8` skips ASCII a word at a time, and
        // nearly every note is valid UTF-8 (the lossy pass is only for the rest).
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        let (block, body) = frontmatter::split(&text);
        // Once saturated, most hits rank after every kept one: count their lines, copy none.
        let saturated = self.kept.saturated(job.kept);
        let (mut matches, total) = job
            .matcher
            .lines(&body, if saturated { Some(0) } else { job.max });
        if total == 0 {
            return;
        }
        // The rank needs `updatedAt` alone (the file time when it does not read as a date,
        // as `stamp_fallback` has it); the other fields are parsed only for a hit that may
        // be a leading row.
        let dir = &listed.at.dir;
        let updated_at = block
            .and_then(|block| frontmatter::field(block, "updatedAt"))
            .as_ref()
            .and_then(parse_stamp)
            .unwrap_or_else(|| file_time_or(dir, OsStr::new(name), epoch()));
        let rel = child_rel(&listed.at.rel, name);
        let hit = self.found.hits.len();
        let mut rank = Rank {
            updated_at,
            display: format!("{}{}", job.prefixes[home], rel),
            home,
            hit,
            bytes: 0,
        };
        let (meta, display) = if self.kept.admits(&rank, job.kept) {
            if saturated {
                matches = job.matcher.lines(&body, job.max).0;
            }
            rank.bytes = line_bytes(&matches);
            let display = rank.display.clone();
            self.kept.insert(rank, job.kept, &mut self.dropped);
            let fields = block.map(frontmatter::parse_fields).unwrap_or_default();
            let fallback = stamp_fallback(&fields, dir, OsStr::new(name), epoch());
            let meta = NoteMeta::from_fields(&fields, fallback);
            debug_assert_eq!(meta.updated_at, updated_at, "one updatedAt rule");
            (Some(Box::new(meta)), display)
        } else {
            matches = Vec::new();
            (None, rank.display)
        };
        self.found.hits.push(Hit {
            home,
            rel,
            display,
            updated_at,
            meta,
            matches,
            total,
        });
        for dropped in self.dropped.drain(..) {
            self.found.hits[dropped].matches = Vec::new();
        }
    }
}

fn child_rel(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_owned()
    } else {
        let mut s = String::with_capacity(rel.len() + 1 + name.len());
        s.push_str(rel);
        s.push('/');
        s.push_str(name);
        s
    }
}

/// Read the regular file `name` of `dir` into `buf` up to the size its open's `fstat` saw
/// (no last empty `read`), growing `buf` when needed but never shrinking it; returns the
/// length read, `None` when the file is gone. A file that shrank meanwhile ends early.
fn read_whole(dir: &Dir, name: &OsStr, buf: &mut Vec<u8>) -> io::Result<Option<usize>> {
    let Some((mut file, size)) = dir.open_file_sized(name)? else {
        return Ok(None);
    };
    let want = usize::try_from(size).unwrap_or(usize::MAX);
    if buf.len() < want {
        buf.resize(want, 0);
    }
    let mut len = 0;
    while len < want {
        match file.read(&mut buf[len..want]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(Some(len))
}

#[cfg(test)]
mod tests {
    //! The search against a plain reference: every note file found by the one walk
    //! definition, read whole, decoded, parsed and matched line by line without any
    //! prefilter. Same rows (address, metadata, matches), same status; and the prefilter
    //! says "maybe" for every file the reference finds a match in.

    use std::fs;
    use std::path::Path;

    use proptest::prelude::*;

    use super::super::walk;
    use super::*;
    use crate::notes::Identity;

    const HOMES: [&str; 5] = [
        "pi/session/s1",
        "project/k-1",
        "human",
        "agents/ann",
        "models/m",
    ];

    /// Text pieces notes and queries are made of: case variants Unicode simple folding
    /// relates (`K`/`k`/Kelvin, `σ`/`ς`/`Σ`, `ſ`/`s`) and ones it does not (`ß`/`ss`, `İ`/`i`,
    /// `ı`), U+FFFD, line ends, and bytes that are not UTF-8 (notes only).
    const PIECES: &[&[u8]] = &[
        b"zebra",
        b"ZEBRA",
        b"Zebrafish Lantern",
        b"lantern",
        "İ".as_bytes(),
        "i\u{307}".as_bytes(),
        "ı".as_bytes(),
        b"I",
        b"i",
        "ß".as_bytes(),
        "ẞ".as_bytes(),
        b"ss",
        b"K",
        "\u{212a}".as_bytes(),
        b"k",
        "ſ".as_bytes(),
        b"s",
        "σ".as_bytes(),
        "ς".as_bytes(),
        "Σ".as_bytes(),
        "\u{fffd}".as_bytes(),
        "日本".as_bytes(),
        "😀".as_bytes(),
        b" ",
        b"\n",
        b"\r\n",
        b"\r",
        b"---",
        b"crumpledAt",
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
    ];

    fn identity(root: &Path) -> Identity {
        Identity::new(root, Some("s1"), "k-1", "ann", "m").unwrap()
    }

    #[derive(Debug, Clone)]
    struct NoteSpec {
        home: usize,
        dir: u8,
        name: u8,
        /// 0 no block, 1 a block, 2 a crumpled block, 3 a CRLF block, 4 a block without
        /// `updatedAt` (the file time stands in), 5 one whose `updatedAt` is no date, 6 a
        /// list `updatedAt` then a date one (the last wins).
        block: u8,
        stamp: u8,
        /// A frontmatter value: a query may match only there.
        field: Vec<u8>,
        body: Vec<Vec<u8>>,
    }

    fn note() -> impl Strategy<Value = NoteSpec> {
        let piece = proptest::sample::select(PIECES).prop_map(<[u8]>::to_vec);
        (
            0..5usize,
            0..3u8,
            0..6u8,
            0..7u8,
            any::<u8>(),
            piece.clone(),
            proptest::collection::vec(piece, 0..14),
        )
            .prop_map(|(home, dir, name, block, stamp, field, body)| NoteSpec {
                home,
                dir,
                name,
                block,
                stamp,
                field,
                body,
            })
    }

    fn content(spec: &NoteSpec) -> Vec<u8> {
        let updated = format!("2026-01-{:02}T10:00:00.000+00:00", 1 + spec.stamp % 4);
        let field = String::from_utf8_lossy(&spec.field).replace(['\r', '\n'], " ");
        let mut out = match spec.block {
            1 => format!("---\nupdatedAt: {updated}\ntags: \"{field}\"\n---\n\n"),
            2 => format!("---\ncrumpledAt: {updated}\nupdatedAt: {updated}\n---\n\n"),
            3 => format!("---\r\nupdatedAt: {updated}\r\nnote: \"{field}\"\r\n---\r\n\r\n"),
            4 => format!("---\ntags: \"{field}\"\n---\n"),
            5 => format!("---\nupdatedAt: not a date\ncreatedAt: {updated}\n---\n"),
            6 => format!("---\nupdatedAt:\n  - {updated}\nupdatedAt: {updated}\n---\n"),
            _ => String::new(),
        }
        .into_bytes();
        for piece in &spec.body {
            out.extend_from_slice(piece);
        }
        out
    }

    fn write_note(root: &Path, spec: &NoteSpec) {
        let mut path = root.join(HOMES[spec.home]);
        if spec.dir > 0 {
            path = path.join(format!("d{}", spec.dir));
        }
        fs::create_dir_all(&path).unwrap();
        fs::write(path.join(format!("n{}.md", spec.name)), content(spec)).unwrap();
    }

    /// Many notes in one directory and in nested ones, so helper threads start and a
    /// directory's files are split into batches.
    fn write_bulk(root: &Path, home: usize, count: usize) {
        for i in 0..count {
            let dir = root.join(HOMES[home]).join(format!("bulk/{}", i % 3));
            fs::create_dir_all(&dir).unwrap();
            let text = format!(
                "---\n{}updatedAt: 2026-02-{:02}T00:00:00.000+00:00\n---\n\nline {i}\n{}\n",
                if i % 11 == 0 {
                    "crumpledAt: 2026-01-01T00:00:00.000+00:00\n"
                } else {
                    ""
                },
                1 + i % 28,
                if i % 7 == 0 {
                    "a ZEBRA here"
                } else {
                    "nothing"
                },
            );
            fs::write(dir.join(format!("b{i:03}.md")), text).unwrap();
        }
    }

    /// Entries that are not notes, or are reached only through a symlink, next to real
    /// notes in `home`: a symlinked note and directory, a directory named like a note
    /// (searched into), a FIFO, a file with another extension, and a name that is not UTF-8.
    fn write_decoys(root: &Path, home: usize) {
        use std::os::unix::ffi::OsStrExt;
        let dir = root.join(HOMES[home]);
        let target = dir.join("real");
        fs::create_dir_all(&target).unwrap();
        fs::write(target.join("t.md"), "zebra in a real note").unwrap();
        std::os::unix::fs::symlink(target.join("t.md"), dir.join("link.md")).unwrap();
        std::os::unix::fs::symlink(&target, dir.join("linked")).unwrap();
        fs::create_dir_all(dir.join("dir.md")).unwrap();
        fs::write(dir.join("dir.md/inner.md"), "ZEBRA inside dir.md").unwrap();
        fs::write(dir.join("notes.txt"), "zebra, not a note").unwrap();
        fs::write(
            dir.join(std::ffi::OsStr::from_bytes(b"bad-\xff.md")),
            "zebra under a name that is not UTF-8",
        )
        .unwrap();
        let fifo = dir.join("pipe.md");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
    }

    /// The reference answer, checking the prefilter on every file on the way.
    fn reference(
        root: &Path,
        matcher: &Matcher,
        wastebasket: bool,
        max: Option<usize>,
    ) -> Result<(Vec<SearchRow>, Status), TestCaseError> {
        let identity = identity(root);
        let mut rows: Vec<(usize, SearchRow)> = Vec::new();
        let mut status = Status::default();
        for (index, home) in Home::defaults(&identity).into_iter().enumerate() {
            let mut files = Vec::new();
            walk(&root.join(HOMES[index]), "", &mut files).unwrap();
            for (rel, path) in files {
                let raw = fs::read(&path).unwrap();
                let crumpled = frontmatter::block_has_key(&raw, "crumpledAt");
                if crumpled != wastebasket {
                    status.crumpled_excluded += usize::from(crumpled);
                    continue;
                }
                let text = String::from_utf8_lossy(&raw);
                let parsed = frontmatter::parse(&text);
                let (matches, total) = matcher.lines(&parsed.body, max);
                if total == 0 {
                    continue;
                }
                prop_assert!(
                    matcher.may_match(&raw),
                    "the prefilter rejected {rel}, which matches: {raw:?}"
                );
                let dir = Dir::open_root(path.parent().unwrap()).unwrap().unwrap();
                let name = path.file_name().unwrap();
                let fallback = stamp_fallback(&parsed.fields, &dir, name, epoch());
                let display = format!("{}{rel}", home.prefix());
                rows.push((
                    index,
                    SearchRow {
                        address: Address {
                            home: home.clone(),
                            vpath: rel,
                        },
                        display,
                        meta: NoteMeta::from_fields(&parsed.fields, fallback),
                        matches_total: total,
                        matches,
                    },
                ));
            }
        }
        rows.sort_by(|(ah, a), (bh, b)| {
            recency_order(a.meta.updated_at, &a.display, b.meta.updated_at, &b.display)
                .then(ah.cmp(bh))
        });
        Ok((rows.into_iter().map(|(_, r)| r).collect(), status))
    }

    fn query_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(PIECES), 1..4).prop_filter_map(
            "queries are UTF-8 and non-empty",
            |pieces| {
                let text = String::from_utf8(pieces.concat()).ok()?;
                (!text.is_empty()).then_some(text)
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn search_equals_the_unfiltered_reference(
            notes in proptest::collection::vec(note(), 1..16),
            bulk in proptest::option::of((0..5usize, 60..140usize)),
            decoys in proptest::option::of(0..5usize),
            queries in proptest::collection::vec(query_text(), 1..3),
            wastebasket in any::<bool>(),
            max in proptest::option::of(1..3usize),
            kept in proptest::option::of((1..6usize, 0..400usize)),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("notes");
            for spec in &notes {
                write_note(&root, spec);
            }
            if let Some((home, count)) = bulk {
                write_bulk(&root, home, count);
            }
            if let Some(home) = decoys {
                write_decoys(&root, home);
            }
            let store = Store::new(identity(&root));
            let matcher = Matcher::new(&queries).unwrap();
            let (rows, status) = reference(&root, &matcher, wastebasket, max)?;
            let query = Query { wastebasket, ..Query::default() };
            let found = store.search_with_status(&queries, &query, max).unwrap();
            prop_assert_eq!(format!("{:#?}", found.rows), format!("{rows:#?}"));
            prop_assert_eq!(&found.status, &status);
            if let Some((rows_kept, text_bytes)) = kept {
                let kept = LinesKept { rows: rows_kept, text_bytes };
                let found = store.search_keeping(&queries, &query, max, kept).unwrap();
                prop_assert_eq!(
                    format!("{:#?}", found.rows),
                    format!("{:#?}", leading_lines(rows, kept))
                );
                prop_assert_eq!(found.status, status);
            }
        }
    }

    /// `rows` (in order, every one with its lines) as a search keeping `kept` gives them,
    /// computed directly from the definition of [`LinesKept`].
    fn leading_lines(mut rows: Vec<SearchRow>, kept: LinesKept) -> Vec<SearchRow> {
        let mut bytes = 0;
        for (index, row) in rows.iter_mut().enumerate() {
            if index < kept.rows && bytes <= kept.text_bytes {
                bytes += row.matches.iter().map(|m| m.text.len()).sum::<usize>();
            } else {
                row.matches.clear();
                row.meta = NoteMeta::new(Origin::Myself, row.meta.updated_at);
            }
        }
        rows
    }

    #[test]
    fn prefilter_never_rejects_a_match_in_decoded_text() {
        // Invalid bytes decode to U+FFFD: a query holding it matches where the raw bytes
        // hold no U+FFFD at all.
        let matcher = Matcher::new(&["a\u{fffd}b"]).unwrap();
        let raw = b"xx a\xffb yy";
        let text = String::from_utf8_lossy(raw);
        assert_eq!(matcher.lines(&text, None).1, 1);
        assert!(matcher.may_match(raw));
        // Valid text holding none of the queries is still rejected.
        assert!(!matcher.may_match("a b \u{fffd}".as_bytes()));
        // A query found only in the frontmatter passes the prefilter, not the matcher.
        let only_block = Matcher::new(&["needle"]).unwrap();
        let raw = b"---\ntags: needle\n---\n\nbody";
        assert!(only_block.may_match(raw));
        let text = String::from_utf8_lossy(raw);
        assert_eq!(only_block.lines(&frontmatter::parse(&text).body, None).1, 0);
    }

    #[test]
    fn symlinks_fifos_other_files_and_non_utf8_names_are_not_searched() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        write_decoys(&root, 2);
        let store = Store::new(identity(&root));
        let found = store
            .search_with_status(&["zebra"], &Query::default(), None)
            .unwrap();
        let mut shown: Vec<&str> = found.rows.iter().map(|r| r.display.as_str()).collect();
        shown.sort();
        assert_eq!(shown, ["@human/dir.md/inner.md", "@human/real/t.md"]);
        let matcher = Matcher::new(&["zebra"]).unwrap();
        let (rows, status) = reference(&root, &matcher, false, None).unwrap();
        assert_eq!(format!("{:?}", found.rows), format!("{rows:?}"));
        assert_eq!(found.status, status);
    }

    #[test]
    fn a_large_store_is_searched_on_several_threads_with_the_same_answer() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        write_bulk(&root, 3, 700);
        write_bulk(&root, 2, 90);
        let store = Store::new(identity(&root));
        for (queries, wastebasket) in [(vec!["zebra"], false), (vec!["LINE 1", "here"], true)] {
            let matcher = Matcher::new(&queries).unwrap();
            let (rows, status) = reference(&root, &matcher, wastebasket, Some(1)).unwrap();
            let query = Query {
                wastebasket,
                ..Query::default()
            };
            let found = store.search_with_status(&queries, &query, Some(1)).unwrap();
            assert!(!rows.is_empty());
            assert_eq!(format!("{:?}", found.rows), format!("{rows:?}"));
            assert_eq!(found.status, status);
            // Workers drop lines by what each one alone holds; the answer is still exactly
            // the leading rows with lines, however the files were shared out.
            let mut cut = 0;
            for (rows_kept, text_bytes) in [(1, usize::MAX), (40, usize::MAX), (500, 300)] {
                let kept = LinesKept {
                    rows: rows_kept,
                    text_bytes,
                };
                let found = store
                    .search_keeping(&queries, &query, Some(1), kept)
                    .unwrap();
                let expected = leading_lines(rows.clone(), kept);
                cut += expected.iter().filter(|r| r.matches.is_empty()).count();
                assert_eq!(format!("{:?}", found.rows), format!("{expected:?}"));
            }
            assert!(cut > 0, "some rows lost their lines");
        }
    }
}
