//! Query matching for `history-search` (history.md §14.2): each query is a literal matched
//! case-insensitively by Unicode simple case folding on the original document text, several
//! queries ORed, leftmost match wins. The regex crate's `(?i)` uses simple case folding, the
//! same relation as JavaScript's `iu` flags, and its leftmost-first alternation gives the
//! smallest match start over all queries.
//!
//! It also owns the raw-line prefilter: a cheap test on a session line's bytes that is allowed
//! to say "maybe" but never "no" for an event whose document matches, so search decodes only
//! the lines that can matter. The prefilter is used only for queries where that holds (see
//! [`Matcher::raw_may_match`]); any other query decodes every event.

use regex::{Regex, RegexBuilder, bytes};

/// Characters that occur in the generated parts of tool documents (separators, section
/// headers, nested-call lines) or that JSON escapes: a query containing one could match where
/// the raw line does not contain it verbatim.
const UNSAFE_CHARS: &[char] = &['"', '\\', '-', '(', ')', '[', ']', ':', ','];

/// Words the document generator writes itself (not copied from the session line).
const GENERATED_WORDS: &[&str] = &[
    "output",
    "nested calls",
    "incomplete",
    "recorded",
    "arguments not recorded",
    "arguments omitted",
    "bytes",
    "error",
    "ms",
    "undefined",
    "null",
    "unknown",
    "object Object",
    "true",
    "false",
    "bash",
];

/// A compiled query.
#[derive(Debug)]
pub struct Matcher {
    document: Regex,
    /// `None` when the query is not prefilter-safe.
    raw: Option<bytes::Regex>,
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
        let digits_ms = RegexBuilder::new("^[0-9]*(ms?)?$")
            .case_insensitive(true)
            .build()
            .expect("a fixed pattern compiles");
        let safe = queries.iter().all(|q| {
            !q.chars()
                .any(|c| c.is_whitespace() || c.is_control() || UNSAFE_CHARS.contains(&c))
                && !digits_ms.is_match(q)
        }) && !GENERATED_WORDS.iter().any(|w| document.is_match(w));
        // One pass per line: the query, or a `\u` escape other than the `\u000X`/`\u001X`
        // control form (see `raw_may_match`), which stays case-sensitive.
        let raw_pattern = format!(r"(?:{pattern})|(?s-iu:\\u(?:[^0]|0[^0]|00[^01]|.{{0,3}}\z))");
        let raw = if safe {
            Some(
                bytes::RegexBuilder::new(&raw_pattern)
                    .case_insensitive(true)
                    .size_limit(64 << 20)
                    .build()
                    .map_err(|e| e.to_string())?,
            )
        } else {
            None
        };
        Ok(Matcher { document, raw })
    }

    /// The byte offset of the leftmost match in `document`.
    pub fn find(&self, document: &str) -> Option<usize> {
        self.document.find(document).map(|m| m.start())
    }

    /// Whether the prefilter can be used at all for this query.
    pub fn has_prefilter(&self) -> bool {
        self.raw.is_some()
    }

    /// `false` only when no event built from this line can match. Sound because a safe query
    /// contains no separator or escaped character and is not part of any generated word, so a
    /// match lies inside text copied verbatim from a JSON string of the line (Pi writes
    /// non-ASCII literally; a line with other `\u` escapes is always a maybe). The escape test
    /// is part of the same compiled pattern, so each line is scanned once.
    pub fn raw_may_match(&self, line: &[u8]) -> bool {
        let Some(raw) = &self.raw else {
            return true;
        };
        raw.is_match(line)
    }
}

/// Whether `line` contains a `\uXXXX` escape other than the `\u00XX` control-character form
/// JavaScript itself writes.
#[cfg(test)]
fn has_non_control_unicode_escape(line: &[u8]) -> bool {
    memchr::memmem::find_iter(line, b"\\u").any(|at| {
        let hex = line.get(at + 2..at + 6).unwrap_or(b"");
        !(hex.starts_with(b"00") && matches!(hex.get(2), Some(b'0') | Some(b'1')))
    })
}

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
    fn prefilter_is_used_only_for_safe_queries() {
        assert!(matcher(&["zebrafish"]).has_prefilter());
        assert!(matcher(&["src/main.rs"]).has_prefilter());
        assert!(!matcher(&["out"]).has_prefilter());
        assert!(!matcher(&["a b"]).has_prefilter());
        assert!(!matcher(&["12ms"]).has_prefilter());
        assert!(!matcher(&["42"]).has_prefilter());
        assert!(!matcher(&["x\"y"]).has_prefilter());
        assert!(!matcher(&["zebra", "--- output"]).has_prefilter());
    }

    #[test]
    fn the_fused_escape_test_agrees_with_the_byte_rule() {
        let m = matcher(&["zebrafish"]);
        for line in [
            &br#"{"a":"cat\u001b[0m"}"#[..],
            br#"{"a":"z\u00e9bre"}"#,
            br#"{"a":"\u0000 \u0019"}"#,
            br#"{"a":"\u0020"}"#,
            br#"{"a":"\U00e9"}"#,
            br"\u",
            br"x\u0",
            br"x\u00",
            br"x\u001",
            br"x\u002",
            br"x\u0010",
            br"x\u00",
            br"\ud83d\ude00",
            br"plain",
        ] {
            assert_eq!(
                m.raw_may_match(line),
                has_non_control_unicode_escape(line),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn escaped_lines_are_always_maybe() {
        let m = matcher(&["zebrafish"]);
        assert!(!m.raw_may_match(br#"{"a":"cat\u001b[0m"}"#));
        assert!(m.raw_may_match(br#"{"a":"z\u00e9bre"}"#));
        assert!(m.raw_may_match(br#"{"a":"ZebraFish"}"#));
    }
}
