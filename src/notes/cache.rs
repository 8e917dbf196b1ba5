//! The notes metadata cache: a cache, never the truth.
//!
//! For every note file of a home it remembers the file's `stat` identity (device, inode, size,
//! modification and status-change times with nanoseconds) and what listing and boot need from
//! the file, decoded once from its frontmatter block exactly as they decode it ([`Facts`]), and,
//! once known, the code points of its body; and for every directory of the home its `stat`
//! and its listing ([`Listing`]). A listing or a boot `lstat`s every file but lists only
//! directories whose `stat` differs from their cached listing, and opens only files whose
//! `stat` differs from the entry.
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
//! the ctime. Directory listings follow the same rule with the directory's own `stat`
//! (creating, deleting or renaming an entry changes the directory's mtime and ctime). What it
//! cannot catch: a file changed with the system clock set back by more than
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

/// Entries whose ctime is within this many seconds of the cache file's own modification time
/// are re-read (see the module documentation).
pub const RACY_SECONDS: i64 = 2;

/// A home cache file at least this long (≈ 80 notes, or 40 directory listings) marks a home
/// worth walking with helper threads from the start (the walk's default `Tuning::large_cache`,
/// see [`HomeCache::load_hinting`]).
pub const LARGE_CACHE_BYTES: u64 = 16 * 1024;

const MAGIC: &[u8; 8] = b"PICTXNMC";
const VERSION: u32 = 4;
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
    super::digest::hex(&super::digest::sha1(bytes), 8)
}

/// The `stat` identity of a note file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// A view of one cache entry: either still the encoded bytes of the cache file (decoded on
/// demand, field by field) or an entry learned during this command.
#[derive(Debug, Clone, Copy)]
pub enum EntryRef<'a> {
    /// The body of a record of the loaded cache file (see [`encode_items`]).
    Raw(&'a [u8]),
    Owned(&'a Entry),
}

/// Bytes of a record body before its variable part: the seven `stat` fields, the code points,
/// the flags and `updatedAt`.
const FIXED: usize = 7 * 8 + 8 + 1 + 8;

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

fn le_i64(bytes: &[u8], at: usize) -> i64 {
    le_u64(bytes, at) as i64
}

impl EntryRef<'_> {
    /// The `stat` the entry was learned under.
    pub fn stat(&self) -> FileStat {
        match self {
            EntryRef::Owned(e) => e.stat,
            EntryRef::Raw(b) => stat_at(b),
        }
    }

    /// Code points of the body, when known.
    pub fn chars(&self) -> Option<u64> {
        match self {
            EntryRef::Owned(e) => e.chars,
            EntryRef::Raw(b) => Some(le_u64(b, 56)).filter(|c| *c != NO_CHARS),
        }
    }

    fn flags(b: &[u8]) -> u8 {
        b[64]
    }

    /// See [`Facts::list_crumpled`].
    pub fn list_crumpled(&self) -> bool {
        match self {
            EntryRef::Owned(e) => e.facts.list_crumpled,
            EntryRef::Raw(b) => Self::flags(b) & 1 != 0,
        }
    }

    /// See [`Facts::boot_crumpled`].
    pub fn boot_crumpled(&self) -> bool {
        match self {
            EntryRef::Owned(e) => e.facts.boot_crumpled,
            EntryRef::Raw(b) => Self::flags(b) & 2 != 0,
        }
    }

    /// See [`Facts::boot_updated_ms`].
    pub fn boot_updated_ms(&self) -> Option<i64> {
        match self {
            EntryRef::Owned(e) => e.facts.boot_updated_ms,
            EntryRef::Raw(b) => (Self::flags(b) & 4 != 0).then(|| le_i64(b, 65)),
        }
    }

    /// All the facts, decoded; `None` when the record does not decode (then the file is read,
    /// as for a missing entry).
    pub fn facts(&self) -> Option<Facts> {
        match self {
            EntryRef::Owned(e) => Some(e.facts.clone()),
            EntryRef::Raw(b) => {
                let mut c = Cursor { bytes: &b[64..] };
                let facts = get_facts(&mut c)?;
                c.bytes.is_empty().then_some(facts)
            }
        }
    }
}

/// One directory of a home as the walk classified it when it listed it: its `stat` then, its
/// subdirectories and its `.md` file names (UTF-8 names only; symlinks and other kinds are
/// never part of a listing).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Listing {
    pub stat: FileStat,
    pub dirs: Vec<String>,
    pub files: Vec<String>,
}

/// A view of one directory listing: still encoded in the loaded cache file, or learned now.
#[derive(Debug, Clone, Copy)]
pub enum ListingRef<'a> {
    /// The body of a directory record (see [`encode_items`]); checked when the file was loaded.
    Raw(&'a [u8]),
    Owned(&'a Listing),
}

impl ListingRef<'_> {
    /// Call `f(is_dir, name)` for every subdirectory, then every `.md` file, of the listing.
    pub fn for_each(&self, mut f: impl FnMut(bool, &str)) {
        match self {
            ListingRef::Owned(l) => {
                l.dirs.iter().for_each(|d| f(true, d));
                l.files.iter().for_each(|n| f(false, n));
            }
            ListingRef::Raw(b) => {
                let mut c = Cursor {
                    bytes: &b[STAT_BYTES..],
                };
                for is_dir in [true, false] {
                    let count = c.u32().unwrap_or(0);
                    for _ in 0..count {
                        match c.name() {
                            Some(name) => f(is_dir, name),
                            None => return,
                        }
                    }
                }
            }
        }
    }
}

/// What one walk of a home learned about its directories, applied with
/// [`HomeCache::dirs_walked`]: the cached listings it could trust (directory record numbers)
/// and the listings it had to read.
#[derive(Debug, Default)]
pub struct DirsSeen {
    pub trusted: Vec<u32>,
    pub learned: Vec<(String, Listing)>,
}

/// One record of the loaded cache file: where its key and body are in the bytes.
#[derive(Debug, Clone, Copy)]
struct Record {
    key: (u32, u32),
    body: (u32, u32),
}

/// The cache of one home, loaded once per command. The file's bytes are kept as read and
/// indexed by key; an entry is decoded only when used, and only the fields asked for (a boot
/// reads three fixed fields of each entry). Entries learned during the command are kept aside
/// and merged into the file when it is saved.
#[derive(Debug)]
pub struct HomeCache {
    dir: PathBuf,
    file: PathBuf,
    root: String,
    home: String,
    /// The loaded file's bytes (empty when there was no valid file).
    bytes: Vec<u8>,
    records: Vec<Record>,
    /// Record numbers by the hash of their key.
    index: hashbrown::HashTable<u32>,
    /// Records forgotten or replaced during this command (same length as `records`, or empty
    /// while none is).
    dropped: Vec<bool>,
    dropped_count: usize,
    /// Entries learned during this command (they shadow a record with the same key).
    learned: FxHashMap<String, Entry>,
    /// Directory records of the loaded file, and their numbers by the hash of their path.
    dir_records: Vec<Record>,
    dir_index: hashbrown::HashTable<u32>,
    /// The directories of the last walk ([`HomeCache::dirs_walked`]): `None` until a walk
    /// reported them (then the loaded records are kept as they are).
    dirs_now: Option<DirsSeen>,
    /// The cache file's modification time (seconds) when loaded: entries whose ctime is not
    /// older than this minus [`RACY_SECONDS`] are not trusted.
    stamp: Option<i64>,
    dirty: bool,
}

fn key_hash(key: &[u8]) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(key);
    hasher.finish()
}

impl HomeCache {
    /// Load the cache of the home at `home_dir` (under `root`) from `root_cache_dir`. A missing,
    /// unreadable, corrupt or foreign cache loads empty (and is replaced on save).
    pub fn load(root_cache_dir: &Path, root: &Path, home_dir: &Path) -> HomeCache {
        HomeCache::load_hinting(root_cache_dir, root, home_dir, &|_| {})
    }

    /// [`HomeCache::load`], calling `length` with the cache file's length before reading it (a
    /// walk starts its helper threads at once for a long one: the home is big).
    pub fn load_hinting(
        root_cache_dir: &Path,
        root: &Path,
        home_dir: &Path,
        length: &dyn Fn(u64),
    ) -> HomeCache {
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
            bytes: Vec::new(),
            records: Vec::new(),
            index: hashbrown::HashTable::new(),
            dropped: Vec::new(),
            dropped_count: 0,
            learned: FxHashMap::default(),
            dir_records: Vec::new(),
            dir_index: hashbrown::HashTable::new(),
            dirs_now: None,
            stamp: None,
            dirty: false,
        };
        if let Ok((bytes, stamp)) = cache.read(length)
            && let Some((records, dir_records)) = index_records(&bytes, &cache.root, &cache.home)
            && let Some(dir_index) = index_keys(&bytes, &dir_records)
            && let Some(index) = index_keys(&bytes, &records)
        {
            cache.bytes = bytes;
            cache.records = records;
            cache.index = index;
            cache.dir_records = dir_records;
            cache.dir_index = dir_index;
            cache.stamp = Some(stamp);
        }
        cache
    }

    fn read(&self, length: &dyn Fn(u64)) -> io::Result<(Vec<u8>, i64)> {
        let mut file = fs::File::open(&self.file)?;
        let meta = file.metadata()?;
        length(meta.len());
        let stamp = {
            use std::os::unix::fs::MetadataExt;
            meta.mtime()
        };
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0) + 1);
        // Through `Take`: `File::read_to_end` would ask for the size again.
        (&mut file).take(u64::MAX).read_to_end(&mut bytes)?;
        Ok((bytes, stamp))
    }

    fn key_of(&self, i: usize) -> &str {
        let (at, len) = self.records[i].key;
        // Keys were checked to be UTF-8 when the file was indexed.
        std::str::from_utf8(&self.bytes[at as usize..(at + len) as usize]).unwrap_or_default()
    }

    fn body_of(&self, i: usize) -> &[u8] {
        let (at, len) = self.records[i].body;
        &self.bytes[at as usize..(at + len) as usize]
    }

    fn is_dropped(&self, i: usize) -> bool {
        self.dropped.get(i).copied().unwrap_or(false)
    }

    fn drop_record(&mut self, i: usize) {
        if self.dropped.is_empty() {
            self.dropped = vec![false; self.records.len()];
        }
        if !self.dropped[i] {
            self.dropped[i] = true;
            self.dropped_count += 1;
        }
    }

    /// The live record of `vpath` in the loaded file.
    fn record(&self, vpath: &str) -> Option<usize> {
        let key = vpath.as_bytes();
        let i = *self.index.find(key_hash(key), |&j| {
            let (at, len) = self.records[j as usize].key;
            &self.bytes[at as usize..(at + len) as usize] == key
        })? as usize;
        (!self.is_dropped(i)).then_some(i)
    }

    /// The entry of `vpath` (valid or not).
    fn entry(&self, vpath: &str) -> Option<EntryRef<'_>> {
        if let Some(e) = self.learned.get(vpath) {
            return Some(EntryRef::Owned(e));
        }
        self.record(vpath).map(|i| EntryRef::Raw(self.body_of(i)))
    }

    /// Whether something whose ctime is `ctime` changed longer than [`RACY_SECONDS`] before
    /// the loaded cache file was written (the one rule for trusting entries and listings).
    fn settled(&self, ctime: i64) -> bool {
        self.stamp.is_some_and(|stamp| ctime < stamp - RACY_SECONDS)
    }

    /// The entry of `vpath` when it is valid for a file whose `stat` is `stat`.
    pub fn get(&self, vpath: &str, stat: &FileStat) -> Option<EntryRef<'_>> {
        let entry = self.entry(vpath)?;
        (entry.stat() == *stat && self.settled(stat.ctime)).then_some(entry)
    }

    /// [`HomeCache::get`], first trying the record after `next` (where the last call found
    /// one; updated): a walk hands over a directory's files in the order of its listing,
    /// which is sorted, so they are mostly in consecutive records (the file's records are
    /// sorted by path) and a hit costs no hash lookup and no jump through the loaded file.
    pub fn get_near(&self, vpath: &str, stat: &FileStat, next: &mut usize) -> Option<EntryRef<'_>> {
        if !self.learned.is_empty() {
            return self.get(vpath, stat);
        }
        let i = self.record_near(vpath, next)?;
        self.record_entry(i, stat)
    }

    /// The number of the loaded record of `vpath` (valid or not; entries learned during this
    /// command are not records), trying the record after `next` first as
    /// [`HomeCache::get_near`] does (updated when found). Record numbers run below
    /// [`HomeCache::record_count`].
    pub fn record_near(&self, vpath: &str, next: &mut usize) -> Option<usize> {
        let key = vpath.as_bytes();
        let i = *next;
        let at = match self.records.get(i) {
            Some(r)
                if &self.bytes[r.key.0 as usize..(r.key.0 + r.key.1) as usize] == key
                    && !self.is_dropped(i) =>
            {
                i
            }
            _ => self.record(vpath)?,
        };
        *next = at + 1;
        Some(at)
    }

    /// The entry of loaded record `i` (from [`HomeCache::record_near`]) when it is valid for a
    /// file whose `stat` is `stat`, by the rule of [`HomeCache::get`]. A record shadowed by an
    /// entry learned during this command is not consulted: `None`.
    pub fn record_entry(&self, i: usize, stat: &FileStat) -> Option<EntryRef<'_>> {
        if !self.learned.is_empty() || i >= self.records.len() || self.is_dropped(i) {
            return None;
        }
        let entry = EntryRef::Raw(self.body_of(i));
        (entry.stat() == *stat && self.settled(stat.ctime)).then_some(entry)
    }

    /// How many records the loaded cache file has (dropped ones included).
    pub fn record_count(&self) -> usize {
        self.records.len()
    }

    /// Forget the loaded records whose number `seen` does not mark (files the walk did not
    /// meet: deleted or moved notes), as [`HomeCache::retain_seen`] does by path. Entries learned
    /// during this command are kept.
    pub fn retain_records(&mut self, seen: &[bool]) {
        let gone: Vec<usize> = (0..self.records.len())
            .filter(|&i| !self.is_dropped(i) && !seen.get(i).copied().unwrap_or(false))
            .collect();
        if !gone.is_empty() {
            self.dirty = true;
        }
        for i in gone {
            self.drop_record(i);
        }
    }

    /// The entry of `vpath` without checking it: only for an entry [`HomeCache::get`] vouched
    /// for earlier in this command (a listing decodes it again to build a row).
    pub fn entry_of(&self, vpath: &str) -> Option<EntryRef<'_>> {
        self.entry(vpath)
    }

    /// Whether the cache has an entry for `vpath` (valid or not).
    pub fn contains(&self, vpath: &str) -> bool {
        self.learned.contains_key(vpath) || self.record(vpath).is_some()
    }

    /// The cached listing of the directory `rel` (`""`: the home itself) and its record number,
    /// when it is valid for the directory's current `stat`: the same identity, size, change
    /// and modification times, changed longer than [`RACY_SECONDS`] before the cache file was
    /// written. Adding, removing or renaming an entry changes the directory's times, so a
    /// valid listing names exactly the entries the directory has.
    pub fn listing(&self, rel: &str, stat: &FileStat) -> Option<(u32, ListingRef<'_>)> {
        let key = rel.as_bytes();
        let bytes = &self.bytes;
        let records = &self.dir_records;
        let i = *self.dir_index.find(key_hash(key), |&j| {
            let (at, len) = records[j as usize].key;
            &bytes[at as usize..(at + len) as usize] == key
        })?;
        let (at, len) = records[i as usize].body;
        let body = &bytes[at as usize..(at + len) as usize];
        (stat_at(body) == *stat && self.settled(stat.ctime)).then_some((i, ListingRef::Raw(body)))
    }

    /// Record what a walk of the whole home saw of its directories: the cache file then keeps
    /// exactly these listings (trusted ones verbatim, learned ones new).
    pub fn dirs_walked(&mut self, seen: DirsSeen) {
        if !seen.learned.is_empty() || seen.trusted.len() != self.dir_records.len() {
            self.dirty = true;
        }
        self.dirs_now = Some(seen);
    }

    /// Whether the loaded cache file holds any directory listing.
    pub fn has_listings(&self) -> bool {
        !self.dir_records.is_empty()
    }

    /// How many entries the cache has.
    pub fn len(&self) -> usize {
        self.records.len() - self.dropped_count + self.learned.len()
    }

    /// Whether the cache has no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Remember what was read from a file (replacing any entry).
    /// Always marks the cache for saving, also for an unchanged racy entry: a cache file written
    /// later than its tick can trust it.
    pub fn insert(&mut self, vpath: String, entry: Entry) {
        self.dirty = true;
        if let Some(i) = self.record(&vpath) {
            self.drop_record(i);
        }
        self.learned.insert(vpath, entry);
    }

    /// Make room for `additional` entries about to be learned (one growth of the table instead
    /// of one per doubling, each moving every entry learned so far).
    pub fn reserve(&mut self, additional: usize) {
        self.learned.reserve(additional);
    }

    /// Forget the entries of files the walk did not see (deleted or moved notes).
    pub fn retain_seen(&mut self, seen: &FxHashSet<&str>) {
        let before = self.len();
        let gone: Vec<usize> = (0..self.records.len())
            .filter(|&i| !self.is_dropped(i) && !seen.contains(self.key_of(i)))
            .collect();
        for i in gone {
            self.drop_record(i);
        }
        self.learned.retain(|k, _| seen.contains(k.as_str()));
        if self.len() != before {
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
        // A loaded record that was racy under the loaded file's time was never trusted; copied
        // verbatim into a file written later, it would be (its ctime would then be old
        // enough), although nobody checked that it still matches its file. So it is left out
        // and the file is read again next time.
        let settled = |body: &[u8]| self.settled(stat_at(body).ctime);
        let mut items: Vec<(&str, Item<'_>)> = Vec::with_capacity(self.len());
        for i in 0..self.records.len() {
            if !self.is_dropped(i) && settled(self.body_of(i)) {
                items.push((self.key_of(i), Item::Raw(self.body_of(i))));
            }
        }
        for (k, e) in &self.learned {
            items.push((k.as_str(), Item::Owned(e)));
        }
        let dir_key = |r: &Record| {
            std::str::from_utf8(&self.bytes[r.key.0 as usize..(r.key.0 + r.key.1) as usize])
                .unwrap_or_default()
        };
        let dir_body = |r: &Record| &self.bytes[r.body.0 as usize..(r.body.0 + r.body.1) as usize];
        let dirs: Vec<(&str, ListingRef<'_>)> = match &self.dirs_now {
            None => self
                .dir_records
                .iter()
                .filter(|r| settled(dir_body(r)))
                .map(|r| (dir_key(r), ListingRef::Raw(dir_body(r))))
                .collect(),
            Some(seen) => seen
                .trusted
                .iter()
                .filter_map(|&i| self.dir_records.get(i as usize))
                .map(|r| (dir_key(r), ListingRef::Raw(dir_body(r))))
                .chain(
                    seen.learned
                        .iter()
                        .map(|(k, l)| (k.as_str(), ListingRef::Owned(l))),
                )
                .collect(),
        };
        let bytes = encode_items(items, dirs, &self.root, &self.home);
        let mut tmp = tempfile::Builder::new()
            .prefix(".homes.")
            .suffix(".tmp")
            .tempfile_in(dir)?;
        tmp.write_all(&bytes)?;
        tmp.persist(&self.file).map_err(|e| e.error)?;
        Ok(())
    }
}

/// One entry to encode: a record body kept verbatim from the loaded file, or a learned entry.
enum Item<'a> {
    Raw(&'a [u8]),
    Owned(&'a Entry),
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(bytes);
    hasher.write_usize(bytes.len());
    hasher.finish()
}

/// The file: magic, version, root, home, entry count, then one record per entry sorted by key
/// (`u32` key length, key, `u32` body length, body). A body is
/// the fixed part ([`FIXED`] bytes: `stat`, code points, flags, `updatedAt` in ms) and the
/// variable part (the listing's metadata, or the frontmatter block when it cannot round-trip);
/// then the directory count and one record per directory sorted by path (`u32` path length,
/// path, `u32` body length, body: its `stat`, then its subdirectory names and its file names,
/// each list a `u32` count of `u32`-length-prefixed names). Last, the checksum of all of it.
fn encode_items(
    mut items: Vec<(&str, Item<'_>)>,
    mut dirs: Vec<(&str, ListingRef<'_>)>,
    root: &str,
    home: &str,
) -> Vec<u8> {
    items.sort_unstable_by(|a, b| a.0.cmp(b.0));
    dirs.sort_unstable_by(|a, b| a.0.cmp(b.0));
    dirs.dedup_by(|a, b| a.0 == b.0);
    let size: usize = items
        .iter()
        .map(|(k, item)| {
            k.len()
                + 8
                + match item {
                    Item::Raw(b) => b.len(),
                    Item::Owned(e) => e.facts.block.len() + 160,
                }
        })
        .sum();
    let mut out = Vec::with_capacity(size + 64 + root.len() + home.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    put_bytes(&mut out, root.as_bytes());
    put_bytes(&mut out, home.as_bytes());
    out.extend_from_slice(&(items.len() as u64).to_le_bytes());
    for (key, item) in items {
        out.extend_from_slice(&(key.len() as u32).to_le_bytes());
        out.extend_from_slice(key.as_bytes());
        let len_at = out.len();
        out.extend_from_slice(&0u32.to_le_bytes());
        match item {
            Item::Raw(body) => out.extend_from_slice(body),
            Item::Owned(e) => {
                put_stat(&mut out, &e.stat);
                out.extend_from_slice(&e.chars.unwrap_or(NO_CHARS).to_le_bytes());
                put_facts(&mut out, &e.facts);
            }
        }
        let body_len = (out.len() - len_at - 4) as u32;
        out[len_at..len_at + 4].copy_from_slice(&body_len.to_le_bytes());
    }
    out.extend_from_slice(&(dirs.len() as u64).to_le_bytes());
    for (key, listing) in dirs {
        out.extend_from_slice(&(key.len() as u32).to_le_bytes());
        out.extend_from_slice(key.as_bytes());
        match listing {
            ListingRef::Raw(body) => {
                out.extend_from_slice(&(body.len() as u32).to_le_bytes());
                out.extend_from_slice(body);
            }
            ListingRef::Owned(l) => {
                let len_at = out.len();
                out.extend_from_slice(&0u32.to_le_bytes());
                put_stat(&mut out, &l.stat);
                for names in [&l.dirs, &l.files] {
                    out.extend_from_slice(&(names.len() as u32).to_le_bytes());
                    for name in names {
                        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
                        out.extend_from_slice(name.as_bytes());
                    }
                }
                let body_len = (out.len() - len_at - 4) as u32;
                out[len_at..len_at + 4].copy_from_slice(&body_len.to_le_bytes());
            }
        }
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Bytes of an encoded `stat`.
const STAT_BYTES: usize = 7 * 8;

fn put_stat(out: &mut Vec<u8>, s: &FileStat) {
    for v in [s.dev, s.ino, s.size] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [s.mtime, s.mtime_nsec, s.ctime, s.ctime_nsec] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// The `stat` at the start of a record body.
fn stat_at(b: &[u8]) -> FileStat {
    FileStat {
        dev: le_u64(b, 0),
        ino: le_u64(b, 8),
        size: le_u64(b, 16),
        mtime: le_i64(b, 24),
        mtime_nsec: le_i64(b, 32),
        ctime: le_i64(b, 40),
        ctime_nsec: le_i64(b, 48),
    }
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
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    /// A `u32`-length-prefixed UTF-8 name.
    fn name(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }
}

/// Check a cache file (checksum, magic, version, root and home) and find its note records and
/// directory records; `None` when it is not a valid cache of this home.
fn index_records(bytes: &[u8], root: &str, home: &str) -> Option<(Vec<Record>, Vec<Record>)> {
    let body_len = bytes.len().checked_sub(8)?;
    let (body, sum) = bytes.split_at(body_len);
    if checksum(body) != u64::from_le_bytes(sum.try_into().ok()?) || body.len() > u32::MAX as usize
    {
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
    let mut records = Vec::with_capacity(count.min(body.len() / (FIXED + 8) + 1));
    let at = |rest: &[u8]| (body.len() - rest.len()) as u32;
    for _ in 0..count {
        let key_len = u32::from_le_bytes(c.take(4)?.try_into().ok()?);
        let key_at = at(c.bytes);
        std::str::from_utf8(c.take(key_len as usize)?).ok()?;
        let body_len = u32::from_le_bytes(c.take(4)?.try_into().ok()?);
        let body_at = at(c.bytes);
        if (body_len as usize) < FIXED {
            return None;
        }
        c.take(body_len as usize)?;
        records.push(Record {
            key: (key_at, key_len),
            body: (body_at, body_len),
        });
    }
    let count = usize::try_from(c.u64()?).ok()?;
    let mut dirs = Vec::with_capacity(count.min(c.bytes.len() / (STAT_BYTES + 16) + 1));
    for _ in 0..count {
        let key_len = c.u32()?;
        let key_at = at(c.bytes);
        std::str::from_utf8(c.take(key_len as usize)?).ok()?;
        let body_len = c.u32()?;
        let body_at = at(c.bytes);
        let mut listing = Cursor {
            bytes: c.take(body_len as usize)?,
        };
        listing.take(STAT_BYTES)?;
        for _ in 0..2 {
            for _ in 0..listing.u32()? {
                listing.name()?;
            }
        }
        if !listing.bytes.is_empty() {
            return None;
        }
        dirs.push(Record {
            key: (key_at, key_len),
            body: (body_at, body_len),
        });
    }
    if !c.bytes.is_empty() {
        return None;
    }
    Some((records, dirs))
}

/// Record numbers of `records` by the hash of their key; `None` when a key repeats (never
/// written so: not our file).
fn index_keys(bytes: &[u8], records: &[Record]) -> Option<hashbrown::HashTable<u32>> {
    let key = |j: u32| {
        let o = records[j as usize].key;
        &bytes[o.0 as usize..(o.0 + o.1) as usize]
    };
    let mut index = hashbrown::HashTable::with_capacity(records.len());
    for i in 0..records.len() as u32 {
        let hash = key_hash(key(i));
        if index.find(hash, |&j| key(j) == key(i)).is_some() {
            return None;
        }
        index.insert_unique(hash, i, |&j| key_hash(key(j)));
    }
    Some(index)
}

/// Every entry of a cache file, decoded (tests).
#[cfg(test)]
fn decode(bytes: &[u8], root: &str, home: &str) -> Option<FxHashMap<String, Entry>> {
    let (records, _) = index_records(bytes, root, home)?;
    let mut entries = FxHashMap::default();
    for r in records {
        let key = std::str::from_utf8(&bytes[r.key.0 as usize..(r.key.0 + r.key.1) as usize])
            .ok()?
            .to_owned();
        let raw = EntryRef::Raw(&bytes[r.body.0 as usize..(r.body.0 + r.body.1) as usize]);
        let entry = Entry {
            stat: raw.stat(),
            facts: raw.facts()?,
            chars: raw.chars(),
        };
        entries.insert(key, entry);
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
        let listing = |n: u64| Listing {
            stat: entry(n).stat,
            dirs: vec![format!("d{n}"), "é".into()],
            files: vec!["a.md".into(), format!("n{n}.md")],
        };
        let (one, two) = (listing(1), listing(2));
        let bytes = encode_items(
            entries
                .iter()
                .map(|(k, e)| (k.as_str(), Item::Owned(e)))
                .collect(),
            vec![
                ("", ListingRef::Owned(&one)),
                ("d", ListingRef::Owned(&two)),
            ],
            "/root",
            "human",
        );
        assert_eq!(decode(&bytes, "/root", "human"), Some(entries.clone()));
        let (_, dirs) = index_records(&bytes, "/root", "human").unwrap();
        let names = |r: &Record| {
            let mut out = Vec::new();
            ListingRef::Raw(&bytes[r.body.0 as usize..(r.body.0 + r.body.1) as usize])
                .for_each(|is_dir, name| out.push((is_dir, name.to_owned())));
            out
        };
        assert_eq!(
            names(&dirs[1]),
            [
                (true, "d2".to_owned()),
                (true, "é".to_owned()),
                (false, "a.md".to_owned()),
                (false, "n2.md".to_owned())
            ]
        );
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
    fn listings_are_trusted_only_for_the_same_stat_and_not_racy() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        let home = root.join("human");
        let mut cache = HomeCache::load(dir.path(), &root, &home);
        let old = entry(1).stat;
        let mut fresh = old;
        fresh.ctime = i64::MAX / 2;
        cache.dirs_walked(DirsSeen {
            trusted: Vec::new(),
            learned: vec![
                (
                    String::new(),
                    Listing {
                        stat: old,
                        dirs: vec!["sub".into()],
                        files: vec!["a.md".into()],
                    },
                ),
                (
                    "sub".into(),
                    Listing {
                        stat: fresh,
                        ..Listing::default()
                    },
                ),
            ],
        });
        cache.save();
        let loaded = HomeCache::load(dir.path(), &root, &home);
        let (record, listing) = loaded.listing("", &old).expect("same stat, old ctime");
        let mut seen = Vec::new();
        listing.for_each(|is_dir, name| seen.push((is_dir, name.to_owned())));
        assert_eq!(seen, [(true, "sub".into()), (false, "a.md".into())]);
        let mut other = old;
        other.mtime_nsec += 1;
        assert!(loaded.listing("", &other).is_none(), "changed directory");
        assert!(
            loaded.listing("sub", &fresh).is_none(),
            "changed in the cache's tick"
        );
        assert!(loaded.listing("gone", &old).is_none());
        // A walk that trusts only the home's listing drops the other one when saved.
        let mut cache = loaded;
        cache.dirs_walked(DirsSeen {
            trusted: vec![record],
            learned: Vec::new(),
        });
        assert!(cache.dirty, "a directory is gone");
        cache.save();
        let loaded = HomeCache::load(dir.path(), &root, &home);
        assert!(loaded.listing("", &old).is_some());
        assert_eq!(loaded.dir_records.len(), 1);
    }

    #[test]
    fn a_racy_entry_is_not_carried_into_a_later_cache_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        let home = root.join("human");
        let file_of = |cache: &HomeCache| cache.file.clone();
        let age = |file: &Path, mtime: i64| {
            let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(mtime as u64);
            fs::File::options()
                .write(true)
                .open(file)
                .unwrap()
                .set_modified(when)
                .unwrap();
        };
        // b.md changed one second before its cache file was written: racy, not trusted.
        let mut racy = entry(1).stat;
        racy.ctime = 1_000_000;
        let mut cache = HomeCache::load(dir.path(), &root, &home);
        cache.insert(
            "b.md".into(),
            Entry {
                stat: racy,
                ..entry(1)
            },
        );
        cache.save();
        age(&file_of(&cache), 1_000_001);
        let mut loaded = HomeCache::load(dir.path(), &root, &home);
        assert!(
            loaded.get("b.md", &racy).is_none(),
            "racy under its own file"
        );
        // A later command learns something else and saves, long after: b.md was not checked,
        // so the new file must not vouch for it.
        loaded.insert("c.md".into(), entry(3));
        loaded.save();
        age(&file_of(&loaded), 1_000_100);
        let later = HomeCache::load(dir.path(), &root, &home);
        assert!(later.get("c.md", &entry(3).stat).is_some());
        assert!(
            later.get("b.md", &racy).is_none(),
            "an unchecked racy entry became trusted"
        );
    }

    #[test]
    fn get_near_answers_as_get_whatever_the_hint() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        let mut cache = HomeCache::load(dir.path(), &root, &root.join("human"));
        let keys: Vec<String> = (0..12u64)
            .map(|n| format!("d{}/n{}.md", n % 3, n))
            .collect();
        for (n, key) in keys.iter().enumerate() {
            cache.insert(key.clone(), entry(n as u64));
        }
        cache.save();
        let mut cache = HomeCache::load(dir.path(), &root, &root.join("human"));
        let mut probes: Vec<(String, FileStat)> = keys
            .iter()
            .enumerate()
            .flat_map(|(n, k)| {
                [
                    (k.clone(), entry(n as u64).stat),
                    (k.clone(), entry(99).stat),
                ]
            })
            .collect();
        probes.push(("missing.md".into(), entry(1).stat));
        let check = |cache: &HomeCache, probes: &[(String, FileStat)], label: &str| {
            for (key, stat) in probes {
                for hint in 0..cache.records.len() + 2 {
                    let mut next = hint;
                    let near = cache.get_near(key, stat, &mut next).map(|e| e.stat());
                    assert_eq!(
                        near,
                        cache.get(key, stat).map(|e| e.stat()),
                        "{label} {key} {hint}"
                    );
                    if near.is_some() && cache.learned.is_empty() {
                        assert_eq!(
                            cache.key_of(next - 1),
                            key,
                            "{label}: the hint follows the hit"
                        );
                    }
                }
            }
        };
        check(&cache, &probes, "loaded");
        // A forgotten record, then a learned entry that shadows another.
        let keep: FxHashSet<&str> = keys[1..].iter().map(String::as_str).collect();
        cache.retain_seen(&keep);
        check(&cache, &probes, "dropped");
        cache.insert(keys[5].clone(), entry(77));
        probes.push((keys[5].clone(), entry(77).stat));
        check(&cache, &probes, "learned");
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
