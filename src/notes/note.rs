//! Note metadata: the normalised view of a frontmatter block (origin, timestamps, access
//! bookkeeping, crumpled state, project, extras) and its serialisation back to a file.
//! Timestamps are written RFC 3339 with milliseconds and a numeric offset; on read they follow
//! the one date grammar of [`super::date`]. Time is always passed in, never read here.

use chrono::{DateTime, FixedOffset, SecondsFormat};
use serde_json::{Map, Value};

use super::error::{ErrorKind, NoteError, err};
use super::frontmatter;

/// A serialised note (frontmatter + body) may not exceed this many UTF-8 bytes.
pub const MAX_NOTE_BYTES: usize = 1_000_000;

/// Who wrote a note's current content.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    User,
    #[serde(rename = "self")]
    Myself,
    External,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Myself => "self",
            Origin::External => "external",
        }
    }

    #[allow(clippy::expect_used, reason = "strings serialise")]
    pub fn parse(value: &str) -> Result<Origin, NoteError> {
        match value {
            "user" => Ok(Origin::User),
            "self" => Ok(Origin::Myself),
            "external" => Ok(Origin::External),
            other => Err(err(
                ErrorKind::InvalidOrigin,
                format!(
                    "origin must be one of user, self, external (got {})",
                    serde_json::to_string(other).expect("strings serialise")
                ),
            )),
        }
    }
}

/// Keys the store interprets; everything else is an extra, kept verbatim.
pub const NORMALISED_KEYS: [&str; 8] = [
    "scope",
    "origin",
    "createdAt",
    "updatedAt",
    "lastAccessed",
    "accessCount",
    "crumpledAt",
    "project",
];

/// The normalised metadata of one note.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteMeta {
    pub origin: Origin,
    pub created_at: DateTime<FixedOffset>,
    pub updated_at: DateTime<FixedOffset>,
    pub last_accessed: DateTime<FixedOffset>,
    /// Kept as found when it is a finite number (even negative or fractional).
    pub access_count: f64,
    /// Present (any value) means crumpled.
    pub crumpled_at: Option<Value>,
    /// Every other key except `scope`, in file order — `project` included (it may be any
    /// value; see [`NoteMeta::project`]).
    pub other: Map<String, Value>,
}

impl NoteMeta {
    /// Metadata of a brand-new note.
    pub fn new(origin: Origin, now: DateTime<FixedOffset>) -> NoteMeta {
        NoteMeta {
            origin,
            created_at: now,
            updated_at: now,
            last_accessed: now,
            access_count: 0.0,
            crumpled_at: None,
            other: Map::new(),
        }
    }

    /// Normalise parsed fields; a missing or unreadable timestamp becomes `fallback` (callers
    /// pass the note file's modification time, see [`NoteMeta::has_all_stamps`]).
    pub fn from_fields(fields: &Map<String, Value>, fallback: DateTime<FixedOffset>) -> NoteMeta {
        let origin = fields
            .get("origin")
            .and_then(Value::as_str)
            .and_then(|s| Origin::parse(s).ok())
            .unwrap_or(Origin::Myself);
        let stamp = |key: &str| fields.get(key).and_then(parse_stamp).unwrap_or(fallback);
        let access_count = fields
            .get("accessCount")
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite())
            .unwrap_or(0.0);
        let other = fields
            .iter()
            .filter(|(k, _)| !NORMALISED_KEYS.contains(&k.as_str()) || k.as_str() == "project")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        NoteMeta {
            origin,
            created_at: stamp("createdAt"),
            updated_at: stamp("updatedAt"),
            last_accessed: stamp("lastAccessed"),
            access_count,
            crumpled_at: fields.get("crumpledAt").cloned(),
            other,
        }
    }

    /// Whether `createdAt`, `updatedAt` and `lastAccessed` all read as dates, so
    /// [`NoteMeta::from_fields`] will not use its fallback (and a caller need not find one).
    pub fn has_all_stamps(fields: &Map<String, Value>) -> bool {
        ["createdAt", "updatedAt", "lastAccessed"]
            .iter()
            .all(|key| fields.get(*key).and_then(parse_stamp).is_some())
    }

    pub fn is_crumpled(&self) -> bool {
        self.crumpled_at.is_some()
    }

    /// The `project` value (any JSON value as found).
    pub fn project(&self) -> Option<&Value> {
        self.other.get("project")
    }

    /// The extras: every key that is not normalised, in file order.
    pub fn extras(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.other.iter().filter(|(k, _)| k.as_str() != "project")
    }

    /// Back to frontmatter fields, in serialisation order.
    pub fn to_fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("origin".into(), Value::String(self.origin.as_str().into()));
        if let Some(c) = &self.crumpled_at {
            fields.insert("crumpledAt".into(), c.clone());
        }
        fields.insert(
            "createdAt".into(),
            Value::String(format_stamp(self.created_at)),
        );
        fields.insert(
            "updatedAt".into(),
            Value::String(format_stamp(self.updated_at)),
        );
        fields.insert(
            "lastAccessed".into(),
            Value::String(format_stamp(self.last_accessed)),
        );
        fields.insert("accessCount".into(), number(self.access_count));
        for (k, v) in &self.other {
            fields.insert(k.clone(), v.clone());
        }
        fields
    }

    /// The frontmatter block alone (`---\n…\n---`).
    pub fn block(&self) -> String {
        frontmatter::serialize_block(&self.to_fields())
    }
}

/// Parse a whole note file into metadata and body.
///
/// ```
/// use pi_context::notes::note::parse_note;
/// let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap();
/// let (meta, body) = parse_note("---\ncrumpledAt: 2025-12-01T00:00:00.000+00:00\n---\n\nhi", now);
/// assert!(meta.is_crumpled());
/// assert_eq!(body, "hi");
/// ```
pub fn parse_note(raw: &str, fallback: DateTime<FixedOffset>) -> (NoteMeta, String) {
    let parsed = frontmatter::parse(raw);
    (
        NoteMeta::from_fields(&parsed.fields, fallback),
        parsed.body.into_owned(),
    )
}

/// Serialise a note, refusing files over [`MAX_NOTE_BYTES`].
pub fn serialize_note(meta: &NoteMeta, body: &str) -> Result<String, NoteError> {
    let text = frontmatter::serialize(&meta.to_fields(), body);
    if text.len() > MAX_NOTE_BYTES {
        return Err(err(
            ErrorKind::TooLarge,
            format!(
                "note exceeds {MAX_NOTE_BYTES} UTF-8 bytes (serialized {})",
                text.len()
            ),
        ));
    }
    Ok(text)
}

/// `YYYY-MM-DDTHH:MM:SS.mmm±HH:MM` (never `Z`).
pub fn format_stamp(t: DateTime<FixedOffset>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, false)
}

/// A timestamp value: a string in the one date grammar of [`super::date`] (the same one
/// `doctor` checks). Numbers, epoch milliseconds included, are not dates.
pub fn parse_stamp(value: &Value) -> Option<DateTime<FixedOffset>> {
    match value {
        Value::String(s) => super::date::parse_date(s),
        _ => None,
    }
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::from(0), Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339("2026-09-15T17:31:45.392+08:00").unwrap()
    }

    #[test]
    fn a_new_session_note_serialises_like_the_original() {
        let mut meta = NoteMeta::new(Origin::Myself, now());
        meta.other.insert(
            "project".into(),
            Value::String("my-project-a1b2c3d4".into()),
        );
        assert_eq!(
            serialize_note(&meta, "hello").unwrap(),
            "---\norigin: self\ncreatedAt: 2026-09-15T17:31:45.392+08:00\nupdatedAt: 2026-09-15T17:31:45.392+08:00\nlastAccessed: 2026-09-15T17:31:45.392+08:00\naccessCount: 0\nproject: my-project-a1b2c3d4\n---\n\nhello"
        );
    }

    #[test]
    fn timestamps_follow_the_date_grammar_and_fall_back_otherwise() {
        let raw = "---\ncreatedAt: 2020-01-01\nupdatedAt: 1600000000000\nlastAccessed: garbage\naccessCount: 2.5\norigin: bogus\ncreated_at: keep\n---\n\nb";
        let (meta, _) = parse_note(raw, now());
        assert_eq!(
            format_stamp(meta.created_at),
            "2020-01-01T00:00:00.000+00:00"
        );
        assert_eq!(meta.updated_at, now(), "epoch milliseconds are not a date");
        assert_eq!(meta.last_accessed, now());
        let fields = frontmatter::parse(raw).fields;
        assert!(!NoteMeta::has_all_stamps(&fields));
        assert_eq!(meta.access_count, 2.5);
        assert_eq!(meta.origin, Origin::Myself);
        assert_eq!(
            meta.extras().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["created_at"]
        );
    }

    #[test]
    fn oversize_notes_are_refused() {
        let meta = NoteMeta::new(Origin::User, now());
        let e = serialize_note(&meta, &"x".repeat(MAX_NOTE_BYTES)).unwrap_err();
        assert_eq!(e.code(), "too_large");
    }
}
