//! Filesystem primitives every writer shares: atomic replacement and a cross-process lock
//! per physical file.
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

/// Take the lock guarding an existing file, without creating anything: `None` when `path`
/// does not exist (so a read or an update of a missing note leaves no trace on disk).
pub fn lock_existing(path: &Path) -> io::Result<Option<PathLock>> {
    loop {
        match File::open(path) {
            Ok(file) => {
                file.lock()?;
                if same_inode(&file, path)? {
                    return Ok(Some(PathLock {
                        _held: file,
                        existed: true,
                    }));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

/// What a path's lock is taken on: its directory while the file is missing, else the file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum LockTarget {
    // Declared first so directories sort (and are locked) before files.
    Dir(PathBuf),
    File(PathBuf),
}

/// Lock several paths without deadlock.
///
/// Every lock object is taken in one global order — directory locks (for missing files) before
/// file locks, each kind by path — so two processes locking overlapping sets can never wait on
/// each other in a cycle (ordering by *path* alone is not enough: a missing path locks its
/// directory, which sorts unrelated to the path). After acquisition every path is re-checked
/// (file still the same inode, missing file still missing); if anything changed while we
/// waited, everything is released and the plan is redone.
#[allow(
    clippy::expect_used,
    reason = "every planned target was locked because the plan built the list"
)]
pub fn lock_paths(paths: &[&Path]) -> io::Result<Vec<PathLock>> {
    'retry: loop {
        let mut plan: Vec<(PathBuf, LockTarget)> = Vec::new();
        for path in paths {
            let target = match fs::symlink_metadata(path) {
                Ok(_) => LockTarget::File(path.to_path_buf()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => LockTarget::Dir(parent_dir(path)),
                Err(e) => return Err(e),
            };
            plan.push((path.to_path_buf(), target));
        }
        let mut targets: Vec<LockTarget> = plan.iter().map(|(_, t)| t.clone()).collect();
        targets.sort();
        targets.dedup();
        let mut held = Vec::with_capacity(targets.len());
        let mut files = Vec::with_capacity(targets.len());
        for target in &targets {
            let handle = match target {
                LockTarget::Dir(dir) => {
                    fs::create_dir_all(dir)?;
                    File::open(dir)?
                }
                LockTarget::File(file) => match File::open(file) {
                    Ok(handle) => handle,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue 'retry,
                    Err(e) => return Err(e),
                },
            };
            handle.lock()?;
            files.push((target.clone(), handle));
        }
        for (path, target) in &plan {
            let still_valid = match target {
                LockTarget::Dir(_) => matches!(
                    fs::symlink_metadata(path),
                    Err(e) if e.kind() == io::ErrorKind::NotFound
                ),
                LockTarget::File(_) => {
                    let (_, handle) = files
                        .iter()
                        .find(|(t, _)| t == target)
                        .expect("every planned target was locked because the plan built the list");
                    same_inode(handle, path)?
                }
            };
            if !still_valid {
                continue 'retry;
            }
        }
        for (target, handle) in files {
            held.push(PathLock {
                _held: handle,
                existed: matches!(target, LockTarget::File(_)),
            });
        }
        return Ok(held);
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

    #[test]
    fn two_missing_paths_in_one_directory_do_not_self_deadlock() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.md");
        let b = dir.path().join("b.md");
        let held = lock_paths(&[&a, &b]).unwrap();
        assert_eq!(held.len(), 1);
    }

    #[test]
    fn a_missing_file_is_locked_without_creating_anything() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x/missing.md");
        assert!(lock_existing(&target).unwrap().is_none());
        assert!(!dir.path().join("x").exists());
    }

    #[test]
    fn crossed_renames_do_not_deadlock() {
        // Rename b -> a and b -> c at once in one directory: path order alone would lock
        // dir-then-file in one process and file-then-dir in the other.
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a.md"),
            dir.path().join("b.md"),
            dir.path().join("c.md"),
        );
        fs::write(&b, "b").unwrap();
        let threads: Vec<_> = [a, c]
            .into_iter()
            .map(|target| {
                let b = b.clone();
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let held = lock_paths(&[&b, &target]).unwrap();
                        drop(held);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
