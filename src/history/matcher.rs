//! Query matching for `history-search` (docs/spec/history.md §14.2): each query is a literal matched
//! case-insensitively by Unicode simple case folding on the original document text, several
//! queries ORed, leftmost match wins. The regex crate's `(?i)` uses simple case folding, the
//! same relation as JavaScript's `iu` flags, and its leftmost-first alternation gives the
//! smallest match start over all queries.
//!
//! It also owns the raw-line prefilter ([`Prefilter`]): a cheap test on a session line's bytes
//! that may say "maybe" but never "no" for an event whose document matches, so search decodes
//! only the lines that can matter.
//!
//! Why it is sound. A document is made of text copied from JSON strings of the entry's lines
//! (message text, summaries, tool names and output, argument keys and string values — inside
//! the re-serialised arguments the copy is the string's raw JSON form) and of text the
//! generator writes (separators and section headers, `(arguments not recorded)`, nested-call
//! lines, argument JSON punctuation, numbers re-printed JavaScript-style, `true`, `null`,
//! `[object Object]`, …). A line whose strings use an escape JavaScript would not write (`\/`,
//! `\u00e9`, a surrogate; see [`has_foreign_escape`]) is always a "maybe"; in any other line
//! a copied piece of text that holds no character JSON escapes (`"`, `\`, U+0000–U+001F) is a
//! verbatim run of the line's bytes. Three rules, by the kind of document:
//!
//! - *Text* documents (user, assistant and context text, summaries) are copied pieces joined
//!   by `\n`: a match of a query lies in one piece except at its `\n`s, so every part of the
//!   query between control characters lies in one copied piece. In a line without a foreign
//!   escape, a `"` of copied text is written `\"` and a `\` is written `\\` (the only forms
//!   left: `\u0022` and `\u005c` are foreign), so such a part, with `"` and `\` written so,
//!   is a verbatim run of the line ([`text_parts`]): `say "hi"` needs `say \"hi\"`, not the
//!   common `say ` and `hi` apart.
//! - *Tool* documents: every boundary between copied and generated text, and every character
//!   JSON escapes, is a *separator* (whitespace, controls, `"` `\` `{` `}` `[` `]` `:` `,` `(`
//!   `)`), so a *word* of the query (a separator-free run) lies in one separator-free run of
//!   the document, which is copied unless the word could be generated (number-like, or part
//!   of a generated word). Words that must be copied, joined by runs of separators JSON does
//!   not escape, form a *phrase* that lies in one copied piece — provided no generated run
//!   made only of such separators can sit between two copied characters, and no two copied
//!   pieces touch. Both hold in a tool document without nested calls (every generated run
//!   between copied pieces holds a `"`, a `\n`, a letter or a digit). Nested-call lines add
//!   ` [` (between a record's name and status) and commas (JavaScript's array display): so
//!   there a phrase may not join across a separator run holding `,` or ` [`, and the nested
//!   lines' own words (`error`, `complete`, …) are generated too ([`phrases`]).
//! - Whether a tool document has nested calls: its result line's message has a
//!   `nestedCalls` key. The decoders note it as they read the message's keys, and the index
//!   keeps it, so a tested line (`TestedLine::nested_calls`) and a stored projection's line
//!   (`Line::nested_calls`) say so; a line tested by itself without it (tests) is searched for
//!   the key's name (written with an escape, the line is a "maybe" anyway). The fact only
//!   counts when some query's nested rule differs from its plain one.
//!
//! Numbers are never words, so a non-canonical number (`1e21`, `1.0`) in a line cannot hide a
//! match. A tool call's document spans two lines (call and result), so each line yields the
//! set of literals it holds and an event is a candidate when, for some query, the union over
//! its lines holds every literal that query's rule requires for the event's kind.

use regex::{Regex, RegexBuilder};

use super::literal::Literal;
use crate::session::{LineMemo, NextHit, TestedLine};

/// Characters that end a word: whitespace, controls and the characters that JSON escapes or
/// that the document generator writes around copied text.
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(
            c,
            '"' | '\\' | '{' | '}' | '[' | ']' | ':' | ',' | '(' | ')'
        )
}

/// Characters JSON writes escaped inside a string (so never verbatim in a line).
fn is_json_escaped(c: char) -> bool {
    matches!(c, '"' | '\\') || u32::from(c) < 0x20
}

/// Words the document generator writes in any tool document (between separators); a word
/// inside one of them (case-insensitively) could match generated text.
const PLAIN_GENERATED_WORDS: &[&str] = &[
    "arguments",
    "not",
    "recorded",
    "output",
    "unknown",
    "bash",
    "null",
    "true",
    "false",
];

/// Words the generator writes only in nested-call lines and their header.
const NESTED_GENERATED_WORDS: &[&str] = &[
    "nested",
    "calls",
    "complete",
    "incomplete",
    "error",
    "omitted",
    "bytes",
    "undefined",
    "object",
];

/// The most literals tracked per line (one bit each); the top bit is the nested-call probe.
const MAX_LITERALS: usize = 63;
/// The bit of the `nestedCalls` probe in a line mask.
const NESTED_BIT: u64 = 1 << 63;

/// A compiled query.
#[derive(Debug)]
pub struct Matcher {
    /// Compiled on first use when the pattern is short (a search whose prefilter leaves no
    /// candidate never needs it); a long one is compiled by [`Matcher::new`], which refuses
    /// one too large.
    document: std::sync::OnceLock<Regex>,
    pattern: String,
    prefilter: Option<Prefilter>,
}

/// Document patterns up to this many bytes compile on first use (an alternation of escaped
/// literals this short always fits the size limit).
const LAZY_PATTERN_MAX_BYTES: usize = 4096;

/// The document regex of `pattern` (an alternation of escaped queries).
fn document_regex(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .size_limit(64 << 20)
        .build()
}

/// Which rule of the prefilter an event's document follows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    /// User, assistant and context text, summaries: copied pieces joined by `\n`.
    Text,
    /// Tool calls, results and bash runs.
    Tool,
}

/// The literal bits one query requires, per rule (0: no literal, every such event may match).
#[derive(Debug, Clone, Copy)]
struct Need {
    text: u64,
    plain: u64,
    nested: u64,
}

/// One search of a scan ([`Prefilter::keyed_scans`]).
#[derive(Clone)]
pub(crate) struct KeyedScan<'p> {
    /// The bit a hit sets in a line mask.
    pub bit: u64,
    /// What the memo of hits names it by.
    pub key: String,
    pub literal: &'p Literal,
    /// The bit of the longest other literal this one contains, when there is one.
    pub within: Option<u64>,
}

/// The raw-line test of a query set: case-insensitive literals, each a bit of a line mask.
#[derive(Debug)]
pub struct Prefilter {
    literals: Vec<(String, Literal)>,
    /// The literals in the order a line is tested for them, each with the longest other
    /// literal it contains: a line without that one cannot hold it (a case-folded match of a
    /// text is one of each of its parts), so it is not searched for (`fn main()` and the
    /// `fn main` its tool documents need, on every line of a cold search).
    tests: Vec<(usize, Option<usize>)>,
    /// The `nestedCalls` probe, when some query's nested rule differs from its plain one.
    nested: Option<Literal>,
    queries: Vec<Need>,
    /// Per query, the nested rule's phrases that have no bit (looked for only in the lines
    /// of a candidate event with nested calls); empty without the probe.
    untracked: Vec<Vec<Literal>>,
    /// Every literal bit.
    all: u64,
}

impl Matcher {
    /// Compile non-empty literal queries. `Err` when the pattern is too large to compile.
    pub fn new(queries: &[String]) -> Result<Matcher, String> {
        let pattern = queries
            .iter()
            .map(|q| regex::escape(q))
            .collect::<Vec<_>>()
            .join("|");
        let document = std::sync::OnceLock::new();
        if pattern.len() > LAZY_PATTERN_MAX_BYTES {
            let _ = document.set(document_regex(&pattern).map_err(|e| e.to_string())?);
        }
        let prefilter = Prefilter::new(queries);
        Ok(Matcher {
            document,
            pattern,
            prefilter,
        })
    }

    /// The byte offset of the leftmost match in `document`.
    #[allow(
        clippy::expect_used,
        reason = "a pattern of at most LAZY_PATTERN_MAX_BYTES compiles; longer ones were compiled in new"
    )]
    pub fn find(&self, document: &str) -> Option<usize> {
        self.document
            .get_or_init(|| document_regex(&self.pattern).expect("a short pattern compiles"))
            .find(document)
            .map(|m| m.start())
    }

    /// The raw-line prefilter, when some query requires a literal of some rule.
    pub fn prefilter(&self) -> Option<&Prefilter> {
        self.prefilter.as_ref()
    }

    /// Whether the prefilter can be used at all for this query.
    pub fn has_prefilter(&self) -> bool {
        self.prefilter.is_some()
    }
}

/// Whether `piece` could lie inside a number as the document prints it (JavaScript form,
/// possibly followed by `ms`): `[-+.0-9e]*` then `m`, `ms` or `s`, case-insensitively (`ſ`
/// folds to `s`).
fn number_like(piece: &str) -> bool {
    let folded: Vec<char> = piece
        .chars()
        .map(|c| {
            if c == 'ſ' {
                's'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let body = match folded.as_slice() {
        [rest @ .., 'm', 's'] | [rest @ .., 'm'] | [rest @ .., 's'] => rest,
        all => all,
    };
    body.iter()
        .all(|c| matches!(c, '-' | '+' | '.' | 'e' | '0'..='9'))
}

/// Whether `word` may be copied text only (not number-like, not inside a generated word of
/// `generated`, case-insensitively).
fn must_be_copied(word: &str, generated: &[&[&str]]) -> bool {
    if number_like(word) {
        return false;
    }
    // The generated words are ASCII: an ASCII word's case-insensitive matches in them are
    // its ASCII ones (`k` and `s` have non-ASCII variants, which these words do not hold).
    if word.is_ascii() {
        let word = word.to_ascii_lowercase();
        return !generated
            .iter()
            .flat_map(|g| g.iter())
            .any(|w| w.to_ascii_lowercase().contains(&word));
    }
    // A word too large to compile is simply not required (still sound).
    let Ok(inside) = RegexBuilder::new(&regex::escape(word))
        .case_insensitive(true)
        .build()
    else {
        return false;
    };
    !generated
        .iter()
        .flat_map(|g| g.iter())
        .any(|w| inside.is_match(w))
}

/// The text rule's literals of one query: its parts between control characters, with `"`
/// and `\` escaped as JSON writes them.
pub fn text_parts(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in query
        .split(|c: char| u32::from(c) < 0x20)
        .filter(|p| !p.is_empty())
    {
        let part = part.replace('\\', "\\\\").replace('"', "\\\"");
        if !out.contains(&part) {
            out.push(part);
        }
    }
    out
}

/// The tool rule's literals of one query: runs of words that must be copied, joined by
/// separator runs a phrase may cross (`nested`: no `,`, no ` [`). A word that could be
/// generated ends a phrase; separators before the first and after the last word are not part
/// of it.
pub fn phrases(query: &str, nested: bool) -> Vec<String> {
    let generated: &[&[&str]] = if nested {
        &[PLAIN_GENERATED_WORDS, NESTED_GENERATED_WORDS]
    } else {
        &[PLAIN_GENERATED_WORDS]
    };
    let joinable = |run: &str| !nested || !(run.contains(',') || run.contains(" ["));
    let mut out: Vec<String> = Vec::new();
    let push = |out: &mut Vec<String>, phrase: &str| {
        if !phrase.is_empty() && !out.iter().any(|f| f == phrase) {
            out.push(phrase.to_string());
        }
    };
    for segment in query.split(is_json_escaped) {
        // Runs of separators and of word characters, in order.
        let mut runs: Vec<(bool, &str)> = Vec::new();
        let mut start = 0;
        let mut kind = None;
        for (i, c) in segment.char_indices() {
            let word = !is_separator(c);
            if kind.is_some_and(|k| k != word) {
                runs.push((kind.unwrap_or(false), &segment[start..i]));
                start = i;
            }
            kind = Some(word);
        }
        if let Some(k) = kind {
            runs.push((k, &segment[start..]));
        }
        // The phrase being built, as a byte range of `segment`.
        let mut phrase: Option<(usize, usize)> = None;
        let mut joiner_ok = false;
        let offset = |run: &str| run.as_ptr() as usize - segment.as_ptr() as usize;
        for (word, run) in runs {
            let at = offset(run);
            if !word {
                joiner_ok = phrase.is_some() && joinable(run);
                continue;
            }
            if !must_be_copied(run, generated) {
                if let Some((a, b)) = phrase.take() {
                    push(&mut out, &segment[a..b]);
                }
                joiner_ok = false;
                continue;
            }
            phrase = match phrase {
                Some((a, _)) if joiner_ok => Some((a, at + run.len())),
                Some((a, b)) => {
                    push(&mut out, &segment[a..b]);
                    Some((at, at + run.len()))
                }
                None => Some((at, at + run.len())),
            };
            joiner_ok = false;
        }
        if let Some((a, b)) = phrase {
            push(&mut out, &segment[a..b]);
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.len()));
    out
}

/// The order [`Prefilter::line_mask`] tests the literals in (shorter first), each with the
/// longest other literal it contains (tested before it). Containment ignores ASCII case: an
/// ASCII letter and its other case fold alike, so a case-folded match of the longer literal
/// holds one of the shorter; any other character must be equal.
fn literal_tests(literals: &[(String, Literal)]) -> Vec<(usize, Option<usize>)> {
    let folded: Vec<String> = literals
        .iter()
        .map(|(text, _)| text.to_ascii_lowercase())
        .collect();
    let mut order: Vec<usize> = (0..literals.len()).collect();
    order.sort_by_key(|&i| (folded[i].len(), i));
    order
        .iter()
        .map(|&i| {
            let within = order
                .iter()
                .copied()
                .take_while(|&j| j != i)
                .filter(|&j| folded[i].contains(folded[j].as_str()))
                .max_by_key(|&j| folded[j].len());
            (i, within)
        })
        .collect()
}

impl Prefilter {
    /// `None` when no query requires any literal under any rule (everything may match).
    fn new(queries: &[String]) -> Option<Prefilter> {
        let mut literals: Vec<(String, Literal)> = Vec::new();
        // The bit of `literal`, compiling it when new; `None` when it cannot be tracked
        // (requiring fewer literals is still sound).
        let mut bit = |literal: &str, add: bool| -> Option<u64> {
            if let Some(i) = literals.iter().position(|(f, _)| f == literal) {
                return Some(1 << i);
            }
            if !add || literals.len() >= MAX_LITERALS {
                return None;
            }
            let found = Literal::new(literal, true)?;
            literals.push((literal.to_string(), found));
            Some(1 << (literals.len() - 1))
        };
        let mut needs = Vec::new();
        for query in queries {
            let mut need = Need {
                text: 0,
                plain: 0,
                nested: 0,
            };
            for part in text_parts(query) {
                need.text |= bit(&part, true).unwrap_or(0);
            }
            for phrase in phrases(query, false) {
                need.plain |= bit(&phrase, true).unwrap_or(0);
            }
            needs.push((query, need));
        }
        // The nested rule's bits are only literals already scanned for the other rules; its
        // other phrases are looked for in the lines of a candidate event only
        // ([`Prefilter::candidate_in_lines`]). Tracking them as literals too was measured and
        // not kept (docs/architecture.md): `cannot`, which `error: cannot` needs in a tool
        // document with nested calls, is slower to search for in every line than
        // `error: cannot`, which is then only looked for where `cannot` is.
        let mut untracked: Vec<Vec<Literal>> = Vec::with_capacity(needs.len());
        let mut needs: Vec<Need> = needs
            .into_iter()
            .map(|(query, mut need)| {
                let mut rest = Vec::new();
                for phrase in phrases(query, true) {
                    match bit(&phrase, false) {
                        Some(b) => need.nested |= b,
                        // A phrase too large to compile is simply not required.
                        None => rest.extend(Literal::new(&phrase, true)),
                    }
                }
                untracked.push(rest);
                need
            })
            .collect();
        if literals.is_empty() {
            return None;
        }
        let probe = needs.iter().any(|n| n.nested != n.plain);
        let nested = if probe {
            Literal::new("nestedCalls", false)
        } else {
            // Without the probe every tool document is judged by the (equal) plain rule.
            for need in &mut needs {
                need.nested = need.plain;
            }
            untracked.iter_mut().for_each(Vec::clear);
            None
        };
        let all = needs.iter().fold(0, |a, n| a | n.text | n.plain | n.nested);
        let tests = literal_tests(&literals);
        Some(Prefilter {
            literals,
            tests,
            nested,
            queries: needs,
            untracked,
            all,
        })
    }

    /// The literals this line may hold, as bits (and the nested-call probe's): every bit when
    /// the line's strings could read differently in a document than in its bytes (an escape
    /// other than JavaScript's own: `escapes`, the line's [`has_foreign_escape`], which the
    /// session decode finds for every line anyway).
    ///
    /// Each literal is searched for in the line and the whole lines after it at once; `memo`
    /// (one per reader, which hands lines in file order) keeps where the next line holding it
    /// is, so the lines up to it are not searched again.
    pub fn line_mask(&self, line: &TestedLine<'_>, memo: &mut LineMemo) -> u64 {
        let probe = self.literals.len();
        if memo.len() != probe + 1 {
            memo.clear();
            memo.resize(probe + 1, NextHit::Unknown);
        }
        let mut mask = 0u64;
        for &(i, within) in &self.tests {
            if within.is_none_or(|j| mask >> j & 1 == 1)
                && holds(&self.literals[i].1, line, &mut memo[i])
            {
                mask |= 1 << i;
            }
        }
        if let Some(nested) = &self.nested {
            mask |= match line.nested_calls {
                Some(known) => self.nested_bits(known),
                None if holds(nested, line, &mut memo[probe]) => NESTED_BIT,
                None => 0,
            };
        }
        if mask & self.all != self.all && line.escapes {
            return u64::MAX;
        }
        mask
    }

    /// Whether an event whose document is of `kind` and whose lines hold `mask` (their masks
    /// ORed) may match.
    pub fn candidate(&self, kind: DocKind, mask: u64) -> bool {
        self.queries.iter().any(|need| {
            let q = match kind {
                DocKind::Text => need.text,
                // Without the probe, `nested` equals `plain`.
                DocKind::Tool if mask & NESTED_BIT != 0 => need.nested,
                DocKind::Tool => need.plain,
            };
            mask & q == q
        })
    }

    /// Whether [`Prefilter::candidate_in_lines`] can refuse a candidate of `kind` whose lines
    /// hold `mask`: a tool document with nested calls, for a query whose nested rule needs a
    /// phrase that has no bit.
    pub fn rests_on_lines(&self, kind: DocKind, mask: u64) -> bool {
        kind == DocKind::Tool
            && mask != u64::MAX
            && mask & NESTED_BIT != 0
            && self.untracked.iter().any(|rest| !rest.is_empty())
    }

    /// [`Prefilter::candidate`], with the nested rule's phrases that have no bit looked for
    /// in `lines`, the event's lines (the call's and its result's), none of which may hold an
    /// escape JavaScript would not write (its document could then differ from its bytes).
    pub fn candidate_in_lines(&self, kind: DocKind, mask: u64, lines: &[Vec<u8>]) -> bool {
        self.queries
            .iter()
            .zip(&self.untracked)
            .any(|(need, rest)| {
                let (q, nested) = match kind {
                    DocKind::Text => (need.text, false),
                    DocKind::Tool if mask & NESTED_BIT != 0 => (need.nested, true),
                    DocKind::Tool => (need.plain, false),
                };
                mask & q == q
                    && (!nested
                        || rest
                            .iter()
                            .all(|phrase| lines.iter().any(|line| phrase.is_match(line))))
            })
    }

    /// What a scan searches for: each case-insensitive literal, with the bit a hit sets.
    pub(crate) fn scans(&self) -> impl Iterator<Item = (u64, &Literal)> {
        self.literals
            .iter()
            .enumerate()
            .map(|(i, (_, r))| (1u64 << i, r))
    }

    /// The bits a line's nested-call fact adds to its mask: the probe's bit when the line has
    /// nested calls ([`TestedLine::nested_calls`], `Line::nested_calls`) and some query's
    /// nested rule differs from its plain one. Scans of the lines' bytes ([`Prefilter::scans`])
    /// leave the probe to this.
    pub(crate) fn nested_bits(&self, nested_calls: bool) -> u64 {
        if nested_calls && self.nested.is_some() {
            NESTED_BIT
        } else {
            0
        }
    }

    /// [`Prefilter::scans`], each with a key naming exactly what its regex matches (the
    /// memo of hits in `scan` is keyed by it): `i:` and the literal. A change to how these
    /// regexes are built must change the memo's format version.
    ///
    /// The literals come in the order a line is tested for them (shorter first), each with the
    /// bit of the longest other literal it contains, when there is one: a line without that
    /// literal cannot hold it (see `tests`).
    pub(crate) fn keyed_scans(&self) -> impl Iterator<Item = KeyedScan<'_>> {
        self.tests.iter().map(|&(i, within)| KeyedScan {
            bit: 1u64 << i,
            key: format!("i:{}", self.literals[i].0),
            literal: &self.literals[i].1,
            within: within.map(|j| 1u64 << j),
        })
    }

    /// The longest literal, in bytes.
    pub(crate) fn longest(&self) -> usize {
        self.literals
            .iter()
            .map(|(f, _)| f.len())
            .max()
            .unwrap_or(0)
    }

    /// The literals, in bit order.
    pub fn fragment_texts(&self) -> impl Iterator<Item = &str> {
        self.literals.iter().map(|(f, _)| f.as_str())
    }
}

pub use crate::session::has_foreign_escape;

/// Whether `line` holds a match of `literal`: from `next` when it tells, else by searching
/// the line and the lines after it in `line.hay`, leaving in `next` where the first line
/// holding one is (or that none of them does).
fn holds(literal: &Literal, line: &TestedLine<'_>, next: &mut NextHit) -> bool {
    let (start, end) = (line.offset, line.offset + line.len as u64);
    match *next {
        // The search that found it began at or before this line: the lines before its line
        // hold none.
        NextHit::At(at) if at >= start => return at < end,
        NextHit::NoneBefore(limit) if limit >= end => return false,
        _ => {}
    }
    *next = match literal.line_hit(line.hay, 0) {
        Some(at) => NextHit::At(start + at as u64),
        None => NextHit::NoneBefore(start + line.hay.len() as u64),
    };
    matches!(*next, NextHit::At(at) if at < end)
}

#[cfg(test)]
impl Prefilter {
    /// [`Prefilter::line_mask`], scanning the line for its escapes.
    pub(crate) fn line_mask_scanning(&self, line: &[u8]) -> u64 {
        let line = TestedLine::alone(line, 0, has_foreign_escape(line));
        self.line_mask(&line, &mut LineMemo::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short query's document regex compiles on first use; one too large for the size
    /// limit is still refused when the matcher is made (the search then reports
    /// `invalid_query`).
    #[test]
    fn a_query_too_large_to_compile_is_refused_at_once_and_a_short_one_matches() {
        assert!(Matcher::new(&["k".repeat(1 << 20)]).is_err());
        let matcher = Matcher::new(&["Quokka".to_string(), "x[1]".to_string()]).unwrap();
        assert_eq!(matcher.find("a QUOKKA"), Some(2));
        assert_eq!(matcher.find("y x[1]"), Some(2));
        assert_eq!(matcher.find("x1"), None);
    }

    /// `must_be_copied` decides an ASCII word without a regex; it must agree with the regex
    /// it uses for the others, on every piece of a generated word in either case and on
    /// words that are in none.
    #[test]
    fn an_ascii_words_check_against_generated_words_agrees_with_the_regex() {
        let generated: &[&[&str]] = &[PLAIN_GENERATED_WORDS, NESTED_GENERATED_WORDS];
        let all = || generated.iter().flat_map(|g| g.iter());
        assert!(all().all(|w| w.is_ascii()));
        let by_regex = |word: &str| {
            let inside = RegexBuilder::new(&regex::escape(word))
                .case_insensitive(true)
                .build()
                .unwrap();
            !all().any(|w| inside.is_match(w))
        };
        let mut words: Vec<String> = ["zebra", "quokka", "errors", "Nullable", "k", "S", "x y"]
            .map(String::from)
            .to_vec();
        for w in all() {
            for i in 0..w.len() {
                for j in i + 1..=w.len() {
                    words.push(w[i..j].to_string());
                    words.push(w[i..j].to_ascii_uppercase());
                    words.push(format!("{}q", &w[i..j]));
                }
            }
        }
        for word in words.iter().filter(|w| !number_like(w)) {
            assert_eq!(must_be_copied(word, generated), by_regex(word), "{word}");
        }
        // A word with the Kelvin sign takes the regex's way: it matches the `k` of `unknown`.
        assert!(!must_be_copied("\u{212A}now", generated));
    }

    fn matcher(qs: &[&str]) -> Matcher {
        Matcher::new(&qs.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn leftmost_match_over_all_queries_case_insensitively() {
        let m = matcher(&["world", "HELLO"]);
        assert_eq!(m.find("say hello world"), Some(4));
        assert_eq!(matcher(&["needle.+"]).find("needle.+ x needleab"), Some(0));
        assert_eq!(matcher(&["ſ"]).find("abS"), Some(2));
    }

    #[test]
    fn dotted_capital_i_matches_only_itself() {
        let m = matcher(&["İstanbul"]);
        assert_eq!(m.find("i̇stanbul İSTANBUL"), Some(11));
    }

    #[test]
    fn literals_are_the_verbatim_runs_of_a_query_per_rule() {
        let plain = |q: &str| phrases(q, false);
        let nested = |q: &str| phrases(q, true);
        assert_eq!(plain("zebrafish"), ["zebrafish"]);
        assert_eq!(plain("rate limit"), ["rate limit"]);
        assert_eq!(nested("rate limit"), ["rate limit"]);
        assert_eq!(plain("zebra-quokka-7731"), ["zebra-quokka-7731"]);
        assert_eq!(plain("src/main.rs"), ["src/main.rs"]);
        assert_eq!(plain("fn main()"), ["fn main"]);
        // `error` is generated only in nested-call lines.
        assert_eq!(plain("error: cannot"), ["error: cannot"]);
        assert_eq!(nested("error: cannot"), ["cannot"]);
        // Nested lines put ` [` between a record's name and status, commas between array items.
        assert_eq!(plain("grep [ok"), ["grep [ok"]);
        assert_eq!(nested("grep [ok"), ["grep", "ok"]);
        assert_eq!(nested("grep, ok"), ["grep", "ok"]);
        assert_eq!(nested("grep:ok"), ["grep:ok"]);
        assert_eq!(plain("qq 12 zz"), ["qq", "zz"]);
        assert_eq!(plain("zq\"yz"), ["zq", "yz"]);
        assert_eq!(plain(" (x y) "), ["x y"]);
        assert_eq!(text_parts("error: cannot"), ["error: cannot"]);
        assert_eq!(text_parts("say \"hi\"\nnow"), ["say \\\"hi\\\"", "now"]);
        assert_eq!(text_parts("C:\\temp\\x"), ["C:\\\\temp\\\\x"]);
        assert_eq!(text_parts("a\tb\u{1b}c"), ["a", "b", "c"]);
        assert_eq!(text_parts("\"\n\""), ["\\\""]);
        assert_eq!(text_parts("42"), ["42"]);
        // Number-like runs and parts of generated words are never tool literals.
        for none in [
            "1e+21",
            "1500}",
            "12ms",
            "42",
            "-0",
            "out",
            "--- output",
            "ſ",
            "K",
            "a b",
        ] {
            assert!(plain(none).is_empty(), "{none}: {:?}", plain(none));
        }
    }

    #[test]
    fn prefilter_is_off_only_when_no_rule_has_a_literal() {
        assert!(matcher(&["zebrafish"]).has_prefilter());
        assert!(matcher(&["rate limit", "src/main.rs"]).has_prefilter());
        // Text documents still need the query's own bytes.
        assert!(matcher(&["zebra", "--- output"]).has_prefilter());
        assert!(matcher(&["1e+21"]).has_prefilter());
        assert!(!matcher(&["\n"]).has_prefilter());
        assert!(!matcher(&["\t\n", "\u{1b}"]).has_prefilter());
        // `"` and `\` are written escaped in a text document's line: a literal of their own.
        assert!(matcher(&["\"\\"]).has_prefilter());
    }

    #[test]
    fn foreign_escapes_are_found_and_javascripts_own_are_not() {
        for (line, foreign) in [
            (&br#"{"a":"cat\u001b[0m"}"#[..], false),
            (br#"{"a":"\u0000 \u0019 \u001F"}"#, false),
            (br#"{"a":"z\u00e9bre"}"#, true),
            (br#"{"a":"\u0020"}"#, true),
            (br#"{"a":"\u000a"}"#, true),
            (br#"{"a":"\u0008"}"#, true),
            (br#"{"a":"\ud83d\ude00"}"#, true),
            (br#"{"a":"a\/b"}"#, true),
            (br#"{"a":"C:\\users\\x"}"#, false),
            (br#"{"a":"C:\\\/x"}"#, true),
            (br#"{"a":"\\/x"}"#, false),
            (br"x\u00", true),
            (br"plain", false),
        ] {
            assert_eq!(
                has_foreign_escape(line),
                foreign,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    /// A literal is looked for only in lines holding the longest other literal it contains,
    /// and the masks are those of looking for every literal in every line.
    #[test]
    fn a_literal_is_tested_only_where_a_literal_it_contains_is() {
        let m = matcher(&["fn main()", "Main", "x[1]"]);
        let p = m.prefilter().unwrap();
        let text = |i: usize| p.literals[i].0.as_str();
        let tests: Vec<(&str, Option<&str>)> = p
            .tests
            .iter()
            .map(|&(i, within)| (text(i), within.map(text)))
            .collect();
        assert_eq!(
            tests,
            [
                ("x", None),
                ("Main", None),
                ("x[1]", Some("x")),
                ("fn main", Some("Main")),
                ("fn main()", Some("fn main")),
            ],
            "{:?}",
            p.literals.iter().map(|(t, _)| t).collect::<Vec<_>>()
        );
        for line in [
            &br#"{"a":"FN MAIN() {}"}"#[..],
            br#"{"a":"fn main"}"#,
            br#"{"a":"fn  main()"}"#,
            br#"{"a":"x[1] main"}"#,
            br#"{"a":"nothing"}"#,
        ] {
            let every = p
                .scans()
                .filter(|(_, literal)| literal.is_match(line))
                .fold(0, |mask, (bit, _)| mask | bit);
            assert_eq!(
                p.line_mask(&TestedLine::alone(line, 0, false), &mut LineMemo::new()),
                every,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    proptest::proptest! {
        /// A line's mask found by searching ahead through the lines after it, with the memo
        /// a reader keeps, is the mask of the line by itself: for any lines (some with the
        /// literals, in any case, next to the Kelvin sign and other non-ASCII text), any
        /// query, and any lines left untested (blank or malformed lines a decode skips).
        #[test]
        fn searching_ahead_with_a_memo_gives_each_lines_own_mask(
            pieces in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::sample::select(vec![
                        "fn main()", "FN MAIN", "error", "Error: Cannot", "cannot", "x[1]",
                        "\\u212a", "\u{212a}", "quokka", "QUO\u{212a}KA", "nestedCalls",
                        "é", " ", "\\n", "\"", "a", "-", "zebra-quokka-7731",
                    ]),
                    0..6,
                ),
                1..12,
            ),
            tested in proptest::collection::vec(proptest::bool::ANY, 12),
            last_newline in proptest::bool::ANY,
            query in proptest::sample::select(vec![
                &["fn main()"][..], &["error: cannot"], &["quokka", "x[1]"],
                &["zebra-quokka-7731"], &["cannot open"], &["main"],
            ]),
        ) {
            let lines: Vec<String> = pieces.iter().map(|p| p.concat()).collect();
            let mut file = lines.join("\n");
            if last_newline {
                file.push('\n');
            }
            let bytes = file.as_bytes();
            let m = matcher(query);
            let Some(p) = m.prefilter() else {
                return Ok(());
            };
            let mut memo = LineMemo::new();
            let mut start = 0usize;
            // The end of the last whole line.
            let whole = if last_newline {
                bytes.len()
            } else {
                file.rfind('\n').map_or(0, |i| i + 1)
            };
            for (k, line) in lines.iter().enumerate() {
                let len = line.len();
                // The reader's hay: this line and the whole lines after it (a last line
                // without `\n` is handed alone).
                let hay = if start + len < whole {
                    &bytes[start..whole]
                } else {
                    &bytes[start..start + len]
                };
                if tested[k] {
                    let ahead = TestedLine {
                        hay,
                        offset: 1000 + start as u64,
                        len,
                        escapes: false,
                        nested_calls: None,
                    };
                    let alone = TestedLine::alone(line.as_bytes(), 0, false);
                    proptest::prop_assert_eq!(
                        p.line_mask(&ahead, &mut memo),
                        p.line_mask(&alone, &mut LineMemo::new()),
                        "line {} of {:?}", k, lines
                    );
                }
                start += len + 1;
            }
        }
    }

    /// `error: cannot` needs only `cannot` of a tool document with nested calls (`error` may
    /// be generated there), a phrase no scan looks for: it is looked for in the event's lines.
    #[test]
    fn a_nested_phrase_without_a_bit_is_looked_for_in_the_lines() {
        let m = matcher(&["error: cannot"]);
        let p = m.prefilter().unwrap();
        let call = br#"{"a":"read"}"#.to_vec();
        let result = |error: &str| {
            format!(r#"{{"nestedCalls":{{"calls":[{{"name":"grep","error":"{error}"}}]}}}}"#)
                .into_bytes()
        };
        for (error, may) in [("Cannot open", true), ("no such file", false)] {
            let lines = [call.clone(), result(error)];
            let mask = lines.iter().fold(0, |m, l| m | p.line_mask_scanning(l));
            // The probe found nested calls; the bits alone cannot refuse the event.
            assert!(p.candidate(DocKind::Tool, mask));
            assert!(p.rests_on_lines(DocKind::Tool, mask));
            assert_eq!(
                p.candidate_in_lines(DocKind::Tool, mask, &lines),
                may,
                "{error}"
            );
        }
        // Without nested calls, or for a text document, the bits decide alone.
        let plain = p.line_mask_scanning(br#"{"a":"error: cannot"}"#);
        assert!(!p.rests_on_lines(DocKind::Tool, plain));
        assert!(!p.rests_on_lines(DocKind::Text, u64::MAX));
    }

    #[test]
    fn line_masks_combine_across_the_lines_of_an_event() {
        let m = matcher(&["rate limit"]);
        let p = m.prefilter().unwrap();
        let tool = |mask| p.candidate(DocKind::Tool, mask);
        let call = p.line_mask_scanning(br#"{"a":"Rate"}"#);
        let result = p.line_mask_scanning(br#"{"a":"rate LIMIT"}"#);
        assert!(!tool(call));
        assert!(tool(result));
        assert!(tool(call | result));
        assert!(!p.candidate(
            DocKind::Text,
            p.line_mask_scanning(br#"{"a":"rate","b":"limit"}"#)
        ));
        assert!(p.candidate(DocKind::Text, p.line_mask_scanning(br#"{"a":"caf\u00e9"}"#)));
        assert!(!tool(p.line_mask_scanning(br#"{"a":"cafe"}"#)));
        // A generated word: plain tool documents need the phrase, nested ones only `cannot`.
        let m = matcher(&["error: cannot"]);
        let p = m.prefilter().unwrap();
        let line = br#"{"a":"cannot"}"#;
        assert!(!p.candidate(DocKind::Tool, p.line_mask_scanning(line)));
        assert!(!p.candidate(DocKind::Text, p.line_mask_scanning(line)));
        let nested = br#"{"a":"cannot","nestedCalls":{}}"#;
        assert!(p.candidate(DocKind::Tool, p.line_mask_scanning(nested)));
        assert!(!p.candidate(DocKind::Text, p.line_mask_scanning(nested)));
        assert!(p.candidate(
            DocKind::Text,
            p.line_mask_scanning(br#"{"a":"ERROR: Cannot"}"#)
        ));
        // A query with no tool literal: every tool document may match, text still filtered.
        let m = matcher(&["42"]);
        let p = m.prefilter().unwrap();
        assert!(p.candidate(DocKind::Tool, p.line_mask_scanning(b"{}")));
        assert!(!p.candidate(DocKind::Text, p.line_mask_scanning(b"{}")));
    }
}
