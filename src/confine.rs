//! Confinement by construction: every file under the notes root is reached from the root's
//! directory handle, one component at a time, never following a symlink.
//!
//! The root itself is opened as configured (it may be a symlink: it is what the user chose).
//! Below it, each directory is opened with `openat(parent, name, O_DIRECTORY | O_NOFOLLOW)` and
//! each file with `openat(dir, name, O_NOFOLLOW)`, so a symlink anywhere under the root is a
//! refusal ([`Kind::Symlink`]), never a path to follow, and a directory swapped for a symlink
//! after it was checked cannot redirect anything: the check *is* the open, and every later
//! operation (lock, read, temp file, rename, unlink) is relative to the handle it returned.
//! Per-component `O_NOFOLLOW` was chosen over Linux `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` because it is the same guarantee on every Unix, needs no fallback,
//! and tells exactly which component was the symlink.
//!
//! Writes are atomic inside the same handle: a temp file `.<name>.<6 chars>.tmp` created with
//! `O_EXCL`, fsynced, and renamed over the target with `renameat`. Each successful write also
//! sweeps that directory of pi-context's own temp files (that exact name pattern, regular files
//! only) older than [`STALE_TEMP_SECS`] by the file system's clock, left by killed writers.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Temp files of pi-context older than this (by mtime, against a fresh temp file's mtime) are
/// removed by the next write into their directory: one hour.
pub const STALE_TEMP_SECS: i64 = 3600;

/// Why a confined operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A component under the root is a symlink (never followed).
    Symlink,
    /// A component that must be a directory is something else.
    NotADirectory,
    /// The entry exists but is not a regular file.
    NotAFile,
    /// Any other I/O failure.
    Io,
}

/// A failed confined operation: what was attempted, on which path, and why.
#[derive(Debug)]
pub struct Error {
    pub kind: Kind,
    /// The operation (`open`, `create directory`, `write`, `lock`, …).
    pub op: &'static str,
    /// The path it concerned (for messages only: nothing is ever opened by this path).
    pub path: PathBuf,
    pub source: Option<io::Error>,
}

impl Error {
    fn new(kind: Kind, op: &'static str, path: PathBuf, source: Option<io::Error>) -> Error {
        Error {
            kind,
            op,
            path,
            source,
        }
    }

    fn io(op: &'static str, path: PathBuf, e: impl Into<io::Error>) -> Error {
        Error::new(Kind::Io, op, path, Some(e.into()))
    }

    /// Whether the failure is "not found" (an entry vanished between two steps).
    pub fn is_not_found(&self) -> bool {
        self.source
            .as_ref()
            .is_some_and(|e| e.kind() == io::ErrorKind::NotFound)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: ", self.op, self.path.display())?;
        match (&self.kind, &self.source) {
            (Kind::Symlink, _) => f.write_str("is a symlink, which is never followed"),
            (Kind::NotADirectory, _) => f.write_str("is not a directory"),
            (Kind::NotAFile, _) => f.write_str("is not a regular file"),
            (Kind::Io, Some(e)) => write!(f, "{e}"),
            (Kind::Io, None) => f.write_str("failed"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match (&e.kind, &e.source) {
            (Kind::Io, Some(source)) => source.kind(),
            (Kind::NotADirectory, _) => io::ErrorKind::NotADirectory,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e.to_string())
    }
}

/// What an entry of a directory is (symlinks are never resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    Symlink,
    Other,
}

fn entry_kind(t: FileType) -> EntryKind {
    match t {
        FileType::Directory => EntryKind::Dir,
        FileType::RegularFile => EntryKind::File,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

/// Seconds of a stat's modification time.
#[allow(
    clippy::unnecessary_cast,
    reason = "st_mtime widths differ by platform"
)]
fn mtime_secs(stat: &rustix::fs::Stat) -> i64 {
    stat.st_mtime as i64
}

/// An open directory under (or at) the notes root.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
    /// Whether [`Dir::entries`] has read this handle's directory stream before (then it
    /// rewinds first: the stream position belongs to the handle).
    listed: AtomicBool,
}

/// Identity of a file system object, for lock ordering and same-inode checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Inode {
    dev: u64,
    ino: u64,
}

fn inode_of(stat: &rustix::fs::Stat) -> Inode {
    #[allow(
        clippy::unnecessary_cast,
        reason = "st_dev/st_ino widths differ by platform"
    )]
    Inode {
        dev: stat.st_dev as u64,
        ino: stat.st_ino as u64,
    }
}

impl Dir {
    fn from_fd(fd: OwnedFd, path: PathBuf) -> Dir {
        Dir {
            fd,
            path,
            listed: AtomicBool::new(false),
        }
    }

    /// Open the notes root as configured (a symlinked root is followed: the user chose it).
    /// `None` when it does not exist.
    pub fn open_root(path: &Path) -> Result<Option<Dir>, Error> {
        match rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => Ok(Some(Dir::from_fd(fd, path.to_path_buf()))),
            Err(Errno::NOENT) => Ok(None),
            Err(Errno::NOTDIR) => Err(Error::new(
                Kind::NotADirectory,
                "open the notes root",
                path.to_path_buf(),
                None,
            )),
            Err(e) => Err(Error::io("open the notes root", path.to_path_buf(), e)),
        }
    }

    /// Open the notes root, creating it (and its missing ancestors) first.
    pub fn create_root(path: &Path) -> Result<Dir, Error> {
        std::fs::create_dir_all(path)
            .map_err(|e| Error::io("create the notes root", path.to_path_buf(), e))?;
        Dir::open_root(path)?.ok_or_else(|| {
            Error::io(
                "open the notes root",
                path.to_path_buf(),
                io::Error::from(io::ErrorKind::NotFound),
            )
        })
    }

    /// The path this handle was opened as (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn join(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// The object this handle is open on.
    pub fn inode(&self) -> Result<Inode, Error> {
        rustix::fs::fstat(&self.fd)
            .map(|s| inode_of(&s))
            .map_err(|e| Error::io("inspect", self.path.clone(), e))
    }

    /// A second handle on the same directory.
    pub fn try_clone(&self) -> Result<Dir, Error> {
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| Error::io("open", self.path.clone(), e))?;
        // A duplicate shares the stream position: rewind before its first listing too.
        let dir = Dir::from_fd(fd, self.path.clone());
        dir.listed.store(true, Ordering::Relaxed);
        Ok(dir)
    }

    /// What `name` is, without following it; `None` when it does not exist.
    pub fn kind_of(&self, name: &OsStr) -> Result<Option<EntryKind>, Error> {
        Ok(self
            .stat(name, "inspect")?
            .map(|s| entry_kind(FileType::from_raw_mode(s.st_mode))))
    }

    /// The `lstat` of `name` through this handle; `None` when it does not exist.
    pub fn lstat(&self, name: &OsStr) -> Result<Option<rustix::fs::Stat>, Error> {
        self.stat(name, "inspect")
    }

    fn stat(&self, name: &OsStr, op: &'static str) -> Result<Option<rustix::fs::Stat>, Error> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(Error::io(op, self.join(name), e)),
        }
    }

    /// The modification time of `name` in milliseconds (not following it); `None` if missing.
    pub fn mtime_ms(&self, name: &OsStr) -> Result<Option<i64>, Error> {
        Ok(self.stat(name, "inspect")?.map(|s| {
            #[allow(
                clippy::unnecessary_cast,
                reason = "st_mtime widths differ by platform"
            )]
            let secs = s.st_mtime as i64;
            #[allow(
                clippy::unnecessary_cast,
                reason = "st_mtime_nsec widths differ by platform"
            )]
            let nanos = s.st_mtime_nsec as i64;
            secs.saturating_mul(1000).saturating_add(nanos / 1_000_000)
        }))
    }

    /// The modification time of `name` at full precision (not following it); `None` if missing.
    pub fn modified(&self, name: &OsStr) -> Result<Option<std::time::SystemTime>, Error> {
        Ok(self.stat(name, "inspect")?.map(|s| {
            #[allow(
                clippy::unnecessary_cast,
                reason = "st_mtime widths differ by platform"
            )]
            let (secs, nanos) = (s.st_mtime as i64, s.st_mtime_nsec as i64);
            let offset =
                std::time::Duration::new(secs.unsigned_abs(), nanos.clamp(0, 999_999_999) as u32);
            if secs >= 0 {
                std::time::UNIX_EPOCH + offset
            } else {
                std::time::UNIX_EPOCH - offset
            }
        }))
    }

    /// Open the subdirectory `name` without following a symlink; `None` when it is missing.
    pub fn child(&self, name: &OsStr) -> Result<Option<Dir>, Error> {
        let path = self.join(name);
        match rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => Ok(Some(Dir::from_fd(fd, path))),
            Err(Errno::NOENT) => Ok(None),
            Err(Errno::LOOP | Errno::NOTDIR) => {
                match self.kind_of(name)? {
                    Some(EntryKind::Symlink) => Err(Error::new(Kind::Symlink, "open", path, None)),
                    // Replaced or removed meanwhile: report what we saw last.
                    None => Ok(None),
                    Some(_) => Err(Error::new(Kind::NotADirectory, "open", path, None)),
                }
            }
            Err(e) => Err(Error::io("open", path, e)),
        }
    }

    /// Open the subdirectory `name` as a path handle (`O_PATH`, never following a symlink):
    /// enough to `stat` it and to reach its entries by name (`lstat`, `open_file`), cheaper
    /// than [`Dir::child`] because nothing is prepared for listing it (on ext4 a listable
    /// open builds and frees the directory's hash order). Listing needs [`Dir::listable`].
    /// Systems without `O_PATH` get a readable handle. `None` when it is missing.
    pub fn child_handle(&self, name: &OsStr) -> Result<Option<Dir>, Error> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let path = self.join(name);
        match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(Dir::from_fd(fd, path))),
            Err(Errno::NOENT) => Ok(None),
            Err(Errno::LOOP | Errno::NOTDIR) => match self.kind_of(name)? {
                Some(EntryKind::Symlink) => Err(Error::new(Kind::Symlink, "open", path, None)),
                None => Ok(None),
                Some(_) => Err(Error::new(Kind::NotADirectory, "open", path, None)),
            },
            Err(e) => Err(Error::io("open", path, e)),
        }
    }

    /// A handle of this same directory that can be listed (the directory itself reopened
    /// through `.`: no path is resolved again, so no symlink can be met).
    pub fn listable(&self) -> Result<Dir, Error> {
        let fd = rustix::fs::openat(
            &self.fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io("open", self.path.clone(), e))?;
        Ok(Dir::from_fd(fd, self.path.clone()))
    }

    /// The `stat` of this directory itself.
    pub fn stat_self(&self) -> Result<rustix::fs::Stat, Error> {
        rustix::fs::fstat(&self.fd).map_err(|e| Error::io("inspect", self.path.clone(), e))
    }

    /// Open the subdirectory `name`, creating it when missing. Returns whether it was created.
    pub fn child_or_create(&self, name: &OsStr) -> Result<(Dir, bool), Error> {
        if let Some(dir) = self.child(name)? {
            return Ok((dir, false));
        }
        let created = match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o777)) {
            Ok(()) => true,
            Err(Errno::EXIST) => false,
            Err(e) => return Err(Error::io("create directory", self.join(name), e)),
        };
        match self.child(name)? {
            Some(dir) => Ok((dir, created)),
            None => Err(Error::io(
                "open",
                self.join(name),
                io::Error::from(io::ErrorKind::NotFound),
            )),
        }
    }

    /// Walk `names` down from this directory; `None` when a component is missing.
    pub fn walk<S: AsRef<OsStr>>(&self, names: &[S]) -> Result<Option<Dir>, Error> {
        let Some((first, rest)) = names.split_first() else {
            return self.try_clone().map(Some);
        };
        let Some(mut current) = self.child(first.as_ref())? else {
            return Ok(None);
        };
        for name in rest {
            match current.child(name.as_ref())? {
                Some(next) => current = next,
                None => return Ok(None),
            }
        }
        Ok(Some(current))
    }

    /// Walk `names` down from this directory, creating missing directories; every directory
    /// created is recorded in `created` (parent handle and name, outermost first) so a refused
    /// operation can remove them again with [`remove_created`].
    pub fn walk_create<S: AsRef<OsStr>>(
        &self,
        names: &[S],
        created: &mut Vec<(Dir, OsString)>,
    ) -> Result<Dir, Error> {
        let mut current = self.try_clone()?;
        for name in names {
            let (next, made) = current.child_or_create(name.as_ref())?;
            if made {
                created.push((current, name.as_ref().to_os_string()));
            }
            current = next;
        }
        Ok(current)
    }

    /// Open the regular file `name` for reading, never following a symlink (and never
    /// blocking on a FIFO); `None` when it does not exist.
    pub fn open_file(&self, name: &OsStr) -> Result<Option<File>, Error> {
        Ok(self.open_file_sized(name)?.map(|(file, _)| file))
    }

    /// [`Dir::open_file`], with the file's size when it was opened (from the `fstat` that
    /// checks it is a regular file), so a reader can stop without a last empty `read`.
    pub fn open_file_sized(&self, name: &OsStr) -> Result<Option<(File, u64)>, Error> {
        #[allow(clippy::unnecessary_cast, reason = "st_size widths differ by platform")]
        Ok(self
            .open_file_stat(name)?
            .map(|(file, stat)| (file, stat.st_size.max(0) as u64)))
    }

    /// [`Dir::open_file`], with the `fstat` of the file as opened (a regular file).
    pub fn open_file_stat(&self, name: &OsStr) -> Result<Option<(File, rustix::fs::Stat)>, Error> {
        let fd = match rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => {
                return Err(Error::new(Kind::Symlink, "open", self.join(name), None));
            }
            Err(e) => return Err(Error::io("open", self.join(name), e)),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| Error::io("inspect", self.join(name), e))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(Error::new(Kind::NotAFile, "open", self.join(name), None));
        }
        Ok(Some((File::from(fd), stat)))
    }

    /// The whole content of the regular file `name`; `None` when it does not exist.
    pub fn read(&self, name: &OsStr) -> Result<Option<Vec<u8>>, Error> {
        let Some((mut file, size)) = self.open_file_sized(name)? else {
            return Ok(None);
        };
        // Sized from the open's `fstat`, then read to the end (a file that grew meanwhile is
        // read whole: read-modify-writes must never drop bytes).
        let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
        // Through `Take`: `File::read_to_end` would ask the size and position again.
        (&mut file)
            .take(u64::MAX)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io("read", self.join(name), e))?;
        Ok(Some(buf))
    }

    /// Replace `name` with `bytes` atomically (temp file in this directory, fsync, `renameat`),
    /// then sweep this directory of stale temp files. On failure the temp file is removed and
    /// the target is untouched.
    pub fn write_atomic(&self, name: &OsStr, bytes: &[u8]) -> Result<(), Error> {
        let path = self.join(name);
        let (tmp_name, file) = self.create_temp(name)?;
        let result = (|| {
            let mut file = file;
            file.write_all(bytes)?;
            file.sync_all()?;
            let made = rustix::fs::fstat(&file)?;
            rustix::fs::renameat(&self.fd, &tmp_name, &self.fd, name)?;
            Ok::<_, io::Error>(made)
        })();
        match result {
            Ok(made) => {
                self.sweep_stale_temps(mtime_secs(&made));
                Ok(())
            }
            Err(e) => {
                let _ = rustix::fs::unlinkat(&self.fd, &tmp_name, AtFlags::empty());
                Err(Error::io("write", path, e))
            }
        }
    }

    fn create_temp(&self, name: &OsStr) -> Result<(OsString, File), Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // Keep the temp name within the 255-byte name limit whatever the target's length.
        let bytes = name.as_bytes();
        let stem = &bytes[..bytes.len().min(200)];
        for _ in 0..100 {
            let mut tmp = Vec::with_capacity(stem.len() + 13);
            tmp.push(b'.');
            tmp.extend_from_slice(stem);
            tmp.push(b'.');
            tmp.extend_from_slice(&random_suffix(COUNTER.fetch_add(1, Ordering::Relaxed)));
            tmp.extend_from_slice(b".tmp");
            let tmp = OsStr::from_bytes(&tmp).to_os_string();
            match rustix::fs::openat(
                &self.fd,
                &tmp,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => return Ok((tmp, File::from(fd))),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(Error::io("create a temp file in", self.path.clone(), e)),
            }
        }
        Err(Error::io(
            "create a temp file in",
            self.path.clone(),
            io::Error::from(io::ErrorKind::AlreadyExists),
        ))
    }

    /// Remove pi-context's own temp files in this directory whose mtime is more than
    /// [`STALE_TEMP_SECS`] before `now_secs` (the mtime of a file just written, so the file
    /// system's clock, not the process's, decides). Best effort: failures are ignored.
    fn sweep_stale_temps(&self, now_secs: i64) {
        let Ok(entries) = self.entries() else {
            return;
        };
        for (name, kind) in entries {
            if !is_temp_name(&name) || matches!(kind, EntryKind::Dir | EntryKind::Symlink) {
                continue;
            }
            let Ok(Some(stat)) = self.stat(&name, "inspect") else {
                continue;
            };
            if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
                && mtime_secs(&stat) < now_secs - STALE_TEMP_SECS
            {
                let _ = rustix::fs::unlinkat(&self.fd, &name, AtFlags::empty());
            }
        }
    }

    /// Remove the entry `name` (a file or a symlink: the entry itself, never its target).
    pub fn remove_file(&self, name: &OsStr) -> Result<(), Error> {
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())
            .map_err(|e| Error::io("delete", self.join(name), e))
    }

    /// Move `name` in this directory to `to_name` in `to`.
    pub fn rename(&self, name: &OsStr, to: &Dir, to_name: &OsStr) -> Result<(), Error> {
        rustix::fs::renameat(&self.fd, name, &to.fd, to_name)
            .map_err(|e| Error::io("rename", self.join(name), e))
    }

    /// The entries of this directory (without `.` and `..`), with what each is, unsorted.
    pub fn entries(&self) -> Result<Vec<(OsString, EntryKind)>, Error> {
        let mut out = Vec::new();
        self.for_each_entry(|name, kind| {
            out.push((name.to_os_string(), kind));
            Ok(())
        })?;
        Ok(out)
    }

    /// Call `f` with every entry of this directory (without `.` and `..`) and what it is,
    /// unsorted; the first error `f` returns stops the listing. Reads the stream of this very
    /// handle (no second open of the directory, no name copied unless `f` keeps it); a second
    /// listing of the same handle rewinds first.
    pub fn for_each_entry(
        &self,
        mut f: impl FnMut(&OsStr, EntryKind) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let fail = |e: Errno| Error::io("list", self.path.clone(), e);
        if self.listed.swap(true, Ordering::Relaxed) {
            rustix::fs::seek(&self.fd, rustix::fs::SeekFrom::Start(0)).map_err(fail)?;
        }
        let mut visit = |name: &[u8], t: FileType| -> Result<(), Error> {
            let name = OsStr::from_bytes(name);
            if name == "." || name == ".." {
                return Ok(());
            }
            let kind = match t {
                FileType::Unknown => match self.kind_of(name)? {
                    Some(kind) => kind,
                    None => return Ok(()),
                },
                t => entry_kind(t),
            };
            f(name, kind)
        };
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 16 * 1024];
            let mut raw = rustix::fs::RawDir::new(&self.fd, &mut buf);
            while let Some(entry) = raw.next() {
                let entry = entry.map_err(fail)?;
                visit(entry.file_name().to_bytes(), entry.file_type())?;
            }
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let mut dir = rustix::fs::Dir::read_from(&self.fd).map_err(fail)?;
            while let Some(entry) = dir.read() {
                let entry = entry.map_err(fail)?;
                visit(entry.file_name().to_bytes(), entry.file_type())?;
            }
        }
        Ok(())
    }

    /// Take the exclusive cross-process lock guarding `name` for a read-modify-write: the file
    /// itself when it exists (re-checked after acquisition, since an atomic replace may have
    /// swapped the inode while we waited), else this directory (re-checked that `name` is still
    /// missing).
    pub fn lock(&self, name: &OsStr) -> Result<Lock, Error> {
        loop {
            if let Some(lock) = self.lock_existing(name)? {
                return Ok(lock);
            }
            let handle = self.lock_self()?;
            if self.stat(name, "lock")?.is_none() {
                return Ok(Lock {
                    _held: handle,
                    existed: false,
                });
            }
        }
    }

    /// Take the lock on the existing file `name`; `None` (nothing created) when it is missing.
    pub fn lock_existing(&self, name: &OsStr) -> Result<Option<Lock>, Error> {
        loop {
            let Some(file) = self.open_file(name)? else {
                return Ok(None);
            };
            file.lock()
                .map_err(|e| Error::io("lock", self.join(name), e))?;
            if self.still_same(&file, name)? {
                return Ok(Some(Lock {
                    _held: file,
                    existed: true,
                }));
            }
        }
    }

    fn lock_self(&self) -> Result<File, Error> {
        let handle = rustix::fs::openat(
            &self.fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map(File::from)
        .map_err(|e| Error::io("lock", self.path.clone(), e))?;
        handle
            .lock()
            .map_err(|e| Error::io("lock", self.path.clone(), e))?;
        Ok(handle)
    }

    fn still_same(&self, file: &File, name: &OsStr) -> Result<bool, Error> {
        let held = rustix::fs::fstat(file.as_fd())
            .map_err(|e| Error::io("inspect", self.join(name), e))?;
        Ok(self
            .stat(name, "inspect")?
            .is_some_and(|now| inode_of(&now) == inode_of(&held)))
    }
}

/// A held advisory lock; released when dropped (and by the OS if the process dies).
#[derive(Debug)]
pub struct Lock {
    _held: File,
    /// Whether the lock is on the file itself (it existed) or on its directory.
    pub existed: bool,
}

/// Lock several entries without deadlock: every lock object is taken in one global order —
/// directory locks (for missing files) before file locks, each by device and inode — so two
/// processes locking overlapping sets never wait on each other in a cycle. After acquisition
/// every entry is re-checked (same file, or still missing); if anything changed, everything is
/// released and the plan redone.
pub fn lock_all(entries: &[(&Dir, &OsStr)]) -> Result<Vec<Lock>, Error> {
    'retry: loop {
        // (is_file, inode) of each entry's lock object.
        let mut plan = Vec::with_capacity(entries.len());
        for (dir, name) in entries {
            let target = match dir.stat(name, "lock")? {
                Some(stat) => (true, inode_of(&stat)),
                None => (false, dir.inode()?),
            };
            plan.push(target);
        }
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by_key(|&i| plan[i]);
        order.dedup_by_key(|i| plan[*i]);
        let mut held = Vec::with_capacity(order.len());
        for &i in &order {
            let (dir, name) = entries[i];
            let lock = if plan[i].0 {
                match dir.open_file(name)? {
                    Some(file) => {
                        file.lock()
                            .map_err(|e| Error::io("lock", dir.join(name), e))?;
                        Lock {
                            _held: file,
                            existed: true,
                        }
                    }
                    None => continue 'retry,
                }
            } else {
                Lock {
                    _held: dir.lock_self()?,
                    existed: false,
                }
            };
            held.push(lock);
        }
        for (i, (dir, name)) in entries.iter().enumerate() {
            let still = match dir.stat(name, "lock")? {
                Some(stat) => plan[i] == (true, inode_of(&stat)),
                None => !plan[i].0,
            };
            if !still {
                continue 'retry;
            }
        }
        return Ok(held);
    }
}

/// Remove directories recorded by [`Dir::walk_create`] (innermost first), stopping at the
/// first that is not empty.
pub fn remove_created(created: &[(Dir, OsString)]) {
    for (parent, name) in created.iter().rev() {
        if rustix::fs::unlinkat(&parent.fd, name, AtFlags::REMOVEDIR).is_err() {
            break;
        }
    }
}

/// Whether `name` is one of pi-context's own temp files: `.<name>.<6 alphanumerics>.tmp`.
pub fn is_temp_name(name: &OsStr) -> bool {
    let b = name.as_bytes();
    let Some(rest) = b.strip_prefix(b".") else {
        return false;
    };
    let Some(rest) = rest.strip_suffix(b".tmp") else {
        return false;
    };
    if rest.len() < 8 {
        return false;
    }
    let (stem, suffix) = rest.split_at(rest.len() - 7);
    !stem.is_empty() && suffix[0] == b'.' && suffix[1..].iter().all(u8::is_ascii_alphanumeric)
}

/// Six alphanumerics, different per call and per process (hash of a random per-process key,
/// the process id and a counter; `O_EXCL` makes a collision a retry, never a clobber).
fn random_suffix(counter: u64) -> [u8; 6] {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(counter);
    hasher.write_u32(std::process::id());
    let mut h = hasher.finish();
    let mut out = [0u8; 6];
    for byte in &mut out {
        *byte = ALPHABET[(h % 62) as usize];
        h /= 62;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinks_are_refused_at_every_component() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("a")).unwrap();
        symlink(out.path(), root.path().join("a/link")).unwrap();
        symlink(out.path().join("f"), root.path().join("a/file")).unwrap();
        let dir = Dir::open_root(root.path()).unwrap().unwrap();
        let e = dir.walk(&["a", "link"]).unwrap_err();
        assert_eq!(e.kind, Kind::Symlink);
        let mut created = Vec::new();
        let e = dir
            .walk_create(&["a", "link", "x"], &mut created)
            .unwrap_err();
        assert_eq!(e.kind, Kind::Symlink);
        let a = dir.walk(&["a"]).unwrap().unwrap();
        assert_eq!(
            a.open_file(OsStr::new("file")).unwrap_err().kind,
            Kind::Symlink
        );
        assert!(fs::read_dir(out.path()).unwrap().next().is_none());
    }

    #[test]
    fn atomic_writes_replace_and_created_dirs_can_be_undone() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(root.path()).unwrap().unwrap();
        let mut created = Vec::new();
        let deep = dir.walk_create(&["x", "y"], &mut created).unwrap();
        assert_eq!(created.len(), 2);
        deep.write_atomic(OsStr::new("n.md"), b"one").unwrap();
        deep.write_atomic(OsStr::new("n.md"), b"two").unwrap();
        assert_eq!(fs::read(root.path().join("x/y/n.md")).unwrap(), b"two");
        assert_eq!(fs::read_dir(root.path().join("x/y")).unwrap().count(), 1);
        deep.remove_file(OsStr::new("n.md")).unwrap();
        remove_created(&created);
        assert!(fs::read_dir(root.path()).unwrap().next().is_none());
    }

    #[test]
    fn stale_temp_files_are_swept_strictly_by_pattern_and_age() {
        let root = tempfile::tempdir().unwrap();
        let p = root.path();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 3600);
        for name in [
            ".a.md.AbC123.tmp",
            ".a.md.xyz.tmp",
            "a.md.AbC123.tmp",
            ".fresh.md.Q1w2E3.tmp",
        ] {
            fs::write(p.join(name), "x").unwrap();
            if name != ".fresh.md.Q1w2E3.tmp" {
                fs::File::options()
                    .write(true)
                    .open(p.join(name))
                    .unwrap()
                    .set_modified(old)
                    .unwrap();
            }
        }
        let dir = Dir::open_root(p).unwrap().unwrap();
        dir.write_atomic(OsStr::new("b.md"), b"b").unwrap();
        let mut left: Vec<String> = fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".a.md.xyz.tmp",
                ".fresh.md.Q1w2E3.tmp",
                "a.md.AbC123.tmp",
                "b.md"
            ]
        );
    }

    #[test]
    fn temp_names() {
        assert!(is_temp_name(OsStr::new(".n.md.abcDE9.tmp")));
        assert!(!is_temp_name(OsStr::new("..abcDE9.tmp")));
        assert!(!is_temp_name(OsStr::new(".n.md.abc-E9.tmp")));
        assert!(!is_temp_name(OsStr::new(".n.md.abcDE9.tmpx")));
    }

    #[test]
    fn locks_on_missing_then_existing_entries() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(root.path()).unwrap().unwrap();
        let lock = dir.lock(OsStr::new("n.md")).unwrap();
        assert!(!lock.existed);
        dir.write_atomic(OsStr::new("n.md"), b"x").unwrap();
        drop(lock);
        assert!(dir.lock(OsStr::new("n.md")).unwrap().existed);
        let both = lock_all(&[(&dir, OsStr::new("n.md")), (&dir, OsStr::new("m.md"))]).unwrap();
        assert_eq!(both.len(), 2);
        drop(both);
        let missing = lock_all(&[(&dir, OsStr::new("p.md")), (&dir, OsStr::new("q.md"))]).unwrap();
        assert_eq!(missing.len(), 1);
    }

    #[test]
    fn crossed_renames_do_not_deadlock() {
        // b -> a and b -> c at once in one directory: a missing target locks the directory,
        // an existing source its file; the global order keeps both processes from waiting
        // on each other.
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("b.md"), "b").unwrap();
        let threads: Vec<_> = ["a.md", "c.md"]
            .into_iter()
            .map(|target| {
                let path = root.path().to_path_buf();
                std::thread::spawn(move || {
                    let dir = Dir::open_root(&path).unwrap().unwrap();
                    for _ in 0..200 {
                        let held =
                            lock_all(&[(&dir, OsStr::new("b.md")), (&dir, OsStr::new(target))])
                                .unwrap();
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
