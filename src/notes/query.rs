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
/// automaton (Unicode simple case folding).
#[derive(Debug, Clone)]
pub struct Matcher {
    /// Over note text (`None` when no query can match a single line).
    pub text: Option<Regex>,
    /// The same automaton over raw file bytes, to skip files cheaply.
    pub bytes: Option<regex::bytes::Regex>,
}

impl Matcher {
    /// Build the matcher; refuses an empty list or an empty query.
    ///
    /// ```
    /// use pi_context::notes::query::Matcher;
    /// let m = Matcher::new(&["needle.*", "ΣΑΣ"])?;
    /// assert!(m.text.as_ref().unwrap().is_match("a NeEdLe.* b"));
    /// assert!(m.text.as_ref().unwrap().is_match("σας"));
    /// assert!(!m.text.as_ref().unwrap().is_match("needle.+"));
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
        let alternatives: Vec<String> = queries
            .iter()
            .map(AsRef::as_ref)
            .filter(|q| !q.contains('\n'))
            .map(regex::escape)
            .collect();
        if alternatives.is_empty() {
            return Ok(Matcher {
                text: None,
                bytes: None,
            });
        }
        let source = alternatives.join("|");
        let too_big = |e: regex::Error| {
            err(
                ErrorKind::InvalidQuery,
                format!("query is too complex to search: {e}"),
            )
        };
        let text = RegexBuilder::new(&source)
            .case_insensitive(true)
            .size_limit(64 << 20)
            .build()
            .map_err(too_big)?;
        let bytes = regex::bytes::RegexBuilder::new(&source)
            .case_insensitive(true)
            .size_limit(64 << 20)
            .build()
            .map_err(too_big)?;
        Ok(Matcher {
            text: Some(text),
            bytes: Some(bytes),
        })
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
/// use pi_context::notes::query::{Matcher, body_matches};
/// let m = Matcher::new(&["x"])?;
/// let (rows, total) = body_matches(m.text.as_ref().unwrap(), "😀 x\n日本 X x", None);
/// assert_eq!(total, 2);
/// assert_eq!((rows[0].line, rows[0].offset_chars), (1, 2));
/// assert_eq!((rows[1].line, rows[1].offset_chars), (2, 7));
/// # Ok::<(), pi_context::notes::NoteError>(())
/// ```
pub fn body_matches(re: &Regex, body: &str, max: Option<usize>) -> (Vec<LineMatch>, usize) {
    let mut kept = Vec::new();
    let mut total = 0usize;
    let (mut line_no, mut line_start) = (1usize, 0usize);
    let (mut cursor, mut cursor_chars) = (0usize, 0usize);
    let mut pos = 0usize;
    let bytes = body.as_bytes();
    while pos <= body.len() {
        let Some(m) = re.find_at(body, pos) else {
            break;
        };
        for nl in memchr::memchr_iter(b'\n', &bytes[line_start..m.start()]) {
            line_no += 1;
            let _ = nl;
        }
        if let Some(last) = memchr::memrchr(b'\n', &bytes[line_start..m.start()]) {
            line_start += last + 1;
        }
        let offset = cursor_chars + body[cursor..m.start()].chars().count();
        cursor = m.start();
        cursor_chars = offset;
        let line_end =
            memchr::memchr(b'\n', &bytes[m.start()..]).map_or(body.len(), |i| m.start() + i);
        total += 1;
        if max.is_none_or(|max| kept.len() < max) {
            kept.push(LineMatch {
                line: line_no,
                text: body[line_start..line_end].to_owned(),
                offset_chars: offset,
            });
        }
        pos = line_end + 1;
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
        let re = m.text.unwrap();
        // İ is one code point (two bytes) whose lowercase is two code points: offsets must
        // count the original text, not a lowercased copy.
        let body = "İİ NEEDLE\n😀e\u{301}漢字 needle\nnone\nx Needle needle";
        let (rows, total) = body_matches(&re, body, None);
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
        let (kept, total) = body_matches(&re, body, Some(1));
        assert_eq!((kept.len(), total), (1, 3));
    }

    #[test]
    fn simple_case_folding_only() {
        let m = Matcher::new(&["k", "straße"]).unwrap();
        let re = m.text.unwrap();
        assert!(re.is_match("\u{212a}")); // Kelvin sign folds to k
        assert!(!re.is_match("strasse")); // full folding ß → ss is not used
        let dotted = Matcher::new(&["İ"]).unwrap().text.unwrap();
        assert!(dotted.is_match("İ"));
        assert_eq!(Matcher::new(&[""]).unwrap_err().code(), "invalid_query");
        let empty: [&str; 0] = [];
        assert_eq!(Matcher::new(&empty).unwrap_err().code(), "invalid_query");
    }
}
