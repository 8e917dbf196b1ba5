//! The write jail: the only file operations a dreamer may perform (write, edit, delete), each
//! confined to the notes home whatever path it is given.
//!
//! A path is relative to the notes home or absolute inside it. It is refused when it has a
//! `..` component, lies outside the home lexically, is or goes through a symlink (a symlink is
//! never followed: every directory is opened from the home's handle one component at a time
//! by [`crate::confine`], so what is checked is what is written), names a file with more than
//! one hard link, or names the audit machinery (`.git/`, `dreams/`, the lock files). A delete
//! removes only crumpled notes (frontmatter `crumpledAt`). Writes are atomic in the same
//! directory handle and every read-modify-write holds the file's cross-process lock. This
//! module never prints and never decides exit codes.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::confine::{self, Dir};
use crate::envelope::{DomainError, ErrorClass};
use crate::notes::MAX_SEGMENT_BYTES;

/// Top-level names the dreamer may never write: the audit repository, the reports, the lock.
const PROTECTED_TOP: &[&str] = super::artifacts::MACHINERY;

/// One `{oldText, newText}` replacement (the shared wire shape).
pub use crate::protocol::Edit;

/// The stable codes of a refused jailed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JailCode {
    /// An edit request without edits: a malformed request (`invalid_request`).
    EmptyEdits,
    InvalidPath,
    OutsideHome,
    ProtectedPath,
    HardLink,
    NotAFile,
    NotFound,
    NotCrumpled,
    EditNotFound,
    EditAmbiguous,
    EditOverlap,
    HomeUnresolvable,
    Io,
}

impl JailCode {
    /// The code as the envelope and the journal carry it.
    pub fn as_str(self) -> &'static str {
        match self {
            JailCode::EmptyEdits => "invalid_request",
            JailCode::InvalidPath => "invalid_path",
            JailCode::OutsideHome => "outside_home",
            JailCode::ProtectedPath => "protected_path",
            JailCode::HardLink => "hard_link",
            JailCode::NotAFile => "not_a_file",
            JailCode::NotFound => "not_found",
            JailCode::NotCrumpled => "not_crumpled",
            JailCode::EditNotFound => "edit_not_found",
            JailCode::EditAmbiguous => "edit_ambiguous",
            JailCode::EditOverlap => "edit_overlap",
            JailCode::HomeUnresolvable => "home_unresolvable",
            JailCode::Io => "io_error",
        }
    }

    /// What kind of refusal the code is.
    pub fn class(self) -> ErrorClass {
        match self {
            JailCode::EmptyEdits => ErrorClass::Usage,
            JailCode::Io => ErrorClass::Internal,
            _ => ErrorClass::Refused,
        }
    }
}

/// A refused jailed operation. Nothing on disk changed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct JailError {
    pub kind: JailCode,
    pub message: String,
    /// For edit refusals: the zero-based index of the failing edit.
    pub edit_index: Option<usize>,
    /// For `io_error`: the failure underneath (its text is already in the message).
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl JailError {
    fn new(kind: JailCode, message: impl Into<String>) -> Self {
        JailError {
            kind,
            message: message.into(),
            edit_index: None,
            source: None,
        }
    }

    /// An I/O failure of `what` (empty, or ending in a space) on `path`, keeping its cause.
    fn io(what: &str, path: &str, e: impl std::error::Error + Send + Sync + 'static) -> Self {
        let message = format!("{what}{path}: {e}");
        JailError {
            source: Some(Box::new(e)),
            ..JailError::new(JailCode::Io, message)
        }
    }

    /// The stable refusal code (see [`JailCode::as_str`]).
    pub fn code(&self) -> &'static str {
        self.kind.as_str()
    }
}

impl DomainError for JailError {
    fn code(&self) -> &'static str {
        self.kind.as_str()
    }

    fn class(&self) -> ErrorClass {
        self.kind.class()
    }
}

/// A path that passed the jail: its directory (reached from the home's handle without
/// following a symlink), its file name, and how to name it.
#[derive(Debug)]
pub struct Jailed {
    pub dir: Dir,
    pub name: OsString,
    /// The path relative to the home, `/`-separated, as reports show it.
    pub relative: String,
}

/// What a successful operation did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Created,
    Overwritten,
    Edited,
    Deleted,
}

/// A successful operation's receipt.
#[derive(Debug, Clone, Serialize)]
pub struct Receipt {
    pub outcome: Outcome,
    /// The target relative to the notes home.
    pub target: String,
    /// Size of the file afterwards (0 after a delete).
    pub bytes: u64,
}

/// Resolve `path` inside `home`, creating missing parent directories when `create_parent`.
/// Every directory is opened from the home's handle one component at a time without following
/// a symlink, so what is checked is what is written: a symlink anywhere under the home (a
/// dangling one included) is `outside_home`.
pub fn resolve(home: &Path, path: &str, create_parent: bool) -> Result<Jailed, JailError> {
    if path.is_empty() || path.contains('\0') {
        return Err(JailError::new(
            JailCode::InvalidPath,
            "path must be a non-empty file path without NUL bytes",
        ));
    }
    let outside = || {
        JailError::new(
            JailCode::OutsideHome,
            format!(
                "{path} is outside the notes home {}; only files under it may be changed",
                home.display()
            ),
        )
    };
    let given = Path::new(path);
    if given
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(JailError::new(
            JailCode::OutsideHome,
            format!(
                "{path} contains `..`; name files by their path under the notes home {}",
                home.display()
            ),
        ));
    }
    let relative: PathBuf = if given.is_absolute() {
        let real_home = fs::canonicalize(home).map_err(|e| {
            JailError::new(
                JailCode::HomeUnresolvable,
                format!("cannot resolve the notes home {}: {e}", home.display()),
            )
        })?;
        let stripped = given
            .strip_prefix(&real_home)
            .or_else(|_| given.strip_prefix(home))
            .map_err(|_| outside())?;
        stripped.to_path_buf()
    } else {
        given.to_path_buf()
    };
    let mut parts: Vec<&OsStr> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    if let Some(long) = parts.iter().find(|p| p.len() > MAX_SEGMENT_BYTES) {
        return Err(JailError::new(
            JailCode::InvalidPath,
            format!(
                "{path}: a path segment is {} bytes; segments are at most {MAX_SEGMENT_BYTES} bytes",
                long.len()
            ),
        ));
    }
    let Some(first) = parts.first() else {
        return Err(JailError::new(
            JailCode::InvalidPath,
            format!("{path} names the notes home itself, not a file under it"),
        ));
    };
    if PROTECTED_TOP
        .iter()
        .any(|p| *first == std::ffi::OsStr::new(p))
    {
        return Err(JailError::new(
            JailCode::ProtectedPath,
            format!(
                "{path} is part of the dream's audit machinery (.git/, dreams/, .dream.lock*) \
                 and may not be changed by the dreamer"
            ),
        ));
    }
    let relative = parts
        .iter()
        .map(|p| p.to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let name = parts.pop().map(OsStr::to_os_string).unwrap_or_default();
    let symlinked = || {
        JailError::new(
            JailCode::OutsideHome,
            format!(
                "{path} is or goes through a symlink under the notes home {}; the jail never \
                 follows symlinks, so it could lead outside",
                home.display()
            ),
        )
    };
    let fail = |e: confine::Error| match e.kind {
        confine::Kind::Symlink => symlinked(),
        _ => JailError::io("", path, e),
    };
    let not_found = || {
        JailError::new(
            JailCode::NotFound,
            format!("{path} does not exist in the notes home"),
        )
    };
    let dir = if create_parent {
        let root = Dir::open_root(home).map_err(fail)?.ok_or_else(|| {
            JailError::new(
                JailCode::HomeUnresolvable,
                format!(
                    "cannot resolve the notes home {}: it does not exist",
                    home.display()
                ),
            )
        })?;
        let mut created = Vec::new();
        root.walk_create(&parts, &mut created).map_err(|e| {
            confine::remove_created(&created);
            fail(e)
        })?
    } else {
        let root = Dir::open_root(home).map_err(fail)?.ok_or_else(not_found)?;
        root.walk(&parts).map_err(fail)?.ok_or_else(not_found)?
    };
    if dir.kind_of(&name).map_err(fail)? == Some(confine::EntryKind::Symlink) {
        return Err(symlinked());
    }
    Ok(Jailed {
        dir,
        name,
        relative,
    })
}

/// Lock an existing file for a read-modify-write and read it. Creates nothing: a missing file
/// is `not_found`, and a non-regular or hard-linked one is refused as `check_existing` says.
fn lock_and_read_existing(
    jailed: &Jailed,
    path: &str,
) -> Result<(confine::Lock, String), JailError> {
    let not_found = || {
        JailError::new(
            JailCode::NotFound,
            format!("{path} does not exist in the notes home"),
        )
    };
    let guard = jailed
        .dir
        .lock_existing(&jailed.name)
        .map_err(|e| jail_io(path, e))?
        .ok_or_else(not_found)?;
    check_existing(jailed, path)?.ok_or_else(not_found)?;
    let bytes = jailed
        .dir
        .read(&jailed.name)
        .map_err(|e| jail_io(path, e))?
        .ok_or_else(not_found)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| JailError::new(JailCode::Io, format!("{path}: not valid UTF-8")))?;
    Ok((guard, text))
}

/// A confinement failure of an operation on `path`: a symlink is `outside_home`, a
/// non-regular file `not_a_file`, anything else `io_error` naming the operation and path.
fn jail_io(path: &str, e: confine::Error) -> JailError {
    match e.kind {
        confine::Kind::Symlink => JailError::new(
            JailCode::OutsideHome,
            format!("{path} is a symlink; the jail never follows symlinks"),
        ),
        confine::Kind::NotAFile => {
            JailError::new(JailCode::NotAFile, format!("{path} is not a regular file"))
        }
        _ => JailError::io("", path, e),
    }
}

/// Existing-file checks shared by every operation: a regular file with one link. `None` when
/// the file does not exist.
fn check_existing(jailed: &Jailed, path: &str) -> Result<Option<()>, JailError> {
    let Some(file) = jailed
        .dir
        .open_file(&jailed.name)
        .map_err(|e| jail_io(path, e))?
    else {
        return Ok(None);
    };
    let meta = file
        .metadata()
        .map_err(|e| JailError::io("cannot inspect ", path, e))?;
    if link_count(&meta) > 1 {
        return Err(JailError::new(
            JailCode::HardLink,
            format!(
                "{path} has hard links; linked files are refused because a change \
                 would also change the other names"
            ),
        ));
    }
    Ok(Some(()))
}

#[cfg(unix)]
fn link_count(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn link_count(_meta: &fs::Metadata) -> u64 {
    1
}

/// Create or replace a file with `content`.
pub fn write(home: &Path, path: &str, content: &str) -> Result<Receipt, JailError> {
    let jailed = resolve(home, path, true)?;
    let _guard = jailed
        .dir
        .lock(&jailed.name)
        .map_err(|e| jail_io(path, e))?;
    let existed = check_existing(&jailed, path)?.is_some();
    jailed
        .dir
        .write_atomic(&jailed.name, content.as_bytes())
        .map_err(|e| jail_io(path, e))?;
    Ok(Receipt {
        outcome: if existed {
            Outcome::Overwritten
        } else {
            Outcome::Created
        },
        target: jailed.relative,
        bytes: content.len() as u64,
    })
}

/// Apply exact-text replacements. Every `oldText` must occur exactly once in the current
/// file and the matches must not overlap; all edits apply together or none does.
pub fn edit(home: &Path, path: &str, edits: &[Edit]) -> Result<Receipt, JailError> {
    if edits.is_empty() {
        return Err(JailError::new(
            JailCode::EmptyEdits,
            "edits must not be empty",
        ));
    }
    let jailed = resolve(home, path, false)?;
    let (_guard, text) = lock_and_read_existing(&jailed, path)?;
    let updated = apply_edits(&text, edits, path)?;
    jailed
        .dir
        .write_atomic(&jailed.name, updated.as_bytes())
        .map_err(|e| jail_io(path, e))?;
    Ok(Receipt {
        outcome: Outcome::Edited,
        target: jailed.relative,
        bytes: updated.len() as u64,
    })
}

fn apply_edits(text: &str, edits: &[Edit], path: &str) -> Result<String, JailError> {
    let mut spans: Vec<(usize, usize, usize)> = Vec::with_capacity(edits.len());
    for (index, e) in edits.iter().enumerate() {
        let at_index = |kind, message: String| JailError {
            edit_index: Some(index),
            ..JailError::new(kind, message)
        };
        if e.old_text.is_empty() {
            return Err(at_index(
                JailCode::EditNotFound,
                format!("edit {index}: oldText is empty"),
            ));
        }
        let mut found = text.match_indices(&e.old_text);
        let Some((start, _)) = found.next() else {
            return Err(at_index(
                JailCode::EditNotFound,
                format!("edit {index}: oldText not found in {path}"),
            ));
        };
        let more = found.count();
        if more > 0 {
            return Err(at_index(
                JailCode::EditAmbiguous,
                format!(
                    "edit {index}: oldText occurs {} times in {path}; include more context",
                    more + 1
                ),
            ));
        }
        spans.push((start, start + e.old_text.len(), index));
    }
    spans.sort();
    for pair in spans.windows(2) {
        if pair[1].0 < pair[0].1 {
            return Err(JailError {
                edit_index: Some(pair[1].2),
                ..JailError::new(
                    JailCode::EditOverlap,
                    format!("edits {} and {} overlap", pair[0].2, pair[1].2),
                )
            });
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for (start, end, index) in spans {
        out.push_str(&text[cursor..start]);
        out.push_str(&edits[index].new_text);
        cursor = end;
    }
    out.push_str(&text[cursor..]);
    Ok(out)
}

/// Delete a crumpled note (frontmatter `crumpledAt`).
pub fn delete(home: &Path, path: &str) -> Result<Receipt, JailError> {
    let jailed = resolve(home, path, false)?;
    let (_guard, text) = lock_and_read_existing(&jailed, path)?;
    if !is_crumpled(&text) {
        return Err(JailError::new(
            JailCode::NotCrumpled,
            format!(
                "{path} is not a crumpled note (no crumpledAt in its frontmatter); crumple it \
                 first, only the wastebasket may be emptied"
            ),
        ));
    }
    jailed
        .dir
        .remove_file(&jailed.name)
        .map_err(|e| jail_io(path, e))?;
    Ok(Receipt {
        outcome: Outcome::Deleted,
        target: jailed.relative,
        bytes: 0,
    })
}

fn is_crumpled(text: &str) -> bool {
    crate::notes::is_crumpled(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn edits_apply_together_or_not_at_all() {
        assert_eq!(
            apply_edits("a b c", &[e("a", "A"), e("c", "C")], "p").unwrap(),
            "A b C"
        );
        let err = apply_edits("a a", &[e("a", "x")], "p").unwrap_err();
        assert_eq!(err.kind, JailCode::EditAmbiguous);
        let err = apply_edits("abc", &[e("b", "x"), e("zz", "y")], "p").unwrap_err();
        assert_eq!(
            (err.kind, err.edit_index),
            (JailCode::EditNotFound, Some(1))
        );
        let err = apply_edits("abcd", &[e("abc", "x"), e("bcd", "y")], "p").unwrap_err();
        assert_eq!(err.kind, JailCode::EditOverlap);
    }

    #[test]
    fn resolve_refuses_escapes_and_machinery() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        assert_eq!(
            resolve(h, "../x.md", true).unwrap_err().kind,
            JailCode::OutsideHome
        );
        assert_eq!(
            resolve(h, "a/../../x.md", true).unwrap_err().kind,
            JailCode::OutsideHome
        );
        assert_eq!(
            resolve(h, "/etc/passwd", true).unwrap_err().kind,
            JailCode::OutsideHome
        );
        assert_eq!(
            resolve(h, "", true).unwrap_err().kind,
            JailCode::InvalidPath
        );
        assert_eq!(
            resolve(h, ".git/config", true).unwrap_err().kind,
            JailCode::ProtectedPath
        );
        assert_eq!(
            resolve(h, ".dream.lock", true).unwrap_err().kind,
            JailCode::ProtectedPath
        );
        let inside = h.join("human/x.md");
        let ok = resolve(h, inside.to_str().unwrap(), true).unwrap();
        assert_eq!(ok.relative, "human/x.md");
        assert!(h.join("human").is_dir());
    }

    #[cfg(unix)]
    #[test]
    fn resolve_never_follows_symlinks() {
        let home = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let h = home.path();
        std::os::unix::fs::symlink(out.path(), h.join("escape")).unwrap();
        assert_eq!(
            resolve(h, "escape/x.md", true).unwrap_err().kind,
            JailCode::OutsideHome
        );
        assert!(!out.path().join("x.md").exists());
        fs::create_dir_all(h.join("human")).unwrap();
        fs::write(h.join("human/real.md"), "x").unwrap();
        std::os::unix::fs::symlink(h.join("human/real.md"), h.join("human/alias.md")).unwrap();
        assert_eq!(
            resolve(h, "human/alias.md", false).unwrap_err().kind,
            JailCode::OutsideHome
        );
        std::os::unix::fs::symlink(out.path().join("nowhere"), h.join("human/dangdir")).unwrap();
        let err = resolve(h, "human/dangdir/x.md", true).unwrap_err();
        assert_eq!(err.kind, JailCode::OutsideHome);
        assert!(
            err.message.contains(&h.display().to_string()),
            "{}",
            err.message
        );
        assert!(!out.path().join("nowhere").exists());
        let err = resolve(h, "a/../../x.md", true).unwrap_err();
        assert!(
            err.message.contains(&h.display().to_string()),
            "{}",
            err.message
        );
    }
}
