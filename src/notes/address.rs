//! Addresses: the public names of notes (`path`, `@project/path`, `@human/path`,
//! `@self/path`, `@model/path`, `@agents/<slug>/path`, `@models/<slug>/path`), their decoding
//! against an identity, their concrete display form, and the home directories they live in.
//! Pure string and path logic: no filesystem access here.

use std::path::PathBuf;

use super::error::{ErrorKind, NoteError, err};
use super::identity::{Identity, is_slug};

/// Longest accepted vpath (the path part of an address, without `.md`), in UTF-8 bytes.
pub const MAX_NOTE_PATH_BYTES: usize = 512;

/// One of the five homes. Its JSON Schema (the names [`Scope::name`] gives) is the `scope` of the
/// notes-list and notes-search requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, schemars::JsonSchema)]
#[schemars(
    rename_all = "lowercase",
    description = "The homes a listing or search can be narrowed to."
)]
pub enum Scope {
    Session,
    Project,
    Human,
    Agent,
    Model,
}

impl Scope {
    pub const ALL: [Scope; 5] = [
        Scope::Session,
        Scope::Project,
        Scope::Human,
        Scope::Agent,
        Scope::Model,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scope::Session => "session",
            Scope::Project => "project",
            Scope::Human => "human",
            Scope::Agent => "agent",
            Scope::Model => "model",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// A concrete home: a scope plus, for agent/model, whose home it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Home {
    pub scope: Scope,
    /// The agent or model slug (always set for `Agent`/`Model`, `None` otherwise).
    pub who: Option<String>,
}

impl Home {
    pub fn session() -> Home {
        Home {
            scope: Scope::Session,
            who: None,
        }
    }
    pub fn project() -> Home {
        Home {
            scope: Scope::Project,
            who: None,
        }
    }
    pub fn human() -> Home {
        Home {
            scope: Scope::Human,
            who: None,
        }
    }
    pub fn agent(slug: &str) -> Home {
        Home {
            scope: Scope::Agent,
            who: Some(slug.to_owned()),
        }
    }
    pub fn model(slug: &str) -> Home {
        Home {
            scope: Scope::Model,
            who: Some(slug.to_owned()),
        }
    }

    /// The five default homes of an identity, in order: session, project, human, current
    /// agent, current model.
    pub fn defaults(identity: &Identity) -> [Home; 5] {
        [
            Home::session(),
            Home::project(),
            Home::human(),
            Home::agent(&identity.agent),
            Home::model(&identity.model),
        ]
    }

    /// The address prefix of this home (`""`, `@project/`, `@agents/<slug>/`, …).
    pub fn prefix(&self) -> String {
        let who = self.who.as_deref().unwrap_or("");
        match self.scope {
            Scope::Session => String::new(),
            Scope::Project => "@project/".into(),
            Scope::Human => "@human/".into(),
            Scope::Agent => format!("@agents/{who}/"),
            Scope::Model => format!("@models/{who}/"),
        }
    }

    /// The label used in `homes_unavailable`: the prefix without its `/`, or `session`.
    pub fn label(&self) -> String {
        let prefix = self.prefix();
        match prefix.strip_suffix('/') {
            Some(label) => label.to_owned(),
            None => "session".into(),
        }
    }

    /// The home's directory, or `None` for the session home without a session id.
    pub fn dir(&self, identity: &Identity) -> Option<PathBuf> {
        let root = &identity.root;
        let who = self.who.as_deref().unwrap_or("");
        Some(match self.scope {
            Scope::Session => root
                .join("pi")
                .join("session")
                .join(identity.session_id.as_deref()?),
            Scope::Project => root.join("project").join(&identity.project_key),
            Scope::Human => root.join("human"),
            Scope::Agent => root.join("agents").join(who),
            Scope::Model => root.join("models").join(who),
        })
    }

    /// The home's directory as components under the notes root (`["agents", "<slug>"]`, …),
    /// or `None` for the session home without a session id.
    pub fn components(&self, identity: &Identity) -> Option<Vec<String>> {
        let who = self.who.clone().unwrap_or_default();
        Some(match self.scope {
            Scope::Session => vec!["pi".into(), "session".into(), identity.session_id.clone()?],
            Scope::Project => vec!["project".into(), identity.project_key.clone()],
            Scope::Human => vec!["human".into()],
            Scope::Agent => vec!["agents".into(), who],
            Scope::Model => vec!["models".into(), who],
        })
    }

    /// Whether the current identity may write here (every home except a foreign agent/model).
    pub fn writable(&self, identity: &Identity) -> bool {
        match self.scope {
            Scope::Agent => self.who.as_deref() == Some(identity.agent.as_str()),
            Scope::Model => self.who.as_deref() == Some(identity.model.as_str()),
            _ => true,
        }
    }
}

/// A decoded address: a home plus a vpath inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub home: Home,
    /// The path as written (segments separated by `/`, `.md` possibly absent).
    pub vpath: String,
}

impl Address {
    /// Decode `input` for `identity` (`@self/` and `@model/` resolve to the current slugs).
    ///
    /// ```
    /// use pi_context::notes::{Address, Identity, Scope};
    /// let id = Identity::new("/n", Some("s1"), "demo-1a2b3c4d", "ann", "gpt")?;
    /// let a = Address::decode("@self/todo", &id)?;
    /// assert_eq!(a.home.scope, Scope::Agent);
    /// assert_eq!(a.display(), "@agents/ann/todo.md");
    /// assert_eq!(Address::decode("../x", &id).unwrap_err().code(), "invalid_address");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decode(input: &str, identity: &Identity) -> Result<Address, NoteError> {
        let (home, path) = match input.strip_prefix('@') {
            None => (Home::session(), input),
            Some(rest) => {
                let (head, tail) = rest.split_once('/').unwrap_or((rest, ""));
                match head {
                    "project" => (Home::project(), tail),
                    "human" => (Home::human(), tail),
                    "self" => (Home::agent(&identity.agent), tail),
                    "model" => (Home::model(&identity.model), tail),
                    "agents" | "models" => {
                        let (who, path) = tail.split_once('/').unwrap_or((tail, ""));
                        if !is_slug(who) {
                            return Err(forms_error(input));
                        }
                        let home = if head == "agents" {
                            Home::agent(who)
                        } else {
                            Home::model(who)
                        };
                        (home, path)
                    }
                    _ => return Err(forms_error(input)),
                }
            }
        };
        if path.is_empty() {
            return Err(address_error(input, "path must be a non-empty string"));
        }
        if path.contains('@') {
            return Err(forms_error(input));
        }
        check_vpath(input, path)?;
        Ok(Address {
            home,
            vpath: path.to_owned(),
        })
    }

    /// The vpath with `.md` ensured: the file's path relative to its home.
    pub fn file_vpath(&self) -> String {
        with_md(&self.vpath)
    }

    /// The concrete display form, always ending in `.md`
    /// (`@agents/<slug>/x.md`, never `@self/x.md`).
    pub fn display(&self) -> String {
        format!("{}{}", self.home.prefix(), self.file_vpath())
    }

    /// The note's file path under `identity` (lexical; symlinks are checked by the store).
    pub fn file_path(&self, identity: &Identity) -> Result<PathBuf, NoteError> {
        let dir = self.home.dir(identity).ok_or_else(no_session)?;
        let mut path = dir;
        for segment in self.file_vpath().split('/') {
            path.push(segment);
        }
        Ok(path)
    }

    /// Refuse vpaths over [`MAX_NOTE_PATH_BYTES`] (applies to write/update/rename targets).
    pub fn check_path_cap(&self) -> Result<(), NoteError> {
        if self.vpath.len() > MAX_NOTE_PATH_BYTES {
            return Err(err(
                ErrorKind::TooLarge,
                format!(
                    "note path exceeds {MAX_NOTE_PATH_BYTES} UTF-8 bytes (got {})",
                    self.vpath.len()
                ),
            ));
        }
        Ok(())
    }

    /// Refuse a write into a foreign agent/model home.
    pub fn check_writable(&self, identity: &Identity) -> Result<(), NoteError> {
        if self.home.writable(identity) {
            return Ok(());
        }
        Err(err(
            ErrorKind::InvalidScope,
            format!(
                "{} is not your home: writable homes are this session, @project/, @human/, @self/, and the current @model/ home",
                self.home.prefix()
            ),
        ))
    }
}

/// `path` with `.md` appended unless it already ends in `.md` (case-sensitive).
pub fn with_md(path: &str) -> String {
    if path.ends_with(".md") {
        path.to_owned()
    } else {
        format!("{path}.md")
    }
}

/// The longest path segment (directory or file name, `.md` included), in bytes: the file
/// system's name limit. A longer segment is an `invalid_address` before anything is touched.
pub const MAX_SEGMENT_BYTES: usize = 255;

pub(crate) fn no_session() -> NoteError {
    err(
        ErrorKind::NoSession,
        "bare addresses name this session's notes, but no session id was given (--session-id); use @project/, @human/, @self/ or @model/",
    )
}

fn check_vpath(input: &str, path: &str) -> Result<(), NoteError> {
    if path.contains(['\0', '\\']) || path.starts_with('/') {
        return Err(address_error(
            input,
            "paths reject backslashes, leading \"/\", and NUL",
        ));
    }
    if path
        .split('/')
        .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return Err(address_error(
            input,
            "paths reject \"..\", \".\", and empty segments",
        ));
    }
    // The file system's name limit, checked up front: the last segment with `.md` ensured. A
    // path over the whole-path cap is left to `check_path_cap` (`too_large`).
    let file = with_md(path);
    if path.len() > MAX_NOTE_PATH_BYTES {
        return Ok(());
    }
    if let Some(long) = file.split('/').find(|s| s.len() > MAX_SEGMENT_BYTES) {
        return Err(address_error(
            input,
            &format!(
                "a path segment is {} bytes; segments are at most {MAX_SEGMENT_BYTES} bytes (with .md)",
                long.len()
            ),
        ));
    }
    Ok(())
}

#[allow(clippy::expect_used, reason = "a string always serialises to JSON")]
fn quoted(input: &str) -> String {
    serde_json::to_string(input).expect("a string always serialises to JSON")
}

fn address_error(input: &str, reason: &str) -> NoteError {
    err(
        ErrorKind::InvalidAddress,
        format!("invalid address {}: {reason}", quoted(input)),
    )
}

fn forms_error(input: &str) -> NoteError {
    address_error(
        input,
        "addresses are <path> with no @ for this session, or @project/<path>, @human/<path>, @self/<path>, @model/<path>, @agents/<slug>/<path>, @models/<slug>/<path>",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> Identity {
        Identity::new("/n", Some("s1"), "demo-1a2b3c4d", "ann", "gpt").unwrap()
    }

    #[test]
    fn valid_addresses_decode_to_their_homes() {
        let id = id();
        let cases = [
            ("a/b", Home::session(), "a/b", "a/b.md"),
            ("@project/x.md", Home::project(), "x.md", "@project/x.md"),
            (
                "@human/checkpoint/进度.md",
                Home::human(),
                "checkpoint/进度.md",
                "@human/checkpoint/进度.md",
            ),
            (
                "@self/alias",
                Home::agent("ann"),
                "alias",
                "@agents/ann/alias.md",
            ),
            ("@model/m", Home::model("gpt"), "m", "@models/gpt/m.md"),
            ("@agents/bob/x", Home::agent("bob"), "x", "@agents/bob/x.md"),
            (
                "@models/o-3/x y",
                Home::model("o-3"),
                "x y",
                "@models/o-3/x y.md",
            ),
            (".cache/x", Home::session(), ".cache/x", ".cache/x.md"),
            ("x.MD", Home::session(), "x.MD", "x.MD.md"),
        ];
        for (input, home, vpath, display) in cases {
            let a = Address::decode(input, &id).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(a.home, home, "{input}");
            assert_eq!(a.vpath, vpath, "{input}");
            assert_eq!(a.display(), display, "{input}");
        }
    }

    #[test]
    fn invalid_addresses_are_refused() {
        let id = id();
        for input in [
            "",
            "@project",
            "@project/",
            "@self/",
            "@agents/x",
            "@agents/x/",
            "@Project/a",
            "@global/a",
            "@foo/a",
            "bad@name.md",
            "@project/a@b",
            "a//b",
            "a/",
            "./a",
            "../evil",
            "/abs",
            "a\\b",
            "@project/../escape",
            "@project//x",
            "a\0b",
            "@agents/Bad/x",
            "@agents/-x/y",
        ] {
            let e = Address::decode(input, &id).expect_err(input);
            assert_eq!(e.code(), "invalid_address", "{input}");
            assert!(
                e.message.starts_with("invalid address \""),
                "{input}: {}",
                e.message
            );
        }
    }

    #[test]
    fn path_cap_counts_vpath_bytes() {
        let id = id();
        let segments = vec!["é".repeat(50); 5].join("/");
        let exact = format!("{segments}/{}x", "é".repeat(3));
        assert_eq!(exact.len(), 512);
        let ok = Address::decode(&exact, &id).unwrap();
        assert!(ok.check_path_cap().is_ok());
        let long = Address::decode(&format!("{exact}x"), &id).unwrap();
        assert_eq!(long.check_path_cap().unwrap_err().code(), "too_large");
        // One segment over the file-name limit is refused by the decoder itself.
        let e = Address::decode(&"é".repeat(127), &id).unwrap_err();
        assert_eq!(e.code(), "invalid_address");
        assert!(Address::decode(&"é".repeat(126), &id).is_ok());
    }

    #[test]
    fn foreign_homes_are_read_only() {
        let id = id();
        assert!(
            Address::decode("@agents/ann/x", &id)
                .unwrap()
                .check_writable(&id)
                .is_ok()
        );
        let e = Address::decode("@models/other/x", &id)
            .unwrap()
            .check_writable(&id)
            .unwrap_err();
        assert_eq!(e.code(), "invalid_scope");
        assert!(e.message.starts_with("@models/other/ is not your home"));
    }

    #[test]
    fn session_addresses_need_a_session_id() {
        let id = Identity::new("/n", None, "k", "ann", "gpt").unwrap();
        let a = Address::decode("x", &id).unwrap();
        assert_eq!(a.file_path(&id).unwrap_err().code(), "no_session");
        assert_eq!(
            Address::decode("@human/x", &id)
                .unwrap()
                .file_path(&id)
                .unwrap(),
            PathBuf::from("/n/human/x.md")
        );
    }
}
