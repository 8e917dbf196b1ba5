//! The doctor's strict frontmatter check (docs/spec/dream-doctor.md §12.3). It owns the *validation*
//! grammar, which is deliberately stricter than the notes store's lenient reader: the block
//! must start at byte 0 (a BOM fails), a repeated key is an issue rather than "last wins", and
//! values are checked as raw text. It must not be used to read notes for any other purpose:
//! `crate::notes` owns parsing and serialising note files.

use super::{Issue, IssueKind};

/// One metadata line of the block: `^(\w+):\s*(.*?)\s*$` with one layer of matching quotes
/// stripped from the value. `line` is one-based in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub line: usize,
}

/// A note split at its frontmatter block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block<'a> {
    /// Metadata lines in file order (lines that are not `key: value` are ignored, as the
    /// store ignores them).
    pub fields: Vec<Field<'a>>,
    /// Everything after the closing fence line.
    pub body: &'a str,
    /// The one-based file line on which `body` starts.
    pub body_line: usize,
}

/// Split `text` at a frontmatter block: a first line `---` at byte 0, then fields, then a
/// closing line `---` ended by a newline or the end of the text. `\n` and `\r\n` both work.
/// `None` when there is no such block.
pub fn split(text: &str) -> Option<Block<'_>> {
    let after_open = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut fields = Vec::new();
    let mut rest = after_open;
    let mut line = 2;
    loop {
        let (raw, next, ended) = match rest.find('\n') {
            Some(i) => (&rest[..i], &rest[i + 1..], true),
            None => (rest, "", false),
        };
        let content = if ended {
            raw.strip_suffix('\r').unwrap_or(raw)
        } else {
            raw
        };
        if content == "---" {
            return Some(Block {
                fields,
                body: next,
                body_line: line + 1,
            });
        }
        if !ended {
            return None;
        }
        if let Some(field) = field_line(content, line) {
            fields.push(field);
        }
        rest = next;
        line += 1;
    }
}

fn field_line(content: &str, line: usize) -> Option<Field<'_>> {
    let key_len = content
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    if key_len == 0 || content.as_bytes().get(key_len) != Some(&b':') {
        return None;
    }
    let value = content[key_len + 1..].trim();
    Some(Field {
        key: &content[..key_len],
        value: strip_quotes(value),
        line,
    })
}

/// One layer of matching `'…'` or `"…"` removed.
fn strip_quotes(value: &str) -> &str {
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

const REQUIRED_TIMESTAMPS: &[&str] = &["createdAt", "updatedAt", "lastAccessed"];

/// The metadata issues of one block, in a fixed order: repeated keys (in file order), then
/// `origin`, `accessCount`, the timestamps, `crumpledAt`, `scope`. Paths are left empty for
/// the caller. A repeated key is checked with its last value, which is the one the store
/// keeps.
pub fn check(block: &Block<'_>) -> Vec<Issue> {
    let mut issues = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for field in &block.fields {
        if seen.contains(&field.key) {
            let mut issue = Issue::new(
                "",
                IssueKind::DuplicateKey,
                format!("duplicate metadata key {}; keep one value", field.key),
            );
            issue.key = Some(field.key.to_string());
            issue.line = Some(field.line);
            issues.push(issue);
        } else {
            seen.push(field.key);
        }
    }
    let last = |key: &str| block.fields.iter().rev().find(|f| f.key == key);
    let mut flag = |key: &str, kind: IssueKind, advice: &str| {
        let mut issue = Issue::new("", kind, format!("missing/invalid {key}; {advice}"));
        issue.key = Some(key.to_string());
        issue.line = last(key).map(|f| f.line);
        issues.push(issue);
    };
    if !last("origin").is_some_and(|f| matches!(f.value, "user" | "self" | "external")) {
        flag("origin", IssueKind::InvalidOrigin, "repair frontmatter");
    }
    if !last("accessCount")
        .is_some_and(|f| !f.value.is_empty() && f.value.bytes().all(|b| b.is_ascii_digit()))
    {
        flag(
            "accessCount",
            IssueKind::InvalidAccessCount,
            "repair frontmatter",
        );
    }
    for key in REQUIRED_TIMESTAMPS {
        if !last(key).is_some_and(|f| is_timestamp(f.value)) {
            flag(key, IssueKind::InvalidTimestamp, "use an ISO timestamp");
        }
    }
    if last("crumpledAt").is_some_and(|f| !is_timestamp(f.value)) {
        flag(
            "crumpledAt",
            IssueKind::InvalidTimestamp,
            "use an ISO timestamp",
        );
    }
    if let Some(scope) = last("scope") {
        let mut issue = Issue::new(
            "",
            IssueKind::ObsoleteScope,
            "obsolete scope field; remove it (home determines scope)",
        );
        issue.key = Some("scope".to_string());
        issue.line = Some(scope.line);
        issues.push(issue);
    }
    issues
}

/// Whether a metadata value is a date: the notes store's one date grammar
/// ([`crate::notes::date`]), so `doctor` accepts exactly the dates the store reads.
pub fn is_timestamp(value: &str) -> bool {
    crate::notes::date::is_date(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_requires_the_block_at_byte_zero() {
        assert!(split("---\norigin: self\n---\n\nbody").is_some());
        assert!(split("---\r\norigin: self\r\n---\r\nbody").is_some());
        assert!(split("---\norigin: self\n---").is_some());
        assert!(split("---\n---\n").is_some());
        assert!(split("\u{feff}---\norigin: self\n---\n").is_none());
        assert!(split(" ---\norigin: self\n---\n").is_none());
        assert!(split("---\norigin: self\n").is_none());
        assert!(split("---\norigin: self\n----\n").is_none());
        assert!(split("no frontmatter").is_none());
        assert!(split("").is_none());
    }

    #[test]
    fn split_reports_fields_body_and_lines() {
        let block =
            split("---\norigin: 'self'\n  - item\nhy-phen: x\nk:v  \n---\n\nbody\n").unwrap();
        assert_eq!(
            block.fields,
            vec![
                Field {
                    key: "origin",
                    value: "self",
                    line: 2
                },
                Field {
                    key: "k",
                    value: "v",
                    line: 5
                },
            ]
        );
        assert_eq!(block.body, "\nbody\n");
        assert_eq!(block.body_line, 7);
    }

    #[test]
    fn timestamps_are_the_stores_dates() {
        assert!(is_timestamp("2026-01-01"));
        assert!(is_timestamp("2026-09-15T17:31:45.392+08:00"));
        assert!(!is_timestamp("1600000000000"));
        assert!(!is_timestamp("yesterday"));
    }

    #[test]
    fn check_reports_each_problem_once_in_a_fixed_order() {
        let text = "---\norigin: robot\norigin: self\naccessCount: -1\ncreatedAt: 2026-01-01\n\
                    updatedAt: soon\ncrumpledAt: yesterday\nscope: human\n---\n";
        let issues = check(&split(text).unwrap());
        let got: Vec<(IssueKind, Option<&str>, Option<usize>)> = issues
            .iter()
            .map(|i| (i.kind, i.key.as_deref(), i.line))
            .collect();
        assert_eq!(
            got,
            vec![
                (IssueKind::DuplicateKey, Some("origin"), Some(3)),
                (IssueKind::InvalidAccessCount, Some("accessCount"), Some(4)),
                (IssueKind::InvalidTimestamp, Some("updatedAt"), Some(6)),
                (IssueKind::InvalidTimestamp, Some("lastAccessed"), None),
                (IssueKind::InvalidTimestamp, Some("crumpledAt"), Some(7)),
                (IssueKind::ObsoleteScope, Some("scope"), Some(8)),
            ]
        );
        assert_eq!(
            issues[4].message,
            "missing/invalid crumpledAt; use an ISO timestamp"
        );
    }

    #[test]
    fn unknown_and_legacy_keys_are_not_issues() {
        let text = "---\norigin: user\ncreatedAt: 2026-01-01T00:00:00.000+00:00\n\
                    updatedAt: \"2026-01-01T00:00:00.000+00:00\"\nlastAccessed: 2026-01-01\n\
                    accessCount: 0\ncreated_at: x\nstatus: stale\nstale: true\nproject: p-1\n---\n";
        assert_eq!(check(&split(text).unwrap()), vec![]);
    }
}
