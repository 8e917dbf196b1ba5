//! The notes metadata cache: a cache, never the truth.
//!
//! For every note file of a home it remembers the file's `stat` identity (device, inode, size,
//! modification and status-change times with nanoseconds) and what listing and boot need from
//! the file, decoded once from its frontmatter block exactly as they decode it ([`Facts`]), and,
//! once known, the code points of its body. A listing or a boot
//! walks and `lstat`s every file but opens only files whose `stat` differs from the entry.
//!
//! Layout: `<cache>/notes/<16 hex of SHA-1 of the notes root>/homes/<16 hex of SHA-1 of the home
//! path relative to the root>.cache`, one file per home, replaced atomically (temp file + rename,
//! no fsync: a lost or torn cache is only rebuilt). The file starts with a magic, a version, the
//! notes root and the home path, and ends with a hash of everything before it: a file that is
//! truncated, altered, of another version or of another root/home is ignored and rewritten.
//! Two processes writing at once each replace the whole file; the last one wins, and both
//! versions are valid.
//!
//! Validation limit: an entry is trusted only when every `stat` field matches *and* the file's
//! status-change time (ctime) is more than [`RACY_SECONDS`] older than the cache file itself.
//! Any write to a file changes its ctime (a program can reset the mtime, not the ctime), so an
//! edit that keeps size and mtime is still caught; the margin covers edits made within the same
//! timestamp tick as the cache write (coarse or whole-second file times), which would keep even
//! the ctime. What it cannot catch: a file changed with the system clock set back by more than
//! the margin, or a file system that does not maintain ctime.

use std::fs;
use std::hash::Hasher;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset, TimeZone};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Value};

use super::note::{NoteMeta, Origin, parse_stamp};
use super::{frontmatter, store};
use sha1::{Digest, Sha1};

/// Entries whose ctime is within this many seconds of the cache file's own modification time
/// are re-read (see the module documentation).
pub const RACY_SECONDS: i64 = 2;

const MAGIC: &[u8; 8] = b"PICTXNMC";
const VERSION: u32 = 2;
const NO_CHARS: u64 = u64::MAX;

/// The directory of one notes root inside the shared cache directory:
/// `<cache>/notes/<first 16 hex of SHA-1 of the root path>`.
pub fn root_cache_dir(cache_dir: &Path, root: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    cache_dir
        .join("notes")
        .join(hex16(root.as_os_str().as_bytes()))
}

fn hex16(bytes: &[u8]) -> String {
    let digest = Sha1::digest(bytes);
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The `stat` identity of a note file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: i64,
    pub mtime_nsec: i64,
    pub ctime: i64,
    pub ctime_nsec: i64,
}

impl FileStat {
    /// From an `lstat` taken through a directory handle (`confine::Dir::lstat`).
    #[allow(
        clippy::unnecessary_cast,
        reason = "stat field widths differ by platform"
    )]
    pub fn of_stat(stat: &rustix::fs::Stat) -> FileStat {
        FileStat {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            size: stat.st_size as u64,
            mtime: stat.st_mtime as i64,
            mtime_nsec: stat.st_mtime_nsec as i64,
            ctime: stat.st_ctime as i64,
            ctime_nsec: stat.st_ctime_nsec as i64,
        }
    }

    pub fn of(meta: &fs::Metadata) -> FileStat {
        use std::os::unix::fs::MetadataExt;
        FileStat {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }
}

/// What the cache knows about one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub stat: FileStat,
    /// What listing and boot take from the file's frontmatter block.
    pub facts: Facts,
    /// Code points of the body, when a reader computed them.
    pub chars: Option<u64>,
}

/// The frontmatter facts of one note file, decoded once from its block (the file's bytes
/// through the closing fence, `frontmatter::block_prefix`; files without one are never cached).
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// Listing's crumpled test (`frontmatter::block_has_key(block, "crumpledAt")`).
    pub list_crumpled: bool,
    /// Boot's crumpled test (the block's fields have `crumpledAt`).
    pub boot_crumpled: bool,
    /// `updatedAt` as boot ranks it (epoch ms), `None` when it is not a date.
    pub boot_updated_ms: Option<i64>,
    /// The listing's metadata (missing stamps already the file time, as listing computes it),
    /// or `None` when a value could not round-trip exactly (a fractional number): then
    /// `block` is kept and parsed on use.
    pub meta: Option<NoteMeta>,
    /// The block itself, only when `meta` is `None`.
    pub block: Box<[u8]>,
}

impl Facts {
    /// Decode the facts of a note whose frontmatter block is `block` and whose file is `name`
    /// in `dir` (for the file-time fallback of missing stamps).
    pub fn of_block(block: &[u8], dir: &crate::confine::Dir, name: &std::ffi::OsStr) -> Facts {
        let fields = frontmatter::fields_of_bytes(block);
        let fallback = store::stamp_fallback(&fields, dir, name, epoch());
        let meta = NoteMeta::from_fields(&fields, fallback);
        let exact =
            meta.crumpled_at.as_ref().is_none_or(exact_json) && meta.other.values().all(exact_json);
        Facts {
            list_crumpled: frontmatter::block_has_key(block, "crumpledAt"),
            boot_crumpled: fields.contains_key("crumpledAt"),
            boot_updated_ms: fields
                .get("updatedAt")
                .and_then(parse_stamp)
                .map(|t| t.timestamp_millis()),
            block: if exact { Box::default() } else { block.into() },
            meta: exact.then_some(meta),
        }
    }
}

fn epoch() -> DateTime<FixedOffset> {
    DateTime::UNIX_EPOCH.fixed_offset()
}

/// Whether `value` survives JSON text and back bit for bit (no fractional numbers).
fn exact_json(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_i64() || n.is_u64(),
        Value::Array(items) => items.iter().all(exact_json),
        Value::Object(map) => map.values().all(exact_json),
        _ => true,
    }
}

/// The cache of one home, loaded once per command.
#[derive(Debug)]
pub struct HomeCache {
    dir: PathBuf,
    file: PathBuf,
    root: String,
    home: String,
    entries: FxHashMap<String, Entry>,
    /// The cache file's modification time (seconds) when loaded: entries whose ctime is not
    /// older than this minus [`RACY_SECONDS`] are not trusted.
    stamp: Option<i64>,
    dirty: bool,
}

impl HomeCache {
    /// Load the cache of the home at `home_dir` (under `root`) from `root_cache_dir`. A missing,
    /// unreadable, corrupt or foreign cache loads empty (and is replaced on save).
    pub fn load(root_cache_dir: &Path, root: &Path, home_dir: &Path) -> HomeCache {
        let root_text = root.to_string_lossy().into_owned();
        let home = home_dir
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| home_dir.to_string_lossy().into_owned());
        let dir = root_cache_dir.join("homes");
        let file = dir.join(format!("{}.cache", hex16(home.as_bytes())));
        let mut cache = HomeCache {
            dir,
            file,
            root: root_text,
            home,
            entries: FxHashMap::default(),
            stamp: None,
            dirty: false,
        };
        if let Ok((entries, stamp)) = cache.read() {
            cache.entries = entries;
            cache.stamp = Some(stamp);
        }
        cache
    }

    fn read(&self) -> io::Result<(FxHashMap<String, Entry>, i64)> {
        let mut file = fs::File::open(&self.file)?;
        let stamp = {
            use std::os::unix::fs::MetadataExt;
            file.metadata()?.mtime()
        };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let entries = decode(&bytes, &self.root, &self.home)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a valid cache"))?;
        Ok((entries, stamp))
    }

    /// The entry of `vpath` when it is valid for a file whose `stat` is `stat`.
    pub fn get(&self, vpath: &str, stat: &FileStat) -> Option<&Entry> {
        let stamp = self.stamp?;
        let entry = self.entries.get(vpath)?;
        (entry.stat == *stat && stat.ctime < stamp - RACY_SECONDS).then_some(entry)
    }

    /// Whether the cache has an entry for `vpath` (valid or not).
    pub fn contains(&self, vpath: &str) -> bool {
        self.entries.contains_key(vpath)
    }

    /// How many entries the cache has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Remember what was read from a file (replacing any entry).
    /// Always marks the cache for saving, also for an unchanged racy entry: a cache file written
    /// later than its tick can trust it.
    pub fn insert(&mut self, vpath: String, entry: Entry) {
        self.dirty = true;
        self.entries.insert(vpath, entry);
    }

    /// Forget the entries of files the walk did not see (deleted or moved notes).
    pub fn retain_seen(&mut self, seen: &FxHashSet<&str>) {
        let before = self.entries.len();
        self.entries.retain(|k, _| seen.contains(k.as_str()));
        if self.entries.len() != before {
            self.dirty = true;
        }
    }

    /// Write the cache back when it changed: atomically, best effort (an unwritable cache
    /// directory means working without it).
    pub fn save(&self) {
        if !self.dirty {
            return;
        }
        let _ = self.write();
    }

    fn write(&self) -> io::Result<()> {
        let dir = &self.dir;
        fs::create_dir_all(dir)?;
        let bytes = encode(&self.entries, &self.root, &self.home);
        let mut tmp = tempfile::Builder::new()
            .prefix(".homes.")
            .suffix(".tmp")
            .tempfile_in(dir)?;
        tmp.write_all(&bytes)?;
        tmp.persist(&self.file).map_err(|e| e.error)?;
        Ok(())
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(bytes);
    hasher.write_usize(bytes.len());
    hasher.finish()
}

fn encode(entries: &FxHashMap<String, Entry>, root: &str, home: &str) -> Vec<u8> {
    let size: usize = entries
        .iter()
        .map(|(k, e)| k.len() + e.facts.block.len() + 160)
        .sum();
    let mut out = Vec::with_capacity(size + 64 + root.len() + home.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    put_bytes(&mut out, root.as_bytes());
    put_bytes(&mut out, home.as_bytes());
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    let mut keys: Vec<&String> = entries.keys().collect();
    keys.sort();
    for key in keys {
        let e = &entries[key];
        put_bytes(&mut out, key.as_bytes());
        let s = &e.stat;
        for v in [s.dev, s.ino, s.size] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [s.mtime, s.mtime_nsec, s.ctime, s.ctime_nsec] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&e.chars.unwrap_or(NO_CHARS).to_le_bytes());
        put_facts(&mut out, &e.facts);
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn put_facts(out: &mut Vec<u8>, f: &Facts) {
    let flags = u8::from(f.list_crumpled)
        | (u8::from(f.boot_crumpled) << 1)
        | (u8::from(f.boot_updated_ms.is_some()) << 2)
        | (u8::from(f.meta.is_some()) << 3);
    out.push(flags);
    out.extend_from_slice(&f.boot_updated_ms.unwrap_or(0).to_le_bytes());
    match &f.meta {
        Some(m) => {
            out.push(match m.origin {
                Origin::User => 0,
                Origin::Myself => 1,
                Origin::External => 2,
            });
            for t in [m.created_at, m.updated_at, m.last_accessed] {
                out.extend_from_slice(&t.timestamp().to_le_bytes());
                out.extend_from_slice(&t.timestamp_subsec_nanos().to_le_bytes());
                out.extend_from_slice(&t.offset().local_minus_utc().to_le_bytes());
            }
            out.extend_from_slice(&m.access_count.to_bits().to_le_bytes());
            let crumpled = m
                .crumpled_at
                .as_ref()
                .map(|v| serde_json::to_vec(v).unwrap_or_default())
                .unwrap_or_default();
            put_bytes(out, &crumpled);
            let other = if m.other.is_empty() {
                Vec::new()
            } else {
                serde_json::to_vec(&m.other).unwrap_or_default()
            };
            put_bytes(out, &other);
        }
        None => put_bytes(out, &f.block),
    }
}

fn get_facts(c: &mut Cursor<'_>) -> Option<Facts> {
    let flags = c.take(1)?[0];
    let updated = c.i64()?;
    let meta = if flags & 8 != 0 {
        let origin = match c.take(1)?[0] {
            0 => Origin::User,
            1 => Origin::Myself,
            2 => Origin::External,
            _ => return None,
        };
        let mut stamps = [epoch(); 3];
        for stamp in &mut stamps {
            let secs = c.i64()?;
            let nanos = u32::from_le_bytes(c.take(4)?.try_into().ok()?);
            let offset = i32::from_le_bytes(c.take(4)?.try_into().ok()?);
            let offset = FixedOffset::east_opt(offset)?;
            let utc = DateTime::from_timestamp(secs, nanos)?;
            *stamp = offset.from_utc_datetime(&utc.naive_utc());
        }
        let access_count = f64::from_bits(c.u64()?);
        let crumpled = c.bytes()?;
        let crumpled_at = if crumpled.is_empty() {
            None
        } else {
            Some(serde_json::from_slice::<Value>(crumpled).ok()?)
        };
        let other = c.bytes()?;
        let other = if other.is_empty() {
            Map::new()
        } else {
            serde_json::from_slice::<Map<String, Value>>(other).ok()?
        };
        Some(NoteMeta {
            origin,
            created_at: stamps[0],
            updated_at: stamps[1],
            last_accessed: stamps[2],
            access_count,
            crumpled_at,
            other,
        })
    } else {
        None
    };
    let block = if meta.is_none() {
        c.bytes()?.into()
    } else {
        Box::default()
    };
    Some(Facts {
        list_crumpled: flags & 1 != 0,
        boot_crumpled: flags & 2 != 0,
        boot_updated_ms: (flags & 4 != 0).then_some(updated),
        meta,
        block,
    })
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// A bounds-checked reader over the cache bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }
}

fn decode(bytes: &[u8], root: &str, home: &str) -> Option<FxHashMap<String, Entry>> {
    let body_len = bytes.len().checked_sub(8)?;
    let (body, sum) = bytes.split_at(body_len);
    if checksum(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut c = Cursor { bytes: body };
    if c.take(8)? != MAGIC || u32::from_le_bytes(c.take(4)?.try_into().ok()?) != VERSION {
        return None;
    }
    if c.bytes()? != root.as_bytes() || c.bytes()? != home.as_bytes() {
        return None;
    }
    let count = usize::try_from(c.u64()?).ok()?;
    let mut entries =
        FxHashMap::with_capacity_and_hasher(count.min(body.len() / 80 + 1), Default::default());
    for _ in 0..count {
        let key = std::str::from_utf8(c.bytes()?).ok()?.to_owned();
        let stat = FileStat {
            dev: c.u64()?,
            ino: c.u64()?,
            size: c.u64()?,
            mtime: c.i64()?,
            mtime_nsec: c.i64()?,
            ctime: c.i64()?,
            ctime_nsec: c.i64()?,
        };
        let chars = c.u64()?;
        let facts = get_facts(&mut c)?;
        entries.insert(
            key,
            Entry {
                stat,
                facts,
                chars: (chars != NO_CHARS).then_some(chars),
            },
        );
    }
    if !c.bytes.is_empty() {
        return None;
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u64) -> Entry {
        Entry {
            stat: FileStat {
                dev: 1,
                ino: n,
                size: 10,
                mtime: 5,
                mtime_nsec: 6,
                ctime: 7,
                ctime_nsec: 8,
            },
            facts: Facts::of_block(
                if n.is_multiple_of(3) {
                    b"---\nupdatedAt: 2026-01-01T00:00:00.000+02:00\nx: 1.5\n---\n"
                } else {
                    b"---\ncrumpledAt: x\nupdatedAt: 2026-01-01T00:00:00.123456+02:00\nproject: [1, \"a\"]\n---\n"
                },
                &crate::confine::Dir::open_root(Path::new("/"))
                    .unwrap()
                    .unwrap(),
                std::ffi::OsStr::new("no-such-note.md"),
            ),
            chars: n.is_multiple_of(2).then_some(n),
        }
    }

    #[test]
    fn round_trip_and_every_corruption_is_rejected() {
        let mut entries = FxHashMap::default();
        for n in 0..5 {
            entries.insert(format!("d/n{n}.md"), entry(n));
        }
        let bytes = encode(&entries, "/root", "human");
        assert_eq!(decode(&bytes, "/root", "human"), Some(entries.clone()));
        assert_eq!(decode(&bytes, "/other", "human"), None, "foreign root");
        assert_eq!(decode(&bytes, "/root", "agents/a"), None, "foreign home");
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert_eq!(decode(&bad, "/root", "human"), None, "flipped byte {i}");
            assert_eq!(decode(&bytes[..i], "/root", "human"), None, "cut at {i}");
        }
    }

    #[test]
    fn racy_entries_are_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        let mut cache = HomeCache::load(dir.path(), &root, &root.join("human"));
        cache.insert("a.md".into(), entry(1));
        cache.save();
        let loaded = HomeCache::load(dir.path(), &root, &root.join("human"));
        // ctime 7 is far older than the cache file: trusted; a different stat is not.
        assert!(loaded.get("a.md", &entry(1).stat).is_some());
        assert!(loaded.get("a.md", &entry(2).stat).is_none());
        let mut fresh = entry(1).stat;
        fresh.ctime = loaded.stamp.unwrap();
        let mut cache = loaded;
        cache.insert(
            "b.md".into(),
            Entry {
                stat: fresh,
                ..entry(1)
            },
        );
        assert!(
            cache.get("b.md", &fresh).is_none(),
            "changed in the cache's own tick"
        );
    }
}
