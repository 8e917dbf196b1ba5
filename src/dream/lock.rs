//! The run lock `.dream.lock` and the last-run sidecar `.dream.lock.last-run`.
//!
//! Git-style: the lock is one exclusive create (`create_new`) holding `<pid> <token>`; an
//! existing lock is refused whatever its content or age and is never read, replaced or
//! removed by a run that did not create it. Only the holder removes it, and only after
//! checking that the file still holds its own `<pid> <token>`. The sidecar's mtime is the
//! start time of the last run that took the lock; a failed run puts it back as it was, so a
//! failure never delays the next run. This module never reads the clock: callers pass "now".

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::envelope::{DomainError, ErrorClass};

/// The lock file's and the last-run sidecar's names in the notes home.
pub use super::artifacts::{LAST_RUN_FILE, LOCK_FILE, SYNC_GATE_FILE};

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another run (live or crashed) holds the lock.
    #[error(
        "lock already exists at {}; another dream is running, or a crashed run left it \
         (verify no dream is running, then remove it by hand)",
        path.display()
    )]
    Held { path: PathBuf },
    /// The create failed for another reason (permissions, missing home, …).
    #[error("could not create the lock {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl LockError {
    pub fn code(&self) -> &'static str {
        match self {
            LockError::Held { .. } => "lock_held",
            LockError::Io { .. } => "io_error",
        }
    }

    /// A held lock is someone else's run (busy); a failed create is ours.
    pub fn class(&self) -> ErrorClass {
        match self {
            LockError::Held { .. } => ErrorClass::Busy,
            LockError::Io { .. } => ErrorClass::Internal,
        }
    }

    /// The lock file concerned.
    pub fn path(&self) -> &Path {
        match self {
            LockError::Held { path } | LockError::Io { path, .. } => path,
        }
    }
}

impl DomainError for LockError {
    fn code(&self) -> &'static str {
        LockError::code(self)
    }

    fn class(&self) -> ErrorClass {
        LockError::class(self)
    }
}

/// The sidecar as it was before this run touched it, so a failed run can put it back.
#[derive(Debug, Clone)]
enum PriorSidecar {
    /// The run never touched the sidecar ([`acquire_exclusive`]): nothing to put back.
    Untouched,
    Absent,
    Present {
        bytes: Vec<u8>,
        mtime: SystemTime,
    },
}

/// A lock this process created. Dropping it without [`HeldLock::release`] or
/// [`HeldLock::fail_release`] fail-releases it (a panic or an early return counts as failure).
#[derive(Debug)]
pub struct HeldLock {
    lock_path: PathBuf,
    sidecar_path: PathBuf,
    content: String,
    prior: PriorSidecar,
    released: bool,
}

/// The mtime of the last-run sidecar, if there is one.
pub fn last_run(home: &Path) -> io::Result<Option<SystemTime>> {
    match fs::metadata(home.join(LAST_RUN_FILE)) {
        Ok(meta) => Ok(Some(meta.modified()?)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Take the lock with one exclusive create, then advance the sidecar to `now` (content: the
/// RFC 3339 time `now_text`, mtime: `now`). Sidecar write errors are ignored: the lock is what
/// matters, and the sidecar only schedules.
pub fn acquire(
    home: &Path,
    pid: u32,
    token: &str,
    now: SystemTime,
    now_text: &str,
) -> Result<HeldLock, LockError> {
    take(home, pid, token, Some((now, now_text)))
}

/// Take the same lock without touching the last-run sidecar: for other Git work on the home
/// (`sync`) that must never run at the same time as a dream, but is not a dream run and must
/// not move the dream's time gate. Release and fail-release then only remove the lock.
pub fn acquire_exclusive(home: &Path, pid: u32, token: &str) -> Result<HeldLock, LockError> {
    take(home, pid, token, None)
}

/// The run lock taken for a sync, with sync's gate held for as long as this value lives.
#[derive(Debug)]
pub struct SyncLock {
    held: HeldLock,
    // Declared after `held`, so it is closed last: the kernel frees the gate when this file is
    // closed, including when the process is killed.
    _gate: File,
}

impl SyncLock {
    /// Remove the run lock if it is still ours, then free the gate.
    pub fn release(self) -> io::Result<()> {
        self.held.release()
    }
}

/// Take the run lock for a sync so that a sync killed at any point never stops later syncs:
/// first the gate `.dream.lock.sync` (a kernel `flock`, freed by the kernel when its holder dies;
/// held by another live sync, the answer is `Held`), then, when the run lock holds exactly the
/// `<pid> <uuid>` the gate recorded, that lock was left by a killed sync (no sync is alive: we hold
/// the gate) and is removed. A dream's lock never matches the gate and is refused as ever, live
/// or crashed. The gate records this run's content before the run lock is created.
pub fn acquire_for_sync(home: &Path, pid: u32, token: &str) -> Result<SyncLock, LockError> {
    let gate_path = home.join(SYNC_GATE_FILE);
    let lock_path = home.join(LOCK_FILE);
    let io_error = |path: &Path, source: io::Error| LockError::Io {
        path: path.to_path_buf(),
        source,
    };
    let gate = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&gate_path)
        .map_err(|e| io_error(&gate_path, e))?;
    match gate.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Err(LockError::Held { path: lock_path }),
        Err(fs::TryLockError::Error(e)) => return Err(io_error(&gate_path, e)),
    }
    let recorded = fs::read_to_string(&gate_path).map_err(|e| io_error(&gate_path, e))?;
    if !recorded.trim().is_empty() {
        match fs::read_to_string(&lock_path) {
            Ok(current) if current.trim() == recorded.trim() => match fs::remove_file(&lock_path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(io_error(&lock_path, e));
                }
                _ => {}
            },
            _ => {}
        }
    }
    let content = format!("{pid} {token}");
    gate.set_len(0)
        .and_then(|_| (&gate).write_all(content.as_bytes()))
        .and_then(|_| gate.sync_all())
        .map_err(|e| io_error(&gate_path, e))?;
    let held = acquire_exclusive(home, pid, token)?;
    Ok(SyncLock { held, _gate: gate })
}

fn take(
    home: &Path,
    pid: u32,
    token: &str,
    sidecar: Option<(SystemTime, &str)>,
) -> Result<HeldLock, LockError> {
    let lock_path = home.join(LOCK_FILE);
    let sidecar_path = home.join(LAST_RUN_FILE);
    let prior = match sidecar.map(|_| fs::read(&sidecar_path)) {
        None => PriorSidecar::Untouched,
        Some(Ok(bytes)) => match fs::metadata(&sidecar_path).and_then(|m| m.modified()) {
            Ok(mtime) => PriorSidecar::Present { bytes, mtime },
            Err(_) => PriorSidecar::Absent,
        },
        Some(Err(_)) => PriorSidecar::Absent,
    };
    let content = format!("{pid} {token}");
    let mut file = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock_path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(LockError::Held { path: lock_path });
        }
        Err(source) => {
            return Err(LockError::Io {
                path: lock_path,
                source,
            });
        }
    };
    let held = HeldLock {
        lock_path: lock_path.clone(),
        sidecar_path,
        content,
        prior,
        released: false,
    };
    // From here on `held` owns the file: if writing the content fails, dropping `held`
    // fail-releases, and an empty lock is still ours only if it holds our content, so remove
    // it directly instead.
    if let Err(source) = file
        .write_all(held.content.as_bytes())
        .and_then(|_| file.sync_all())
    {
        let mut held = held;
        held.released = true;
        let _ = fs::remove_file(&lock_path);
        return Err(LockError::Io {
            path: lock_path,
            source,
        });
    }
    if let Some((now, now_text)) = sidecar {
        let _ = write_sidecar(&held.sidecar_path, now_text.as_bytes(), now);
    }
    Ok(held)
}

fn write_sidecar(path: &Path, bytes: &[u8], mtime: SystemTime) -> io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    file.set_modified(mtime)?;
    Ok(())
}

impl HeldLock {
    /// The lock file's content, `<pid> <token>`.
    pub fn content(&self) -> &str {
        &self.content
    }

    pub fn path(&self) -> &Path {
        &self.lock_path
    }

    /// Whether the lock file still holds exactly our `<pid> <token>`.
    pub fn owned(&self) -> bool {
        fs::read_to_string(&self.lock_path).is_ok_and(|text| text.trim() == self.content)
    }

    /// Success: remove the lock if it is still ours; the sidecar keeps the new time.
    pub fn release(mut self) -> io::Result<()> {
        self.released = true;
        if self.owned() {
            fs::remove_file(&self.lock_path)?;
        }
        Ok(())
    }

    /// Failure: if the lock is still ours, put the sidecar back as it was and remove the
    /// lock. A lock that is no longer ours (someone replaced it) is left alone, and so is the
    /// sidecar, which then belongs to the successor.
    pub fn fail_release(mut self) -> io::Result<()> {
        self.fail_release_in_place()
    }

    fn fail_release_in_place(&mut self) -> io::Result<()> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        if !self.owned() {
            return Ok(());
        }
        match &self.prior {
            PriorSidecar::Untouched => {}
            PriorSidecar::Absent => match fs::remove_file(&self.sidecar_path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            },
            PriorSidecar::Present { bytes, mtime } => {
                write_sidecar(&self.sidecar_path, bytes, *mtime)?;
            }
        }
        fs::remove_file(&self.lock_path)
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let _ = self.fail_release_in_place();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn second_acquire_is_refused_and_leaves_the_lock_bytes() {
        let home = tempfile::tempdir().unwrap();
        let held = acquire(home.path(), 42, "tok-a", at(1000), "t1").unwrap();
        let before = fs::read(home.path().join(LOCK_FILE)).unwrap();
        assert_eq!(before, b"42 tok-a");
        let err = acquire(home.path(), 43, "tok-b", at(2000), "t2").unwrap_err();
        assert_eq!(err.code(), "lock_held");
        assert_eq!(fs::read(home.path().join(LOCK_FILE)).unwrap(), before);
        // The refused run did not advance the sidecar.
        assert_eq!(last_run(home.path()).unwrap(), Some(at(1000)));
        held.release().unwrap();
        assert!(!home.path().join(LOCK_FILE).exists());
        assert_eq!(last_run(home.path()).unwrap(), Some(at(1000)));
    }

    #[test]
    fn eight_simultaneous_acquirers_make_exactly_one_holder() {
        let home = tempfile::tempdir().unwrap();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let held: Vec<Option<HeldLock>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let barrier = barrier.clone();
                    let home = home.path();
                    s.spawn(move || {
                        barrier.wait();
                        acquire(home, i, &format!("tok-{i}"), at(1000), "t").ok()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let holders: Vec<&HeldLock> = held.iter().flatten().collect();
        assert_eq!(holders.len(), 1);
        assert!(holders[0].owned());
    }

    #[test]
    fn fail_release_restores_the_prior_sidecar() {
        let home = tempfile::tempdir().unwrap();
        acquire(home.path(), 1, "a", at(1000), "first")
            .unwrap()
            .release()
            .unwrap();
        let held = acquire(home.path(), 1, "b", at(5000), "second").unwrap();
        assert_eq!(last_run(home.path()).unwrap(), Some(at(5000)));
        held.fail_release().unwrap();
        assert_eq!(last_run(home.path()).unwrap(), Some(at(1000)));
        assert_eq!(fs::read(home.path().join(LAST_RUN_FILE)).unwrap(), b"first");
        assert!(!home.path().join(LOCK_FILE).exists());
    }

    #[test]
    fn fail_release_without_prior_sidecar_removes_it() {
        let home = tempfile::tempdir().unwrap();
        let held = acquire(home.path(), 1, "a", at(1000), "x").unwrap();
        drop(held); // dropping counts as failure
        assert_eq!(last_run(home.path()).unwrap(), None);
        assert!(!home.path().join(LOCK_FILE).exists());
    }

    #[test]
    fn exclusive_acquire_shares_the_lock_but_never_touches_the_sidecar() {
        let home = tempfile::tempdir().unwrap();
        acquire(home.path(), 1, "a", at(1000), "first")
            .unwrap()
            .release()
            .unwrap();
        let held = acquire_exclusive(home.path(), 2, "b").unwrap();
        assert_eq!(
            acquire(home.path(), 3, "c", at(9000), "x")
                .unwrap_err()
                .code(),
            "lock_held"
        );
        assert_eq!(last_run(home.path()).unwrap(), Some(at(1000)));
        held.fail_release().unwrap();
        assert!(!home.path().join(LOCK_FILE).exists());
        assert_eq!(fs::read(home.path().join(LAST_RUN_FILE)).unwrap(), b"first");
        let held = acquire_exclusive(home.path(), 2, "d").unwrap();
        held.release().unwrap();
        assert_eq!(last_run(home.path()).unwrap(), Some(at(1000)));
    }

    #[test]
    fn cleanup_never_removes_a_successors_lock() {
        let home = tempfile::tempdir().unwrap();
        let held = acquire(home.path(), 1, "mine", at(1000), "x").unwrap();
        fs::write(home.path().join(LOCK_FILE), "2 theirs").unwrap();
        held.fail_release().unwrap();
        assert_eq!(fs::read(home.path().join(LOCK_FILE)).unwrap(), b"2 theirs");
        assert_eq!(last_run(home.path()).unwrap(), Some(at(1000)));
    }

    #[test]
    fn a_sync_takes_over_the_lock_of_a_killed_sync_but_never_a_dreams() {
        let home = tempfile::tempdir().unwrap();
        // A killed sync: its gate records its content and nobody holds the gate.
        fs::write(home.path().join(SYNC_GATE_FILE), "7 killed").unwrap();
        fs::write(home.path().join(LOCK_FILE), "7 killed\n").unwrap();
        let sync = acquire_for_sync(home.path(), 8, "next").unwrap();
        assert_eq!(fs::read(home.path().join(LOCK_FILE)).unwrap(), b"8 next");
        // While it lives, another sync and a dream are refused.
        assert_eq!(
            acquire_for_sync(home.path(), 9, "other")
                .unwrap_err()
                .code(),
            "lock_held"
        );
        assert_eq!(
            acquire(home.path(), 9, "dream", at(1), "x")
                .unwrap_err()
                .code(),
            "lock_held"
        );
        sync.release().unwrap();
        assert!(!home.path().join(LOCK_FILE).exists());
        // A dream's lock (live or crashed) never matches the gate: refused, left alone.
        fs::write(home.path().join(LOCK_FILE), "3 dream").unwrap();
        assert_eq!(
            acquire_for_sync(home.path(), 10, "again")
                .unwrap_err()
                .code(),
            "lock_held"
        );
        assert_eq!(fs::read(home.path().join(LOCK_FILE)).unwrap(), b"3 dream");
    }
}
