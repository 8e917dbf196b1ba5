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
//! (message text, summaries, tool names and output, argument keys and string values) and of
//! text the generator writes (separators and section headers, `(arguments not recorded)`,
//! nested-call lines, argument JSON punctuation, numbers re-printed JavaScript-style, `true`,
//! `null`, `[object Object]`, …). Every boundary between the two, and every character JSON
//! escapes, is one of the *separator* characters below (whitespace, control characters,
//! `"` `\` `{` `}` `[` `]` `:` `,` `(` `)`). A query is cut at its separators into *fragments*;
//! an occurrence of a fragment in a document therefore lies inside one separator-free run,
//! which is either copied verbatim from a line or generated. A fragment that cannot occur
//! inside any generated run (it is not number-like and not part of a generated word) must
//! therefore appear in the raw line, case-insensitively — provided the line writes its strings
//! the way the document re-writes them, i.e. uses no escape other than JavaScript's own
//! (`\"` `\\` `\b` `\f` `\n` `\r` `\t` and `\u00XX` for the other control characters): a
//! line with any other escape (`\/`, `\u00e9`, a surrogate) is always a "maybe". Numbers are
//! never fragments, so a non-canonical number (`1e21`, `1.0`) in a line cannot hide a match.
//! A tool call's document spans two lines (call and result), so each line yields the set of
//! fragments it holds and an event is a candidate when, for some query, the union over its
//! lines holds every usable fragment of that query.

use regex::{Regex, RegexBuilder, bytes};

/// Characters that end a fragment: whitespace, controls and the characters that JSON escapes
/// or that the document generator writes around copied text.
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(
            c,
            '"' | '\\' | '{' | '}' | '[' | ']' | ':' | ',' | '(' | ')'
        )
}

/// Words the document generator writes itself (between separators); a fragment inside one of
/// them (case-insensitively) could match generated text.
const GENERATED_WORDS: &[&str] = &[
    "arguments",
    "not",
    "recorded",
    "output",
    "nested",
    "calls",
    "complete",
    "incomplete",
    "error",
    "omitted",
    "bytes",
    "bash",
    "unknown",
    "undefined",
    "null",
    "true",
    "false",
    "object",
];

/// The most fragments tracked per line (one bit each).
const MAX_FRAGMENTS: usize = 64;

/// A compiled query.
#[derive(Debug)]
pub struct Matcher {
    document: Regex,
    prefilter: Option<Prefilter>,
}

/// The raw-line test of a query set: one case-insensitive literal per usable fragment.
#[derive(Debug)]
pub struct Prefilter {
    fragments: Vec<(String, bytes::Regex)>,
    /// Per query: the fragment bits it requires.
    queries: Vec<u64>,
    /// Every fragment bit.
    all: u64,
}

impl Matcher {
    /// Compile non-empty literal queries. `Err` when the pattern is too large to compile.
    #[allow(clippy::expect_used, reason = "a fixed pattern compiles")]
    pub fn new(queries: &[String]) -> Result<Matcher, String> {
        let pattern = queries
            .iter()
            .map(|q| regex::escape(q))
            .collect::<Vec<_>>()
            .join("|");
        let document = RegexBuilder::new(&pattern)
            .case_insensitive(true)
            .size_limit(64 << 20)
            .build()
            .map_err(|e| e.to_string())?;
        let prefilter = Prefilter::new(queries)?;
        Ok(Matcher {
            document,
            prefilter,
        })
    }

    /// The byte offset of the leftmost match in `document`.
    pub fn find(&self, document: &str) -> Option<usize> {
        self.document.find(document).map(|m| m.start())
    }

    /// The raw-line prefilter, when every query has at least one usable fragment.
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

/// The usable fragments of one query, longest first.
pub fn fragments(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in query.split(is_separator).filter(|p| !p.is_empty()) {
        if number_like(piece) {
            continue;
        }
        // A piece too large to compile is simply not required (still sound).
        let Ok(inside) = RegexBuilder::new(&regex::escape(piece))
            .case_insensitive(true)
            .build()
        else {
            continue;
        };
        if GENERATED_WORDS.iter().any(|w| inside.is_match(w)) {
            continue;
        }
        if !out.iter().any(|f| f == piece) {
            out.push(piece.to_string());
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.len()));
    out
}

impl Prefilter {
    /// `None` when some query has no usable fragment (it could match anywhere).
    fn new(queries: &[String]) -> Result<Option<Prefilter>, String> {
        let mut compiled: Vec<(String, bytes::Regex)> = Vec::new();
        let mut masks = Vec::new();
        for query in queries {
            let mut mask = 0u64;
            for fragment in fragments(query) {
                let bit = match compiled.iter().position(|(f, _)| *f == fragment) {
                    Some(bit) => bit,
                    None if compiled.len() < MAX_FRAGMENTS => {
                        let regex = bytes::RegexBuilder::new(&regex::escape(&fragment))
                            .case_insensitive(true)
                            .size_limit(64 << 20)
                            .build()
                            .map_err(|e| e.to_string())?;
                        compiled.push((fragment, regex));
                        compiled.len() - 1
                    }
                    // Requiring fewer fragments is still sound.
                    None => continue,
                };
                mask |= 1 << bit;
            }
            if mask == 0 {
                return Ok(None);
            }
            masks.push(mask);
        }
        let all = masks.iter().fold(0, |a, m| a | m);
        Ok(Some(Prefilter {
            fragments: compiled,
            queries: masks,
            all,
        }))
    }

    /// The fragments this line may hold, as bits: every bit when the line's strings could
    /// read differently in a document than in its bytes (an escape other than JavaScript's
    /// own).
    pub fn line_mask(&self, line: &[u8]) -> u64 {
        let mut mask = 0u64;
        for (bit, (_, regex)) in self.fragments.iter().enumerate() {
            if regex.is_match(line) {
                mask |= 1 << bit;
            }
        }
        if mask != self.all && has_foreign_escape(line) {
            return u64::MAX;
        }
        mask
    }

    /// Whether an event whose lines hold `mask` (their masks ORed) may match.
    pub fn candidate(&self, mask: u64) -> bool {
        self.queries.iter().any(|q| mask & q == *q)
    }

    /// The fragments with their case-insensitive regexes, in bit order.
    pub(crate) fn fragments(&self) -> impl Iterator<Item = (&str, &bytes::Regex)> {
        self.fragments.iter().map(|(f, r)| (f.as_str(), r))
    }

    /// The fragments, in bit order.
    pub fn fragment_texts(&self) -> impl Iterator<Item = &str> {
        self.fragments.iter().map(|(f, _)| f.as_str())
    }
}

pub use crate::session::has_foreign_escape;

#[cfg(test)]
mod tests {
    use super::*;

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
    fn fragments_are_the_verbatim_runs_of_a_query() {
        assert_eq!(fragments("zebrafish"), ["zebrafish"]);
        assert_eq!(fragments("rate limit"), ["limit", "rate"]);
        assert_eq!(fragments("zebra-quokka-7731"), ["zebra-quokka-7731"]);
        assert_eq!(fragments("src/main.rs"), ["src/main.rs"]);
        assert_eq!(fragments("fn main()"), ["main", "fn"]);
        assert_eq!(fragments("error: cannot"), ["cannot"]);
        assert_eq!(fragments("zq\"yz"), ["zq", "yz"]);
        // Number-like runs and parts of generated words are never fragments.
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
            assert!(fragments(none).is_empty(), "{none}: {:?}", fragments(none));
        }
    }

    #[test]
    fn prefilter_is_off_only_when_some_query_has_no_fragment() {
        assert!(matcher(&["zebrafish"]).has_prefilter());
        assert!(matcher(&["rate limit", "src/main.rs"]).has_prefilter());
        assert!(!matcher(&["zebra", "--- output"]).has_prefilter());
        assert!(!matcher(&["1e+21"]).has_prefilter());
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

    #[test]
    fn line_masks_combine_across_the_lines_of_an_event() {
        let m = matcher(&["rate limit"]);
        let p = m.prefilter().unwrap();
        let call = p.line_mask(br#"{"a":"Rate"}"#);
        let result = p.line_mask(br#"{"a":"LIMIT"}"#);
        assert!(!p.candidate(call));
        assert!(!p.candidate(result));
        assert!(p.candidate(call | result));
        assert!(p.candidate(p.line_mask(br#"{"a":"caf\u00e9"}"#)));
        assert!(!p.candidate(p.line_mask(br#"{"a":"cafe"}"#)));
    }
}
