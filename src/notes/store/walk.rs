//! The one walk of note files, shared by listing and the boot index (search's workers apply
//! the same rule): regular files named `*.md` with UTF-8 names, in directories with UTF-8
//! names, symlinks never followed (a subdirectory swapped for a symlink while walking is
//! skipped, like every symlink).
//!
//! Several homes are walked at once by one small pool — the calling thread, plus up to
//! `available_parallelism − 1` helpers (at most 8 threads in all), started only once there is
//! work to share — over one LIFO queue of work items: a directory to open and walk (held as
//! its parent's handle and its name, so a pending directory holds no handle of its own), or a
//! chunk of one large directory's files to `lstat`. The work is balanced by directory and by
//! chunk, not by home: a store whose notes are mostly in one home, or in one directory, keeps
//! every core busy. Each item's system calls (`fstat` of the directory, its listing, one
//! `lstat` per file through the directory's handle) run without a lock; what it found is then
//! handed to its home's sink under that home's lock. The sinks see each home's files in an
//! order that depends on thread timing, so consumers must only build order-independent
//! results (they rank with total orders and count).

use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::super::cache::{DirsSeen, FileStat, HomeCache, Listing};
use super::work_queue::WorkQueue;
use crate::confine::{self, Dir, EntryKind};

/// What the walk hands over for every note file: its directory's handle, its path in the
/// home (`a/b.md`; the text is only borrowed), where its name starts in that path, and its
/// `lstat` when asked for (`None`: not asked).
pub(crate) type WalkSink<'s> = dyn FnMut(&Arc<Dir>, &str, usize, Option<FileStat>) + Send + 's;

/// One home (or directory) to walk with [`walk_homes`].
pub(crate) struct HomeWalk<'w> {
    pub start: Start<'w>,
    /// Its path in the home (empty: the home itself; a cache applies to whole homes only).
    pub rel: String,
    /// Which files are `lstat`ed (with a cache whose listing is trusted, all are).
    pub with_stat: WithStat,
    pub cache: CacheRef<'w>,
    pub sink: &'w mut WalkSink<'w>,
}

/// Where a walk starts.
pub(crate) enum Start<'w> {
    /// This directory, opened listable.
    Open(Arc<Dir>),
    /// Whatever this opens (`None`: the home does not exist), called by the worker that
    /// reaches the home first — it may also load the home's cache (see [`CacheRef::Lazy`]), so
    /// loading one home's cache overlaps with walking another. It is handed a [`LargeHome`].
    Prepare(Prepare<'w>),
}

/// Opens a home for [`Start::Prepare`].
pub(crate) type Prepare<'w> =
    Box<dyn FnOnce(LargeHome<'_>) -> Result<Option<Arc<Dir>>, confine::Error> + Send + 'w>;

/// What a [`Start::Prepare`] calls with the length of its home's cache file before reading it:
/// a file of at least [`Tuning::large_cache`] bytes marks a large home, and the helpers start
/// then, instead of once the first items wait, so the other homes' caches load and their walks
/// start while this one loads. A no-op on a helper, or once the helpers run.
pub(crate) type LargeHome<'a> = &'a dyn Fn(u64);

/// A home's metadata cache for the walk.
#[derive(Clone, Copy)]
pub(crate) enum CacheRef<'w> {
    Ready(Option<&'w HomeCache>),
    /// Filled by the home's [`Start::Prepare`] before its walk (empty: no cache).
    Lazy(&'w OnceLock<Option<HomeCache>>),
}

impl<'w> CacheRef<'w> {
    /// The cache, once loaded.
    pub(crate) fn get(self) -> Option<&'w HomeCache> {
        match self {
            CacheRef::Ready(cache) => cache,
            CacheRef::Lazy(cell) => cell.get().and_then(Option::as_ref),
        }
    }
}

/// Which files a walk `lstat`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WithStat {
    All,
    None,
    /// All when the cache has entries (an empty cache vouches for nothing).
    WhenCached,
}

/// What the walk of one home gives: the directory it started at (`None`: the home does not
/// exist) and what its cache should remember of its directories.
pub(crate) type Walked = Option<(Arc<Dir>, DirsSeen)>;

/// How the pool is sized; tests force both extremes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tuning {
    /// Threads in all, the calling one included.
    pub threads: usize,
    /// Helpers start once this many items wait in the queue.
    pub start_at: usize,
    /// Files of one directory per item.
    pub chunk: usize,
    /// Helpers start at once when a home's cache file is at least this long.
    pub large_cache: u64,
}

impl Tuning {
    fn default_for_machine() -> Tuning {
        Tuning {
            threads: crate::threads::worker_threads(),
            start_at: 8,
            chunk: 128,
            large_cache: super::super::cache::LARGE_CACHE_BYTES,
        }
    }

    /// The tuning of walks started on this thread.
    pub(crate) fn current() -> Tuning {
        #[cfg(test)]
        if let Some(t) = TEST_TUNING.with(std::cell::Cell::get) {
            return t;
        }
        Tuning::default_for_machine()
    }
}

#[cfg(test)]
thread_local! {
    static TEST_TUNING: std::cell::Cell<Option<Tuning>> = const { std::cell::Cell::new(None) };
}

/// For tests: run `f` with every walk it starts on this thread tuned as `tuning`.
#[cfg(test)]
pub(crate) fn with_tuning<R>(tuning: Tuning, f: impl FnOnce() -> R) -> R {
    let before = TEST_TUNING.with(|t| t.replace(Some(tuning)));
    let result = f();
    TEST_TUNING.with(|t| t.set(before));
    result
}

/// Walk every home of `homes`, calling its sink for each of its note files; per home, what
/// its cache should remember of its directories, or the first error met (the home's other
/// files may or may not have been handed over then). With a metadata cache, a directory
/// whose cached listing is still valid for its `stat` (see `HomeCache::listing`) is not listed
/// again: it is reached through a path handle and the names of its cached listing are
/// `lstat`ed (a name that is gone or no longer a regular file is skipped). Same files as
/// without the cache, and the same whatever the number of threads.
pub(crate) fn walk_homes(homes: Vec<HomeWalk<'_>>) -> Vec<Result<Walked, confine::Error>> {
    walk_tuned(homes, Tuning::current())
}

fn walk_tuned(homes: Vec<HomeWalk<'_>>, tuning: Tuning) -> Vec<Result<Walked, confine::Error>> {
    let mut roots = Vec::with_capacity(homes.len());
    let mut infos = Vec::with_capacity(homes.len());
    let mut slots = Vec::with_capacity(homes.len());
    for (home, walk) in homes.into_iter().enumerate() {
        roots.push(Item::Root {
            home,
            start: walk.start,
            rel: walk.rel,
        });
        infos.push(Info {
            with_stat: walk.with_stat,
            cache: walk.cache,
        });
        slots.push(Mutex::new(Slot {
            sink: walk.sink,
            seen: DirsSeen::default(),
            error: None,
            dir: None,
        }));
    }
    // Taken last, walked first: the homes in their order when there is one thread.
    roots.reverse();
    let pool = Pool {
        queue: WorkQueue::new(roots, ()),
        failed: infos.iter().map(|_| AtomicBool::new(false)).collect(),
        infos,
        slots,
        chunk: tuning.chunk.max(1),
    };
    std::thread::scope(|scope| {
        let mut scratch = Scratch::default();
        let mut more = Vec::new();
        let started = std::cell::Cell::new(tuning.threads <= 1);
        let start = || {
            if !started.replace(true) {
                for _ in 1..tuning.threads {
                    scope.spawn(|| {
                        let mut scratch = Scratch::default();
                        let mut more = Vec::new();
                        while let Some(item) = pool.next() {
                            pool.work(item, &mut scratch, &mut more, &|_| {});
                            pool.finish(&mut more);
                        }
                    });
                }
            }
        };
        let large = |bytes: u64| {
            if bytes >= tuning.large_cache {
                start();
            }
        };
        while let Some(item) = pool.next() {
            pool.work(item, &mut scratch, &mut more, &large);
            if pool.finish(&mut more) >= tuning.start_at {
                start();
            }
        }
    });
    pool.slots
        .into_iter()
        .map(|slot| {
            let slot = slot.into_inner().unwrap_or_else(PoisonError::into_inner);
            match slot.error {
                Some(e) => Err(e),
                None => Ok(slot.dir.map(|dir| (dir, slot.seen))),
            }
        })
        .collect()
}

/// Run `f` over `items` on a few threads (the calling one included, as many as a walk
/// uses); results in the order of `items`.
pub(crate) fn for_each_parallel<T: Send, R: Send>(
    items: Vec<T>,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let threads = Tuning::current().threads.min(items.len());
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let count = items.len();
    let queue = Mutex::new(items.into_iter().enumerate());
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..count).map(|_| None).collect());
    let run = || {
        loop {
            let next = queue.lock().unwrap_or_else(PoisonError::into_inner).next();
            let Some((i, item)) = next else {
                break;
            };
            let result = f(item);
            results.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(result);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(run);
        }
        run();
    });
    results
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .into_iter()
        .flatten()
        .collect()
}

/// What each home was walked with.
struct Info<'w> {
    with_stat: WithStat,
    cache: CacheRef<'w>,
}

/// A home's sink and what its walk learned, behind the home's lock.
struct Slot<'w> {
    sink: &'w mut WalkSink<'w>,
    seen: DirsSeen,
    error: Option<confine::Error>,
    /// The directory the walk started at, once opened.
    dir: Option<Arc<Dir>>,
}

/// How a chunk of files is `lstat`ed and which are handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stat {
    /// Names from a trusted cached listing: `lstat`ed, kept only while still regular files.
    Regular,
    /// Names just listed as regular files: `lstat`ed (a file gone meanwhile is skipped).
    Listed,
    /// Names just listed, not `lstat`ed.
    No,
}

enum Item<'w> {
    /// A home (or the directory a walk starts at).
    Root {
        home: usize,
        start: Start<'w>,
        rel: String,
    },
    /// The subdirectory `rel[name_at..]` of `parent`, to open (as a path handle or listable).
    Dir {
        home: usize,
        parent: Arc<Dir>,
        rel: String,
        name_at: usize,
        handle: bool,
    },
    /// Some files of one large directory.
    Files {
        home: usize,
        dir: Arc<Dir>,
        rel: Arc<str>,
        names: String,
        ends: Vec<u32>,
        stat: Stat,
    },
}

impl Item<'_> {
    fn home(&self) -> usize {
        match self {
            Item::Root { home, .. } | Item::Dir { home, .. } | Item::Files { home, .. } => *home,
        }
    }
}

struct Pool<'w> {
    queue: WorkQueue<Item<'w>, ()>,
    infos: Vec<Info<'w>>,
    slots: Vec<Mutex<Slot<'w>>>,
    /// Per home: an error was met (its remaining items are dropped).
    failed: Vec<AtomicBool>,
    chunk: usize,
}

/// One worker's reused buffers.
#[derive(Default)]
struct Scratch {
    /// File names of the directory being walked, one after another, and where each ends.
    names: String,
    ends: Vec<u32>,
    /// Subdirectory names, likewise.
    subdirs: String,
    sub_ends: Vec<u32>,
    /// Per file name: its `lstat` (`Some(None)`: handed over without one), or `None`: skipped.
    stats: Vec<Option<Option<FileStat>>>,
    /// A file's path in its home, as handed to the sink.
    path: String,
}

fn name_at<'t>(text: &'t str, ends: &[u32], i: usize) -> &'t str {
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &text[start..ends[i] as usize]
}

fn push(text: &mut String, ends: &mut Vec<u32>, name: &str) {
    text.push_str(name);
    ends.push(text.len() as u32);
}

fn names(text: &str, ends: &[u32]) -> Vec<String> {
    (0..ends.len())
        .map(|i| name_at(text, ends, i).to_owned())
        .collect()
}

impl<'w> Pool<'w> {
    /// The next item (`None` when all is done); an item of a home that already failed is
    /// dropped, the home is unavailable anyway.
    fn next(&self) -> Option<Item<'w>> {
        self.queue
            .next(|item| self.failed[item.home()].load(Ordering::Relaxed))
    }

    /// Queue what an item produced and mark it done; returns how many items wait.
    fn finish(&self, more: &mut Vec<Item<'w>>) -> usize {
        self.queue.finish(more, |()| ()).0
    }

    fn work(
        &self,
        item: Item<'w>,
        scratch: &mut Scratch,
        more: &mut Vec<Item<'w>>,
        large: LargeHome<'_>,
    ) {
        let home = item.home();
        let done = match item {
            Item::Root { start, rel, .. } => {
                let opened = match start {
                    Start::Open(dir) => Ok(Some(dir)),
                    Start::Prepare(prepare) => prepare(large),
                };
                match opened {
                    Ok(Some(dir)) => {
                        self.slots[home]
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .dir = Some(Arc::clone(&dir));
                        self.dir(home, dir, rel, true, scratch, more)
                    }
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            Item::Dir {
                parent,
                rel,
                name_at,
                handle,
                ..
            } => {
                let name = OsStr::new(&rel[name_at..]);
                let opened = if handle {
                    parent.child_handle(name)
                } else {
                    parent.child(name)
                };
                drop(parent);
                match opened {
                    Ok(Some(dir)) => self.dir(home, Arc::new(dir), rel, !handle, scratch, more),
                    Ok(None) => Ok(()),
                    Err(e) if e.kind == confine::Kind::Symlink => Ok(()),
                    Err(e) => Err(e),
                }
            }
            Item::Files {
                dir,
                rel,
                names,
                ends,
                stat,
                ..
            } => self
                .stat_files(&dir, &names, &ends, stat, &mut scratch.stats)
                .map(|()| {
                    self.hand_over(home, &dir, &rel, &names, &ends, scratch, None, None);
                }),
        };
        if let Err(e) = done {
            self.failed[home].store(true, Ordering::Relaxed);
            let mut slot = self.slots[home]
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            slot.error.get_or_insert(e);
        }
    }

    /// Walk one directory (at `rel` in home `home`): its subdirectories become items, its
    /// files are `lstat`ed here (a large directory's beyond the first chunk become items)
    /// and handed over. `listable`: whether `dir` can be listed as it is.
    #[allow(clippy::too_many_arguments)]
    fn dir(
        &self,
        home: usize,
        dir: Arc<Dir>,
        rel: String,
        listable: bool,
        scratch: &mut Scratch,
        more: &mut Vec<Item<'w>>,
    ) -> Result<(), confine::Error> {
        let info = &self.infos[home];
        let cache = info.cache.get();
        // The directory's own `stat`, taken before it is listed: a change made while it is
        // listed gives it a newer `stat` than the one the listing is remembered under.
        let own_stat = match cache {
            Some(_) => Some(FileStat::of_stat(&dir.stat_self()?)),
            None => None,
        };
        let cached = match (cache, &own_stat) {
            (Some(cache), Some(stat)) => cache.listing(&rel, stat),
            _ => None,
        };
        let Scratch {
            names,
            ends,
            subdirs,
            sub_ends,
            ..
        } = scratch;
        names.clear();
        ends.clear();
        subdirs.clear();
        sub_ends.clear();
        let (dir, stat, handles, trusted, learned) = match cached {
            Some((record, listing)) => {
                listing.for_each(|is_dir, name| {
                    if is_dir {
                        push(subdirs, sub_ends, name);
                    } else {
                        push(names, ends, name);
                    }
                });
                (dir, Stat::Regular, true, Some(record), None)
            }
            None => {
                let dir = if listable {
                    dir
                } else {
                    Arc::new(dir.listable()?)
                };
                // Names and kinds come from this directory's own handle; each file's `lstat`
                // goes through the same handle (no path walked from the root again).
                dir.for_each_entry(|name, kind| {
                    let Some(text) = name.to_str() else {
                        return Ok(()); // not addressable
                    };
                    match kind {
                        EntryKind::Dir => push(subdirs, sub_ends, text),
                        EntryKind::File if text.ends_with(".md") => push(names, ends, text),
                        _ => {}
                    }
                    Ok(())
                })?;
                let learned = own_stat.map(|stat| {
                    // Sorted, so that walking the cached listing later meets the files in the
                    // order of their cache records (`HomeCache::get_near`).
                    let mut files = self::names(names, ends);
                    files.sort_unstable();
                    Listing {
                        stat,
                        dirs: self::names(subdirs, sub_ends),
                        files,
                    }
                });
                let with_stat = match info.with_stat {
                    WithStat::All => true,
                    WithStat::None => false,
                    WithStat::WhenCached => cache.is_some_and(|c| !c.is_empty()),
                };
                let stat = if with_stat { Stat::Listed } else { Stat::No };
                // Subdirectories are opened as path handles only when the cache may hold
                // their listings (a handle must be reopened to be listed).
                let handles = cache.is_some_and(HomeCache::has_listings);
                (dir, stat, handles, None, learned)
            }
        };
        for i in 0..sub_ends.len() {
            let mut path = String::with_capacity(rel.len() + 1 + sub_ends[i] as usize);
            path.push_str(&rel);
            let at = super::push_name(&mut path, name_at(subdirs, sub_ends, i));
            more.push(Item::Dir {
                home,
                parent: Arc::clone(&dir),
                rel: path,
                name_at: at,
                handle: handles,
            });
        }
        // Files past the first chunk go to other workers, a chunk per item.
        let own = ends.len().min(self.chunk);
        if own < ends.len() {
            let shared: Arc<str> = Arc::from(rel.as_str());
            let mut from = own;
            while from < ends.len() {
                let to = (from + self.chunk).min(ends.len());
                let mut chunk = String::new();
                let mut chunk_ends = Vec::with_capacity(to - from);
                for i in from..to {
                    push(&mut chunk, &mut chunk_ends, name_at(names, ends, i));
                }
                more.push(Item::Files {
                    home,
                    dir: Arc::clone(&dir),
                    rel: Arc::clone(&shared),
                    names: chunk,
                    ends: chunk_ends,
                    stat,
                });
                from = to;
            }
        }
        let names = std::mem::take(&mut scratch.names);
        let ends = std::mem::take(&mut scratch.ends);
        let stated = self.stat_files(&dir, &names, &ends[..own], stat, &mut scratch.stats);
        if stated.is_ok() {
            self.hand_over(
                home,
                &dir,
                &rel,
                &names,
                &ends[..own],
                scratch,
                trusted,
                learned,
            );
        }
        scratch.names = names;
        scratch.ends = ends;
        stated
    }

    /// `lstat` the files `names`/`ends` of `dir` as `stat` says, into `out`.
    fn stat_files(
        &self,
        dir: &Dir,
        names: &str,
        ends: &[u32],
        stat: Stat,
        out: &mut Vec<Option<Option<FileStat>>>,
    ) -> Result<(), confine::Error> {
        out.clear();
        for i in 0..ends.len() {
            let name = OsStr::new(name_at(names, ends, i));
            out.push(match stat {
                Stat::No => Some(None),
                Stat::Listed => dir.lstat(name)?.map(|s| Some(FileStat::of_stat(&s))),
                Stat::Regular => match dir.lstat(name)? {
                    Some(s)
                        if rustix::fs::FileType::from_raw_mode(s.st_mode)
                            == rustix::fs::FileType::RegularFile =>
                    {
                        Some(Some(FileStat::of_stat(&s)))
                    }
                    _ => None, // vanished or replaced since the listing: changing now
                },
            });
        }
        Ok(())
    }

    /// Hand the files just `lstat`ed (`scratch.stats`) to the home's sink, and record what
    /// the directory's walk learned, under the home's lock.
    #[allow(clippy::too_many_arguments)]
    fn hand_over(
        &self,
        home: usize,
        dir: &Arc<Dir>,
        rel: &str,
        names: &str,
        ends: &[u32],
        scratch: &mut Scratch,
        trusted: Option<u32>,
        learned: Option<Listing>,
    ) {
        let mut slot = self.slots[home]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.failed[home].load(Ordering::Relaxed) {
            return;
        }
        if let Some(record) = trusted {
            slot.seen.trusted.push(record);
        }
        if let Some(listing) = learned {
            slot.seen.learned.push((rel.to_owned(), listing));
        }
        let path = &mut scratch.path;
        for (i, stat) in scratch.stats.iter().enumerate() {
            let Some(stat) = *stat else {
                continue;
            };
            path.clear();
            path.push_str(rel);
            let at = super::push_name(path, name_at(names, ends, i));
            (slot.sink)(dir, path, at, stat);
        }
    }
}
