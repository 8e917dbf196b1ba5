//! The doctor's reference check (docs/spec/dream-doctor.md §12.4): find the backtick-quoted concrete
//! note addresses in a note's body (bare names too, in `MAP.md`), and report those that do not
//! parse or whose note does not exist. It owns which spans count as addresses and where each
//! resolves from a static point of view (`@self/` and `@model/` are skipped: who is running is
//! unknown). It never reads or touches a target; the caller tests existence.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::{Issue, IssueKind};
use crate::notes::{Address, Identity, Scope};

/// Where addresses found in one note resolve.
#[derive(Debug, Clone, Copy)]
pub struct Resolve<'a> {
    /// The notes home.
    pub home: &'a Path,
    /// The root of the home being walked (`human/`, `agents/<s>/`, `project/<key>/` or
    /// `pi/session/<id>/`): where bare addresses resolve, whatever subdirectory the note is in.
    pub root: &'a Path,
    /// The project home, when the note is in one: where `@project/` resolves.
    pub project: Option<&'a Path>,
}

/// What one body yielded.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Distinct concrete addresses resolved against the tree.
    pub checked: usize,
    /// Distinct `@self/` / `@model/` addresses (not statically resolvable).
    pub skipped: usize,
    /// Issues with empty paths, in order of first appearance. An issue paired with a path is
    /// a `target_missing` candidate: it holds only if that path does not exist. The existence
    /// test is left to the caller, which has already seen most files while walking and so
    /// spares one `stat` per reference.
    pub issues: Vec<(Issue, Option<PathBuf>)>,
}

const FORMS_HINT: &str = "invalid address; use a bare path for the session home, or \
                          @project/, @human/, @self/, @agents/<name>/, @model/ or \
                          @models/<name>/ followed by a path";

/// Scan `body` (whose first line is line `first_line` of the file). Each distinct address is
/// checked once per note, at its first occurrence.
#[allow(
    clippy::expect_used,
    reason = "the span pattern is a valid regex because it is a constant; group 1 always participates"
)]
pub fn check(body: &str, first_line: usize, is_map: bool, resolve: &Resolve<'_>) -> Scan {
    static SPAN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"`([^`\n]+)`")
            .expect("the span pattern is a valid regex because it is a constant")
    });
    let mut scan = Scan::default();
    if memchr::memchr(b'`', body.as_bytes()).is_none() {
        return scan;
    }
    let mut seen: HashSet<&str> = HashSet::new();
    for (index, line) in body.split('\n').enumerate() {
        if memchr::memchr(b'`', line.as_bytes()).is_none() {
            continue;
        }
        for caps in SPAN.captures_iter(line) {
            let span = caps.get(1).expect("group 1 always participates").as_str();
            if !is_candidate(span, is_map) || !seen.insert(span) {
                continue;
            }
            let line_no = first_line + index;
            let problem = match reference(span) {
                Err(()) => Some((IssueKind::InvalidAddress, FORMS_HINT, None)),
                Ok(Reference::Relative) => {
                    scan.skipped += 1;
                    None
                }
                Ok(Reference::Concrete(address)) => {
                    scan.checked += 1;
                    match target(&address, resolve) {
                        None => Some((
                            IssueKind::ProjectContextUnavailable,
                            "project context unavailable; use a resolvable reference",
                            None,
                        )),
                        Some(path) => Some((
                            IssueKind::TargetMissing,
                            "target missing; update or remove the reference",
                            Some(path),
                        )),
                    }
                }
            };
            if let Some((kind, message, unless_exists)) = problem {
                let mut issue = Issue::new("", kind, format!("{span}: {message}"));
                issue.address = Some(span.to_string());
                issue.line = Some(line_no);
                scan.issues.push((issue, unless_exists));
            }
        }
    }
    scan
}

/// A span is a concrete note address when it ends in `.md`, holds no `<`, `>`, `*`, `?` or
/// whitespace (examples and globs), and starts with `@` — or, in a map, is a bare name.
fn is_candidate(span: &str, is_map: bool) -> bool {
    span.ends_with(".md")
        && !span
            .chars()
            .any(|c| matches!(c, '<' | '>' | '*' | '?') || c.is_whitespace())
        && (is_map || span.starts_with('@'))
}

/// A decoded address, from a static point of view.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reference {
    /// `@self/…` or `@model/…`: relative to whoever runs, so not checkable here.
    Relative,
    /// Any other form, decoded by the notes store's own grammar.
    Concrete(Address),
}

/// Decode with the notes address grammar (docs/spec/notes.md §4.1). The identity only fills in
/// `@self/`/`@model/`, which are then set aside as [`Reference::Relative`].
#[allow(
    clippy::expect_used,
    reason = "the placeholder identity is valid because its fields are constant slugs"
)]
fn reference(address: &str) -> Result<Reference, ()> {
    static NOBODY: LazyLock<Identity> = LazyLock::new(|| {
        Identity::new("/", None, "doctor-00000000", "doctor", "doctor")
            .expect("the placeholder identity is valid because its fields are constant slugs")
    });
    let decoded = Address::decode(address, &NOBODY).map_err(|_| ())?;
    if address.starts_with("@self/") || address.starts_with("@model/") {
        Ok(Reference::Relative)
    } else {
        Ok(Reference::Concrete(decoded))
    }
}

/// The file a concrete address names, or `None` for `@project/` outside a project home.
/// Bare (session-form) addresses resolve at the root of the home being walked.
fn target(address: &Address, resolve: &Resolve<'_>) -> Option<PathBuf> {
    let who = address.home.who.as_deref().unwrap_or_default();
    let base = match address.home.scope {
        Scope::Session => resolve.root.to_path_buf(),
        Scope::Project => resolve.project?.to_path_buf(),
        Scope::Human => resolve.home.join("human"),
        Scope::Agent => resolve.home.join("agents").join(who),
        Scope::Model => resolve.home.join("models").join(who),
    };
    Some(
        address
            .file_vpath()
            .split('/')
            .fold(base, |acc, segment| acc.join(segment)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        let resolve = Resolve {
            home: Path::new("/h"),
            root: Path::new("/h/pi/session/s"),
            project: Some(Path::new("/h/project/p-00000000")),
        };
        let resolved = |a: &str| match reference(a) {
            Ok(Reference::Concrete(address)) => target(&address, &resolve),
            other => panic!("{a}: {other:?}"),
        };
        assert_eq!(resolved("@human/a/b.md"), Some("/h/human/a/b.md".into()));
        assert_eq!(
            resolved("@agents/ann/x.md"),
            Some("/h/agents/ann/x.md".into())
        );
        assert_eq!(
            resolved("@models/m-1/x.md"),
            Some("/h/models/m-1/x.md".into())
        );
        assert_eq!(
            resolved("@project/进度.md"),
            Some("/h/project/p-00000000/进度.md".into())
        );
        assert_eq!(
            resolved(".cache/x.md"),
            Some("/h/pi/session/s/.cache/x.md".into())
        );
        assert_eq!(reference("@self/x.md"), Ok(Reference::Relative));
        assert_eq!(reference("@model/x.md"), Ok(Reference::Relative));
        for bad in [
            "@global/x.md",
            "@personal/x.md",
            "@Project/x.md",
            "@agents/Bad/x.md",
            "@agents/x.md",
            "@human/",
            "@self/../x.md",
            "a//b.md",
            "./a.md",
            "../a.md",
            "/abs.md",
            "a\\b.md",
            "a@b.md",
            "@human/a@b.md",
        ] {
            assert_eq!(reference(bad), Err(()), "{bad}");
        }
    }

    #[test]
    fn candidates() {
        assert!(is_candidate("@human/a.md", false));
        assert!(!is_candidate("a.md", false));
        assert!(is_candidate("a.md", true));
        assert!(!is_candidate("@human/<name>.md", true));
        assert!(!is_candidate("@human/*.md", true));
        assert!(!is_candidate("@human/a b.md", true));
        assert!(!is_candidate("@human/a.txt", true));
    }
}
