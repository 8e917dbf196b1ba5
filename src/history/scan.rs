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

/// The line mask of every event line of `projection` (see the module docs); `None` when the
/// query set does not compile to one regex (the caller then tests lines one by one).
#[allow(clippy::expect_used, reason = "a scanning thread does not panic")]
pub fn line_masks(
    file: &SessionFile,
    projection: &Projection,
    prefilter: &Prefilter,
) -> Option<Result<Vec<u64>, SessionError>> {
    line_masks_in_blocks(file, projection, prefilter, BLOCK)
}

/// [`line_masks`], reading `block` bytes at a time (tests use small blocks).
#[allow(clippy::expect_used, reason = "a scanning thread does not panic")]
pub(crate) fn line_masks_in_blocks(
    file: &SessionFile,
    projection: &Projection,
    prefilter: &Prefilter,
    block: usize,
) -> Option<Result<Vec<u64>, SessionError>> {
    let scans: Vec<(u64, &Regex)> = prefilter.scans().collect();
    // A case-insensitive match can be up to three times longer in UTF-8 than the literal
    // (`k` matches the three-byte Kelvin sign), and must fit in one block's overlap.
    let overlap = 3 * prefilter.longest() + 8;
    let mut spans: Vec<Span> = (0..projection.line_count())
        .map(|line| {
            let l = projection.line(line);
            Span {
                start: l.offset,
                end: l.offset + l.len,
                line,
            }
        })
        .collect();
    if !spans.windows(2).all(|w| w[0].start <= w[1].start) {
        spans.sort_unstable_by_key(|s| s.start);
    }
    let scanner = Scanner {
        file,
        scans: &scans,
        overlap,
        block,
    };
    let total: u64 = spans.iter().map(|s| s.end - s.start).sum();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let groups = (total / PARALLEL_MIN_BYTES).clamp(1, threads as u64) as usize;
    // Split the spans into `groups` runs of about equal bytes.
    let mut cuts = vec![0usize];
    let mut acc = 0u64;
    for (i, s) in spans.iter().enumerate() {
        acc += s.end - s.start;
        if cuts.len() < groups && acc * groups as u64 >= total * cuts.len() as u64 {
            cuts.push(i + 1);
        }
    }
    cuts.push(spans.len());
    cuts.dedup();
    let parts: Vec<std::io::Result<Vec<(usize, u64)>>> = if cuts.len() <= 2 {
        vec![scanner.scan(&spans)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = cuts
                .windows(2)
                .map(|w| {
                    let group = &spans[w[0]..w[1]];
                    let scanner = &scanner;
                    scope.spawn(move || scanner.scan(group))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a scanning thread does not panic"))
                .collect()
        })
    };
    // A line with an escape JavaScript would not write is a "maybe" (known from the index).
    let mut masks: Vec<u64> = (0..projection.line_count())
        .map(|i| {
            if projection.line(i).escapes {
                u64::MAX
            } else {
                0
            }
        })
        .collect();
    for part in parts {
        match part {
            Ok(hits) => {
                for (line, mask) in hits {
                    masks[line] |= mask;
                }
            }
            Err(source) => {
                return Some(Err(SessionError::Io {
                    path: file.path.clone(),
                    source,
                }));
            }
        }
    }
    Some(Ok(masks))
}

struct Scanner<'a> {
    file: &'a SessionFile,
    scans: &'a [(u64, &'a Regex)],
    overlap: usize,
    block: usize,
}

impl Scanner<'_> {
    /// The non-zero masks of the lines of `spans` (ascending by start), as (line, mask).
    fn scan(&self, spans: &[Span]) -> std::io::Result<Vec<(usize, u64)>> {
        use std::os::unix::fs::FileExt;
        let mut masks = vec![0u64; spans.len()];
        let (Some(first), Some(end)) = (spans.first(), spans.iter().map(|s| s.end).max()) else {
            return Ok(Vec::new());
        };
        let mut buf = vec![0u8; self.block + self.overlap];
        let mut block_start = first.start;
        while block_start < end {
            let block_end = (block_start + self.block as u64).min(end);
            let read_end = (block_end + self.overlap as u64).min(end);
            let len = (read_end - block_start) as usize;
            self.file.file.read_exact_at(&mut buf[..len], block_start)?;
            let block = Block {
                hay: &buf[..len],
                start: block_start,
                limit: (block_end - block_start) as usize,
                spans,
            };
            // Each literal on its own: a line needs only its first hit.
            for &(bit, regex) in self.scans {
                block.each_line_hit(
                    |hay, from| regex.find_at(hay, from).map(|m| m.start()),
                    &mut masks,
                    bit,
                );
            }
            block_start = block_end;
        }
        Ok(masks
            .into_iter()
            .zip(spans)
            .filter(|(mask, _)| *mask != 0)
            .map(|(mask, span)| (span.line, mask))
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
    spans: &'a [Span],
}

impl Block<'_> {
    /// Run `find` (the next hit at or after an index) over the block; for each hit inside a
    /// line, OR `bits` into its mask and go on from the line's end.
    fn each_line_hit(
        &self,
        find: impl Fn(&[u8], usize) -> Option<usize>,
        masks: &mut [u64],
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
            let i = self.spans.partition_point(|s| s.end <= hit);
            let Some(span) = self.spans.get(i) else {
                return;
            };
            if span.start > hit {
                // Between event lines: on to the next one.
                pos = (span.start - self.start) as usize;
                continue;
            }
            masks[i] |= bits;
            pos = ((span.end - self.start) as usize).max(at + 1);
        }
    }
}
