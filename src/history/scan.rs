//! The search prefilter as one scan of the file: instead of testing every event line on its
//! own, the bytes of the event lines are read in large blocks (a thread per core for large
//! files) and searched for each literal (and the nested-call probe); each hit is mapped to
//! the line holding it by byte offset, and the search goes on from that line's end (one hit
//! per line is all a line mask needs). The memo's scan of whole lines finds a literal's lines
//! with [`Literal::line_hit`] (a pair of its bytes, then a check; `literal.rs`), the block
//! scan below with the literal's regex: both find exactly the lines holding a regex match. A line the index marks as holding an escape JavaScript
//! would not write (`Line::escapes`, found while the line was first decoded) is a "maybe"
//! (`u64::MAX`). The result is [`Prefilter::line_mask`] of every line, up to "maybe" being
//! given to more lines, never fewer. (One regex for all literals and the escapes was
//! measured 4–10× slower: short case-insensitive literals and `\u` make its literal
//! prefilter report a candidate at nearly every backslash.)
//!
//! - Literals hold no `\n` (JSON escapes it, so no literal has one), so a hit never spans lines.

use super::literal::Literal;
use super::matcher::{KeyedScan, Prefilter};
use super::projection::Projection;
use crate::session::index::{In, Out};
use crate::session::{SessionError, SessionFile};
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes read and searched at a time per thread: small enough that the copy stays in the
/// core's cache for the search that follows.
const BLOCK: usize = 256 << 10;
/// Files with fewer bytes per extra thread are scanned by one thread.
const PARALLEL_MIN_BYTES: u64 = 16 << 20;

/// One event line: its byte range and its index in [`Projection::line`] order.
#[derive(Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
    line: usize,
}

/// The event lines ascending by start: the projection's own line table when it is already in
/// file order (the usual case: nothing is copied), else a sorted copy.
enum Table<'a> {
    Lines(&'a Projection),
    Sorted(Vec<Span>),
}

impl Table<'_> {
    fn new(projection: &Projection) -> Table<'_> {
        if projection.lines_in_file_order() {
            return Table::Lines(projection);
        }
        let mut spans: Vec<Span> = projection
            .lines()
            .enumerate()
            .map(|(line, l)| Span {
                start: l.offset,
                end: l.offset + l.len,
                line,
            })
            .collect();
        spans.sort_unstable_by_key(|s| s.start);
        Table::Sorted(spans)
    }

    fn len(&self) -> usize {
        match self {
            Table::Lines(p) => p.line_count(),
            Table::Sorted(spans) => spans.len(),
        }
    }

    fn span(&self, i: usize) -> Span {
        match self {
            Table::Lines(p) => {
                let l = p.line(i);
                Span {
                    start: l.offset,
                    end: l.offset + l.len,
                    line: i,
                }
            }
            Table::Sorted(spans) => spans[i],
        }
    }

    /// [`Table::first_ending_after`] when the answer is likely near `range.start` (the
    /// answer for an earlier `at`, as hits come in file order): steps doubling from there
    /// bracket it before the bisection, so each hit costs about the logarithm of the lines
    /// since the last one instead of all of them (12.6 k hits of `src/main.rs` on 225 k
    /// lines took 18 probes each, ≈ 3 ms of a fresh search's CPU).
    fn first_ending_after_from(&self, range: std::ops::Range<usize>, at: u64) -> usize {
        let (mut lo, end) = (range.start, range.end);
        let mut step = 1usize;
        let hi = loop {
            let probe = lo.saturating_add(step - 1);
            if probe >= end {
                break end;
            }
            if self.span(probe).end <= at {
                lo = probe + 1;
                step = step.saturating_mul(2);
            } else {
                break probe + 1;
            }
        };
        self.first_ending_after(lo..hi, at)
    }

    /// The first span of `range` that ends after `at` (`range.end` when none does).
    fn first_ending_after(&self, range: std::ops::Range<usize>, at: u64) -> usize {
        let (mut lo, mut hi) = (range.start, range.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.span(mid).end <= at {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The masks the scan found: the lines with a hit, ascending, the projection's lines holding
/// an escape JavaScript would not write ("maybe": every bit), and the bit the lines with nested
/// calls add ([`Prefilter::nested_bits`]; 0 when no query's rule depends on it).
pub struct LineMasks {
    hits: Vec<(usize, u64)>,
    nested_bit: u64,
}

impl LineMasks {
    /// The lines of `projection` whose mask ([`LineMasks::get`]) is not 0: those with a hit,
    /// ascending, then those holding an escape or (when it adds a bit) with nested calls,
    /// ascending (a line may be in both).
    pub fn lines_with_bits<'a>(
        &'a self,
        projection: &'a Projection,
    ) -> impl Iterator<Item = usize> + 'a {
        let flagged = projection.flagged_lines(self.nested_bit != 0);
        self.hits.iter().map(|&(line, _)| line).chain(flagged)
    }

    /// The mask of line `line` of `projection`.
    pub fn get(&self, projection: &Projection, line: usize) -> u64 {
        if line >= projection.line_count() {
            return u64::MAX;
        }
        let facts = projection.line(line);
        if facts.escapes {
            return u64::MAX;
        }
        let nested = if facts.nested_calls {
            self.nested_bit
        } else {
            0
        };
        crate::session::mask_of(&self.hits, line) | nested
    }
}

/// The line mask of every event line of `projection` (see the module docs), reading `block`
/// bytes at a time (tests use small blocks).
#[allow(clippy::expect_used, reason = "a scanning thread does not panic")]
pub(crate) fn line_masks_in_blocks(
    file: &SessionFile,
    projection: &Projection,
    prefilter: &Prefilter,
    block: usize,
) -> Result<LineMasks, SessionError> {
    let scans: Vec<(u64, &Literal)> = prefilter.scans().collect();
    // A match must fit in one block's overlap.
    let overlap = match_reach(prefilter.longest());
    let table = Table::new(projection);
    let scanner = Scanner {
        file,
        scans: &scans,
        table: &table,
        overlap,
        block,
    };
    let n = table.len();
    let total: u64 = (0..n)
        .map(|i| {
            let s = table.span(i);
            s.end - s.start
        })
        .sum();
    let threads = crate::threads::worker_threads();
    let groups = (total / PARALLEL_MIN_BYTES).clamp(1, threads as u64) as usize;
    // Split the spans into `groups` runs of about equal bytes.
    let mut cuts = vec![0usize];
    let mut acc = 0u64;
    for i in 0..n {
        let s = table.span(i);
        acc += s.end - s.start;
        if cuts.len() < groups && acc * groups as u64 >= total * cuts.len() as u64 {
            cuts.push(i + 1);
        }
    }
    cuts.push(n);
    cuts.dedup();
    let parts: Vec<std::io::Result<Vec<(usize, u64)>>> = if cuts.len() <= 2 {
        vec![scanner.scan(0..n)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = cuts
                .windows(2)
                .map(|w| {
                    let (lo, hi) = (w[0], w[1]);
                    let scanner = &scanner;
                    scope.spawn(move || scanner.scan(lo..hi))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a scanning thread does not panic"))
                .collect()
        })
    };
    let mut hits = Vec::new();
    for part in parts {
        match part {
            Ok(found) => hits.extend(found),
            Err(source) => {
                return Err(SessionError::Io {
                    path: file.path.clone(),
                    source,
                });
            }
        }
    }
    // Table order is file order; the masks are looked up by line.
    if let Table::Sorted(_) = table {
        hits.sort_unstable_by_key(|&(line, _)| line);
    }
    Ok(LineMasks {
        hits,
        nested_bit: prefilter.nested_bits(true),
    })
}

struct Scanner<'a> {
    file: &'a SessionFile,
    scans: &'a [(u64, &'a Literal)],
    table: &'a Table<'a>,
    overlap: usize,
    block: usize,
}

impl Scanner<'_> {
    /// The non-zero masks of the lines of `range` of the table, as (line, mask), ascending by
    /// table position.
    fn scan(&self, range: std::ops::Range<usize>) -> std::io::Result<Vec<(usize, u64)>> {
        use std::os::unix::fs::FileExt;
        // (table position, bits) of every hit: few for rare literals, so no per-line array.
        let mut found: Vec<(usize, u64)> = Vec::new();
        if range.is_empty() {
            return Ok(found);
        }
        let first = self.table.span(range.start).start;
        let end = range
            .clone()
            .map(|i| self.table.span(i).end)
            .max()
            .unwrap_or(first);
        let mut buf = vec![0u8; self.block + self.overlap];
        let mut block_start = first;
        while block_start < end {
            let block_end = (block_start + self.block as u64).min(end);
            let read_end = (block_end + self.overlap as u64).min(end);
            let len = (read_end - block_start) as usize;
            self.file.file.read_exact_at(&mut buf[..len], block_start)?;
            let block = Block {
                hay: &buf[..len],
                start: block_start,
                limit: (block_end - block_start) as usize,
                table: self.table,
                range: range.clone(),
            };
            // Each literal on its own: a line needs only its first hit.
            for &(bit, literal) in self.scans {
                block.each_line_hit(
                    |hay, from| literal.regex().find_at(hay, from).map(|m| m.start()),
                    &mut found,
                    bit,
                );
            }
            block_start = block_end;
        }
        // Merge the hits of one line (one per literal per block at most).
        found.sort_unstable_by_key(|&(i, _)| i);
        let mut merged: Vec<(usize, u64)> = Vec::with_capacity(found.len());
        for (i, bits) in found {
            match merged.last_mut() {
                Some((last, mask)) if *last == i => *mask |= bits,
                _ => merged.push((i, bits)),
            }
        }
        Ok(merged
            .into_iter()
            .map(|(i, mask)| (self.table.span(i).line, mask))
            .collect())
    }
}

/// One block of the file being scanned.
struct Block<'a> {
    hay: &'a [u8],
    /// File offset of `hay[0]`.
    start: u64,
    /// Hits must start before this index of `hay` (the rest is overlap for the next block).
    limit: usize,
    table: &'a Table<'a>,
    /// The table positions this scan covers.
    range: std::ops::Range<usize>,
}

impl Block<'_> {
    /// Run `find` (the next hit at or after an index) over the block; for each hit inside a
    /// line, record (table position, `bits`) and go on from the line's end.
    fn each_line_hit(
        &self,
        find: impl Fn(&[u8], usize) -> Option<usize>,
        found: &mut Vec<(usize, u64)>,
        bits: u64,
    ) {
        let mut pos = 0usize;
        // Hits come in file order, and so do their lines.
        let mut from = self.range.start;
        while pos < self.limit {
            let Some(at) = find(self.hay, pos) else {
                return;
            };
            if at >= self.limit {
                return;
            }
            let hit = self.start + at as u64;
            let i = self
                .table
                .first_ending_after_from(from..self.range.end, hit);
            from = i;
            if i >= self.range.end {
                return;
            }
            let span = self.table.span(i);
            if span.start > hit {
                // Between event lines: on to the next one.
                pos = (span.start - self.start) as usize;
                continue;
            }
            found.push((i, bits));
            pos = ((span.end - self.start) as usize).max(at + 1);
        }
    }
}

// ------------------------------------------------------------------------ memo of line hits

/// The memo's first bytes and format version (bumped whenever what a key's hits mean
/// changes: how [`Prefilter::keyed_scans`] builds its regexes, or what counts as a hit).
const MEMO_MAGIC: &[u8; 8] = b"PICXHITS";
const MEMO_FORMAT: u32 = 1;
/// Keys kept per session (the most recently used).
const MEMO_KEYS: usize = 16;
/// A memo larger than this share of the bytes it covers keeps fewer keys (percent).
const MEMO_MAX_SHARE_PERCENT: u64 = 5;
/// ... but may always take this many bytes.
const MEMO_MIN_BUDGET: u64 = 16 << 10;

/// The memo of a session's line hits: for each scan key (a literal of some earlier search),
/// the start of every line of the file's first `covered` bytes holding a hit, so a later
/// search scans only the bytes appended since. It is a cache like the index: stored next to
/// the session's index (`<index>.hits`), naming the same canonical path, device and inode,
/// and trusted per key only while `covered` is within the file's complete lines and the
/// first and last 4 KiB of `[0, covered)` hash as they did (the index's own rule); a memo
/// that is damaged, foreign or unwritable is simply not used. Hits are kept for every line
/// (not only the lines of the branch's events), so they do not depend on the projection.
pub struct Memo {
    path: std::path::PathBuf,
    /// The index beside it, whose presence says a search is likely to reuse the index.
    index: std::path::PathBuf,
    session: Vec<u8>,
    dev: u64,
    ino: u64,
}

/// SHA-1 of the first and last 4 KiB of a covered range.
type Edges = ([u8; 20], [u8; 20]);

/// One key's memoised hits.
struct Memoed {
    key: String,
    covered: u64,
    head: [u8; 20],
    tail: [u8; 20],
    starts: Vec<u64>,
}

impl Memo {
    /// The memo of the session `file` (opened from `session`) in the cache directory `cache`.
    pub fn new(
        cache: &std::path::Path,
        session: &std::path::Path,
        file: &SessionFile,
    ) -> Option<Memo> {
        Memo::of_file(cache, session, &file.file)
    }

    /// [`Memo::new`] for a session file opened on its own.
    pub fn of_file(
        cache: &std::path::Path,
        session: &std::path::Path,
        file: &std::fs::File,
    ) -> Option<Memo> {
        use std::os::unix::fs::MetadataExt;
        let canonical = std::fs::canonicalize(session).ok()?;
        let meta = file.metadata().ok()?;
        let index = crate::session::index::index_path(cache, &canonical);
        Some(Memo {
            path: index.with_extension("hits"),
            index,
            session: canonical.as_os_str().as_encoded_bytes().to_vec(),
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    /// Whether the session has an index file (valid or not).
    pub fn beside_an_index(&self) -> bool {
        self.index.is_file()
    }

    /// Whether `file` is the file this memo was made for (same device and inode).
    pub fn is_for(&self, file: &SessionFile) -> bool {
        use std::os::unix::fs::MetadataExt;
        file.file
            .metadata()
            .is_ok_and(|meta| (meta.dev(), meta.ino()) == (self.dev, self.ino))
    }

    /// The stored keys still valid for `file` whose complete lines end at `complete`.
    fn load(&self, file: &std::fs::File, complete: u64) -> Vec<Memoed> {
        let Ok(bytes) = std::fs::read(&self.path) else {
            return Vec::new();
        };
        let Some(entries) = self.decode(&bytes) else {
            return Vec::new();
        };
        let mut checked: Vec<(u64, Option<Edges>)> = Vec::new();
        entries
            .into_iter()
            .filter(|e| {
                if e.covered > complete {
                    return false;
                }
                let edges = match checked.iter().find(|(c, _)| *c == e.covered) {
                    Some((_, edges)) => *edges,
                    None => {
                        let edges = crate::session::index::edges(file, e.covered).ok();
                        checked.push((e.covered, edges));
                        edges
                    }
                };
                edges == Some((e.head, e.tail))
            })
            .collect()
    }

    fn decode(&self, bytes: &[u8]) -> Option<Vec<Memoed>> {
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        };
        if bytes.get(..8)? != MEMO_MAGIC
            || u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) != MEMO_FORMAT
        {
            return None;
        }
        let body = bytes.get(28..)?;
        if word(12)? != body.len() as u64 || word(20)? != memo_checksum(body) {
            return None;
        }
        let mut r = In { buf: body, at: 0 };
        if r.bytes()? != self.session.as_slice() || r.u()? != self.dev || r.u()? != self.ino {
            return None;
        }
        let n = usize::try_from(r.u()?).ok()?;
        if n > MEMO_KEYS {
            return None;
        }
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let key = String::from_utf8(r.bytes()?.to_vec()).ok()?;
            let covered = r.u()?;
            let head = r.take(20)?.try_into().ok()?;
            let tail = r.take(20)?.try_into().ok()?;
            let m = usize::try_from(r.u()?).ok()?;
            // Every start takes at least one byte.
            if m > body.len() {
                return None;
            }
            let mut starts = Vec::with_capacity(m);
            let mut previous = 0u64;
            for i in 0..m {
                let delta = r.u()?;
                // Ascending, distinct, inside the covered bytes.
                if i > 0 && delta == 0 {
                    return None;
                }
                previous = previous.checked_add(delta)?;
                if previous >= covered {
                    return None;
                }
                starts.push(previous);
            }
            entries.push(Memoed {
                key,
                covered,
                head,
                tail,
                starts,
            });
        }
        (r.at == body.len()).then_some(entries)
    }

    /// Write `entries` (most recently used first) atomically; errors are ignored (the next
    /// search scans again).
    fn store(&self, entries: &[Memoed], complete: u64) {
        use std::io::Write;
        let mut body = Out { buf: Vec::new() };
        body.bytes(&self.session);
        body.u(self.dev);
        body.u(self.ino);
        let budget = (complete * MEMO_MAX_SHARE_PERCENT / 100).max(MEMO_MIN_BUDGET);
        let mut kept = Vec::new();
        let mut size = 0u64;
        for e in entries.iter().take(MEMO_KEYS) {
            let mut one = Out { buf: Vec::new() };
            one.bytes(e.key.as_bytes());
            one.u(e.covered);
            one.buf.extend_from_slice(&e.head);
            one.buf.extend_from_slice(&e.tail);
            one.u(e.starts.len() as u64);
            let mut previous = 0;
            for &s in &e.starts {
                one.u(s - previous);
                previous = s;
            }
            if size + one.buf.len() as u64 > budget {
                continue;
            }
            size += one.buf.len() as u64;
            kept.push(one.buf);
        }
        body.u(kept.len() as u64);
        for one in &kept {
            body.buf.extend_from_slice(one);
        }
        let body = body.buf;
        let Some(dir) = self.path.parent() else {
            return;
        };
        let _ = std::fs::create_dir_all(dir).and_then(|()| {
            let mut temp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
            temp.write_all(MEMO_MAGIC)?;
            temp.write_all(&MEMO_FORMAT.to_le_bytes())?;
            temp.write_all(&(body.len() as u64).to_le_bytes())?;
            temp.write_all(&memo_checksum(&body).to_le_bytes())?;
            temp.write_all(&body)?;
            temp.persist(&self.path).map_err(|e| e.error)?;
            Ok(())
        });
    }
}

fn memo_checksum(body: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(body)
}

/// [`line_masks_in_blocks`] through the memo: the hits of the bytes it covers are taken from it, only
/// the bytes after them are scanned (every line, so the memo stays independent of the
/// branch), and the memo is rewritten when it grew. The memo covers the lines up to
/// `covered` (the end of the complete lines the projection was read from) when that ends a
/// line past the event lines, else up to the end of the event lines. Without a memo, or
/// when the event lines do not end at a complete line, it is the plain scan.
pub fn line_masks_memo(
    file: &SessionFile,
    projection: &Projection,
    prefilter: &Prefilter,
    memo: Option<&Memo>,
    early: Option<EarlyHits>,
    covered: u64,
) -> Result<LineMasks, SessionError> {
    line_masks_memo_in_blocks(file, projection, prefilter, memo, early, covered, BLOCK)
}

/// The literals of `scans` at `group` (ascending) as one scan: a literal containing another
/// of the group is looked for only in the lines holding that one (the scans come contained
/// first).
fn line_scans<'a>(scans: &[KeyedScan<'a>], group: &[usize]) -> Vec<LineScan<'a>> {
    group
        .iter()
        .map(|&k| LineScan {
            literal: scans[k].literal,
            within: scans[k]
                .within
                .and_then(|bit| group.iter().position(|&g| scans[g].bit == bit)),
        })
        .collect()
}

/// What a memo scan finds from the file alone, before the projection is known (see
/// [`early_hits`]).
pub struct EarlyHits {
    /// The scan went up to here (the file's length when it started).
    limit: u64,
    /// The memo's entries valid for the file up to `limit`.
    stored: Vec<Memoed>,
    /// Each keyed scan's hits (line starts, ascending) up to `limit`.
    starts: Vec<Vec<u64>>,
}

/// The memo scan of `prefilter`'s literals over `file` up to `limit` (its length), before
/// the projection that says where the event lines end is known: a search whose index is
/// being extended by appended lines runs this beside the extension, instead of after it,
/// and [`line_masks_memo`] keeps the hits before the event lines' end (what a scan up to
/// there finds: the scan is line by line).
pub fn early_hits(
    file: &std::fs::File,
    prefilter: &Prefilter,
    memo: &Memo,
    limit: u64,
    stop: &AtomicBool,
) -> std::io::Result<EarlyHits> {
    let stored = memo.load(file, limit);
    let scans: Vec<KeyedScan<'_>> = prefilter.keyed_scans().collect();
    let (starts, _) = memo_hits(file, &scans, &stored, limit, BLOCK, Some(stop))?;
    Ok(EarlyHits {
        limit,
        stored,
        starts,
    })
}

/// Each of `scans`' hits up to `to` (a line end): its memoised hits in `stored` and those of
/// the lines after them, scanned (scans starting at one offset together); and whether any
/// scan ran.
fn memo_hits(
    file: &std::fs::File,
    scans: &[KeyedScan<'_>],
    stored: &[Memoed],
    to: u64,
    block: usize,
    stop: Option<&AtomicBool>,
) -> std::io::Result<(Vec<Vec<u64>>, bool)> {
    // Each scan's memoised hits and where its scan must start.
    let mut starts: Vec<Vec<u64>> = Vec::with_capacity(scans.len());
    let mut from: Vec<u64> = Vec::with_capacity(scans.len());
    for KeyedScan { key, .. } in scans {
        match stored.iter().find(|e| &e.key == key) {
            Some(e) => {
                starts.push(e.starts.clone());
                from.push(e.covered);
            }
            None => {
                starts.push(Vec::new());
                from.push(0);
            }
        }
    }
    let mut distinct: Vec<u64> = from.iter().copied().filter(|&f| f < to).collect();
    distinct.sort_unstable();
    distinct.dedup();
    for &at in &distinct {
        let group: Vec<usize> = (0..scans.len()).filter(|&k| from[k] == at).collect();
        let literals = line_scans(scans, &group);
        let found = line_hits(file, at, to, &literals, block, stop)?;
        for (k, hits) in group.into_iter().zip(found) {
            starts[k].extend(hits);
        }
    }
    Ok((starts, !distinct.is_empty()))
}

/// [`line_masks_memo`], reading `block` bytes at a time (tests use small blocks).
pub(crate) fn line_masks_memo_in_blocks(
    file: &SessionFile,
    projection: &Projection,
    prefilter: &Prefilter,
    memo: Option<&Memo>,
    early: Option<EarlyHits>,
    covered: u64,
    block: usize,
) -> Result<LineMasks, SessionError> {
    use std::os::unix::fs::FileExt;
    let io_error = |source: std::io::Error| SessionError::Io {
        path: file.path.clone(),
        source,
    };
    let table = Table::new(projection);
    let n = table.len();
    // Event lines are distinct lines of the file: the one starting last ends last.
    let end = n.checked_sub(1).map(|last| table.span(last).end);
    let mut newline = [0u8; 1];
    let (Some(memo), Some(end)) = (memo, end) else {
        return line_masks_in_blocks(file, projection, prefilter, block);
    };
    // The memo covers whole lines: up to the `\n` ending the last event line.
    if file.file.read_exact_at(&mut newline, end).is_err() || newline[0] != b'\n' {
        return line_masks_in_blocks(file, projection, prefilter, block);
    }
    // Past the event lines, up to every complete line read: a named leaf's branch can end
    // mid-file, and a memo cut back to it would be scanned forward again by the next call
    // on the default branch, and back by the next on that leaf's, in turn.
    let complete = if covered > end + 1
        && file.file.read_exact_at(&mut newline, covered - 1).is_ok()
        && newline[0] == b'\n'
    {
        covered
    } else {
        end + 1
    };
    let scans: Vec<KeyedScan<'_>> = prefilter.keyed_scans().collect();
    let (stored, starts, scanned) = match early.filter(|e| e.limit >= complete) {
        // What the scan up to `complete` would have found: the entries it would have
        // trusted, and each scan's hits before `complete`. A scan that took an entry
        // covering more than that (left by a call that saw more event lines) is done again
        // from the start, as that entry would not have been trusted.
        Some(early) => {
            let mut starts = early.starts;
            let (stored, past): (Vec<Memoed>, Vec<Memoed>) = early
                .stored
                .into_iter()
                .partition(|e| e.covered <= complete);
            let again: Vec<usize> = (0..scans.len())
                .filter(|&k| past.iter().any(|e| e.key == scans[k].key))
                .collect();
            if !again.is_empty() {
                let redo: Vec<KeyedScan<'_>> = again.iter().map(|&k| scans[k].clone()).collect();
                let (found, _) =
                    memo_hits(&file.file, &redo, &[], complete, block, None).map_err(io_error)?;
                for (k, hits) in again.into_iter().zip(found) {
                    starts[k] = hits;
                }
            }
            let scanned = scans.iter().any(|scan| {
                stored
                    .iter()
                    .find(|e| e.key == scan.key)
                    .is_none_or(|e| e.covered < complete)
            });
            for hits in &mut starts {
                hits.retain(|&start| start < complete);
            }
            (stored, starts, scanned)
        }
        None => {
            let stored = memo.load(&file.file, complete);
            let (starts, scanned) =
                memo_hits(&file.file, &scans, &stored, complete, block, None).map_err(io_error)?;
            (stored, starts, scanned)
        }
    };
    // Hits of event lines, by line.
    let mut hits: Vec<(usize, u64)> = Vec::new();
    for (KeyedScan { bit, .. }, lines) in scans.iter().zip(&starts) {
        // The starts ascend, and so do the lines they fall in.
        let mut from = 0;
        for &start in lines {
            let i = table.first_ending_after_from(from..n, start);
            from = i;
            if i < n && table.span(i).start == start {
                hits.push((table.span(i).line, *bit));
            }
        }
    }
    hits.sort_unstable_by_key(|&(line, _)| line);
    let mut merged: Vec<(usize, u64)> = Vec::with_capacity(hits.len());
    for (line, bits) in hits {
        match merged.last_mut() {
            Some((last, mask)) if *last == line => *mask |= bits,
            _ => merged.push((line, bits)),
        }
    }
    if scanned && let Ok((head, tail)) = crate::session::index::edges(&file.file, complete) {
        let mut entries: Vec<Memoed> = scans
            .iter()
            .zip(starts)
            .map(|(KeyedScan { key, .. }, starts)| Memoed {
                key: key.clone(),
                covered: complete,
                head,
                tail,
                starts,
            })
            .collect();
        entries.extend(
            stored
                .into_iter()
                .filter(|e| !scans.iter().any(|scan| scan.key == e.key)),
        );
        memo.store(&entries, complete);
    }
    Ok(LineMasks {
        hits: merged,
        nested_bit: prefilter.nested_bits(true),
    })
}

/// For each literal, the start of every line of `[from, to)` (`from` a line start, `to` just
/// past a `\n`) holding a match, ascending: pieces of `block` bytes, taken in turn by a thread
/// per core for large spans.
fn line_hits(
    file: &std::fs::File,
    from: u64,
    to: u64,
    literals: &[LineScan<'_>],
    block: usize,
    stop: Option<&AtomicBool>,
) -> std::io::Result<Vec<Vec<u64>>> {
    let threads = crate::threads::worker_threads();
    let workers = ((to - from) / PARALLEL_MIN_BYTES).clamp(1, threads as u64);
    line_hits_in_parts(file, from, to, literals, block, workers, stop)
}

/// [`line_hits`] by `workers` threads (tests choose the count), each taking the next piece
/// of `block` bytes until none is left.
///
/// Pieces are cut at any byte, not at line starts: cut at line starts, a thread's range ran
/// to the end of the line holding its last byte (up to 6.8 MB further on a session of long
/// lines), and fixed ranges, one per thread, left one thread waiting for the other (by 2–10
/// ms of a ≈ 15 ms scan: the cores of this kind of machine do not run equally fast, and the
/// search's other work runs beside the scan). A piece reports the lines holding a match that
/// start in it, and whether the line holding its first byte (begun in an earlier piece, or
/// at its first byte) holds one in the piece's bytes (`head`); the merge, in file order,
/// gives that line its start (after the last `\n` of the pieces before) and keeps each line
/// once. Every match starts in some piece and lies within its bytes and the overlap read
/// after them, so each line holding a match is reported by the piece where a match starts.
#[allow(clippy::expect_used, reason = "a scanning thread does not panic")]
fn line_hits_in_parts(
    file: &std::fs::File,
    from: u64,
    to: u64,
    literals: &[LineScan<'_>],
    block: usize,
    workers: u64,
    stop: Option<&AtomicBool>,
) -> std::io::Result<Vec<Vec<u64>>> {
    use std::os::unix::fs::FileExt;
    let block = block.max(1) as u64;
    // A match starting in a piece ends within it and this many bytes after it.
    let overlap = match_reach(
        literals
            .iter()
            .map(|scan| scan.literal.byte_len())
            .max()
            .unwrap_or(0),
    ) as u64;
    // At most 2^32 pieces: the two ends of the pieces not yet taken share one word.
    let block = block.max((to - from).div_ceil(u64::from(u32::MAX)));
    let pieces = (to - from).div_ceil(block);
    // The pieces not taken yet: a thread takes the next from the front, or (`from_back`)
    // from the back.
    let left = crate::threads::PieceRange::new(0, pieces);
    let work = |from_back: bool| -> std::io::Result<Vec<(u64, Piece)>> {
        let mut done = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        loop {
            if stop.is_some_and(|stop| stop.load(Ordering::Relaxed)) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the scan's answer is no longer wanted",
                ));
            }
            let Some(k) = left.take(from_back) else {
                return Ok(done);
            };
            let lo = from + k * block;
            let hi = (lo + block).min(to);
            let end = (hi + overlap).min(to);
            // Each byte placed at an address equal to its file offset modulo 64: pieces
            // start at offsets a multiple of `block` apart, so without this every copy out
            // of the page cache had the same misalignment, and cost a fifth more (the
            // kernel's copy rose from 37 % to 45 % of a fresh search's samples).
            let n = (end - lo) as usize;
            buf.resize(n + 64, 0);
            let pad = (lo as usize).wrapping_sub(buf.as_ptr() as usize) % 64;
            let hay = &mut buf[pad..pad + n];
            file.read_exact_at(hay, lo)?;
            done.push((k, piece_hits(hay, lo, (hi - lo) as usize, literals)));
        }
    };
    let workers = workers.clamp(1, pieces.max(1));
    let found: Vec<(u64, Piece)> = if workers == 1 {
        work(false)?
    } else {
        // The calling thread takes pieces too; every other thread from the back, so two
        // threads each read the file in order until they meet.
        let parts: Vec<std::io::Result<Vec<(u64, Piece)>>> = std::thread::scope(|scope| {
            let work = &work;
            let handles: Vec<_> = (1..workers)
                .map(|w| scope.spawn(move || work(w % 2 == 1)))
                .collect();
            let mut parts = vec![work(false)];
            parts.extend(
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a scanning thread does not panic")),
            );
            parts
        });
        let mut found = Vec::with_capacity(pieces as usize);
        for part in parts {
            found.extend(part?);
        }
        found.sort_unstable_by_key(|&(k, _)| k);
        found
    };
    let mut out: Vec<Vec<u64>> = vec![Vec::new(); literals.len()];
    // Where the line holding the next piece's first byte starts.
    let mut line_start = from;
    for (_, piece) in found {
        for ((all, starts), head) in out.iter_mut().zip(piece.starts).zip(piece.head) {
            for start in head.then_some(line_start).into_iter().chain(starts) {
                // The line holding a piece's last byte may be reported by the pieces after
                // it too (their `head`), and by no other.
                if all.last() != Some(&start) {
                    all.push(start);
                }
            }
        }
        if let Some(newline) = piece.last_newline {
            line_start = newline + 1;
        }
    }
    Ok(out)
}

/// How many bytes a match of a literal of `longest` bytes (UTF-8) can take: a
/// case-insensitive match can be up to three times longer than the literal (`k` matches the
/// three-byte Kelvin sign), and a few more are kept as margin. Block and piece scans read
/// this far past their own bytes.
fn match_reach(longest: usize) -> usize {
    3 * longest + 8
}

/// What one piece of a scan found (see [`line_hits_in_parts`]).
struct Piece {
    /// Per literal: whether the line holding the piece's first byte holds a match in the
    /// piece's bytes (and the overlap after them).
    head: Vec<bool>,
    /// Per literal: the start of every other line starting in the piece and holding a match,
    /// ascending.
    starts: Vec<Vec<u64>>,
    /// The file offset of the piece's last `\n`.
    last_newline: Option<u64>,
}

/// The hits of a piece: `hay` holds the file's bytes from offset `base`, the piece's `len`
/// bytes and then the overlap (or up to the end of the scan).
fn piece_hits(hay: &[u8], base: u64, len: usize, literals: &[LineScan<'_>]) -> Piece {
    let mut head = vec![false; literals.len()];
    let mut starts: Vec<Vec<u64>> = vec![Vec::new(); literals.len()];
    // The end of the line starting at `start` (exclusive: its `\n`, or the end of `hay`).
    let line_end =
        |start: usize| memchr::memchr(b'\n', &hay[start..]).map_or(hay.len(), |p| start + p);
    for (k, scan) in literals.iter().enumerate() {
        let (done, rest) = starts.split_at_mut(k);
        let found = &mut rest[0];
        match scan.within {
            // A line holding this literal holds the one at `j`: only those lines are tested
            // (each whole, or as far as `hay` holds it: a match starting in the piece ends
            // within `hay`).
            Some(j) => {
                head[k] = head[j] && scan.literal.is_match(&hay[..line_end(0)]);
                for &line in &done[j] {
                    let start = (line - base) as usize;
                    if scan.literal.is_match(&hay[start..line_end(start)]) {
                        found.push(line);
                    }
                }
            }
            None => {
                let mut at = 0;
                while at < hay.len()
                    && let Some(hit) = scan.literal.line_hit(hay, at)
                {
                    match memchr::memrchr(b'\n', &hay[..hit]) {
                        // A line starting after the piece: the pieces after it report it.
                        Some(p) if p + 1 >= len => break,
                        Some(p) => found.push(base + p as u64 + 1),
                        None => head[k] = true,
                    }
                    // One hit per line: on from the line's end.
                    at = line_end(hit) + 1;
                }
            }
        }
    }
    Piece {
        head,
        starts,
        last_newline: memchr::memrchr(b'\n', &hay[..len]).map(|p| base + p as u64),
    }
}

/// A literal a memo scan looks for: in every line, or (`within`, the index of an earlier
/// literal of the same scan that it contains) only in the lines holding that one.
#[derive(Clone, Copy)]
struct LineScan<'a> {
    literal: &'a Literal,
    within: Option<usize>,
}

/// Drop every hit of the memo of `session` in `cache`, keeping it well-formed (a memo that
/// lies, for the test that shows the memo is used).
#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "test support")]
pub(crate) fn forget_memo_hits(cache: &std::path::Path, session: &std::path::Path) {
    let memo = Memo::of_file(cache, session, &std::fs::File::open(session).unwrap()).unwrap();
    let mut entries = memo.decode(&std::fs::read(&memo.path).unwrap()).unwrap();
    for e in &mut entries {
        e.starts.clear();
    }
    let complete = entries[0].covered;
    memo.store(&entries, complete);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    /// The early scan (the whole file, before the projection is known) gives the masks and
    /// writes the memo that the scan up to the last event line gives, when the file goes on
    /// past it with lines holding the literal: a malformed line, a line of no event (a
    /// label), and a torn line.
    #[test]
    fn the_early_scan_keeps_only_what_lies_before_the_event_lines_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let text = concat!(
            r#"{"type":"session","version":3,"id":"early","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}"#,
            "\n",
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"a needle here"}}"#,
            "\n",
            r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"no match"}}"#,
            "\n",
            "{needle, malformed\n",
            r#"{"type":"label","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:03.000Z","targetId":"a","label":"needle"}"#,
            "\n",
            r#"{"type":"message","id":"d","parentId":"c","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"torn needle"#,
        );
        std::fs::write(&path, text).unwrap();
        let opened = super::super::open(&path, None).unwrap();
        let matcher = super::super::matcher::Matcher::new(&["needle".to_string()]).unwrap();
        let prefilter = matcher.prefilter().unwrap();
        let memo_files = |cache: &std::path::Path| {
            let history = crate::session::index::index_path(cache, std::path::Path::new("/x"));
            let mut found: Vec<Vec<u8>> = std::fs::read_dir(history.parent().unwrap())
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| std::fs::read(e.path()).unwrap())
                .collect();
            found.sort();
            found
        };
        let (plain, early) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let plain_memo = Memo::new(plain.path(), &path, &opened.file).unwrap();
        let early_memo = Memo::new(early.path(), &path, &opened.file).unwrap();
        let len = text.len() as u64;
        // The masks of the plain scan and of the early one, line by line, and their memos.
        let agree = |found: EarlyHits, block: usize| {
            let masks = |memo: &Memo, early: Option<EarlyHits>| {
                let found = line_masks_memo_in_blocks(
                    &opened.file,
                    &opened.projection,
                    prefilter,
                    Some(memo),
                    early,
                    0,
                    block,
                )
                .unwrap();
                (0..opened.projection.line_count())
                    .map(|line| found.get(&opened.projection, line))
                    .collect::<Vec<u64>>()
            };
            assert_eq!(masks(&early_memo, Some(found)), masks(&plain_memo, None));
            assert_eq!(memo_files(early.path()), memo_files(plain.path()));
        };
        let scan_early = || {
            early_hits(
                &opened.file.file,
                prefilter,
                &early_memo,
                len,
                &AtomicBool::new(false),
            )
            .unwrap()
        };
        for block in [7, 64, BLOCK] {
            let found = scan_early();
            assert!(
                found.starts[0].len() > 1,
                "the scan went past the event lines"
            );
            agree(found, block);
        }
        // An entry covering more than the event lines (as a call that saw more of them
        // leaves) is not what a scan up to their end trusts: its hits are found again.
        let covered = text.rfind('\n').unwrap() as u64 + 1;
        let (head, tail) = crate::session::index::edges(&opened.file.file, covered).unwrap();
        let key = prefilter.keyed_scans().next().unwrap().key;
        let wrong_start = text.find(r#"{"type":"message","id":"b""#).unwrap() as u64;
        let stale = Memoed {
            key,
            covered,
            head,
            tail,
            starts: vec![wrong_start],
        };
        early_memo.store(&[stale], covered);
        let found = scan_early();
        assert_eq!(
            found.starts[0][0], wrong_start,
            "the early scan took the entry"
        );
        agree(found, BLOCK);
    }

    /// An early scan told its answer is unwanted stops with no answer; the memo made for one
    /// file knows whether another is the same file, and whether the session has an index.
    #[test]
    fn an_early_scan_stops_when_unwanted_and_knows_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut text = String::from(
            r#"{"type":"session","version":3,"id":"early","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}"#,
        );
        text.push('\n');
        for k in 0..50 {
            text.push_str(&format!(
                r#"{{"type":"message","id":"m{k}","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"needle {k}"}}}}"#
            ));
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap();
        let opened = super::super::open(&path, None).unwrap();
        let matcher = super::super::matcher::Matcher::new(&["needle".to_string()]).unwrap();
        let prefilter = matcher.prefilter().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let memo = Memo::of_file(cache.path(), &path, &opened.file.file).unwrap();
        let len = text.len() as u64;
        let unwanted = AtomicBool::new(true);
        let stopped = early_hits(&opened.file.file, prefilter, &memo, len, &unwanted);
        assert_eq!(
            stopped.err().map(|e| e.kind()),
            Some(std::io::ErrorKind::Interrupted)
        );
        let found = early_hits(
            &opened.file.file,
            prefilter,
            &memo,
            len,
            &Default::default(),
        );
        assert_eq!(found.unwrap().starts[0].len(), 50);

        assert!(memo.is_for(&opened.file));
        // The same bytes at the same path, but another file.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, &text).unwrap();
        let replaced = super::super::open(&path, None).unwrap();
        assert!(!memo.is_for(&replaced.file));

        assert!(!memo.beside_an_index());
        let mode = super::super::IndexMode::In {
            dir: cache.path(),
            now: std::time::SystemTime::UNIX_EPOCH,
        };
        super::super::open_with(&path, None, &mode).unwrap();
        assert!(memo.beside_an_index());
    }

    /// The search from a hint finds what the bisection of the whole range finds, for every
    /// hint at or before the answer, on line spans with gaps between them.
    #[test]
    fn the_line_search_from_a_hint_agrees_with_the_bisection() {
        for lines in 0..40u64 {
            // Line k spans [10k, 10k + 1 + k % 7): gaps of different lengths between lines.
            let spans: Vec<Span> = (0..lines)
                .map(|k| Span {
                    start: 10 * k,
                    end: 10 * k + 1 + k % 7,
                    line: k as usize,
                })
                .collect();
            let table = Table::Sorted(spans);
            let n = table.len();
            for lo in 0..=n {
                for at in 0..10 * lines + 12 {
                    let whole = table.first_ending_after(lo..n, at);
                    for from in lo..=whole.min(n) {
                        assert_eq!(
                            table.first_ending_after_from(from..n, at),
                            whole,
                            "{lines} lines, from {from}, at {at}"
                        );
                    }
                }
            }
        }
    }

    /// The start of every line of `text` (lines end at `\n`; a last line without one is
    /// left out, like a torn line) holding `needle` case-insensitively, by the regex.
    fn expected(text: &[u8], needle: &Literal) -> Vec<u64> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &b) in text.iter().enumerate() {
            if b == b'\n' {
                if needle.regex().is_match(&text[start..i]) {
                    out.push(start as u64);
                }
                start = i + 1;
            }
        }
        out
    }

    /// `line_hits` of the complete lines of `text` in `groups` parts, `block` bytes a read.
    fn scanned(text: &[u8], needles: &[LineScan<'_>], groups: u64, block: usize) -> Vec<Vec<u64>> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(text).unwrap();
        let to = memchr::memrchr(b'\n', text).map_or(0, |i| i as u64 + 1);
        line_hits_in_parts(&file, 0, to, needles, block, groups, None).unwrap()
    }

    #[test]
    fn split_points_neither_lose_nor_repeat_a_hit() {
        // Two equal halves: the cut falls inside a match in the middle line; a line starting
        // exactly at the half; matches at the first and last bytes; a torn last line with a
        // match that must not count.
        let needle = Literal::new("Quokka-7731", true).unwrap();
        let half = "x quokka-7731 ".len() + "QUOKKA-7731 y\n".len();
        for text in [
            format!(
                "x quokka-7731 {}\n{}",
                "a".repeat(half - 15),
                "QUOKKA-7731 y\n"
            ),
            format!(
                "{}\n{}",
                "b".repeat(half - 1),
                "quokka-7731\nzz\nquokka-7731"
            ),
            format!("quokka-7731{}quokka-7731\nquokka-7731\n", "c".repeat(40)),
            format!(
                "{}quokka-7731{}\nquokka-7731 torn",
                "d".repeat(20),
                "e".repeat(20)
            ),
        ] {
            let want = expected(text.as_bytes(), &needle);
            assert!(!want.is_empty());
            for groups in 1..=6 {
                for block in [1, 5, 16, 4096] {
                    let alone = LineScan {
                        literal: &needle,
                        within: None,
                    };
                    let got = scanned(text.as_bytes(), &[alone], groups, block);
                    assert_eq!(got[0], want, "{text:?}, {groups} parts, block {block}");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        #[test]
        fn any_split_finds_the_lines_of_a_serial_scan(
            pieces in prop::collection::vec(
                prop_oneof![
                    Just("ab"), Just("AB "), Just("aB\n"), Just("\n"), Just("ſ"), Just("b"),
                    Just("zz"), Just("é"), Just("K"), Just("\u{212a}")
                ],
                0..80,
            ),
            groups in 1u64..7,
            block in 1usize..64,
        ) {
            let text: String = pieces.concat();
            // `ab b` and `zab` are looked for only in the lines holding `ab`.
            let needles: Vec<(Literal, Option<usize>)> = [
                ("ab", None),
                ("ab b", Some(0)),
                ("sk", None),
                ("zab", Some(0)),
                ("é a", None),
                ("bk", None),
            ]
            .iter()
            .map(|&(q, within)| (Literal::new(q, true).unwrap(), within))
            .collect();
            let scans: Vec<LineScan<'_>> = needles
                .iter()
                .map(|(literal, within)| LineScan { literal, within: *within })
                .collect();
            let got = scanned(text.as_bytes(), &scans, groups, block);
            for ((needle, _), hits) in needles.iter().zip(&got) {
                prop_assert_eq!(hits, &expected(text.as_bytes(), needle));
            }
        }
    }
}
