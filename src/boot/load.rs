//! Loading the five-home snapshot a boot is rendered from: each home read once, in the order
//! session, project, human, agent, model; only live notes; newest first.
//!
//! Read-only: it never writes, never bumps access metadata, never creates a directory. A home
//! directory that does not exist is empty; any other I/O failure while reading a home marks
//! that home unavailable (its rows dropped, the error kept for `data`) and the other homes
//! still load. Cost: one directory walk with one `stat` per note file, then reads in order of
//! file time until the newest `cap` rows are certain (see [`load_home`]).

use std::cmp::Ordering;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use super::render::{HomeKind, HomeSnapshot, MapNote, NoteRow, Snapshot};
use crate::confine::Dir;
use crate::notes::cache::{
    DirsSeen, Entry as CacheEntry, Facts, FileStat, HomeCache, root_cache_dir,
};
use crate::notes::note::NoteMeta;
use crate::notes::query::address_order;
use crate::notes::store::NoteFile;
use crate::notes::{frontmatter, store};

/// The stable code that starts the `unavailable` text of a home whose directory (or one
/// between it and the notes root) is a symlink: it is never read through.
pub const HOME_IS_SYMLINK: &str = "home_is_symlink";

/// Where the five homes are and how their addresses are displayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The notes root (absolute).
    pub root: PathBuf,
    pub session_id: String,
    pub project_key: String,
    /// Agent slug.
    pub agent: String,
    /// Model slug.
    pub model: String,
}

/// The order homes are loaded in (each exactly once).
pub const LOAD_ORDER: [HomeKind; 5] = [
    HomeKind::Session,
    HomeKind::Project,
    HomeKind::Human,
    HomeKind::Agent,
    HomeKind::Model,
];

impl Layout {
    /// The home's directory on disk.
    pub fn home_dir(&self, kind: HomeKind) -> PathBuf {
        let root = &self.root;
        match kind {
            HomeKind::Session => root.join("pi").join("session").join(&self.session_id),
            HomeKind::Project => root.join("project").join(&self.project_key),
            HomeKind::Human => root.join("human"),
            HomeKind::Agent => root.join("agents").join(&self.agent),
            HomeKind::Model => root.join("models").join(&self.model),
        }
    }

    /// The home's directory as components under the root (opened without following symlinks).
    pub fn home_components(&self, kind: HomeKind) -> Vec<&str> {
        match kind {
            HomeKind::Session => vec!["pi", "session", &self.session_id],
            HomeKind::Project => vec!["project", &self.project_key],
            HomeKind::Human => vec!["human"],
            HomeKind::Agent => vec!["agents", &self.agent],
            HomeKind::Model => vec!["models", &self.model],
        }
    }

    /// The displayed address prefix (concrete homes: `@agents/<slug>/`, `@models/<slug>/`).
    pub fn prefix(&self, kind: HomeKind) -> String {
        match kind {
            HomeKind::Session => String::new(),
            HomeKind::Project => "@project/".to_string(),
            HomeKind::Human => "@human/".to_string(),
            HomeKind::Agent => format!("@agents/{}/", self.agent),
            HomeKind::Model => format!("@models/{}/", self.model),
        }
    }
}

/// Load all five homes. `opened_at_ms` also stands in for a note's missing or unreadable
/// `updatedAt`; the ranking key `min(updatedAt, mtime)` then is the file time, as the store
/// dates such a note.
pub fn load_snapshot(layout: &Layout, opened_at_ms: i64) -> Snapshot {
    load_snapshot_cached(layout, opened_at_ms, None)
}

/// [`load_snapshot`] with the notes metadata cache of the shared cache directory `cache_dir`
/// (see `notes::cache`): unchanged note files are not opened. Same snapshot with or without it.
pub fn load_snapshot_cached(
    layout: &Layout,
    opened_at_ms: i64,
    cache_dir: Option<&Path>,
) -> Snapshot {
    let root_cache = cache_dir.map(|dir| root_cache_dir(dir, &layout.root));
    let root_cache = root_cache.as_deref();
    let root = &layout.root;
    let prefixes: Vec<String> = LOAD_ORDER.iter().map(|&k| layout.prefix(k)).collect();
    // One walk of all five homes (shared by a few threads, balanced by directory, so a home
    // holding most notes does not leave a core idle); each home's cache is loaded, and its
    // directory opened, by the worker that reaches it first while the others walk; each note
    // is looked at as it comes.
    let cells: Vec<OnceLock<Option<HomeCache>>> =
        LOAD_ORDER.iter().map(|_| OnceLock::new()).collect();
    let mut walked: Vec<Walked> = LOAD_ORDER.iter().map(|k| Walked::new(k.cap())).collect();
    let results = {
        let mut sinks: Vec<_> = walked
            .iter_mut()
            .zip(&cells)
            .zip(&prefixes)
            .zip(LOAD_ORDER)
            .map(|(((walked, cell), prefix), kind)| {
                let cap = kind.cap();
                move |dir: &Arc<Dir>, rel: &str, name_at: usize, stat: Option<FileStat>| {
                    let cached = cell.get().and_then(Option::as_ref);
                    walked.found(cached, prefix, cap, opened_at_ms, dir, rel, name_at, stat);
                }
            })
            .collect();
        let jobs = sinks
            .iter_mut()
            .zip(&cells)
            .zip(LOAD_ORDER)
            .map(|((sink, cell), kind)| {
                let prepare: store::walk::Prepare<'_> = Box::new(move || {
                    let _ = cell
                        .set(root_cache.map(|c| HomeCache::load(c, root, &layout.home_dir(kind))));
                    store::open_home(root, &layout.home_components(kind)).map(|d| d.map(Arc::new))
                });
                store::HomeWalk {
                    start: store::walk::Start::Prepare(prepare),
                    rel: String::new(),
                    with_stat: store::WithStat::All,
                    cache: store::CacheRef::Lazy(cell),
                    sink,
                }
            })
            .collect();
        store::walk_homes(jobs)
    };
    // Then each home reads what the cache could not vouch for (a few homes at once).
    let homes: Vec<_> = LOAD_ORDER
        .into_iter()
        .zip(cells)
        .zip(walked)
        .zip(results)
        .zip(prefixes)
        .collect();
    let loaded = store::for_each_parallel(homes, |((((kind, cell), walked), result), prefix)| {
        let mut cache = cell.into_inner().flatten();
        let home = match result {
            Ok(None) => Ok(HomeSnapshot::default()),
            Err(e) => Err(home_error(e)),
            Ok(Some((dir, seen))) => walked.finish(
                &dir,
                seen,
                &prefix,
                kind.cap(),
                opened_at_ms,
                cache.as_mut(),
            ),
        };
        if let (Some(cache), Ok(_)) = (&cache, &home) {
            cache.save();
        }
        (kind, home)
    });
    let mut snapshot = Snapshot::empty(opened_at_ms);
    for (kind, result) in loaded {
        *snapshot.home_mut(kind) = match result {
            Ok(home) => home,
            Err(e) => HomeSnapshot {
                unavailable: Some(e.to_string()),
                ..HomeSnapshot::default()
            },
        };
    }
    snapshot
}

/// A home's failure as reported: a symlink on the way to the home (the only symlink error a
/// walk returns; symlinks below it are skipped) carries the stable code `home_is_symlink`.
fn home_error(e: crate::confine::Error) -> io::Error {
    if e.kind == crate::confine::Kind::Symlink {
        io::Error::other(format!("{HOME_IS_SYMLINK}: {e}"))
    } else {
        e.into()
    }
}

/// One live note found while walking.
struct Found {
    updated_at_ms: i64,
    address: String,
    file: NoteFile,
    vpath: String,
    stat: FileStat,
}

/// Keep only the newest `cap`: a sorted insert into a tiny vector.
fn keep(kept: &mut Vec<Found>, cap: usize, found: Found) {
    let at = kept
        .binary_search_by(|probe| recency(probe, &found))
        .unwrap_or_else(|i| i);
    if at < cap {
        kept.insert(at, found);
        kept.truncate(cap);
    }
}

/// Recency order: newest first; ties by address compared case-insensitively, then bytewise.
fn recency(a: &Found, b: &Found) -> Ordering {
    b.updated_at_ms
        .cmp(&a.updated_at_ms)
        .then_with(|| address_order(&a.address, &b.address))
}

/// One `.md` file found by the walk that the cache cannot vouch for, before it is read: kept
/// small (no allocation of its own, no directory handle held open), its path in the walk's
/// shared text.
struct Candidate {
    /// File modification time, in epoch milliseconds (floored).
    mtime_ms: i64,
    stat: FileStat,
    /// Its path: `paths[rel.0..rel.1]`.
    rel: (u32, u32),
}

/// Load one home directory. `Ok(empty)` when it does not exist.
///
/// The recent rows are ranked by `min(updatedAt, file mtime)`. pi-context takes a note's
/// `updatedAt` before writing the file, so for every note it wrote the key is `updatedAt` and the
/// order is the order of `notes-list`; the cap only matters for notes that break that rule (a
/// hand-written file without `updatedAt`, which the store dates by its file time, or one dated in the
/// future), which rank by their file time instead. Because the key never exceeds the mtime, the
/// files are read newest mtime first and the walk stops as soon as no unread file can enter
/// the newest `cap`: a boot reads a few dozen notes instead of the whole home.
pub fn load_home(dir: &Path, prefix: &str, cap: usize, now_ms: i64) -> io::Result<HomeSnapshot> {
    load_home_cached(dir, prefix, cap, now_ms, None)
}

/// [`load_home`] with a home's metadata cache: a note whose `stat` matches its entry is ranked
/// from the cached frontmatter (no open), and its body's code points come from the entry when
/// known; what is read is added to the cache.
pub fn load_home_cached(
    dir: &Path,
    prefix: &str,
    cap: usize,
    now_ms: i64,
    cache: Option<&mut HomeCache>,
) -> io::Result<HomeSnapshot> {
    load_home_in(dir, &[] as &[&str], prefix, cap, now_ms, cache)
}

/// [`load_home_cached`] for the home `components` under the notes `root`, reached without
/// following a symlink: a symlinked home (or directory between it and the root) is an error
/// whose text starts with the stable code `home_is_symlink`, and is never read through.
pub fn load_home_in<S: AsRef<std::ffi::OsStr>>(
    root: &Path,
    components: &[S],
    prefix: &str,
    cap: usize,
    now_ms: i64,
    cache: Option<&mut HomeCache>,
) -> io::Result<HomeSnapshot> {
    let Some(dir) = store::open_home(root, components).map_err(home_error)? else {
        return Ok(HomeSnapshot::default());
    };
    let home_dir = Arc::new(dir);
    let mut walked = Walked::new(cap);
    let cached = cache.as_deref();
    let seen = store::walk_each(
        Arc::clone(&home_dir),
        "",
        true,
        cached,
        &mut |dir, rel, name_at, stat| {
            walked.found(cached, prefix, cap, now_ms, dir, rel, name_at, stat);
        },
    )?;
    walked.finish(&home_dir, seen, prefix, cap, now_ms, cache)
}

/// What the walk of one home found, as it came: a note the cache vouches for is ranked at
/// once (and allocates only when it enters the newest `cap`), the others become small
/// candidates — unless they can no longer enter the newest `cap` (then they are only
/// counted). Paths of candidates are kept in one text; which cache records the walk met is
/// kept as one flag per record (no path is kept for that). Candidates hold no directory handle: keeping every
/// directory open grows the process's descriptor table while other threads run, and each
/// growth then waits for an RCU grace period (milliseconds of wall time, no CPU). The few
/// read are reached again from the home. Nothing here depends on the order the files come in
/// (the walk's threads decide it): rows are kept by a total order, candidates sorted by one.
struct Walked {
    paths: String,
    candidates: Vec<Candidate>,
    /// Files found that the cache could not vouch for and that could not enter the newest
    /// `cap` when found: never read (see [`Walked::found`]), only counted.
    passed_over: usize,
    kept: Vec<Found>,
    map: Option<NoteFile>,
    conflicts: Vec<NoteFile>,
    /// Per loaded cache record: whether the walk met its file (sized on first use).
    met: Vec<bool>,
    /// Files the cache has a record for (valid or not).
    present: usize,
    /// Files ranked from the cache.
    note_files: usize,
    /// Where to look first in the cache for the next file (`HomeCache::get_near`).
    near: usize,
}

impl Walked {
    fn new(cap: usize) -> Walked {
        Walked {
            paths: String::new(),
            candidates: Vec::new(),
            passed_over: 0,
            kept: Vec::with_capacity(cap + 1),
            map: None,
            conflicts: Vec::new(),
            met: Vec::new(),
            present: 0,
            note_files: 0,
            near: 0,
        }
    }

    /// One note file handed over by the walk.
    #[allow(clippy::too_many_arguments)]
    fn found(
        &mut self,
        cached: Option<&HomeCache>,
        prefix: &str,
        cap: usize,
        now_ms: i64,
        dir: &Arc<Dir>,
        rel: &str,
        name_at: usize,
        stat: Option<FileStat>,
    ) {
        // The file's cache record, valid or not: met, so it is kept when the cache is saved.
        let record = cached.and_then(|cache| {
            let i = cache.record_near(rel, &mut self.near)?;
            if self.met.is_empty() {
                self.met = vec![false; cache.record_count()];
            }
            if !std::mem::replace(&mut self.met[i], true) {
                self.present += 1;
            }
            Some((cache, i))
        });
        if rel == "MAP.md" {
            self.map = Some(NoteFile::new(dir, rel, name_at, stat));
            return;
        }
        let Some(stat) = stat else {
            return; // vanished since the directory was read
        };
        if crate::sync::tree::is_conflict_name(&rel[name_at..]) {
            self.conflicts
                .push(NoteFile::new(dir, rel, name_at, Some(stat)));
        }
        let mtime_ms = stat
            .mtime
            .saturating_mul(1000)
            .saturating_add(stat.mtime_nsec / 1_000_000);
        if let Some(entry) = record.and_then(|(cache, i)| cache.record_entry(i, &stat)) {
            // Ranked from the cached block: exactly what reading its head would give.
            self.note_files += 1;
            if entry.boot_crumpled() {
                return;
            }
            let key = entry.boot_updated_ms().unwrap_or(now_ms).min(mtime_ms);
            let kept = &mut self.kept;
            if kept.len() >= cap && kept.last().is_some_and(|k| key < k.updated_at_ms) {
                return; // older than the newest `cap`: no row
            }
            keep(
                kept,
                cap,
                Found {
                    updated_at_ms: key,
                    address: format!("{prefix}{rel}"),
                    file: NoteFile::new(dir, rel, name_at, Some(stat)),
                    vpath: rel.to_owned(),
                    stat,
                },
            );
            return;
        }
        // Its key will be at most its mtime: once that is older than the oldest of a full
        // newest `cap`, it can never be read (the oldest kept key only grows, and `finish`
        // reads newest mtime first and stops at the first such file).
        if self.kept.len() >= cap && self.kept.last().is_some_and(|k| mtime_ms < k.updated_at_ms) {
            self.passed_over += 1;
            return;
        }
        let at = self.paths.len() as u32;
        self.paths.push_str(rel);
        self.candidates.push(Candidate {
            mtime_ms,
            stat,
            rel: (at, self.paths.len() as u32),
        });
    }

    /// After the walk of the home at `home_dir`: update the cache, read the MAP, the conflict
    /// notes and the candidates that may enter the newest `cap`, and the bodies of the rows.
    fn finish(
        self,
        home_dir: &Arc<Dir>,
        seen: DirsSeen,
        prefix: &str,
        cap: usize,
        now_ms: i64,
        mut cache: Option<&mut HomeCache>,
    ) -> io::Result<HomeSnapshot> {
        let Walked {
            paths,
            mut candidates,
            passed_over,
            mut kept,
            map,
            conflicts,
            met,
            present,
            note_files,
            ..
        } = self;
        let mut home = HomeSnapshot {
            note_files,
            ..HomeSnapshot::default()
        };
        if let Some(cache) = cache.as_deref_mut() {
            cache.dirs_walked(seen);
            // Nothing is learned before this point, so every entry is a loaded record.
            if present < cache.len() {
                cache.retain_records(&met);
            }
        }
        if let Some(file) = map {
            home.map = read_map(&file, prefix)?;
        }
        for file in &conflicts {
            if live_conflict_note(file)? {
                home.sync_conflicts.push(format!("{prefix}{}", file.rel));
            }
        }
        home.note_files += candidates.len() + passed_over;
        home.sync_conflicts.sort();
        let text = |r: (u32, u32)| &paths[r.0 as usize..r.1 as usize];
        // The candidates that can still enter the newest `cap` (the walk found some before
        // it was full), newest file first; the vpath makes the reading order (not the
        // result) deterministic.
        if kept.len() >= cap
            && let Some(oldest) = kept.last().map(|k| k.updated_at_ms)
        {
            candidates.retain(|c| c.mtime_ms >= oldest);
        }
        candidates.sort_unstable_by(|a, b| {
            b.mtime_ms
                .cmp(&a.mtime_ms)
                .then_with(|| text(a.rel).cmp(text(b.rel)))
        });
        let mut head = Vec::new();
        let mut last_dir: Option<(&str, Arc<Dir>)> = None;
        for candidate in candidates {
            let full = kept.len() >= cap;
            if full
                && kept
                    .last()
                    .is_none_or(|k| candidate.mtime_ms < k.updated_at_ms)
            {
                break; // every unread key is ≤ its mtime < the newest `cap`'s oldest key
            }
            let vpath = text(candidate.rel);
            let (parent, name_at) = match vpath.rfind('/') {
                Some(slash) => (&vpath[..slash], slash + 1),
                None => ("", 0),
            };
            let dir = match &last_dir {
                Some((p, d)) if *p == parent => Arc::clone(d),
                _ if parent.is_empty() => Arc::clone(home_dir),
                _ => {
                    let names: Vec<&str> = parent.split('/').collect();
                    match home_dir.walk(&names) {
                        Ok(Some(d)) => Arc::new(d),
                        Ok(None) => continue, // gone since the walk
                        Err(e) if e.kind == crate::confine::Kind::Symlink => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
            };
            last_dir = Some((parent, Arc::clone(&dir)));
            let file = NoteFile::new(&dir, vpath, name_at, Some(candidate.stat));
            let opened = match store::read_head_stat(&file, &mut head) {
                Ok(opened) => opened,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            // As the store's listing decides it: the fields of the block, from the head alone.
            // With the cache, decoded once: the facts learned answer exactly as a later warm
            // boot does.
            let (crumpled, updated) = match (cache.as_deref_mut(), frontmatter::block_prefix(&head))
            {
                (Some(cache), Some(block)) => {
                    let facts = Facts::of_block(block, &file.dir, file.name());
                    let decided = (facts.boot_crumpled, facts.boot_updated_ms.unwrap_or(now_ms));
                    // Learned only under the rule listings use: a file changed or replaced
                    // since the walk's `lstat` is answered from what was read but not cached.
                    if let Some(stat) = store::stat_to_learn(Some(candidate.stat), opened) {
                        let entry = CacheEntry {
                            stat,
                            facts,
                            chars: None,
                        };
                        cache.insert(vpath.to_owned(), entry);
                    }
                    decided
                }
                _ => {
                    let fields = frontmatter::fields_of_bytes(&head);
                    (
                        fields.contains_key("crumpledAt"),
                        updated_at_ms(&fields, now_ms),
                    )
                }
            };
            if crumpled {
                continue;
            }
            keep(
                &mut kept,
                cap,
                Found {
                    updated_at_ms: updated.min(candidate.mtime_ms),
                    address: format!("{prefix}{vpath}"),
                    vpath: vpath.to_owned(),
                    file,
                    stat: candidate.stat,
                },
            );
        }
        // Bodies are read whole only for the rows shown (their code points are displayed),
        // unless the cache knows their count.
        let mut recent = Vec::with_capacity(kept.len());
        for f in kept {
            let known = cache
                .as_deref()
                .and_then(|c| c.get(&f.vpath, &f.stat))
                .and_then(|e| e.chars());
            let chars = match known {
                Some(chars) => chars as usize,
                None => match read_text(&f.file)? {
                    Some(raw) => {
                        let chars = split_note(&raw).1.chars().count();
                        if let Some(cache) = cache.as_deref_mut()
                            && let Some(block) = frontmatter::block_prefix(raw.as_bytes())
                        {
                            cache.insert(
                                f.vpath.clone(),
                                CacheEntry {
                                    stat: f.stat,
                                    facts: Facts::of_block(block, &f.file.dir, f.file.name()),
                                    chars: Some(chars as u64),
                                },
                            );
                        }
                        chars
                    }
                    None => continue,
                },
            };
            recent.push(NoteRow {
                address: f.address,
                chars,
                updated_at_ms: f.updated_at_ms,
            });
        }
        home.recent = recent;
        Ok(home)
    }
}

/// Whether a conflict-named file is a live conflict note left by `sync` (only such names
/// are read, so the cost is one head read per conflict note).
fn live_conflict_note(file: &NoteFile) -> io::Result<bool> {
    let mut head = Vec::new();
    match store::read_head_into(file, &mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    }
    let fields = frontmatter::fields_of_bytes(&head);
    Ok(fields.contains_key(crate::sync::tree::CONFLICT_KEY) && !fields.contains_key("crumpledAt"))
}

/// The home's top-level `MAP.md` when it is live. `None` when it is crumpled or vanished.
fn read_map(file: &NoteFile, prefix: &str) -> io::Result<Option<MapNote>> {
    let Some(raw) = read_text(file)? else {
        return Ok(None);
    };
    let (fields, body) = split_note(&raw);
    if fields.contains_key("crumpledAt") {
        return Ok(None);
    }
    Ok(Some(MapNote {
        address: format!("{prefix}MAP.md"),
        body: body.into_owned(),
    }))
}

/// A note file's text (invalid UTF-8 replaced, as the store reads it). `None` when it vanished.
fn read_text(file: &NoteFile) -> io::Result<Option<String>> {
    let mut raw = Vec::new();
    match file.open().and_then(|mut f| f.read_to_end(&mut raw)) {
        Ok(_) => Ok(Some(String::from_utf8_lossy(&raw).into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Frontmatter fields and body of one note file, as the notes store parses them.
fn split_note(raw: &str) -> (Map<String, Value>, std::borrow::Cow<'_, str>) {
    let parsed = frontmatter::parse(raw);
    (parsed.fields, parsed.body)
}

fn updated_at_ms(fields: &Map<String, Value>, now_ms: i64) -> i64 {
    let now = chrono::DateTime::from_timestamp_millis(now_ms)
        .unwrap_or_default()
        .fixed_offset();
    NoteMeta::from_fields(fields, now)
        .updated_at
        .timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_longer_than_the_head_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(store::HEAD_BYTES * 2);
        std::fs::write(
            dir.path().join("big.md"),
            format!("---\nnote: {long}\ncrumpledAt: 2026-01-01T00:00:00Z\n---\n\nbody"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("live.md"),
            format!(
                "---\nupdatedAt: 2026-01-01T00:00:00Z\n---\n\n{}é",
                "b".repeat(store::HEAD_BYTES)
            ),
        )
        .unwrap();
        let home = load_home(dir.path(), "@human/", 5, 0).unwrap();
        assert_eq!(home.note_files, 2, "both files are counted");
        assert_eq!(
            home.recent.len(),
            1,
            "the crumpled note past the head is excluded"
        );
        assert_eq!(home.recent[0].address, "@human/live.md");
        assert_eq!(
            home.recent[0].chars,
            store::HEAD_BYTES + 1,
            "chars count the whole body"
        );
    }

    #[test]
    fn a_missing_home_is_empty_and_a_file_home_fails() {
        let dir = tempfile::tempdir().unwrap();
        let home = load_home(&dir.path().join("absent"), "", 5, 0).unwrap();
        assert_eq!(home, HomeSnapshot::default());
        std::fs::write(dir.path().join("file"), "x").unwrap();
        assert!(load_home(&dir.path().join("file"), "", 5, 0).is_err());
    }

    fn write_note(dir: &Path, name: &str, updated_ms: i64, mtime_ms: i64, crumpled: bool) {
        let stamp = chrono::DateTime::from_timestamp_millis(updated_ms)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
        let crumpled = if crumpled { "crumpledAt: x\n" } else { "" };
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!("---\n{crumpled}updatedAt: {stamp}\n---\n\nbody"),
        )
        .unwrap();
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(mtime_ms as u64);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    #[test]
    fn stopping_early_keeps_exactly_the_newest_rows() {
        // Notes written as pi-context writes them (mtime ≥ updatedAt, by a varying slack, so
        // the mtime order differs from the updatedAt order), some crumpled, many ties.
        let dir = tempfile::tempdir().unwrap();
        let base = 1_800_000_000_000i64;
        let mut expected: Vec<(i64, String)> = Vec::new();
        for i in 0..200i64 {
            let updated = base + (i * 7919 % 97) * 60_000;
            let slack = (i * 104_729 % 13) * 600_000;
            let name = format!("{}-{i}.md", if i % 3 == 0 { "A" } else { "b" });
            let crumpled = i % 11 == 0;
            write_note(dir.path(), &name, updated, updated + slack, crumpled);
            if !crumpled {
                expected.push((updated, format!("@human/{name}")));
            }
        }
        expected.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| address_order(&a.1, &b.1)));
        let home = load_home(dir.path(), "@human/", 5, base).unwrap();
        let got: Vec<(i64, String)> = home
            .recent
            .iter()
            .map(|r| (r.updated_at_ms, r.address.clone()))
            .collect();
        assert_eq!(got, expected[..5].to_vec());
        assert_eq!(home.note_files, 200);
    }

    /// Make every cache file look written an hour from now: its entries are then trusted.
    fn age_cache(dir: &Path) {
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                age_cache(&path);
            } else {
                let file = std::fs::File::options().write(true).open(&path).unwrap();
                file.set_modified(later).unwrap();
            }
        }
    }

    #[test]
    fn notes_that_cannot_enter_the_rows_are_counted_not_read_and_gone_ones_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        let home = root.join("human");
        let caches = dir.path().join("cache");
        std::fs::create_dir_all(home.join("sub")).unwrap();
        let base = 1_800_000_000_000i64;
        let name = |i: i64| format!("{}n{i:02}.md", if i % 2 == 0 { "sub/" } else { "" });
        // Every file time equal and later than every `updatedAt`: a cold boot reads them all.
        for i in 0..12i64 {
            write_note(
                &home,
                &name(i),
                base + i * 60_000,
                base + 86_400_000,
                i == 7,
            );
        }
        let load = |cache: Option<&mut HomeCache>| {
            load_home_cached(&home, "@human/", 3, base, cache).unwrap()
        };
        let mut cache = HomeCache::load(&caches, &root, &home);
        let cold = load(Some(&mut cache));
        cache.save();
        age_cache(&caches);
        // Old notes rewritten with their old file times (new stat, so not vouched for) and
        // one deleted: the rewritten ones are older than every row, so a warm boot counts
        // them without reading them (reading would learn them).
        for i in [0i64, 2, 3] {
            write_note(&home, &name(i), base + i * 60_000, base + i * 60_000, false);
        }
        std::fs::remove_file(home.join(name(1))).unwrap();
        let mut cache = HomeCache::load(&caches, &root, &home);
        let warm = load(Some(&mut cache));
        let plain = load(None);
        assert_eq!(warm, plain);
        assert_eq!(warm.note_files, 11);
        assert_eq!(cold.recent, plain.recent);
        let stat_of =
            |i: i64| FileStat::of(&std::fs::symlink_metadata(home.join(name(i))).unwrap());
        for i in [0i64, 2, 3] {
            assert!(cache.contains(&name(i)), "its old entry is kept");
            assert!(cache.get(&name(i), &stat_of(i)).is_none(), "n{i} was read");
        }
        assert!(!cache.contains(&name(1)), "the deleted note is forgotten");
        cache.save();
        let saved = HomeCache::load(&caches, &root, &home);
        assert!(!saved.contains(&name(1)));
        assert!(saved.contains(&name(11)) && saved.contains(&name(0)));
    }

    #[test]
    fn a_note_dated_after_its_file_ranks_by_its_file_time() {
        let dir = tempfile::tempdir().unwrap();
        let base = 1_800_000_000_000i64;
        write_note(dir.path(), "old.md", base, base, false);
        // Claims to be a day newer than it was written (clock skew, hand edit).
        write_note(
            dir.path(),
            "skewed.md",
            base + 86_400_000,
            base - 60_000,
            false,
        );
        let home = load_home(dir.path(), "@human/", 5, base).unwrap();
        let got: Vec<(&str, i64)> = home
            .recent
            .iter()
            .map(|r| (r.address.as_str(), r.updated_at_ms))
            .collect();
        assert_eq!(
            got,
            [("@human/old.md", base), ("@human/skewed.md", base - 60_000)]
        );
    }
}
