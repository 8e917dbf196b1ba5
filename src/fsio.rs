//! Filesystem primitives for files outside the notes homes (the dream journal and reports):
//! atomic replacement and a cross-process lock per physical file. Everything under the notes
//! root goes through [`crate::confine`] instead, which never follows a symlink.
//!
//! Our commands are separate processes, so in-process locking protects nothing: every
//! read-modify-write takes an OS advisory lock ([`lock_path`]) and every write goes through
//! [`write_atomic`] (temp file in the same directory, fsync, rename over the target), so a
//! reader never sees a torn file and a concurrent writer never loses an update.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Replace `path` with `bytes` atomically: readers see the old or the new content, never a mix.
/// Creates missing parent directories. On failure the temp file is removed and the target is
/// untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = parent_dir(path);
    fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The temp name ends in `.tmp`, never `.md`, so listings cannot mistake it for a note.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// A held advisory lock; released when dropped (and by the OS if the process dies).
#[derive(Debug)]
pub struct PathLock {
    _held: File,
    /// Whether the lock is on the file itself (it existed) or on its directory (it did not).
    pub existed: bool,
}

/// Take the exclusive cross-process lock that guards `path` for a read-modify-write.
///
/// If the file exists, the lock is on the file itself, re-checked after acquisition: an
/// atomic rename may have replaced the inode while we waited, in which case we retry on the
/// new one. If the file does not exist, the lock is on its parent directory (created if
/// needed), so two creators of the same path serialise; if the file appears meanwhile we
/// switch to locking the file. Callers must not touch `path` again after they have renamed a
/// new file over it while holding a directory lock.
pub fn lock_path(path: &Path) -> io::Result<PathLock> {
    loop {
        match File::open(path) {
            Ok(file) => {
                file.lock()?;
                if same_inode(&file, path)? {
                    return Ok(PathLock {
                        _held: file,
                        existed: true,
                    });
                }
                // Replaced while we waited: drop this lock and try again on the new file.
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let dir = parent_dir(path);
                fs::create_dir_all(&dir)?;
                let dir_handle = File::open(&dir)?;
                dir_handle.lock()?;
                match fs::symlink_metadata(path) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Ok(PathLock {
                            _held: dir_handle,
                            existed: false,
                        });
                    }
                    Err(e) => return Err(e),
                    Ok(_) => {} // created meanwhile: lock the file instead
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(unix)]
fn same_inode(file: &File, path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata()?;
    match fs::metadata(path) {
        Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(not(unix))]
fn same_inode(_file: &File, _path: &Path) -> io::Result<bool> {
    Ok(true)
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `path` with `.` components dropped and `..` applied lexically (no symlink resolution, the
/// path need not exist). Used wherever a path must be compared or hashed as written, such as
/// project keys and the notes root.
pub fn normalise_lexically(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_creates_parents_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a/b/note.md");
        write_atomic(&target, b"one").unwrap();
        write_atomic(&target, b"two").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"two");
        let leftovers: Vec<_> = fs::read_dir(target.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp files left behind");
    }

    #[test]
    fn lock_on_missing_file_locks_the_directory_then_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x/new.md");
        let guard = lock_path(&target).unwrap();
        assert!(!guard.existed);
        write_atomic(&target, b"x").unwrap();
        drop(guard);
        assert!(lock_path(&target).unwrap().existed);
    }
}
