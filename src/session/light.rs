//! The fast light decode of one session line: a hand-written, allocation-light JSON scanner
//! that validates the whole line under the rule of the full decode and extracts the same
//! fields as [`super::skeleton::decode`], for the common line. It hands a line back
//! ([`Decided::Unsure`]) whenever it is not certain — an escape inside a key or inside a value
//! it extracts, a number that may be out of `f64` range, a `version` that is not a small
//! non-negative integer — and the caller then decodes it the slow way. Whether a line is
//! malformed is decided here exactly as by [`super::parse_value`] (serde_json's full decode,
//! lone surrogate escapes accepted) plus "the top level is an object": the property test
//! `the_light_decoder_agrees_with_the_full_decoders` checks both facts and the fields on
//! generated hostile lines.
//!
//! The rule, spelled out: the line is valid UTF-8 (outside strings any non-ASCII byte is a
//! syntax error; inside, each run of non-ASCII bytes is checked); it is one JSON object, optionally
//! surrounded by space, tab, CR or LF; strings hold no raw control character (< 0x20) and
//! only the escapes `\" \\ \/ \b \f \n \r \t \uXXXX` (any four hex digits: a lone
//! surrogate reads as U+FFFD); numbers follow JSON's grammar and are finite as an `f64`
//! (`1e400` is malformed); arrays and objects nest at most [`MAX_NESTING`] deep.

use super::ToolCallMeta;
use compact_str::CompactString;
use std::borrow::Cow;

use super::skeleton::{ContentMeta, MAX_NESTING, RawEntry, RawMessage};

/// The outcome of the fast decode of one line ([`decode_into`]; the entry's fields are left
/// in the caller's `RawEntry`).
pub(crate) enum Decided {
    /// A valid entry line, and whether it holds an escape JavaScript's `JSON.stringify` would
    /// not write (as [`super::has_foreign_escape`]).
    Entry(bool),
    /// Not one JSON object under the full decode's rule.
    Malformed,
    /// Valid or not, the fast decode does not decide this line: decode it the slow way.
    Unsure,
}

/// Why the scan stopped early.
enum Stop {
    Bad,
    Unsure,
}

type R<T> = Result<T, Stop>;

/// [`decode_into`]'s outcome with the entry's fields (for tests).
#[cfg(test)]
#[allow(
    clippy::large_enum_variant,
    reason = "one per line, consumed at once: boxing would allocate per line"
)]
pub(crate) enum Light<'a> {
    Entry(RawEntry<'a>, bool),
    Malformed,
    Unsure,
}

/// Decode one line (without its `\n`), for tests.
#[cfg(test)]
pub(crate) fn decode(line: &[u8]) -> Light<'_> {
    let mut entry = RawEntry::default();
    match decode_into(line, &mut entry) {
        Decided::Entry(foreign) => Light::Entry(entry, foreign),
        Decided::Malformed => Light::Malformed,
        Decided::Unsure => Light::Unsure,
    }
}

/// Decode one line (without its `\n`), writing the entry's fields into `out` (a default
/// `RawEntry`) where they are decoded, not into a value returned and moved on: an entry's
/// fields are a few hundred bytes, and those moves were about a twentieth of a cold read of
/// a session of short lines. `out` holds nothing to use unless the answer is `Entry`.
pub(crate) fn decode_into<'a>(line: &'a [u8], out: &mut RawEntry<'a>) -> Decided {
    let mut p = Parser {
        b: line,
        i: 0,
        depth: 0,
        foreign: false,
        #[cfg(target_arch = "x86_64")]
        avx2: std::arch::is_x86_feature_detected!("avx2"),
    };
    let result = (|| {
        p.ws();
        if p.peek() != Some(b'{') {
            return Err(Stop::Bad);
        }
        p.entry(out)?;
        p.ws();
        if p.i != p.b.len() {
            return Err(Stop::Bad);
        }
        Ok(())
    })();
    match result {
        Ok(()) => Decided::Entry(p.foreign),
        Err(Stop::Bad) => Decided::Malformed,
        Err(Stop::Unsure) => Decided::Unsure,
    }
}

use super::skeleton::Key;

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Non-zero when one of the 8 bytes of `v` is `"`, `\`, below 0x20 or not ASCII (never zero
/// then; a non-zero value may also flag a byte after the first real one).
#[inline]
fn special(v: u64) -> u64 {
    let q = v ^ (LO * u64::from(b'"'));
    let s = v ^ (LO * u64::from(b'\\'));
    ((q.wrapping_sub(LO) & !q) | (s.wrapping_sub(LO) & !s) | v.wrapping_sub(LO * 0x20) | v) & HI
}

fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The index of the first `"`, `\`, control (< 0x20) or non-ASCII byte at or after `i`, or,
/// when there is none before the line's last 7 bytes, an index within them (the caller looks
/// at those one by one). Blocks of 64 bytes at a time with AVX2 (`avx2`: the processor has
/// it), then 16 with SSE2 (always on x86_64), then words of 8. The block scans pass over a
/// short escape (`\"` `\\` `\b` `\f` `\n` `\r` `\t`: valid, and nothing JavaScript would
/// not write) inside the block, setting `escaped`, instead of stopping at its backslash; any
/// other escape stops there.
#[inline]
fn next_special(b: &[u8], mut i: usize, escaped: &mut bool, avx2: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if avx2 {
            // Most strings (keys, ids, names) end within 16 bytes: one block of SSE2 (inlined)
            // before the call to the AVX2 loop.
            // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has it.
            match unsafe { next_special_sse2(b, i, (i + 16).min(b.len()), escaped) } {
                Ok(at) => return at,
                Err(at) => i = at,
            }
            // SAFETY: the caller checked that the processor has AVX2.
            match unsafe { next_special_avx2(b, i, escaped) } {
                Ok(at) => return at,
                Err(at) => i = at,
            }
        }
        // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has it.
        match unsafe { next_special_sse2(b, i, b.len(), escaped) } {
            Ok(at) => return at,
            Err(at) => i = at,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (escaped, avx2);
    // The lowest flagged byte of a word is always a real one.
    while i + 8 <= b.len() {
        let m = special(word(b, i));
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i
}

/// The flagged bytes (`mask`, bit `k` for `b[at + k]`) of a block of `width` bytes at `at`:
/// `Err` with the index of the first one that is not the backslash of a short escape, else
/// `Ok` with where the scan goes on (the block's end, or after an escape whose letter is
/// the byte after the block).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn settle(
    b: &[u8],
    at: usize,
    mut mask: u64,
    width: usize,
    escaped: &mut bool,
) -> Result<usize, usize> {
    while mask != 0 {
        let k = mask.trailing_zeros() as usize;
        let p = at + k;
        if b[p] != b'\\' {
            return Err(p);
        }
        match b.get(p + 1) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => {
                *escaped = true;
                if k + 1 >= width {
                    return Ok(p + 2);
                }
                // Bits 0..=k+1: the backslash and its letter (a `"` or `\\` is flagged too).
                mask &= !((2u64 << (k + 1)) - 1);
            }
            _ => return Err(p),
        }
    }
    Ok(at + width)
}

/// [`next_special`] by blocks of 64 bytes: `Ok` with the index of the first flagged byte
/// that is not part of a short escape, or `Err` with where fewer than 64 bytes remain
/// unscanned (or the backslash of an escape the last block cut in two).
///
/// Escapes are found without a branch per escape: which bytes a backslash escapes follows
/// from where each run of backslashes starts (an odd run escapes the byte after it), carried
/// from one block to the next. A block whose escaped bytes are all short-escape letters and
/// that holds no other flagged byte is passed over whole.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn next_special_avx2(b: &[u8], mut i: usize, escaped: &mut bool) -> Result<usize, usize> {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8,
    };
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    // A signed compare: bytes 0x80–0xff are negative, so "0x20 > byte" also flags them.
    let space = _mm256_set1_epi8(0x20);
    let letters = [b'b', b'f', b'n', b'r', b't'].map(|c| _mm256_set1_epi8(c as i8));
    // Masks of 32 bytes: backslashes, other flagged bytes (`"`, control, non-ASCII), and
    // the bytes a short escape may escape.
    let masks = |v: __m256i| -> (u64, u64, u64) {
        let bs = _mm256_cmpeq_epi8(v, backslash);
        let q = _mm256_cmpeq_epi8(v, quote);
        let other = _mm256_or_si256(q, _mm256_cmpgt_epi8(space, v));
        let mut ok = _mm256_or_si256(q, bs);
        for letter in letters {
            ok = _mm256_or_si256(ok, _mm256_cmpeq_epi8(v, letter));
        }
        let bits = |m| u64::from(_mm256_movemask_epi8(m) as u32);
        (bits(bs), bits(other), bits(ok))
    };
    // 1 when the byte before this block is a backslash that escapes this block's first byte.
    let mut carry = 0u64;
    while i + 64 <= b.len() {
        // SAFETY: `b[i..i + 64]` is in bounds; the loads are unaligned.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(b.as_ptr().add(i).cast::<__m256i>()),
                _mm256_loadu_si256(b.as_ptr().add(i + 32).cast::<__m256i>()),
            )
        };
        let ((bs_lo, other_lo, ok_lo), (bs_hi, other_hi, ok_hi)) = (masks(lo), masks(hi));
        let bs = bs_lo | bs_hi << 32;
        let other = other_lo | other_hi << 32;
        let ok = ok_lo | ok_hi << 32;
        // The bytes escaped by a backslash (simdjson's method): a backslash escaped itself
        // starts nothing; an odd run of backslashes escapes the byte after it.
        let starts = bs & !carry;
        let follows = starts << 1 | carry;
        let odd_starts = starts & !EVEN & !follows;
        let (sum, overflow) = odd_starts.overflowing_add(starts);
        let escaped_bytes = (EVEN ^ (sum << 1)) & follows;
        // Backslashes that start an escape, and escaped bytes that are not a short escape's.
        let escapes = bs & !escaped_bytes;
        let bad = escaped_bytes & !ok;
        let flagged = (other & !escaped_bytes) | bad;
        if flagged == 0 {
            if escapes != 0 {
                *escaped = true;
            }
            carry = u64::from(overflow);
            i += 64;
            continue;
        }
        let k = flagged.trailing_zeros() as usize;
        if escapes & ((1u64 << k) - 1) != 0 {
            *escaped = true;
        }
        // A bad escape stops at its backslash (the byte before; the one before the block
        // when `k` is 0 and the escape was carried), for the scalar scan to judge it.
        return Ok(if bad >> k & 1 == 1 { i + k - 1 } else { i + k });
    }
    // An escape cut by the block's end: go on from its backslash.
    Err(if carry == 1 { i - 1 } else { i })
}

/// [`next_special`] by blocks of 16 bytes up to `end`: `Ok` with the index of the first
/// flagged byte that is not a short escape's backslash, or `Err` with where fewer than 16
/// bytes remain unscanned before `end`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn next_special_sse2(
    b: &[u8],
    mut i: usize,
    end: usize,
    escaped: &mut bool,
) -> Result<usize, usize> {
    debug_assert!(end <= b.len());
    while i + 16 <= end {
        // SAFETY: `b[i..i + 16]` is in bounds (`end` is at most the length).
        let mask = u64::from(unsafe { flagged_sse2(b, i) });
        if mask == 0 {
            i += 16;
            continue;
        }
        match settle(b, i, mask, 16, escaped) {
            Ok(next) => i = next,
            Err(at) => return Ok(at),
        }
    }
    Err(i)
}

/// Bit `k` set when `b[at + k]` (of 16) is `"`, `\\`, a control byte or not ASCII.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn flagged_sse2(b: &[u8], at: usize) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    debug_assert!(at + 16 <= b.len());
    // SAFETY (caller): `b[at..at + 16]` is in bounds; the load is unaligned.
    unsafe {
        let v = _mm_loadu_si128(b.as_ptr().add(at).cast::<__m128i>());
        // A signed compare: bytes 0x80–0xff are negative, so "< 0x20" also flags them.
        let hits = _mm_or_si128(
            _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
            ),
            _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
        );
        _mm_movemask_epi8(hits) as u32
    }
}

/// The index of the first byte at or after `i` that is not an ASCII digit (or the length),
/// eight bytes at a time: most numbers of a line (token counts, costs, times in
/// milliseconds) are several digits long, and numbers took ≈ 8 % of the light
/// decode's instructions on a session of short lines, a byte at a time.
#[inline]
fn digits_end(b: &[u8], mut i: usize) -> usize {
    while i + 8 <= b.len() {
        // Per byte, `t` is its distance above `0`: a digit's is 0–9, which neither has the
        // high bit set nor reaches it by adding 0x76; any other byte's does one or the other.
        // A borrow or carry only crosses into bytes above a non-digit, so the lowest flagged
        // byte is the first non-digit.
        let t = word(b, i).wrapping_sub(LO * u64::from(b'0'));
        let non_digits = (t | t.wrapping_add(LO * 0x76)) & HI;
        if non_digits != 0 {
            return i + (non_digits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    /// Arrays/objects open around the current position.
    depth: usize,
    /// An escape JavaScript would not write was seen.
    foreign: bool,
    /// The processor has AVX2 (the string scan takes 32 bytes at once).
    #[cfg(target_arch = "x86_64")]
    avx2: bool,
}

impl<'a> Parser<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Skip whitespace, then require `byte`.
    #[inline]
    fn expect(&mut self, byte: u8) -> R<()> {
        self.ws();
        if self.peek() == Some(byte) {
            self.i += 1;
            Ok(())
        } else {
            Err(Stop::Bad)
        }
    }

    /// Skip a string (at its opening quote), validating it; returns its raw contents (between
    /// the quotes) and whether it holds an escape.
    ///
    /// Inlined where it is called: most strings (keys, ids, names, roles) are a few plain
    /// bytes, ended within one block of 16, and take no call; the others go on in
    /// [`Parser::string_from`] from the first byte the block flagged.
    #[inline(always)]
    fn string(&mut self) -> R<(&'a [u8], bool)> {
        let start = self.i + 1;
        #[cfg(target_arch = "x86_64")]
        if start + 16 <= self.b.len() {
            // SAFETY: SSE2 is part of the x86_64 baseline; `start + 16` is in bounds.
            let flagged = unsafe { flagged_sse2(self.b, start) };
            if flagged == 0 {
                return self.string_from(start, start + 16);
            }
            let end = start + flagged.trailing_zeros() as usize;
            if self.b[end] == b'"' {
                self.i = end + 1;
                return Ok((&self.b[start..end], false));
            }
            return self.string_from(start, end);
        }
        self.string_from(start, start)
    }

    /// [`Parser::string`] from `i`: the string's bytes start at `start` and hold no flagged
    /// byte before `i`.
    #[inline(never)]
    fn string_from(&mut self, start: usize, mut i: usize) -> R<(&'a [u8], bool)> {
        let b = self.b;
        let mut escaped = false;
        #[cfg(target_arch = "x86_64")]
        let avx2 = self.avx2;
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        loop {
            i = next_special(b, i, &mut escaped, avx2);
            let Some(&c) = b.get(i) else {
                return Err(Stop::Bad);
            };
            match c {
                b'"' => {
                    self.i = i + 1;
                    return Ok((&b[start..i], escaped));
                }
                b'\\' => {
                    escaped = true;
                    i = self.escape(i + 1)?;
                }
                0..0x20 => return Err(Stop::Bad),
                // A run of non-ASCII bytes must be valid UTF-8 (its sequences hold no ASCII
                // byte, so the string is valid UTF-8 exactly when each such run is).
                0x80.. => {
                    let run = b[i..].iter().take_while(|&&c| c >= 0x80).count();
                    if std::str::from_utf8(&b[i..i + run]).is_err() {
                        return Err(Stop::Bad);
                    }
                    i += run;
                }
                // Only in the last 7 bytes of the line, which are scanned one by one.
                _ => i += 1,
            }
        }
    }

    /// Validate the escape whose letter is at `at`; returns the index after it.
    #[inline]
    fn escape(&mut self, at: usize) -> R<usize> {
        match self.b.get(at) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(at + 1),
            Some(b'/') => {
                self.foreign = true;
                Ok(at + 1)
            }
            Some(b'u') => {
                let hex = self.b.get(at + 1..at + 5).ok_or(Stop::Bad)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return Err(Stop::Bad);
                }
                // JavaScript writes only U+0000–U+001F as `\u00XX`, and not those it writes
                // short (\b \t \n \f \r).
                let own = hex[0] == b'0'
                    && hex[1] == b'0'
                    && matches!(hex[2], b'0' | b'1')
                    && !(hex[2] == b'0'
                        && matches!(
                            hex[3].to_ascii_lowercase(),
                            b'8' | b'9' | b'a' | b'c' | b'd'
                        ));
                if !own {
                    self.foreign = true;
                }
                Ok(at + 5)
            }
            _ => Err(Stop::Bad),
        }
    }

    /// A key (at its opening quote) and its `:`.
    fn key(&mut self) -> R<Key> {
        let (raw, escaped) = self.string()?;
        if escaped {
            return Err(Stop::Unsure);
        }
        self.expect(b':')?;
        self.ws();
        Ok(Key::of(raw))
    }

    /// Iterate the members of an object (at its `{`), calling `member` with each key, the
    /// parser positioned at the value (whitespace skipped); `member` must consume the value.
    #[inline]
    fn object(&mut self, member: impl FnMut(&mut Self, Key) -> R<()>) -> R<()> {
        self.members(Self::key, member)
    }

    /// Skip an object (at its `{`), validating it: its keys are not classified (most keys
    /// of a line are in objects no field is read from), and one with an escape is valid
    /// here like any other string.
    fn skip_object(&mut self) -> R<()> {
        let key = |p: &mut Self| {
            p.string()?;
            p.expect(b':')?;
            p.ws();
            Ok(())
        };
        self.members(key, |p, ()| p.skip())
    }

    /// [`Parser::object`] with the keys read by `key` (at the key's opening quote, through
    /// its `:` and the whitespace after it).
    #[inline]
    fn members<K>(
        &mut self,
        mut key: impl FnMut(&mut Self) -> R<K>,
        mut member: impl FnMut(&mut Self, K) -> R<()>,
    ) -> R<()> {
        self.open()?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(Stop::Bad);
            }
            let key = key(self)?;
            member(self, key)?;
            if !self.comma_or_close(b'}')? {
                return Ok(());
            }
        }
    }

    /// Iterate the elements of an array (at its `[`), `element` consuming each.
    #[inline]
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> R<()>) -> R<()> {
        self.open()?;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            element(self)?;
            if !self.comma_or_close(b']')? {
                return Ok(());
            }
        }
    }

    /// After a member or element: `true` past a `,` (another one follows), `false` past
    /// `close` (the container ended; its depth is counted back).
    #[inline]
    fn comma_or_close(&mut self, close: u8) -> R<bool> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.i += 1;
                self.ws();
                Ok(true)
            }
            Some(c) if c == close => {
                self.i += 1;
                self.depth -= 1;
                Ok(false)
            }
            _ => Err(Stop::Bad),
        }
    }

    /// Step over an opening `{`/`[`, counting the depth.
    #[inline]
    fn open(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Stop::Bad);
        }
        self.i += 1;
        Ok(())
    }

    /// Skip any value (whitespace before it already skipped), validating it.
    fn skip(&mut self) -> R<()> {
        match self.peek() {
            Some(b'"') => self.string().map(drop),
            Some(b'{') => self.skip_object(),
            Some(b'[') => self.array(Self::skip),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number().map(drop),
            _ => Err(Stop::Bad),
        }
    }

    fn literal(&mut self, word: &[u8]) -> R<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Stop::Bad)
        }
    }

    /// Skip a number, validating its grammar; returns its text. One that might not be a
    /// finite `f64` (an exponent or many digits) is checked by serde_json itself.
    fn number(&mut self) -> R<&'a [u8]> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let int_start = i;
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits_end(b, i),
            _ => return Err(Stop::Bad),
        }
        let int_digits = i - int_start;
        if b.get(i) == Some(&b'.') {
            let at = i + 1;
            i = digits_end(b, at);
            if i == at {
                return Err(Stop::Bad);
            }
        }
        let mut exponent = false;
        if let Some(b'e' | b'E') = b.get(i) {
            exponent = true;
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let at = i;
            i = digits_end(b, at);
            if i == at {
                return Err(Stop::Bad);
            }
        }
        self.i = i;
        let text = &b[start..i];
        // Without an exponent, fewer than 300 integer digits are far below f64::MAX.
        if (exponent || int_digits >= 300) && !finite(text) {
            return Err(Stop::Bad);
        }
        Ok(text)
    }

    /// A string value borrowed from the line (other JSON types read as absent); a string with
    /// an escape is left to the slow decode.
    fn loose_str(&mut self) -> R<Option<&'a str>> {
        if self.peek() != Some(b'"') {
            self.skip()?;
            return Ok(None);
        }
        let (raw, escaped) = self.string()?;
        if escaped {
            return Err(Stop::Unsure);
        }
        debug_assert!(std::str::from_utf8(raw).is_ok());
        // SAFETY: `string` accepted `raw`, so it is valid UTF-8: its ASCII bytes are, and it
        // checked every run of non-ASCII bytes (sequences hold no ASCII byte, so the runs
        // are whole sequences). Checking again cost ≈ 4 % of a cold read's instructions (one
        // call per extracted field).
        Ok(Some(unsafe { std::str::from_utf8_unchecked(raw) }))
    }

    fn loose_string(&mut self) -> R<Option<CompactString>> {
        Ok(self.loose_str()?.map(CompactString::from))
    }

    fn loose_name(&mut self) -> R<Option<Cow<'a, str>>> {
        Ok(self.loose_str()?.map(Cow::Borrowed))
    }

    /// `version`: a small non-negative integer; anything else numeric is left to the slow
    /// decode, other types read as absent.
    fn loose_u64(&mut self) -> R<Option<u64>> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => {
                let text = self.number()?;
                if text.len() > 18 || !text.iter().all(u8::is_ascii_digit) {
                    return Err(Stop::Unsure);
                }
                Ok(Some(
                    text.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')),
                ))
            }
            _ => self.skip().map(|()| None),
        }
    }

    fn entry(&mut self, entry: &mut RawEntry<'a>) -> R<()> {
        self.object(|p, key| {
            match key {
                Key::Type => entry.kind = p.loose_name()?,
                Key::Id => entry.id = p.loose_name()?,
                Key::ParentId => entry.parent_id = p.loose_name()?,
                Key::Timestamp => entry.timestamp = p.loose_name()?,
                Key::CustomType => entry.custom_type = p.loose_string()?,
                Key::Data => entry.data_window_id = p.data()?,
                Key::Message => p.message(&mut entry.message)?,
                Key::Version => {
                    entry.version_present = true;
                    entry.version = p.loose_u64()?;
                }
                _ => p.skip()?,
            }
            Ok(())
        })
    }

    /// `data`: only `windowId` of an object.
    fn data(&mut self) -> R<Option<CompactString>> {
        if self.peek() != Some(b'{') {
            self.skip()?;
            return Ok(None);
        }
        let mut window_id = None;
        self.object(|p, key| {
            if key == Key::WindowId {
                window_id = p.loose_string()?;
                Ok(())
            } else {
                p.skip()
            }
        })?;
        Ok(window_id)
    }

    /// `message` (a later one replaces an earlier one, as in a full decode).
    fn message(&mut self, out: &mut Option<RawMessage<'a>>) -> R<()> {
        if self.peek() != Some(b'{') {
            *out = None;
            return self.skip();
        }
        let message = out.insert(RawMessage::default());
        self.object(|p, key| {
            match key {
                Key::Role => message.role = p.loose_name()?,
                Key::Content => message.content = p.content()?,
                Key::ToolCallId => {
                    let at = u32::try_from(p.i + 1).ok();
                    message.tool_call_id = p.loose_string()?;
                    message.tool_call_id_at = at.filter(|_| message.tool_call_id.is_some());
                }
                Key::ToolName => message.tool_name = p.loose_string()?,
                Key::NestedCalls => {
                    message.has_nested_calls = true;
                    p.skip()?;
                }
                _ => p.skip()?,
            }
            Ok(())
        })
    }

    fn content(&mut self) -> R<ContentMeta> {
        match self.peek() {
            Some(b'"') => {
                let (raw, _) = self.string()?;
                Ok(ContentMeta {
                    has_text: !raw.is_empty(),
                    ..ContentMeta::default()
                })
            }
            Some(b'[') => {
                let mut meta = ContentMeta {
                    is_array: true,
                    ..ContentMeta::default()
                };
                let mut text_blocks = 0usize;
                self.array(|p| {
                    if p.peek() != Some(b'{') {
                        return p.skip();
                    }
                    let mut kind: Option<&'a str> = None;
                    let mut id = None;
                    let mut name = None;
                    let mut text: Option<bool> = None;
                    p.object(|p, key| {
                        match key {
                            Key::Type => kind = p.loose_str()?,
                            // Borrowed: only a `toolCall` block's are kept.
                            Key::Id => id = p.loose_str()?,
                            Key::Name => name = p.loose_str()?,
                            Key::Text => {
                                text = if p.peek() == Some(b'"') {
                                    Some(!p.string()?.0.is_empty())
                                } else {
                                    p.skip()?;
                                    None
                                }
                            }
                            _ => p.skip()?,
                        }
                        Ok(())
                    })?;
                    match kind {
                        Some("text") => {
                            if let Some(non_empty) = text {
                                text_blocks += 1;
                                meta.has_text |= non_empty;
                            }
                        }
                        Some("toolCall") => {
                            // Most messages make one call: room for exactly one, so the
                            // entry's vector needs no shrinking realloc (`entry_from_raw`
                            // shrinks it to fit).
                            if meta.tool_calls.capacity() == 0 {
                                meta.tool_calls.reserve_exact(1);
                            }
                            meta.tool_calls.push(ToolCallMeta {
                                id: id.map(CompactString::from),
                                name: name.map(CompactString::from),
                            })
                        }
                        _ => {}
                    }
                    Ok(())
                })?;
                // Joined with "\n": two or more text blocks are never an empty text.
                meta.has_text |= text_blocks >= 2;
                Ok(meta)
            }
            _ => self.skip().map(|()| ContentMeta::default()),
        }
    }
}

/// Whether serde_json's full decode reads the number `text` as a finite value.
fn finite(text: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(line: &str) -> &'static str {
        match decode(line.as_bytes()) {
            Light::Entry(..) => "entry",
            Light::Malformed => "malformed",
            Light::Unsure => "unsure",
        }
    }

    #[test]
    fn the_common_line_is_decided_here() {
        let line = r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[{"type":"text","text":"x\ny"},{"type":"toolCall","id":"c","name":"bash","arguments":{"n":1.5e-7,"s":"a\/b"}}],"usage":{"cost":0.25}}}"#;
        let Light::Entry(entry, foreign) = decode(line.as_bytes()) else {
            panic!("not decided");
        };
        assert!(foreign, "\\/ is not JavaScript's");
        assert_eq!(entry.kind.as_deref(), Some("message"));
        let message = entry.message.unwrap();
        assert_eq!(
            message.content.call_pairs(),
            vec![(Some("c"), Some("bash"))]
        );
        assert!(message.content.has_text);
    }

    #[test]
    fn what_the_full_decode_refuses_is_malformed() {
        for line in [
            "{\"a\":1e400}",
            "{\"a\":\"\u{1}\"}",
            "{\"a\":01}",
            "{\"a\":1.}",
            "{\"a\":[1,]}",
            "{\"a\":1,}",
            "{\"a\":\"\\x\"}",
            "[1]",
            "{} x",
        ] {
            assert_eq!(verdict(line), "malformed", "{line}");
            assert!(super::super::parse_value(line.as_bytes()).is_none_or(|v| !v.is_object()));
        }
        assert!(matches!(decode(b"{\"a\":\"\xff\"}"), Light::Malformed));
    }

    /// Every byte value at every offset of a word, after runs of digits of every length.
    #[test]
    fn the_digits_end_where_a_byte_at_a_time_says() {
        for before in 0..20 {
            for byte in 0..=255u8 {
                for after in 0..10 {
                    let line =
                        [&b"7".repeat(before)[..], &[byte], &b"3".repeat(after)[..]].concat();
                    for from in 0..=before {
                        let mut i = from;
                        while line.get(i).is_some_and(u8::is_ascii_digit) {
                            i += 1;
                        }
                        assert_eq!(digits_end(&line, from), i, "{line:?} from {from}");
                    }
                }
            }
        }
    }

    /// Values no field is read from are skipped without reading their keys, and must be
    /// judged as the full decode judges them: brackets that do not pair, members
    /// without keys or values, stray commas, and nesting up to and past the limit.
    #[test]
    fn skipped_values_are_judged_as_the_full_decode_judges_them() {
        let deep = |n: usize| ["[".repeat(n), "]".repeat(n)].concat();
        let deep_objects = |n: usize| ["{\"k\":".repeat(n), "1".into(), "}".repeat(n)].concat();
        let mut values: Vec<String> = [
            "[]",
            "{}",
            "[[],{}]",
            "{\"a\":{}}",
            " [ 1 , { \"a\" : [ ] } ] ",
            "{\"a\\\"b\":1}",
            "[{\"a\":1]}",
            "{\"a\":[1}]",
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\":}",
            "{,}",
            "[,1]",
            "{\"a\":1,\"b\"}",
            "{1:2}",
            "[tru]",
            "[nul]",
            "[-]",
            "{\"a\":1}}",
            "[[]",
            "[1,]",
            "{\"a\":1,}",
            "[\"x\"\"y\"]",
            "{\"a\":[true,false,null,-0.5e3,\"\\u00e9\"]}",
        ]
        .map(String::from)
        .to_vec();
        // The line's object and `usage` hold the value at depth 2.
        values.extend([
            deep(125),
            deep(126),
            deep(127),
            deep_objects(126),
            deep_objects(127),
        ]);
        for value in values {
            let line = format!("{{\"type\":\"x\",\"usage\":{value},\"id\":\"a\"}}");
            let valid = super::super::parse_value(line.as_bytes()).is_some_and(|v| v.is_object());
            let expected = if valid { "entry" } else { "malformed" };
            assert_eq!(verdict(&line), expected, "{value}");
        }
    }

    #[test]
    fn escaped_fields_and_odd_versions_go_the_slow_way() {
        assert_eq!(verdict(r#"{"id":"a\u0062"}"#), "unsure");
        assert_eq!(verdict(r#"{"t\u0079pe":"x"}"#), "unsure");
        assert_eq!(verdict(r#"{"version":3.0}"#), "unsure");
        assert_eq!(verdict(r#"{"other":"a\u0062\ud800"}"#), "entry");
    }
}
