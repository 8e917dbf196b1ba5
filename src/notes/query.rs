//! Which notes a listing or search looks at: the query (`pattern`, `scope`, `who`,
//! `wastebasket`), the homes it selects, the glob it compiles to, the literal matcher of a
//! search, and the recency order of results. Pure: no filesystem access.

use std::cmp::Ordering;

use chrono::{DateTime, FixedOffset};
use regex::{Regex, RegexBuilder};

use super::address::{Home, Scope};
use super::error::{ErrorKind, NoteError, err};
use super::identity::{Identity, is_slug};

/// A listing/search query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Glob over the concrete display address (`*` within a segment, `**` across, `?` literal).
    /// `@self/` and `@model/` are accepted and mean the current agent/model home.
    pub pattern: Option<String>,
    /// Restrict to one home.
    pub scope: Option<Scope>,
    /// With `scope` agent/model: whose home (default: the current identity's).
    pub who: Option<String>,
    /// Only crumpled notes instead of only live ones.
    pub wastebasket: bool,
}

/// Which homes a query reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeSelection {
    /// Concrete homes, in order.
    Homes(Vec<Home>),
    /// Every slug directory under `agents/` or `models/` (enumerated by the store).
    Namespace(Scope),
}

/// A query validated against an identity: the homes to read and the compiled pattern.
#[derive(Debug, Clone)]
pub struct Plan {
    pub homes: HomeSelection,
    pub pattern: Option<Regex>,
    pub wastebasket: bool,
}

impl Query {
    /// Validate and plan the query.
    pub fn plan(&self, identity: &Identity) -> Result<Plan, NoteError> {
        let pattern = match self.pattern.as_deref() {
            None | Some("") => None,
            Some(p) if p.len() > MAX_PATTERN_BYTES => {
                return Err(err(
                    ErrorKind::InvalidPattern,
                    format!(
                        "invalid pattern: {} bytes, glob patterns are at most {MAX_PATTERN_BYTES} bytes",
                        p.len()
                    ),
                ));
            }
            Some(p) if p.contains(['\0', '\\']) => {
                return Err(err(
                    ErrorKind::InvalidPattern,
                    format!(
                        "invalid pattern {}: glob patterns reject NUL and backslashes",
                        quoted(p)
                    ),
                ));
            }
            Some(p) => Some(normalise_pattern(p, identity)),
        };
        let homes = match (self.scope, self.who.as_deref()) {
            (Some(scope @ (Scope::Agent | Scope::Model)), who) => {
                let who = match who {
                    Some(w) if !is_slug(w) => {
                        return Err(err(
                            ErrorKind::InvalidScope,
                            "who must be a canonical lowercase slug",
                        ));
                    }
                    Some(w) => w,
                    None if scope == Scope::Agent => identity.agent.as_str(),
                    None => identity.model.as_str(),
                };
                HomeSelection::Homes(vec![Home {
                    scope,
                    who: Some(who.to_owned()),
                }])
            }
            (Some(_), Some(_)) => {
                return Err(err(
                    ErrorKind::InvalidScope,
                    "who is only valid with agent or model scope",
                ));
            }
            (None, Some(_)) => {
                return Err(err(
                    ErrorKind::InvalidScope,
                    "who requires agent or model scope",
                ));
            }
            (Some(scope), None) => HomeSelection::Homes(vec![Home { scope, who: None }]),
            (None, None) => match pattern.as_deref() {
                Some(p) if p.starts_with('@') => homes_of_pattern(p)?,
                _ => HomeSelection::Homes(Home::defaults(identity).to_vec()),
            },
        };
        let pattern = pattern.as_deref().map(compile_glob).transpose()?;
        Ok(Plan {
            homes,
            pattern,
            wastebasket: self.wastebasket,
        })
    }
}

fn normalise_pattern(pattern: &str, identity: &Identity) -> String {
    if let Some(rest) = pattern.strip_prefix("@self/") {
        format!("@agents/{}/{rest}", identity.agent)
    } else if let Some(rest) = pattern.strip_prefix("@model/") {
        format!("@models/{}/{rest}", identity.model)
    } else {
        pattern.to_owned()
    }
}

fn homes_of_pattern(pattern: &str) -> Result<HomeSelection, NoteError> {
    let rest = &pattern[1..];
    let Some((head, tail)) = rest.split_once('/') else {
        return Ok(HomeSelection::Homes(Vec::new()));
    };
    Ok(match head {
        "project" => HomeSelection::Homes(vec![Home::project()]),
        "human" => HomeSelection::Homes(vec![Home::human()]),
        "agents" | "models" => {
            let scope = if head == "agents" {
                Scope::Agent
            } else {
                Scope::Model
            };
            let slug = tail.split('/').next().unwrap_or("");
            if slug.is_empty() || slug.contains(['*', '?']) {
                HomeSelection::Namespace(scope)
            } else if !is_slug(slug) {
                return Err(err(
                    ErrorKind::InvalidScope,
                    format!(
                        "invalid pattern {}: @{head}/<slug>/ needs a canonical lowercase slug",
                        quoted(pattern)
                    ),
                ));
            } else {
                HomeSelection::Homes(vec![Home {
                    scope,
                    who: Some(slug.to_owned()),
                }])
            }
        }
        _ => HomeSelection::Homes(Vec::new()),
    })
}

/// The longest glob pattern accepted, in bytes: four times the longest note path, far more than
/// any display address; a longer pattern is refused with `invalid_pattern`.
pub const MAX_PATTERN_BYTES: usize = 2048;

/// The compiled-program size a glob may reach; a pattern beyond it is refused, never a panic.
const GLOB_SIZE_LIMIT: usize = 16 << 20;

/// A string as a JSON literal, for messages.
fn quoted(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Glob → anchored regex: `**/` = zero or more whole segments, `**` = anything, `*` = anything
/// but `/`, every other character (`?` included) literal. A pattern whose automaton would be
/// too large is refused with `invalid_pattern`.
pub fn compile_glob(pattern: &str) -> Result<Regex, NoteError> {
    let mut re = String::from("^(?s:");
    let mut rest = pattern;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("**/") {
            re.push_str("(?:.*/)?");
            rest = r;
        } else if let Some(r) = rest.strip_prefix("**") {
            re.push_str(".*");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('*') {
            re.push_str("[^/]*");
            rest = r;
        } else if let Some(c) = rest.chars().next() {
            re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
            rest = &rest[c.len_utf8()..];
        }
    }
    re.push_str(")$");
    RegexBuilder::new(&re)
        .size_limit(GLOB_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            let why = match e {
                regex::Error::CompiledTooBig(_) => "it compiles to too large an automaton".into(),
                other => other.to_string(),
            };
            err(
                ErrorKind::InvalidPattern,
                format!("invalid pattern: {why}; use fewer wildcards"),
            )
        })
}

/// Recency order: `updated_at` descending, then the address compared case-insensitively
/// (Unicode lowercase), then bytewise. Used by every listing, search and the boot index.
pub fn recency_order(
    a_updated: DateTime<FixedOffset>,
    a_address: &str,
    b_updated: DateTime<FixedOffset>,
    b_address: &str,
) -> Ordering {
    b_updated
        .cmp(&a_updated)
        .then_with(|| address_order(a_address, b_address))
}

/// Address tie-break: Unicode lowercase, then bytes.
pub fn address_order(a: &str, b: &str) -> Ordering {
    a.chars()
        .flat_map(char::to_lowercase)
        .cmp(b.chars().flat_map(char::to_lowercase))
        .then_with(|| a.cmp(b))
}

/// The literal matcher of a search: every query escaped and OR'd into one case-insensitive
/// automaton (Unicode simple case folding), run over bytes.
///
/// It serves twice: [`Matcher::may_match`] tests a note file's raw bytes, so files that cannot
/// match are never decoded or parsed, and [`Matcher::lines`] finds the matching lines of a
/// decoded body. The first is sound — it never rejects a file whose body has a match:
/// - a match lies within one line of the body (no query holding a newline is used, and no
///   character folds to a newline);
/// - every body line is a piece of the decoded file text (the body is the text after the
///   frontmatter block, or all of it; with a block, only one `\r` before each `\n` and a last
///   `\r` are dropped), so a match in the body is a match in the decoded text;
/// - the decoded text is the file's bytes with each invalid UTF-8 sequence replaced by U+FFFD;
///   a match of a query without U+FFFD contains no replacement (no character folds to U+FFFD),
///   so it is made of bytes copied unchanged from the file, where the same automaton finds it;
/// - a query holding U+FFFD may match a replacement: then every file that is not valid UTF-8
///   is a candidate too.
///
/// (`prefilter_never_rejects_a_match` in `store::search` checks this over generated notes.)
#[derive(Debug, Clone)]
pub struct Matcher {
    /// `None` when no query can match a single line.
    re: Option<regex::bytes::Regex>,
    /// Some query holds U+FFFD.
    replacement: bool,
}

impl Matcher {
    /// Build the matcher; refuses an empty list or an empty query.
    ///
    /// ```
    /// use pi_context::notes::query::Matcher;
    /// let m = Matcher::new(&["needle.*", "ΣΑΣ"])?;
    /// assert_eq!(m.lines("a NeEdLe.* b", None).1, 1);
    /// assert_eq!(m.lines("σας", None).1, 1);
    /// assert_eq!(m.lines("needle.+", None).1, 0);
    /// assert!(m.may_match(b"x\nNEEDLE.*") && !m.may_match(b"needle"));
    /// # Ok::<(), pi_context::notes::NoteError>(())
    /// ```
    pub fn new<S: AsRef<str>>(queries: &[S]) -> Result<Matcher, NoteError> {
        if queries.is_empty() {
            return Err(err(
                ErrorKind::InvalidQuery,
                "query must be a string or a non-empty array of strings",
            ));
        }
        if queries.iter().any(|q| q.as_ref().is_empty()) {
            return Err(err(
                ErrorKind::InvalidQuery,
                "query strings must be non-empty: an empty query matches everything",
            ));
        }
        // Lines are matched one at a time, so a query spanning a newline never matches.
        let used: Vec<&str> = queries
            .iter()
            .map(AsRef::as_ref)
            .filter(|q| !q.contains('\n'))
            .collect();
        if used.is_empty() {
            return Ok(Matcher {
                re: None,
                replacement: false,
            });
        }
        let source = used
            .iter()
            .map(|q| regex::escape(q))
            .collect::<Vec<_>>()
            .join("|");
        // One automaton (over bytes, which for valid UTF-8 text finds what the `str` regex
        // would): compiling its Unicode classes is a measurable part of a search's start.
        let re = regex::bytes::RegexBuilder::new(&source)
            .case_insensitive(true)
            .size_limit(64 << 20)
            .build()
            .map_err(|e| {
                err(
                    ErrorKind::InvalidQuery,
                    format!("query is too complex to search: {e}"),
                )
            })?;
        Ok(Matcher {
            re: Some(re),
            replacement: used.iter().any(|q| q.contains('\u{fffd}')),
        })
    }

    /// Whether a note file with these raw bytes can have a matching body line: `false` only
    /// when it certainly has none (see the type's documentation for why).
    pub fn may_match(&self, raw: &[u8]) -> bool {
        match &self.re {
            None => false,
            Some(re) => re.is_match(raw) || (self.replacement && std::str::from_utf8(raw).is_err()),
        }
    }

    /// The matching lines of `body` ([`body_matches`]); none when no query can match a line.
    pub fn lines(&self, body: &str, max: Option<usize>) -> (Vec<LineMatch>, usize) {
        match &self.re {
            None => (Vec::new(), 0),
            Some(re) => body_matches(re, body, max),
        }
    }
}

/// One matching line of a note body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineMatch {
    /// 1-based line number.
    pub line: usize,
    /// The whole line (without its `\n`).
    pub text: String,
    /// Code points from the start of the body to the match.
    pub offset_chars: usize,
}

/// Every line of `body` with a match (the earliest match per line), up to `max` lines kept;
/// returns the kept lines and the total count.
///
/// ```
/// use pi_context::notes::query::Matcher;
/// let m = Matcher::new(&["x"])?;
/// let (rows, total) = m.lines("😀 x\n日本 X x", None);
/// assert_eq!(total, 2);
/// assert_eq!((rows[0].line, rows[0].offset_chars), (1, 2));
/// assert_eq!((rows[1].line, rows[1].offset_chars), (2, 7));
/// # Ok::<(), pi_context::notes::NoteError>(())
/// ```
pub fn body_matches(
    re: &regex::bytes::Regex,
    body: &str,
    max: Option<usize>,
) -> (Vec<LineMatch>, usize) {
    let mut kept = Vec::new();
    let mut total = 0usize;
    let (mut line_no, mut line_start) = (1usize, 0usize);
    let (mut cursor, mut cursor_chars) = (0usize, 0usize);
    let mut pos = 0usize;
    let bytes = body.as_bytes();
    while pos <= body.len() {
        let Some(m) = re.find_at(bytes, pos) else {
            break;
        };
        let line_end =
            memchr::memchr(b'\n', &bytes[m.start()..]).map_or(body.len(), |i| m.start() + i);
        total += 1;
        pos = line_end + 1;
        // Once `max` lines are kept, none will be again: the rest are only counted (no line
        // numbers, no code points).
        if max.is_some_and(|max| kept.len() >= max) {
            continue;
        }
        line_no += memchr::memchr_iter(b'\n', &bytes[line_start..m.start()]).count();
        if let Some(last) = memchr::memrchr(b'\n', &bytes[line_start..m.start()]) {
            line_start += last + 1;
        }
        let offset = cursor_chars + body[cursor..m.start()].chars().count();
        cursor = m.start();
        cursor_chars = offset;
        kept.push(LineMatch {
            line: line_no,
            text: body[line_start..line_end].to_owned(),
            offset_chars: offset,
        });
    }
    (kept, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> Identity {
        Identity::new("/n", Some("s"), "k", "ann", "gpt").unwrap()
    }

    #[test]
    fn globs() {
        let compile_glob = |p: &str| compile_glob(p).unwrap();
        let g = compile_glob("**/x.md");
        assert!(g.is_match("x.md") && g.is_match("a/b/x.md") && g.is_match("@human/x.md"));
        let g = compile_glob("*.md");
        assert!(g.is_match("a.md") && !g.is_match("d/a.md"));
        let g = compile_glob("a?.md");
        assert!(g.is_match("a?.md") && !g.is_match("ab.md"));
        assert!(compile_glob("deep/**").is_match("deep/a/b.md"));
        assert!(compile_glob("[x].md").is_match("[x].md"));
    }

    #[test]
    fn home_selection() {
        let id = id();
        let plan = |p: &str| {
            Query {
                pattern: Some(p.into()),
                ..Query::default()
            }
            .plan(&id)
        };
        assert_eq!(
            plan("@project/*").unwrap().homes,
            HomeSelection::Homes(vec![Home::project()])
        );
        assert_eq!(
            plan("@self/*").unwrap().homes,
            HomeSelection::Homes(vec![Home::agent("ann")])
        );
        assert_eq!(
            plan("@agents/*/x.md").unwrap().homes,
            HomeSelection::Namespace(Scope::Agent)
        );
        assert_eq!(
            plan("@project").unwrap().homes,
            HomeSelection::Homes(vec![])
        );
        assert_eq!(plan("@agents/Bad/x").unwrap_err().code(), "invalid_scope");
        assert_eq!(plan("a\\b").unwrap_err().code(), "invalid_pattern");
        assert_eq!(
            plan("**").unwrap().homes,
            HomeSelection::Homes(Home::defaults(&id).to_vec())
        );
        let q = Query {
            who: Some("x".into()),
            ..Query::default()
        };
        assert_eq!(
            q.plan(&id).unwrap_err().message,
            "who requires agent or model scope"
        );
        let q = Query {
            scope: Some(Scope::Human),
            who: Some("x".into()),
            ..Query::default()
        };
        assert_eq!(
            q.plan(&id).unwrap_err().message,
            "who is only valid with agent or model scope"
        );
    }

    #[test]
    fn recency_then_case_insensitive_then_bytes() {
        let t = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap();
        let mut v = vec!["b.md", "B.md", "a.md", "C.md"];
        v.sort_by(|a, b| recency_order(t, a, t, b));
        assert_eq!(v, ["a.md", "B.md", "b.md", "C.md"]);
    }

    #[test]
    fn code_point_offsets_with_emoji_cjk_combining_marks_and_dotted_i() {
        let m = Matcher::new(&["needle"]).unwrap();
        // İ is one code point (two bytes) whose lowercase is two code points: offsets must
        // count the original text, not a lowercased copy.
        let body = "İİ NEEDLE\n😀e\u{301}漢字 needle\nnone\nx Needle needle";
        let (rows, total) = m.lines(body, None);
        assert_eq!(total, 3);
        assert_eq!((rows[0].line, rows[0].offset_chars), (1, 3));
        // line 2 starts at 10 (9 chars + \n): 😀 e ◌́ 漢 字 space = 6
        assert_eq!((rows[1].line, rows[1].offset_chars), (2, 16));
        let line4: usize = body
            .split('\n')
            .take(3)
            .map(|l| l.chars().count() + 1)
            .sum();
        assert_eq!(
            (rows[2].line, rows[2].offset_chars, rows[2].text.as_str()),
            (4, line4 + 2, "x Needle needle")
        );
        let (kept, total) = m.lines(body, Some(1));
        assert_eq!((kept.len(), total), (1, 3));
    }

    /// `body_matches` as its documentation defines it, line by line: the earliest match of
    /// each line, its 1-based number, the whole line, and the code points before the match.
    fn lines_reference(
        re: &regex::bytes::Regex,
        body: &str,
        max: Option<usize>,
    ) -> (Vec<LineMatch>, usize) {
        let (mut kept, mut total, mut chars_before) = (Vec::new(), 0, 0);
        for (index, line) in body.split('\n').enumerate() {
            if let Some(m) = re.find(line.as_bytes()) {
                total += 1;
                if max.is_none_or(|max| kept.len() < max) {
                    kept.push(LineMatch {
                        line: index + 1,
                        text: line.to_owned(),
                        offset_chars: chars_before + line[..m.start()].chars().count(),
                    });
                }
            }
            chars_before += line.chars().count() + 1;
        }
        (kept, total)
    }

    proptest::proptest! {
        #[test]
        fn body_matches_agrees_with_a_line_by_line_reference(
            body in proptest::collection::vec(
                proptest::sample::select(&["ab", "AB", "b a", "\n", "\r\n", "😀", "日本", "İ", "ß", " "][..]),
                0..40,
            ),
            query in proptest::sample::select(&["a", "ab", "b", "B A", "日本", "😀a", "i"][..]),
            max in proptest::option::of(0usize..4),
        ) {
            let body = body.concat();
            let Some(re) = Matcher::new(&[query]).unwrap().re else {
                return Err(proptest::test_runner::TestCaseError::fail("literal queries compile"));
            };
            proptest::prop_assert_eq!(body_matches(&re, &body, max), lines_reference(&re, &body, max));
        }
    }

    #[test]
    fn simple_case_folding_only() {
        let m = Matcher::new(&["k", "straße"]).unwrap();
        let found = |m: &Matcher, text: &str| m.lines(text, None).1 > 0;
        assert!(found(&m, "\u{212a}")); // Kelvin sign folds to k
        assert!(!found(&m, "strasse")); // full folding ß → ss is not used
        assert!(m.may_match("\u{212a}".as_bytes()) && !m.may_match(b"strasse"));
        let dotted = Matcher::new(&["İ"]).unwrap();
        assert!(found(&dotted, "İ") && !found(&dotted, "i") && !found(&dotted, "I"));
        // A query with a newline never matches; U+FFFD may stand for any invalid byte.
        assert!(!Matcher::new(&["a\nb"]).unwrap().may_match(b"a\nb"));
        let replacement = Matcher::new(&["x\u{fffd}"]).unwrap();
        assert!(replacement.may_match(b"\xff") && !replacement.may_match(b"x?"));
        assert_eq!(Matcher::new(&[""]).unwrap_err().code(), "invalid_query");
        let empty: [&str; 0] = [];
        assert_eq!(Matcher::new(&empty).unwrap_err().code(), "invalid_query");
    }
}
