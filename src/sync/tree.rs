//! Trees: the whole-home merge as a set of per-file merges ([`merge_trees`]), and bringing a
//! commit's tree into the home file by file ([`apply`]).
//!
//! [`apply`] is where "never overwrite a note someone just wrote" lives: each file is handled
//! under the notes' own cross-process lock (`confine::Dir::lock`, the lock every `notes-*`
//! write takes), its current bytes are compared with what the sync last recorded, and only
//! an untouched file is replaced (atomically). A file changed meanwhile is merged with the
//! incoming version like any other concurrent edit, and a conflict leaves the local bytes
//! live with the incoming version beside them.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::Path;

use git2::{FileMode, Oid, Repository, Tree, build::TreeUpdateBuilder};
use serde_json::Value;

use super::merge::{self, How, Merged};
use super::{Conflict, SyncError, is_synced_path};
use crate::confine;
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
    // A scan for `.` and a compare there: a boot or listing asks this of every note file,
    // and `str::contains` (a two-way searcher set up per call) cost ≈ 250 instructions a name.
    const MARK: &[u8] = b".conflict-";
    let bytes = name.as_bytes();
    name.ends_with(".md")
        && (0..bytes.len()).any(|i| bytes[i] == b'.' && bytes[i..].starts_with(MARK))
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

/// Why a path is skipped rather than written: something that is not a plain directory or
/// file sits on its way (a symlink is never followed, see [`crate::confine`]).
fn skipped(e: &confine::Error) -> bool {
    matches!(
        e.kind,
        confine::Kind::Symlink | confine::Kind::NotADirectory | confine::Kind::NotAFile
    )
}

/// Bring `to` into the home, file by file, where it differs from `from` (what the home held
/// at the last record). Session homes are left alone unless `include_sessions`. Every file is
/// reached through the home's directory handle ([`crate::confine`]: no symlink followed) and
/// handled under the same per-file lock the notes store takes.
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
    let fail = |e: confine::Error| SyncError::Io(e.to_string());
    let root = confine::Dir::create_root(home).map_err(fail)?;
    let mut created = Vec::new();
    for (rel, old, new) in changes(repo, from, to)? {
        if !is_synced_path(&rel, include_sessions) || !is_blob(old) || !is_blob(new) {
            continue;
        }
        let parts: Vec<&str> = rel.split('/').collect();
        let (name, dirs) = match parts.split_last() {
            Some((name, dirs)) => (OsStr::new(*name), dirs),
            None => continue,
        };
        let expected = blob(repo, old)?;
        let desired = blob(repo, new)?;
        let dir = match &desired {
            Some(_) => root.walk_create(dirs, &mut created).map(Some),
            None => root.walk(dirs),
        };
        let dir = match dir {
            Ok(Some(dir)) => dir,
            Ok(None) => continue, // to be removed, and already gone
            Err(e) if skipped(&e) => continue,
            Err(e) => return Err(fail(e)),
        };
        let lock = match &desired {
            Some(_) => dir.lock(name).map(Some),
            None => dir.lock_existing(name),
        };
        let _lock = match lock {
            Ok(Some(lock)) => lock,
            Ok(None) => continue,
            Err(e) if skipped(&e) => continue,
            Err(e) => return Err(fail(e)),
        };
        let current = match dir.read(name) {
            Ok(current) => current,
            Err(e) if skipped(&e) => continue,
            Err(e) => return Err(fail(e)),
        };
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
                    dir.write_atomic(name, &bytes).map_err(fail)?;
                    applied.changed += 1;
                }
            }
            Merged::Clean { content: None, .. } => {
                if current.is_some() {
                    dir.remove_file(name).map_err(fail)?;
                    applied.changed += 1;
                }
            }
            Merged::Conflict {
                theirs: other,
                reason,
                key,
                ..
            } => {
                let conflict_rel = conflict_path(&rel, host, stamp, |p| {
                    let n = p.rsplit('/').next().unwrap_or(p);
                    !matches!(dir.lstat(OsStr::new(n)), Ok(None))
                });
                let conflict_name = OsStr::new(conflict_rel.rsplit('/').next().unwrap_or(""));
                let _conflict_lock = dir.lock(conflict_name).map_err(fail)?;
                dir.write_atomic(conflict_name, &conflict_note(&other, &rel))
                    .map_err(fail)?;
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
    fn the_conflict_name_scan_answers_as_a_substring_search() {
        let pieces = [
            "",
            ".",
            "..",
            "a",
            "é",
            "conflict-",
            ".conflict-",
            ".conflict",
            "conflict",
            ".md",
            "md",
            "-",
            "x.conflict-",
            "..conflict-",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let name = format!("{a}{b}{c}");
                    assert_eq!(
                        is_conflict_name(&name),
                        name.ends_with(".md") && name.contains(".conflict-"),
                        "{name:?}"
                    );
                }
            }
        }
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
