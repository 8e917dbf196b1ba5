//! One prefilter literal as a fast line test: which lines of a buffer hold a match of the
//! literal's regex (case-insensitive by Unicode simple case folding, or exact), answered
//! without running the regex over every byte.
//!
//! How. Two bytes of the literal that every match holds at a fixed distance (the *pair*:
//! two bytes of one run of *plain* characters — ASCII other than `k` and `s`, whose only
//! case variants are their ASCII upper and lower case — the rarest such two over all runs,
//! by [`SessionRank`]) are looked for together, 64 positions at a time (AVX2 when the
//! processor has it, else SSE2), comparing each haystack byte folded to lower case
//! (`| 0x20` for a letter) with the pair's. Where the pair is found, a third byte of its run
//! (the rarest other) is tested too before the position is handed out as a candidate. A
//! candidate is then confirmed:
//! - an ASCII literal: the bytes around the pair equal the literal ignoring ASCII case (then
//!   they are a match); if they do not, the line can still hold a match only through a
//!   non-ASCII case variant (`ſ` for `s`, the Kelvin sign for `k`), so when a byte ≥ 0x80
//!   lies within reach of the candidate the whole line is tested with the regex;
//! - any other literal: the whole line is tested with the regex.
//!
//! Either way the answer for the line is decided and the search goes on after it, so each
//! line is tested by the regex at most once. Every line holding a match holds the pair, so
//! no line is lost; every line reported holds a match, so none is added: the line hits are
//! exactly the regex's (the memo of hits depends on that; the prefilter proptest compares
//! both with a regex scan). A literal with no plain character is searched with its regex.
//! (The regex's own search of a short case-insensitive literal tries many case variants of
//! its first bytes, and was measured two to three times slower than this on session text.)

use regex::bytes::{Regex, RegexBuilder};
use std::sync::OnceLock;

/// Positions tested at once by the pair search.
const LANES: usize = 64;

/// A literal and how to find the lines holding it.
#[derive(Debug)]
pub struct Literal {
    /// Compiled on first use: a query's literals are made for every search, but a line whose
    /// pair candidate is confirmed byte by byte never needs it (a search's literals took
    /// 0.3–0.5 ms to compile, 10–20 % of a warm search).
    regex: OnceLock<Regex>,
    text: String,
    fold: bool,
    pair: Option<Pair>,
}

/// Two bytes every match holds `distance` bytes apart, and how to confirm a candidate.
#[derive(Debug)]
struct Pair {
    /// The first byte (folded to lower case when `mask1` is `0x20`) and its OR mask.
    byte1: u8,
    mask1: u8,
    byte2: u8,
    mask2: u8,
    distance: usize,
    /// A third byte of the pair's run (the rarest other than the pair's; the first byte
    /// again when the run has only two), its OR mask and its distance from the first:
    /// tested only where the pair is found, before the candidate is handed out.
    byte3: u8,
    mask3: u8,
    distance3: isize,
    /// The literal's bytes (folded to lower case when case-insensitive), when they are
    /// ASCII: a candidate is then confirmed by comparing them at `offset` before the pair.
    ascii: Option<Vec<u8>>,
    /// Byte offset of the pair's first byte in the literal.
    offset: usize,
    /// Case-insensitive: an ASCII mismatch may hide a match through a non-ASCII variant.
    fold: bool,
    /// Whether this processor has AVX2 (the candidate search then takes 32 bytes at once).
    #[cfg(target_arch = "x86_64")]
    avx2: bool,
}

/// Literals up to this many bytes compile their regex on first use ([`Literal::regex`]).
const LAZY_MAX_BYTES: usize = 4096;

/// The regex of the literal `text` (case-insensitive when `fold`).
fn compile(text: &str, fold: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(&regex::escape(text))
        .case_insensitive(fold)
        .size_limit(64 << 20)
        .build()
}

impl Literal {
    /// The literal `text`, matched case-insensitively when `fold` (Unicode simple case
    /// folding, the regex crate's `(?i)`), else exactly. `None` when its regex does not
    /// compile within the size limit.
    pub fn new(text: &str, fold: bool) -> Option<Literal> {
        let regex = OnceLock::new();
        // A literal this short always compiles within the limit (a class of at most three
        // characters per character); a longer one is compiled now, so one too large for the
        // limit is refused here.
        if text.len() > LAZY_MAX_BYTES {
            let _ = regex.set(compile(text, fold).ok()?);
        }
        Some(Literal {
            regex,
            text: text.to_string(),
            fold,
            pair: Pair::new(text, fold),
        })
    }

    /// The literal's regex.
    #[allow(
        clippy::expect_used,
        reason = "a literal of at most LAZY_MAX_BYTES compiles; longer ones were compiled in new"
    )]
    pub fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| {
            compile(&self.text, self.fold).expect("a short literal's regex compiles")
        })
    }

    /// The literal's length in bytes (UTF-8).
    pub fn byte_len(&self) -> usize {
        self.text.len()
    }

    /// Whether `line` (one line, no `\n`) holds a match.
    pub fn is_match(&self, line: &[u8]) -> bool {
        self.line_hit(line, 0).is_some()
    }

    /// A position `p ≥ at` in the first line of `hay` (lines end at `\n`) that holds a match
    /// starting at or after `at`; `None` when no line does. `at` is a line start.
    pub fn line_hit(&self, hay: &[u8], at: usize) -> Option<usize> {
        match &self.pair {
            None => self.regex().find_at(hay, at).map(|m| m.start()),
            Some(pair) => pair.line_hit(|| self.regex(), hay, at),
        }
    }
}

/// Whether `c`'s only case variants (Unicode simple case folding) are ASCII: every ASCII
/// character but `k` and `s` (the Kelvin sign and the long s fold to them).
fn plain(c: char) -> bool {
    c.is_ascii() && !matches!(c, 'k' | 'K' | 's' | 'S')
}

/// How common a byte is in session files (higher: more common), for choosing the pair:
/// JSON punctuation, digits (ids, timestamps) and common letters first. Letters are ranked
/// by their lower case (the search folds case).
struct SessionRank;

impl memchr::arch::all::packedpair::HeuristicFrequencyRank for SessionRank {
    fn rank(&self, byte: u8) -> u8 {
        const COMMON: &[u8] = b"\" :,e{}t.a0o1i2n-3s/r4h5l6d_7c8u9mfpgwybvkxjqz";
        let byte = byte.to_ascii_lowercase();
        match COMMON.iter().position(|&b| b == byte) {
            Some(i) => 255 - 4 * i as u8,
            None if byte.is_ascii_graphic() => 40,
            None => 20,
        }
    }
}

impl Pair {
    fn new(text: &str, fold: bool) -> Option<Pair> {
        // A match would span lines (prefilter literals never hold a `\n`).
        if text.contains('\n') {
            return None;
        }
        // The runs of characters with a fixed byte form (plain, or any character when
        // matching exactly), as byte ranges of `text`.
        let fixed = |c: char| !fold || plain(c);
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut start = None;
        for (i, c) in text
            .char_indices()
            .chain(std::iter::once((text.len(), '\n')))
        {
            let inside = i < text.len() && fixed(c);
            match (inside, start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    runs.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        let folded = |run: (usize, usize)| -> Vec<u8> {
            let bytes = &text.as_bytes()[run.0..run.1];
            if fold {
                bytes.to_ascii_lowercase()
            } else {
                bytes.to_vec()
            }
        };
        // Each run's rarest pair (positions in the run), and how common its bytes are; a
        // one-byte run is a pair at distance 0, worse than any two bytes. The rarest wins.
        use memchr::arch::all::packedpair::HeuristicFrequencyRank;
        let rank = |b: u8| u32::from(SessionRank.rank(b));
        let (run, i1, i2) = runs
            .iter()
            .map(|&run| {
                let lower = folded(run);
                let (i1, i2, score) =
                    match memchr::arch::all::packedpair::Pair::with_ranker(&lower, SessionRank) {
                        Some(p) => {
                            let (a, b) = (usize::from(p.index1()), usize::from(p.index2()));
                            (a.min(b), a.max(b), rank(lower[a]) + rank(lower[b]))
                        }
                        None => (0, 0, 1024 + rank(lower[0])),
                    };
                (score, run, i1, i2)
            })
            .min_by_key(|&(score, ..)| score)
            .map(|(_, run, i1, i2)| (run, i1, i2))?;
        let lower = folded(run);
        let i3 = (0..lower.len())
            .filter(|&i| i != i1 && i != i2)
            .min_by_key(|&i| rank(lower[i]))
            .unwrap_or(i1);
        let mask = |b: u8| {
            if fold && b.is_ascii_alphabetic() {
                0x20
            } else {
                0
            }
        };
        let ascii = text.is_ascii().then(|| {
            if fold {
                text.as_bytes().to_ascii_lowercase()
            } else {
                text.as_bytes().to_vec()
            }
        });
        Some(Pair {
            byte1: lower[i1],
            mask1: mask(lower[i1]),
            byte2: lower[i2],
            mask2: mask(lower[i2]),
            distance: i2 - i1,
            byte3: lower[i3],
            mask3: mask(lower[i3]),
            distance3: i3 as isize - i1 as isize,
            ascii,
            offset: run.0 + i1,
            fold,
            #[cfg(target_arch = "x86_64")]
            avx2: std::arch::is_x86_feature_detected!("avx2"),
        })
    }

    /// [`Literal::line_hit`] through the pair.
    fn line_hit<'r>(&self, regex: impl Fn() -> &'r Regex, hay: &[u8], at: usize) -> Option<usize> {
        let mut from = at;
        loop {
            let y = self.candidate(hay, from)?;
            if let Some(literal) = &self.ascii {
                // Equal bytes hold no `\n` (the literal has none): a match in one line.
                let equal = y.checked_sub(self.offset).is_some_and(|s| {
                    s >= at
                        && hay.get(s..s + literal.len()).is_some_and(|w| {
                            if self.fold {
                                w.eq_ignore_ascii_case(literal)
                            } else {
                                w == literal.as_slice()
                            }
                        })
                });
                if equal {
                    return Some(y);
                }
                // A variant of `k` or `s` takes at most three bytes.
                let near = y.saturating_sub(3 * self.offset).max(at)
                    ..(y + 3 * (literal.len() - self.offset)).min(hay.len());
                if !self.fold || hay[near].is_ascii() {
                    from = y + 1;
                    continue;
                }
            }
            // The line holding the candidate (from `at`), tested whole.
            let begin = memchr::memrchr(b'\n', &hay[at..y]).map_or(at, |i| at + i + 1);
            let end = memchr::memchr(b'\n', &hay[y..]).map_or(hay.len(), |i| y + i);
            if regex().is_match(&hay[begin..end]) {
                return Some(y);
            }
            // This line is decided: on after it.
            from = end + 1;
            if from >= hay.len() {
                return None;
            }
        }
    }

    /// The first position `y ≥ from` with `hay[y]` and `hay[y + distance]` the pair's bytes
    /// and `hay[y + distance3]` the third byte (folded; unless out of `hay`).
    fn candidate(&self, hay: &[u8], from: usize) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: the processor has AVX2 (checked when the pair was made).
            return unsafe { self.candidate_avx2(hay, from) };
        }
        self.candidate_in(hay, from, pair_lanes)
    }

    /// [`Pair::candidate`] with AVX2 instructions.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn candidate_avx2(&self, hay: &[u8], from: usize) -> Option<usize> {
        // The closure is inlined here, where AVX2 is enabled.
        self.candidate_in(hay, from, |a, b, pair| pair_lanes_avx2(a, b, pair))
    }

    /// [`Pair::candidate`], testing `LANES` positions at a time with `lanes`.
    #[inline(always)]
    fn candidate_in(
        &self,
        hay: &[u8],
        from: usize,
        lanes: impl Fn(&[u8; LANES], &[u8; LANES], [u8; 4]) -> u64,
    ) -> Option<usize> {
        let d = self.distance;
        if hay.len() <= d {
            return None;
        }
        // Positions `y` in `from..last` have `y + d < hay.len()`.
        let last = hay.len() - d;
        let (b1, m1, b2, m2) = (self.byte1, self.mask1, self.byte2, self.mask2);
        let mut y = from;
        while y + LANES <= last {
            let first: &[u8; LANES] = hay[y..y + LANES].try_into().ok()?;
            let second: &[u8; LANES] = hay[y + d..y + d + LANES].try_into().ok()?;
            let mut found = lanes(first, second, [b1, m1, b2, m2]);
            // The pair's lanes that hold the third byte too. A pair of common letters
            // (`c` and `m` of `src/main.rs`) is met ≈ 2,000 times a MiB of session text;
            // handing each out (and checking it) cost more than the vector search itself.
            while found != 0 {
                let at = y + found.trailing_zeros() as usize;
                if self.third_holds(hay, at) {
                    return Some(at);
                }
                found &= found - 1;
            }
            y += LANES;
        }
        (y..last)
            .find(|&y| (hay[y] | m1) == b1 && (hay[y + d] | m2) == b2 && self.third_holds(hay, y))
    }

    /// Whether the candidate at `y` holds the third byte (true when `hay` does not reach it:
    /// the checks after the candidate search decide then).
    #[inline(always)]
    fn third_holds(&self, hay: &[u8], y: usize) -> bool {
        match y.checked_add_signed(self.distance3) {
            Some(at) if at < hay.len() => (hay[at] | self.mask3) == self.byte3,
            _ => true,
        }
    }
}

/// [`pair_lanes`] with AVX2 instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn pair_lanes_avx2(first: &[u8; LANES], second: &[u8; LANES], [b1, m1, b2, m2]: [u8; 4]) -> u64 {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8,
    };
    let [b1, m1, b2, m2] = [b1, m1, b2, m2].map(|b| _mm256_set1_epi8(i8::from_ne_bytes([b])));
    let mut lanes = 0u64;
    for at in (0..LANES).step_by(32) {
        // SAFETY: `at + 32 <= LANES`, the length of both arrays; unaligned loads are allowed.
        let (a, b) = unsafe {
            (
                _mm256_loadu_si256(first.as_ptr().add(at).cast::<__m256i>()),
                _mm256_loadu_si256(second.as_ptr().add(at).cast::<__m256i>()),
            )
        };
        let mask = _mm256_movemask_epi8(_mm256_and_si256(
            _mm256_cmpeq_epi8(_mm256_or_si256(a, m1), b1),
            _mm256_cmpeq_epi8(_mm256_or_si256(b, m2), b2),
        ));
        lanes |= u64::from(mask as u32) << at;
    }
    lanes
}

/// The lanes `k` (bits of the result) where `first[k] | m1 == b1` and
/// `second[k] | m2 == b2`, for `[b1, m1, b2, m2]`.
#[cfg(target_arch = "x86_64")]
#[inline]
fn pair_lanes(first: &[u8; LANES], second: &[u8; LANES], [b1, m1, b2, m2]: [u8; 4]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let [b1, m1, b2, m2] = [b1, m1, b2, m2].map(|b| i8::from_ne_bytes([b]));
    let mut lanes = 0u64;
    for at in (0..LANES).step_by(16) {
        // SAFETY: SSE2 is part of the x86-64 baseline, so its instructions always exist;
        // `at + 16 <= LANES`, the length of both arrays, and unaligned loads are allowed.
        let mask = unsafe {
            let a = _mm_loadu_si128(first.as_ptr().add(at).cast::<__m128i>());
            let b = _mm_loadu_si128(second.as_ptr().add(at).cast::<__m128i>());
            _mm_movemask_epi8(_mm_and_si128(
                _mm_cmpeq_epi8(_mm_or_si128(a, _mm_set1_epi8(m1)), _mm_set1_epi8(b1)),
                _mm_cmpeq_epi8(_mm_or_si128(b, _mm_set1_epi8(m2)), _mm_set1_epi8(b2)),
            ))
        };
        lanes |= u64::from(mask as u16) << at;
    }
    lanes
}

/// [`pair_lanes`] without SIMD instructions.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn pair_lanes(first: &[u8; LANES], second: &[u8; LANES], [b1, m1, b2, m2]: [u8; 4]) -> u64 {
    let mut lanes = 0u64;
    for k in 0..LANES {
        if (first[k] | m1) == b1 && (second[k] | m2) == b2 {
            lanes |= 1 << k;
        }
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line starts of `hay` holding a match, by the regex and by the literal.
    fn both(literal: &Literal, hay: &[u8]) -> (Vec<usize>, Vec<usize>) {
        let line_of = |p: usize| memchr::memrchr(b'\n', &hay[..p]).map_or(0, |i| i + 1);
        let next = |p: usize| memchr::memchr(b'\n', &hay[p..]).map_or(hay.len(), |i| p + i + 1);
        let mut by_regex = Vec::new();
        let mut at = 0;
        while let Some(m) = literal.regex().find_at(hay, at) {
            by_regex.push(line_of(m.start()));
            at = next(m.start());
        }
        let mut by_pair = Vec::new();
        let mut at = 0;
        while at < hay.len()
            && let Some(p) = literal.line_hit(hay, at)
        {
            by_pair.push(line_of(p));
            at = next(p);
        }
        (by_regex, by_pair)
    }

    #[test]
    fn only_k_and_s_have_non_ascii_case_variants_among_ascii_characters() {
        // The pair rests on this: a plain character's matches are its ASCII cases.
        let others: String = (0x80..=0x10FFFFu32).filter_map(char::from_u32).collect();
        let variants: Vec<char> = (0u8..128)
            .map(char::from)
            .filter(|c| {
                RegexBuilder::new(&regex::escape(&c.to_string()))
                    .case_insensitive(true)
                    .build()
                    .unwrap()
                    .is_match(others.as_bytes())
            })
            .collect();
        assert_eq!(variants, ['K', 'S', 'k', 's']);
        assert!(variants.iter().all(|&c| !plain(c)));
    }

    #[test]
    fn line_hits_are_exactly_the_regexs() {
        let hay = "alpha Unseen Thing\nnothing here\nunseen thing at the end\n\
                   UNſEEN THING\nun\u{17f}een thin\nxx unseen thingy\nthe KELVIN \u{212a}elvin\n\
                   caf\u{e9} CAF\u{c9}\nnestedCalls NESTEDCALLS\nunseen thin";
        for (q, fold) in [
            ("unseen thing", true),
            ("kelvin", true),
            ("café", true),
            ("s", true),
            ("k", true),
            ("ks", true),
            ("thing", true),
            ("n", true),
            ("nestedCalls", false),
            ("g\nu", true),
            ("unseen thin", true),
        ] {
            let literal = Literal::new(q, fold).unwrap();
            let (by_regex, by_pair) = both(&literal, hay.as_bytes());
            assert_eq!(by_regex, by_pair, "{q:?}");
        }
        let (by_regex, _) = both(&Literal::new("unſeen", true).unwrap(), hay.as_bytes());
        assert_eq!(by_regex.len(), 6);
    }

    #[test]
    fn long_haystacks_find_every_line_in_every_lane() {
        // A match at every offset of the 64-position step, near and across line ends.
        let literal = Literal::new("Quokka-77", true).unwrap();
        for pad in 0..140 {
            let mut hay = vec![b'x'; pad];
            hay.extend_from_slice(b"QUOKKA-77\n");
            hay.extend(std::iter::repeat_n(b'y', 40));
            hay.extend_from_slice(b"quokka-7\n7 quokka-77");
            let (by_regex, by_pair) = both(&literal, &hay);
            assert_eq!(by_regex, by_pair, "pad {pad}");
            assert_eq!(by_pair.len(), 2);
        }
    }
}
