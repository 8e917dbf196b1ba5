//! Trees: the whole-home merge as a set of per-file merges ([`merge_trees`]), and bringing a
//! commit's tree into the home file by file ([`apply`]).
//!
//! [`apply`] is where "never overwrite a note someone just wrote" lives: each file is handled
//! under the notes' own cross-process lock (`fsio::lock_path`, the lock every `notes-*`
//! write takes), its current bytes are compared with what the sync last recorded, and only
//! an untouched file is replaced (atomically). A file changed meanwhile is merged with the
//! incoming version like any other concurrent edit, and a conflict leaves the local bytes
//! live with the incoming version beside them.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io;
use std::path::{Component, Path};

use git2::{FileMode, Oid, Repository, Tree, build::TreeUpdateBuilder};
use serde_json::Value;

use super::merge::{self, How, Merged};
use super::{Conflict, SyncError, is_synced_path};
use crate::fsio;
use crate::notes::frontmatter;

/// The metadata key a conflict note carries: the file name of the live note beside it.
pub const CONFLICT_KEY: &str = "syncConflictOf";

/// A merged tree and what it took.
pub struct TreeMerge {
    pub tree: Oid,
    pub combined: usize,
    pub kept_edits: usize,
    pub conflicts: Vec<Conflict>,
}

type Entry = Option<(Oid, i32)>;

/// Every path that differs between `from` and `to`, with its entry in `to` (`None`: removed).
fn changes(
    repo: &Repository,
    from: Option<&Tree>,
    to: &Tree,
) -> Result<Vec<(String, Entry, Entry)>, SyncError> {
    let diff = repo.diff_tree_to_tree(from, Some(to), None)?;
    let mut out = Vec::new();
    for delta in diff.deltas() {
        let Some(path) = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .and_then(Path::to_str)
        else {
            continue;
        };
        let entry = |f: git2::DiffFile| {
            if f.exists() {
                Some((f.id(), i32::from(f.mode())))
            } else {
                None
            }
        };
        out.push((
            path.to_string(),
            entry(delta.old_file()),
            entry(delta.new_file()),
        ));
    }
    Ok(out)
}

fn blob(repo: &Repository, entry: Entry) -> Result<Option<Vec<u8>>, SyncError> {
    match entry {
        Some((id, _)) => Ok(Some(repo.find_blob(id)?.content().to_vec())),
        None => Ok(None),
    }
}

fn file_mode(mode: i32) -> FileMode {
    if mode == i32::from(FileMode::BlobExecutable) {
        FileMode::BlobExecutable
    } else {
        FileMode::Blob
    }
}

fn is_blob(entry: Entry) -> bool {
    entry.is_none_or(|(_, mode)| {
        mode == i32::from(FileMode::Blob) || mode == i32::from(FileMode::BlobExecutable)
    })
}

/// Merge `theirs` into `ours` against `base` (`None`: no common history, every file is an
/// addition on both sides).
pub fn merge_trees(
    repo: &Repository,
    base: Option<&Tree>,
    ours: &Tree,
    theirs: &Tree,
    host: &str,
    stamp: &str,
) -> Result<TreeMerge, SyncError> {
    let ours_changes: HashMap<String, Entry> = changes(repo, base, ours)?
        .into_iter()
        .map(|(path, _, new)| (path, new))
        .collect();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut updates = TreeUpdateBuilder::new();
    let mut result = TreeMerge {
        tree: ours.id(),
        combined: 0,
        kept_edits: 0,
        conflicts: Vec::new(),
    };
    let mut touched = false;
    for (path, base_entry, theirs_entry) in changes(repo, base, theirs)? {
        let ours_entry = match ours_changes.get(&path) {
            None => {
                // Only theirs changed this path.
                match theirs_entry {
                    Some((id, mode)) => updates.upsert(path.as_str(), id, file_mode(mode)),
                    None => updates.remove(path.as_str()),
                };
                touched = true;
                continue;
            }
            Some(entry) => *entry,
        };
        if ours_entry.map(|e| e.0) == theirs_entry.map(|e| e.0) {
            continue;
        }
        if !is_blob(ours_entry) || !is_blob(theirs_entry) || !is_blob(base_entry) {
            // Links and submodules are never written by sync: keep ours.
            continue;
        }
        let merged = merge::merge_file(
            path.ends_with(".md"),
            blob(repo, base_entry)?.as_deref(),
            blob(repo, ours_entry)?.as_deref(),
            blob(repo, theirs_entry)?.as_deref(),
        );
        let mode = file_mode(ours_entry.or(theirs_entry).map_or(0, |e| e.1));
        match merged {
            Merged::Clean { content, how } => {
                match how {
                    How::Combined => result.combined += 1,
                    How::KeptEdit => result.kept_edits += 1,
                    How::Taken => {}
                }
                match content {
                    Some(bytes) => {
                        let id = repo.blob(&bytes)?;
                        if Some(id) != ours_entry.map(|e| e.0) {
                            updates.upsert(path.as_str(), id, mode);
                            touched = true;
                        }
                    }
                    None => {
                        if ours_entry.is_some() {
                            updates.remove(path.as_str());
                            touched = true;
                        }
                    }
                }
            }
            Merged::Conflict {
                theirs: other,
                reason,
                key,
                ..
            } => {
                let exists = |p: &str| {
                    taken.contains(p)
                        || ours.get_path(Path::new(p)).is_ok()
                        || theirs.get_path(Path::new(p)).is_ok()
                };
                let conflict_path = conflict_path(&path, host, stamp, exists);
                taken.insert(conflict_path.clone());
                let id = repo.blob(&conflict_note(&other, &path))?;
                updates.upsert(conflict_path.as_str(), id, FileMode::Blob);
                touched = true;
                result.conflicts.push(Conflict {
                    path,
                    conflict_path,
                    reason,
                    key,
                });
            }
        }
    }
    if touched {
        result.tree = updates.create_updated(repo, ours)?;
    }
    Ok(result)
}

/// `dir/name.md` → `dir/name.conflict-<host>-<stamp>.md` (then `-2`, `-3`, … if taken).
pub fn conflict_path(path: &str, host: &str, stamp: &str, exists: impl Fn(&str) -> bool) -> String {
    let (stem, ext) = match path.rfind('.') {
        Some(dot) if !path[dot..].contains('/') => (&path[..dot], &path[dot..]),
        _ => (path, ""),
    };
    let base = format!("{stem}.conflict-{host}-{stamp}");
    let mut candidate = format!("{base}{ext}");
    let mut n = 2;
    while exists(&candidate) {
        candidate = format!("{base}-{n}{ext}");
        n += 1;
    }
    candidate
}

/// Whether a file name is a conflict note's (`*.conflict-<host>-<stamp>.md`).
pub fn is_conflict_name(name: &str) -> bool {
    name.ends_with(".md") && name.contains(".conflict-")
}

/// The other side's version as a conflict note: live (no `crumpledAt`) and naming the note
/// it conflicts with. A file without frontmatter is kept byte for byte.
fn conflict_note(other: &[u8], live_path: &str) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(other) else {
        return other.to_vec();
    };
    let parsed = frontmatter::parse(text);
    if !parsed.has_frontmatter {
        return other.to_vec();
    }
    let mut fields = parsed.fields.clone();
    fields.shift_remove("crumpledAt");
    let name = live_path.rsplit('/').next().unwrap_or(live_path);
    fields.insert(CONFLICT_KEY.into(), Value::String(name.to_string()));
    frontmatter::serialize(&fields, &parsed.body).into_bytes()
}

/// What [`apply`] did.
#[derive(Default)]
pub struct Applied {
    /// Files written or removed.
    pub changed: usize,
    /// Files found changed since the last record, merged instead of replaced.
    pub changed_during_sync: usize,
    pub conflicts: Vec<Conflict>,
}

/// A path we may write: plain components only, none hidden, and no symlink on the way.
fn safe_target(home: &Path, rel: &str) -> bool {
    let rel_path = Path::new(rel);
    if !rel_path
        .components()
        .all(|c| matches!(c, Component::Normal(s) if !s.to_string_lossy().starts_with('.')))
    {
        return false;
    }
    let mut dir = home.to_path_buf();
    let parents: Vec<_> = rel_path.components().collect();
    for component in &parents[..parents.len().saturating_sub(1)] {
        dir.push(component.as_os_str());
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_symlink() || !m.is_dir() => return false,
            _ => {}
        }
    }
    match fs::symlink_metadata(home.join(rel)) {
        Ok(m) => m.is_file(),
        Err(_) => true,
    }
}

fn read_optional(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Bring `to` into the home, file by file, where it differs from `from` (what the home held
/// at the last record). Session homes are left alone unless `include_sessions`.
pub fn apply(
    repo: &Repository,
    home: &Path,
    from: Option<&Tree>,
    to: &Tree,
    include_sessions: bool,
    host: &str,
    stamp: &str,
) -> Result<Applied, SyncError> {
    let mut applied = Applied::default();
    let io = |path: &Path, e: io::Error| SyncError::Io(format!("{}: {e}", path.display()));
    for (rel, old, new) in changes(repo, from, to)? {
        if !is_synced_path(&rel, include_sessions) || !is_blob(old) || !is_blob(new) {
            continue;
        }
        if !safe_target(home, &rel) {
            continue;
        }
        let path = home.join(&rel);
        let expected = blob(repo, old)?;
        let desired = blob(repo, new)?;
        let _lock = match desired {
            Some(_) => Some(fsio::lock_path(&path).map_err(|e| io(&path, e))?),
            None => fsio::lock_existing(&path).map_err(|e| io(&path, e))?,
        };
        let current = read_optional(&path).map_err(|e| io(&path, e))?;
        if current == desired {
            continue;
        }
        let outcome = if current == expected {
            Merged::Clean {
                content: desired,
                how: How::Taken,
            }
        } else {
            applied.changed_during_sync += 1;
            merge::merge_file(
                rel.ends_with(".md"),
                expected.as_deref(),
                current.as_deref(),
                desired.as_deref(),
            )
        };
        match outcome {
            Merged::Clean {
                content: Some(bytes),
                ..
            } => {
                if current.as_deref() != Some(&bytes[..]) {
                    fsio::write_atomic(&path, &bytes).map_err(|e| io(&path, e))?;
                    applied.changed += 1;
                }
            }
            Merged::Clean { content: None, .. } => {
                if current.is_some() {
                    match fs::remove_file(&path) {
                        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io(&path, e)),
                        _ => applied.changed += 1,
                    }
                }
            }
            Merged::Conflict {
                theirs: other,
                reason,
                key,
                ..
            } => {
                let conflict_rel = conflict_path(&rel, host, stamp, |p| home.join(p).exists());
                let conflict_abs = home.join(&conflict_rel);
                let _conflict_lock =
                    fsio::lock_path(&conflict_abs).map_err(|e| io(&conflict_abs, e))?;
                fsio::write_atomic(&conflict_abs, &conflict_note(&other, &rel))
                    .map_err(|e| io(&conflict_abs, e))?;
                applied.conflicts.push(Conflict {
                    path: rel,
                    conflict_path: conflict_rel,
                    reason,
                    key,
                });
            }
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_paths_sit_beside_the_note_and_never_collide() {
        let taken = ["human/a.conflict-h-s.md".to_string()];
        assert_eq!(
            conflict_path("human/a.md", "h", "s", |p| taken.contains(&p.to_string())),
            "human/a.conflict-h-s-2.md"
        );
        assert_eq!(
            conflict_path("x/b.md", "h", "s", |_| false),
            "x/b.conflict-h-s.md"
        );
        assert!(is_conflict_name("b.conflict-h-s.md"));
        assert!(!is_conflict_name("b.md"));
    }

    #[test]
    fn a_conflict_note_is_live_and_names_its_note() {
        let other = b"---\norigin: self\ncrumpledAt: 2026-01-01T00:00:00.000+00:00\n---\n\nbody\n";
        let text = String::from_utf8(conflict_note(other, "human/a.md")).unwrap();
        assert_eq!(
            text,
            "---\norigin: self\nsyncConflictOf: a.md\n---\n\nbody\n"
        );
    }
}
