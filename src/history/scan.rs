//! The search prefilter as one scan of the file: instead of testing every event line on its
//! own, the bytes of the event lines are read in large blocks (a thread per core for large
//! files) and searched with each literal's case-insensitive regex (and the nested-call probe); each hit is mapped to the
//! line holding it by byte offset, and the search goes on from that line's end (one hit per
//! line is all a line mask needs). A line the index marks as holding an escape JavaScript
//! would not write (`Line::escapes`, found while the line was first decoded) is a "maybe"
//! (`u64::MAX`). The result is [`Prefilter::line_mask`] of every line, up to "maybe" being
//! given to more lines, never fewer. (One regex for all literals and the escapes was
//! measured 4–10× slower: short case-insensitive literals and `\u` make its literal
//! prefilter report a candidate at nearly every backslash.)
//!
//! - Literals hold no `\n` (JSON escapes it, so no literal has one), so a hit never spans lines.

use regex::bytes::Regex;

use super::matcher::Prefilter;
use super::projection::Projection;
use crate::session::{SessionError, SessionFile};

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
        let n = projection.line_count();
        let starts = |i: usize| projection.line(i).offset;
        if (1..n).all(|i| starts(i - 1) <= starts(i)) {
            return Table::Lines(projection);
        }
        let mut spans: Vec<Span> = (0..n)
            .map(|line| {
                let l = projection.line(line);
                Span {
                    start: l.offset,
                    end: l.offset + l.len,
                    line,
                }
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

/// The masks the scan found: the lines with a hit, ascending, and the projection's lines
/// holding an escape JavaScript would not write ("maybe": every bit).
pub struct LineMasks {
    hits: Vec<(usize, u64)>,
}

impl LineMasks {
    /// The mask of line `line` of `projection`.
    pub fn get(&self, projection: &Projection, line: usize) -> u64 {
        if line >= projection.line_count() || projection.line(line).escapes {
            return u64::MAX;
        }
        match self.hits.binary_search_by_key(&line, |&(l, _)| l) {
            Ok(i) => self.hits[i].1,
            Err(_) => 0,
        }
    }
}

/// The line mask of every event line of `projection` (see the module docs).
pub fn line_masks(
    file: &SessionFile,
    projection: &Projection,
    prefilter: &Prefilter,
) -> Result<LineMasks, SessionError> {
    line_masks_in_blocks(file, projection, prefilter, BLOCK)
}

/// [`line_masks`], reading `block` bytes at a time (tests use small blocks).
#[allow(clippy::expect_used, reason = "a scanning thread does not panic")]
pub(crate) fn line_masks_in_blocks(
    file: &SessionFile,
    projection: &Projection,
    prefilter: &Prefilter,
    block: usize,
) -> Result<LineMasks, SessionError> {
    let scans: Vec<(u64, &Regex)> = prefilter.scans().collect();
    // A case-insensitive match can be up to three times longer in UTF-8 than the literal
    // (`k` matches the three-byte Kelvin sign), and must fit in one block's overlap.
    let overlap = 3 * prefilter.longest() + 8;
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
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
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
    Ok(LineMasks { hits })
}

struct Scanner<'a> {
    file: &'a SessionFile,
    scans: &'a [(u64, &'a Regex)],
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
            for &(bit, regex) in self.scans {
                block.each_line_hit(
                    |hay, from| regex.find_at(hay, from).map(|m| m.start()),
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
        while pos < self.limit {
            let Some(at) = find(self.hay, pos) else {
                return;
            };
            if at >= self.limit {
                return;
            }
            let hit = self.start + at as u64;
            let i = self.table.first_ending_after(self.range.clone(), hit);
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
