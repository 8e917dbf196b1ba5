//! The store: the operations on notes under one identity (write, read, update, rename, list,
//! search). Every read-modify-write holds the cross-process lock of the note's physical file
//! and replaces it atomically; a refusal leaves the tree byte-identical (directories created
//! for a lock are removed again). Every file is reached from the notes root's directory handle
//! without following a symlink (`crate::confine`): a path through a symlink is refused and a
//! symlinked home is unavailable to listings. The caller passes "now"; nothing here reads the
//! clock or the environment.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, FixedOffset};

use super::access::{self, Entry, Journal};
use super::address::{Address, Home, Scope, no_session};
use super::cache::{
    DirsSeen, Entry as CacheEntry, EntryRef, Facts, FileStat, HomeCache, root_cache_dir,
};
use super::error::{ErrorKind, NoteError, err};
use super::frontmatter;
use super::identity::{Identity, is_slug};
use super::note::{NoteMeta, Origin, format_stamp, serialize_note};
use super::query::{HomeSelection, LineMatch, Matcher, Plan, Query};
use crate::confine::{self, Dir, EntryKind};

mod search;
pub(crate) mod walk;
mod work_queue;

/// The notes store of one identity.
///
/// ```
/// use pi_context::notes::{Identity, Store, Origin, WriteOutcome};
/// let dir = tempfile::tempdir()?;
/// let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T10:00:00.000+02:00")?;
/// let store = Store::new(Identity::new(dir.path(), Some("s1"), "demo-1a2b3c4d", "ann", "gpt")?);
/// let receipt = store.write("@self/todo", "- ship it", None, now)?;
/// assert_eq!(receipt.outcome, WriteOutcome::Created);
/// assert_eq!(receipt.address.display(), "@agents/ann/todo.md");
/// let note = store.read("@self/todo.md", now)?.expect("just written");
/// assert_eq!(note.body, "- ship it");
/// assert_eq!(note.meta.access_count, 1.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Store {
    identity: Identity,
    /// This root's directory in the cache directory (metadata cache, access journal); `None`
    /// works without either.
    cache: Option<PathBuf>,
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WriteOutcome {
    Created,
    Overwritten,
    /// The note existed in the wastebasket; writing took it out.
    Uncrumpled,
}

impl WriteOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            WriteOutcome::Created => "created",
            WriteOutcome::Overwritten => "overwritten",
            WriteOutcome::Uncrumpled => "uncrumpled",
        }
    }
}

#[derive(Debug, Clone)]
pub struct WriteReceipt {
    pub address: Address,
    pub outcome: WriteOutcome,
    pub meta: NoteMeta,
}

/// A note as read (metadata already bumped by the read).
#[derive(Debug, Clone)]
pub struct ReadNote {
    pub address: Address,
    pub meta: NoteMeta,
    pub body: String,
}

/// One `{oldText, newText}` edit (the shared wire shape).
pub use crate::protocol::Edit;

/// Switches of an update besides its edits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpdateOptions {
    pub origin: Option<Origin>,
    /// `Some(true)` crumples (keeps an existing time), `Some(false)` smooths.
    pub crumpled: Option<bool>,
    pub replace_all: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    None,
    Body,
    Metadata,
    File,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::None => "none",
            ChangeKind::Body => "body",
            ChangeKind::Metadata => "metadata",
            ChangeKind::File => "file",
        }
    }
}

/// What changed, for the receipt's diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    pub before: String,
    pub after: String,
}

#[derive(Debug, Clone)]
pub struct UpdateReceipt {
    pub address: Address,
    pub meta: NoteMeta,
    /// Edits that changed something (an identical replacement counts 0).
    pub applied: usize,
    pub change: Change,
}

#[derive(Debug, Clone)]
pub struct RenameReceipt {
    pub from: Address,
    pub to: Address,
    pub meta: NoteMeta,
    pub replaced_crumpled_target: bool,
}

/// One listed note.
#[derive(Debug, Clone)]
pub struct NoteRow {
    pub address: Address,
    /// The concrete display address (`address.display()`).
    pub display: String,
    pub meta: NoteMeta,
}

/// One search hit: a note and its matching lines.
#[derive(Debug, Clone)]
pub struct SearchRow {
    pub address: Address,
    pub display: String,
    /// The note's metadata. A row past the leading rows whose lines a search keeps
    /// ([`LinesKept`]) has only its `updated_at` read from the note (all its rank needs); its
    /// other fields are those of `NoteMeta::new(Origin::Myself, updated_at)`.
    pub meta: NoteMeta,
    /// All matching lines (at most one match per line).
    pub matches_total: usize,
    /// The first `max_matches_per_file` of them.
    pub matches: Vec<LineMatch>,
}

/// Which rows of a search keep their matching lines; every row keeps `matches_total`.
///
/// In recency order, a row keeps its lines while fewer than `rows` rows come before it and the
/// line texts kept by the rows before it hold at most `text_bytes` bytes; every later row has
/// an empty `matches`. A response of bounded size shows only such a leading part, so a search
/// for a common word need not copy every matching line of every note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinesKept {
    pub rows: usize,
    pub text_bytes: usize,
}

impl LinesKept {
    /// Every row keeps its lines.
    pub const ALL: LinesKept = LinesKept {
        rows: usize::MAX,
        text_bytes: usize::MAX,
    };

    /// Whether row `index`, after rows whose kept lines hold `bytes_before` bytes, keeps its
    /// lines.
    pub(crate) fn keeps(self, index: usize, bytes_before: usize) -> bool {
        index < self.rows && bytes_before <= self.text_bytes
    }
}

/// What a listing or search could not see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// Crumpled notes skipped (outside wastebasket mode).
    pub crumpled_excluded: usize,
    /// Labels of homes that failed to read (`session`, `@project`, `@agents/<slug>`, …).
    pub homes_unavailable: Vec<String>,
    /// Those of them that are unavailable because their directory (or a directory between it
    /// and the notes root) is a symlink, which is never followed: code `home_is_symlink`.
    pub homes_symlinked: Vec<String>,
}

/// Rows plus status.
#[derive(Debug, Clone)]
pub struct WithStatus<T> {
    pub rows: Vec<T>,
    pub status: Status,
}

impl Store {
    pub fn new(identity: Identity) -> Store {
        Store {
            identity,
            cache: None,
        }
    }

    /// Use the shared cache directory `cache_dir` (the store keeps its metadata cache and its
    /// access journal in a subdirectory per notes root); `None` works without them.
    pub fn with_cache_dir(mut self, cache_dir: Option<&Path>) -> Store {
        self.cache = cache_dir.map(|dir| root_cache_dir(dir, &self.identity.root));
        self
    }

    fn journal(&self) -> Option<Journal> {
        self.cache.as_deref().map(Journal::new)
    }

    /// The note's path relative to the notes root, as the access journal names it.
    fn journal_rel(&self, address: &Address) -> Result<String, NoteError> {
        let lexical = address.file_path(&self.identity)?;
        let rel = lexical
            .strip_prefix(&self.identity.root)
            .map_err(|_| escape_error())?;
        Ok(rel.to_string_lossy().into_owned())
    }

    /// Take the pending reads of a note (lock held) for folding into the file about to be
    /// written; `None` entries without a journal.
    fn take_pending(&self, address: &Address) -> Result<Pending, NoteError> {
        let rel = self.journal_rel(address)?;
        let entries = match self.journal() {
            // An unreadable journal only loses access counts: never block a write on it.
            Some(journal) => journal.take(&rel).unwrap_or_default(),
            None => Vec::new(),
        };
        Ok(Pending { rel, entries })
    }

    fn restore_pending(&self, pending: &Pending) {
        if let Some(journal) = self.journal()
            && !pending.entries.is_empty()
        {
            journal.restore(&pending.rel, &pending.entries);
        }
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Decode an address against this store's identity.
    pub fn address(&self, input: &str) -> Result<Address, NoteError> {
        Address::decode(input, &self.identity)
    }

    /// Create or overwrite a note. `content` loses a leading frontmatter block; `origin`
    /// defaults to `self`; an overwrite keeps `createdAt`, access metadata, `project` and
    /// extras, and always takes the note out of the wastebasket.
    pub fn write(
        &self,
        address: &str,
        content: &str,
        origin: Option<Origin>,
        now: DateTime<FixedOffset>,
    ) -> Result<WriteReceipt, NoteError> {
        let address = self.address(address)?;
        address.check_path_cap()?;
        address.check_writable(&self.identity)?;
        let origin = origin.unwrap_or(Origin::Myself);
        let body = frontmatter::strip_leading_frontmatter(content);
        let mut created_dirs = Vec::new();
        let result = (|| {
            let place = self.locate_create(&address, &mut created_dirs)?;
            let _lock = place.dir.lock(&place.name).map_err(confined)?;
            let existing = place.read()?;
            let pending = self.take_pending(&address)?;
            let result = (|| {
                let (mut meta, outcome) = match &existing {
                    None => {
                        let mut meta = NoteMeta::new(origin, now);
                        if address.home.scope == Scope::Session {
                            meta.other
                                .insert("project".into(), self.identity.project_key.clone().into());
                        }
                        (meta, WriteOutcome::Created)
                    }
                    Some(raw) => {
                        let (meta, _, _) = parse_with_pending(raw, &place, &pending.entries, now);
                        let outcome = if meta.is_crumpled() {
                            WriteOutcome::Uncrumpled
                        } else {
                            WriteOutcome::Overwritten
                        };
                        (meta, outcome)
                    }
                };
                meta.origin = origin;
                meta.crumpled_at = None;
                meta.updated_at = now;
                let text = serialize_note(&meta, &body)?;
                place.write(&text)?;
                Ok(WriteReceipt {
                    address: address.clone(),
                    outcome,
                    meta,
                })
            })();
            if result.is_err() {
                self.restore_pending(&pending);
            }
            result
        })();
        if result.is_err() {
            confine::remove_created(&created_dirs);
        }
        result
    }

    /// Read a note: `None` when it does not exist. Bumps `lastAccessed` and `accessCount`, for
    /// any home, including crumpled and hand-written notes. With a cache directory the bump goes
    /// to the access journal (the note file is not written, nothing is flushed) and is folded
    /// into the file by the note's next write, update or rename (or [`fold_pending_access`]);
    /// the returned metadata includes it either way. Without one (or when the journal cannot
    /// be written) the note is rewritten in place under its lock.
    pub fn read(
        &self,
        address: &str,
        now: DateTime<FixedOffset>,
    ) -> Result<Option<ReadNote>, NoteError> {
        self.read_note(address, now, true)
    }

    /// [`Store::read`] for a caller that shows no access fields (`notes-read`'s result): the
    /// bump is recorded the same way, but the reads still pending in the access journal are
    /// not read back ([`access::Journal::record_only`]), so `meta.last_accessed` and
    /// `meta.access_count` count the file's values and this read only. Every other field is
    /// what [`Store::read`] gives (a note with a missing or unreadable stamp, whose stand-in
    /// time can come from the first pending read, is read as [`Store::read`] reads it).
    pub fn read_skipping_pending(
        &self,
        address: &str,
        now: DateTime<FixedOffset>,
    ) -> Result<Option<ReadNote>, NoteError> {
        self.read_note(address, now, false)
    }

    fn read_note(
        &self,
        address: &str,
        now: DateTime<FixedOffset>,
        pending: bool,
    ) -> Result<Option<ReadNote>, NoteError> {
        let address = self.address(address)?;
        address.check_path_cap()?;
        let Some(place) = self.locate(&address)? else {
            return Ok(None);
        };
        if let Some(journal) = self.journal() {
            let Some(raw) = place.read()? else {
                return Ok(None);
            };
            let rel = self.journal_rel(&address)?;
            let parsed = frontmatter::parse(&raw);
            let created = parsed.fields.get("createdAt");
            let recorded = if pending || !NoteMeta::has_all_stamps(&parsed.fields) {
                journal.record(&rel, created, now)
            } else {
                journal.record_only(&rel, created, now).map(|()| Vec::new())
            };
            if let Ok(earlier) = recorded {
                let reads = access::matching(&earlier, created);
                let first = access::first_time(&reads).unwrap_or(now);
                let fallback = stamp_fallback(&parsed.fields, &place.dir, &place.name, first);
                let mut meta = NoteMeta::from_fields(&parsed.fields, fallback);
                access::apply(&mut meta, &reads);
                meta.last_accessed = now;
                meta.access_count += 1.0;
                return Ok(Some(ReadNote {
                    address,
                    meta,
                    body: parsed.body.into_owned(),
                }));
            }
        }
        let Some(_lock) = place.dir.lock_existing(&place.name).map_err(confined)? else {
            return Ok(None);
        };
        let Some(raw) = place.read()? else {
            return Ok(None);
        };
        let (mut meta, body) = parse_note_at(&raw, &place, now);
        meta.last_accessed = now;
        meta.access_count += 1.0;
        let text = frontmatter::serialize(&meta.to_fields(), &body);
        place.write(&text)?;
        Ok(Some(ReadNote {
            address,
            meta,
            body,
        }))
    }

    /// Read a note without touching it (no lock, no access bump): for doctor, dream and boot.
    pub fn peek(&self, address: &Address) -> Result<Option<(NoteMeta, String)>, NoteError> {
        let Some(place) = self.locate(address)? else {
            return Ok(None);
        };
        let Some(raw) = place.read()? else {
            return Ok(None);
        };
        Ok(Some(parse_note_at(&raw, &place, epoch())))
    }

    /// The body of a home's top-level `MAP.md`, if it exists (read-only, no access bump).
    pub fn read_map(&self, home: &Home) -> Result<Option<String>, NoteError> {
        let address = Address {
            home: home.clone(),
            vpath: "MAP.md".into(),
        };
        Ok(self.peek(&address)?.map(|(_, body)| body))
    }

    /// Apply edits (in order, against the evolving body, all-or-nothing) and/or set origin,
    /// crumple or smooth. The file is rewritten in every successful case.
    pub fn update(
        &self,
        address: &str,
        edits: &[Edit],
        options: UpdateOptions,
        now: DateTime<FixedOffset>,
    ) -> Result<UpdateReceipt, NoteError> {
        let address = self.address(address)?;
        address.check_path_cap()?;
        address.check_writable(&self.identity)?;
        if edits.is_empty() && options.origin.is_none() && options.crumpled.is_none() {
            return Err(err(
                ErrorKind::NothingToDo,
                "nothing to do: provide edits or at least one of origin, crumpled",
            ));
        }
        let Some(place) = self.locate(&address)? else {
            return Err(not_found());
        };
        let Some(_lock) = place.dir.lock_existing(&place.name).map_err(confined)? else {
            return Err(not_found());
        };
        let Some(raw) = place.read()? else {
            return Err(not_found());
        };
        let pending = self.take_pending(&address)?;
        let result = self.update_locked(&address, &place, &raw, &pending, edits, options, now);
        if result.is_err() {
            self.restore_pending(&pending);
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn update_locked(
        &self,
        address: &Address,
        place: &Place,
        raw: &str,
        pending: &Pending,
        edits: &[Edit],
        options: UpdateOptions,
        now: DateTime<FixedOffset>,
    ) -> Result<UpdateReceipt, NoteError> {
        let address = address.clone();
        let (mut meta, body, folded) = parse_with_pending(raw, place, &pending.entries, now);
        // The file as the deferred reads would have left it (they rewrote it canonically).
        let raw = if folded {
            frontmatter::serialize(&meta.to_fields(), &body)
        } else {
            raw.to_owned()
        };
        let before = meta.clone();
        let (next, applied) = apply_edits(&body, edits, options.replace_all)?;
        if let Some(origin) = options.origin {
            meta.origin = origin;
        }
        match options.crumpled {
            Some(true) if meta.crumpled_at.is_none() => {
                meta.crumpled_at = Some(format_stamp(now).into());
            }
            Some(false) => meta.crumpled_at = None,
            _ => {}
        }
        let body_changed = next != body;
        let origin_changed = before.origin != meta.origin;
        if body_changed || origin_changed {
            meta.updated_at = now;
        }
        let text = serialize_note(&meta, &next)?;
        let metadata_changed = origin_changed || before.crumpled_at != meta.crumpled_at;
        let change = match (body_changed, metadata_changed) {
            (true, true) => Change {
                kind: ChangeKind::File,
                before: raw,
                after: text.clone(),
            },
            (true, false) => Change {
                kind: ChangeKind::Body,
                before: body,
                after: next,
            },
            (false, true) => Change {
                kind: ChangeKind::Metadata,
                before: before.block(),
                after: meta.block(),
            },
            (false, false) => Change {
                kind: ChangeKind::None,
                before: String::new(),
                after: String::new(),
            },
        };
        place.write(&text)?;
        Ok(UpdateReceipt {
            address,
            meta,
            applied,
            change,
        })
    }

    /// Move a note. The target may replace a crumpled note but never a live one; crossing the
    /// session boundary sets or drops `project`; `updatedAt` is bumped, all else kept.
    pub fn rename(
        &self,
        from: &str,
        to: &str,
        now: DateTime<FixedOffset>,
    ) -> Result<RenameReceipt, NoteError> {
        let from = self.address(from)?;
        let to = self.address(to)?;
        to.check_path_cap()?;
        from.check_writable(&self.identity)?;
        to.check_writable(&self.identity)?;
        // No symlink is ever followed, so the same address is the same file.
        if from.home == to.home && from.file_vpath() == to.file_vpath() {
            return Err(err(
                ErrorKind::NothingToDo,
                "rename_to resolves to the same note",
            ));
        }
        let Some(source) = self.locate(&from)? else {
            return Err(not_found());
        };
        if source
            .dir
            .kind_of(&source.name)
            .map_err(confined)?
            .is_none()
        {
            return Err(not_found());
        }
        let mut created_dirs = Vec::new();
        let result = (|| {
            let target = self.locate_create(&to, &mut created_dirs)?;
            let _locks = confine::lock_all(&[
                (&source.dir, source.name.as_os_str()),
                (&target.dir, target.name.as_os_str()),
            ])
            .map_err(confined)?;
            let Some(raw) = source.read()? else {
                return Err(not_found());
            };
            let replaced_crumpled_target = match target.read()? {
                None => false,
                Some(existing) => {
                    let crumpled = frontmatter::parse_fields_only(&existing)
                        .is_some_and(|f| f.contains_key("crumpledAt"));
                    if !crumpled {
                        return Err(err(
                            ErrorKind::AlreadyExists,
                            "rename_to target is a live note; crumple it first or pick another address",
                        ));
                    }
                    true
                }
            };
            let pending = self.take_pending(&from)?;
            // The replaced crumpled target's pending reads go with it.
            let _ = self.take_pending(&to)?;
            let (mut meta, body, _) = parse_with_pending(&raw, &source, &pending.entries, now);
            match (from.home.scope, to.home.scope) {
                (Scope::Session, Scope::Session) => {}
                (_, Scope::Session) => {
                    meta.other
                        .insert("project".into(), self.identity.project_key.clone().into());
                }
                (Scope::Session, _) => {
                    meta.other.shift_remove("project");
                }
                _ => {}
            }
            meta.updated_at = now;
            let written = serialize_note(&meta, &body).and_then(|text| target.write(&text));
            if let Err(e) = written {
                self.restore_pending(&pending);
                return Err(e);
            }
            source.dir.remove_file(&source.name).map_err(confined)?;
            Ok(RenameReceipt {
                from: from.clone(),
                to: to.clone(),
                meta,
                replaced_crumpled_target,
            })
        })();
        if result.is_err() {
            confine::remove_created(&created_dirs);
        }
        result
    }

    /// Notes matching `query`, most recently updated first. Fails on the first home that
    /// cannot be read; see [`Store::list_with_status`] for the tolerant form.
    pub fn list(&self, query: &Query) -> Result<Vec<NoteRow>, NoteError> {
        let listing = self.scan(query)?;
        strict((listing.rows().collect(), listing.failed))
    }

    /// Like [`Store::list_with_status`], but the rows are built only as they are taken from
    /// the [`NoteList`] (a caller showing the first few hundred of thousands of notes builds
    /// only those).
    pub fn list_ranked(&self, query: &Query) -> Result<NoteList, NoteError> {
        self.scan(query)
    }

    /// Like [`Store::list`], but a home that fails to read is reported in
    /// `status.homes_unavailable` (its rows and crumpled count discarded) instead of failing.
    ///
    /// ```
    /// use pi_context::notes::{Identity, Store, Query};
    /// let dir = tempfile::tempdir()?;
    /// let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")?;
    /// let store = Store::new(Identity::new(dir.path(), Some("s1"), "k", "ann", "gpt")?);
    /// store.write("@human/a", "x", None, now)?;
    /// store.write("b", "y", None, now + chrono::Duration::seconds(1))?;
    /// let listing = store.list_with_status(&Query::default())?;
    /// let names: Vec<&str> = listing.rows.iter().map(|r| r.display.as_str()).collect();
    /// assert_eq!(names, ["b.md", "@human/a.md"]);
    /// assert!(listing.status.homes_unavailable.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list_with_status(&self, query: &Query) -> Result<WithStatus<NoteRow>, NoteError> {
        let listing = self.scan(query)?;
        Ok(WithStatus {
            rows: listing.rows().collect(),
            status: listing.status,
        })
    }

    /// Case-insensitive literal search (any of `queries`) over note bodies, recent first.
    pub fn search<S: AsRef<str>>(
        &self,
        queries: &[S],
        query: &Query,
        max_matches_per_file: Option<usize>,
    ) -> Result<Vec<SearchRow>, NoteError> {
        let matcher = Matcher::new(queries)?;
        let found = self.search_scan(&matcher, query, max_matches_per_file, LinesKept::ALL)?;
        strict((found.rows, found.failed))
    }

    /// Like [`Store::search`], reporting unreadable homes instead of failing.
    ///
    /// ```
    /// use pi_context::notes::{Identity, Store, Query};
    /// let dir = tempfile::tempdir()?;
    /// let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")?;
    /// let store = Store::new(Identity::new(dir.path(), Some("s1"), "k", "ann", "gpt")?);
    /// store.write("@project/plan", "first\nthe Ünïcode NEEDLE", None, now)?;
    /// let found = store.search_with_status(&["ünïcode needle"], &Query::default(), None)?;
    /// let hit = &found.rows[0].matches[0];
    /// assert_eq!((hit.line, hit.offset_chars), (2, 10));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search_with_status<S: AsRef<str>>(
        &self,
        queries: &[S],
        query: &Query,
        max_matches_per_file: Option<usize>,
    ) -> Result<WithStatus<SearchRow>, NoteError> {
        self.search_keeping(queries, query, max_matches_per_file, LinesKept::ALL)
    }

    /// Like [`Store::search_with_status`], with lines kept only by the leading rows `kept`
    /// describes (the rest keep their counts).
    pub fn search_keeping<S: AsRef<str>>(
        &self,
        queries: &[S],
        query: &Query,
        max_matches_per_file: Option<usize>,
        kept: LinesKept,
    ) -> Result<WithStatus<SearchRow>, NoteError> {
        let matcher = Matcher::new(queries)?;
        let found = self.search_scan(&matcher, query, max_matches_per_file, kept)?;
        Ok(WithStatus {
            rows: found.rows,
            status: found.status,
        })
    }

    /// Where a note lives: its directory reached from the notes root one component at a time
    /// without following a symlink, and its file name. `None` when the root or a directory on
    /// the way does not exist (nothing is created).
    fn locate(&self, address: &Address) -> Result<Option<Place>, NoteError> {
        let (dirs, name) = self.components(address)?;
        let Some(root) = Dir::open_root(&self.identity.root).map_err(confined)? else {
            return Ok(None);
        };
        Ok(root
            .walk(&dirs)
            .map_err(confined)?
            .map(|dir| Place { dir, name }))
    }

    /// [`Store::locate`], creating the root and missing directories; each directory created is
    /// recorded in `created` so a refused write can remove it again.
    fn locate_create(
        &self,
        address: &Address,
        created: &mut Vec<(Dir, OsString)>,
    ) -> Result<Place, NoteError> {
        let (dirs, name) = self.components(address)?;
        let root = Dir::create_root(&self.identity.root).map_err(confined)?;
        let dir = root.walk_create(&dirs, created).map_err(confined)?;
        Ok(Place { dir, name })
    }

    /// The directory components under the root and the file name of a note.
    fn components(&self, address: &Address) -> Result<(Vec<String>, OsString), NoteError> {
        let mut dirs = address
            .home
            .components(&self.identity)
            .ok_or_else(no_session)?;
        dirs.extend(address.file_vpath().split('/').map(str::to_owned));
        let name = dirs.pop().map(OsString::from).unwrap_or_default();
        Ok((dirs, name))
    }

    /// Rank the notes `query` selects without building their rows: the homes are walked at
    /// once by a few threads ([`walk_homes`]; one `lstat` per note with the metadata cache); a
    /// note the cache vouches for is ranked from its entry as the walk reaches it, and only
    /// the others are kept (by path, no handle) to be read on a few threads. A row is built when asked
    /// for ([`NoteList::row`]).
    fn scan(&self, query: &Query) -> Result<NoteList, NoteError> {
        let plan = query.plan(&self.identity)?;
        let homes = self.homes_of(&plan, query)?;
        let prefixes: Vec<String> = homes
            .iter()
            .map(|h| h.as_ref().map(Home::prefix).unwrap_or_default())
            .collect();
        let mut home_failed = vec![false; homes.len()];
        let mut home_symlinked = vec![false; homes.len()];
        let mut extra_unavailable = Vec::new();
        let mut extra_symlinked = Vec::new();
        let root = &self.identity.root;
        // Listings use the metadata cache (one per home) when there is a cache directory.
        let cache_root = self.cache.as_deref();
        // One walk of all the homes (shared by a few threads, balanced by directory); each
        // home's cache is loaded, and its directory opened, by the worker that reaches it
        // first, while the others walk.
        let cells: Vec<OnceLock<Option<HomeCache>>> =
            homes.iter().map(|_| OnceLock::new()).collect();
        let mut parts: Vec<HomePart> = homes.iter().map(|_| HomePart::default()).collect();
        let mut tallies: Vec<Tally> = homes.iter().map(|_| Tally::default()).collect();
        let mut results: Vec<Option<Result<walk::Walked, confine::Error>>> =
            homes.iter().map(|_| None).collect();
        {
            let mut prepares: Vec<walk::Prepare<'_>> = Vec::new();
            let mut sinks = Vec::new();
            let mut which = Vec::new();
            for (index, ((home, part), tally)) in homes
                .iter()
                .zip(parts.iter_mut())
                .zip(tallies.iter_mut())
                .enumerate()
            {
                let Ok(home) = home else {
                    continue;
                };
                let (Some(dir), Some(components)) =
                    (home.dir(&self.identity), home.components(&self.identity))
                else {
                    continue;
                };
                let cell = &cells[index];
                prepares.push(Box::new(move |large: walk::LargeHome<'_>| {
                    let _ =
                        cell.set(cache_root.map(|c| HomeCache::load_hinting(c, root, &dir, large)));
                    open_home(root, &components).map(|d| d.map(Arc::new))
                }));
                sinks.push(part.sink(tally, CacheRef::Lazy(cell), index, &prefixes[index], &plan));
                which.push(index);
            }
            let jobs = prepares
                .into_iter()
                .zip(sinks.iter_mut())
                .zip(&which)
                .map(|((prepare, sink), &index)| HomeWalk {
                    start: walk::Start::Prepare(prepare),
                    rel: String::new(),
                    // An empty cache (a first listing, or a cache removed) vouches for
                    // nothing: the files are not `lstat`ed, and each learns its entry from
                    // the `fstat` of the file as opened.
                    with_stat: WithStat::WhenCached,
                    cache: CacheRef::Lazy(&cells[index]),
                    sink,
                })
                .collect();
            for (index, result) in which.iter().zip(walk_homes(jobs)) {
                results[*index] = Some(result);
            }
        }
        let walked: Vec<Option<WalkedHome>> = parts
            .into_iter()
            .zip(tallies)
            .zip(cells)
            .zip(results)
            .map(|(((mut part, tally), cell), result)| {
                let result = result?;
                part.cache = cell.into_inner().flatten();
                Some(match result {
                    Err(e) => Err(e.kind == confine::Kind::Symlink),
                    Ok(None) => Ok(part),
                    Ok(Some((dir, seen))) => {
                        part.dir = Some(dir);
                        part.walked(seen, tally);
                        Ok(part)
                    }
                })
            })
            .collect();
        let mut parts: Vec<HomePart> = Vec::with_capacity(homes.len());
        for (index, (home, walked)) in homes.iter().zip(walked).enumerate() {
            parts.push(HomePart::default());
            if let Err((label, symlink)) = home {
                extra_unavailable.push(label.clone());
                if *symlink {
                    extra_symlinked.push(label.clone());
                }
                continue;
            }
            match walked {
                None => {}
                Some(Err(symlink)) => {
                    home_failed[index] = true;
                    home_symlinked[index] = symlink;
                }
                Some(Ok(part)) => parts[index] = part,
            }
        }
        // The notes the cache could not vouch for are read on a few threads.
        let unread: Vec<(usize, usize)> = parts
            .iter()
            .enumerate()
            .flat_map(|(h, part)| (0..part.unread.len()).map(move |i| (h, i)))
            .collect();
        let read = process_parallel(&unread, |&(h, i), scratch| {
            let part = &parts[h];
            let file = match part.reach(h, &part.unread[i], &mut scratch.dir) {
                Ok(Some(file)) => file,
                Ok(None) => return (Examined::Skip, None), // gone since the walk
                Err(_) => return (Examined::Failed, None),
            };
            examine(&file, &mut scratch.buf, &plan, part.cache.is_some())
        });
        let mut crumpled: Vec<usize> = parts.iter().map(|p| p.crumpled).collect();
        let mut learned: Vec<(usize, usize, Box<CacheEntry>)> = Vec::new();
        let mut hits: Vec<Hit> = Vec::with_capacity(parts.iter().map(|p| p.hits.len()).sum());
        for (&(h, i), (outcome, entry)) in unread.iter().zip(read) {
            if let Some(entry) = entry {
                learned.push((h, i, entry));
            }
            match outcome {
                Examined::Skip => {}
                Examined::Crumpled => crumpled[h] += 1,
                Examined::Failed => home_failed[h] = true,
                Examined::Hit(meta) => {
                    let rel = parts[h].unread[i].rel;
                    hits.push(Hit::new(meta.updated_at, h, rel, Some(meta)));
                }
            }
        }
        let mut learned_by_home = vec![0usize; parts.len()];
        for &(h, _, _) in &learned {
            learned_by_home[h] += 1;
        }
        for (part, n) in parts.iter_mut().zip(learned_by_home) {
            if let Some(cache) = part.cache.as_mut() {
                cache.reserve(n);
            }
        }
        for (h, i, entry) in learned {
            let part = &mut parts[h];
            let rel = part.path(part.unread[i].rel).to_owned();
            if let Some(cache) = part.cache.as_mut() {
                cache.insert(rel, *entry);
            }
        }
        for (index, part) in parts.iter_mut().enumerate() {
            // The files read and the home's handle are not needed any more.
            part.unread = Vec::new();
            part.dir = None;
            if let Some(cache) = part.cache.as_ref()
                && !home_failed[index]
            {
                cache.save();
            }
        }
        for (index, part) in parts.iter_mut().enumerate() {
            if !home_failed[index] {
                hits.append(&mut part.hits);
            }
        }
        hits.retain(|hit| !home_failed[hit.home as usize]);
        // Recency, then the address; the home breaks the one tie left (a session note whose
        // path looks like another home's address), in home order.
        let display = |hit: &Hit| -> (&str, &str) {
            let h = hit.home as usize;
            (prefixes[h].as_str(), parts[h].path(hit.rel))
        };
        hits.sort_unstable_by(|a, b| {
            (b.secs, b.nanos)
                .cmp(&(a.secs, a.nanos))
                .then_with(|| address_order_parts(display(a), display(b)))
                .then(a.home.cmp(&b.home))
        });
        let mut status = Status::default();
        for (index, home) in homes.iter().enumerate() {
            if home_failed[index] {
                let label = home
                    .as_ref()
                    .map(Home::label)
                    .unwrap_or_else(|(l, _)| l.clone());
                if home_symlinked[index] {
                    status.homes_symlinked.push(label.clone());
                }
                status.homes_unavailable.push(label);
            } else {
                status.crumpled_excluded += crumpled[index];
            }
        }
        status.homes_unavailable.extend(extra_unavailable);
        status.homes_symlinked.extend(extra_symlinked);
        let failed = home_failed.iter().any(|f| *f) || !status.homes_unavailable.is_empty();
        Ok(NoteList {
            status,
            failed,
            homes: homes.into_iter().map(Result::ok).collect(),
            prefixes,
            parts,
            hits,
        })
    }

    /// The homes a plan reads; an unreadable namespace is `Err(label)`.
    fn homes_of(&self, plan: &Plan, query: &Query) -> Result<Vec<HomeOrUnreadable>, NoteError> {
        Ok(match &plan.homes {
            HomeSelection::Homes(homes) => {
                if query.scope == Some(Scope::Session) && self.identity.session_id.is_none() {
                    return Err(no_session());
                }
                homes.iter().cloned().map(Ok).collect()
            }
            HomeSelection::Namespace(scope) => {
                let (dir, label) = match scope {
                    Scope::Agent => ("agents", "@agents"),
                    _ => ("models", "@models"),
                };
                match slug_dirs(&self.identity.root, dir) {
                    Ok(slugs) => slugs
                        .into_iter()
                        .map(|slug| {
                            Ok(Home {
                                scope: *scope,
                                who: Some(slug),
                            })
                        })
                        .collect(),
                    Err(e) => vec![Err((label.to_owned(), e.kind == confine::Kind::Symlink))],
                }
            }
        })
    }
}

/// One home walked for a scan, or whether the failure was a symlink. `None` (in
/// `Option<WalkedHome>`) for a home with no directory.
type WalkedHome = Result<HomePart, bool>;

/// A home to read, or a namespace that could not be enumerated: `(label, is a symlink)`.
type HomeOrUnreadable = Result<Home, (String, bool)>;

/// What the walk of one home found for a listing.
#[derive(Default)]
struct HomePart {
    /// The home's directory (to reach the notes to read again).
    dir: Option<Arc<Dir>>,
    cache: Option<HomeCache>,
    /// The path in the home of every note file walked, one after another; hits and unread
    /// files point into it.
    paths: String,
    /// Notes the cache vouched for that are listed.
    hits: Vec<Hit>,
    /// Notes to read (the cache could not vouch for them). They hold no directory handle:
    /// holding one per directory with files left to read grew the descriptor table past the
    /// soft open-file limit in a home of many directories, and each growth while other
    /// threads run waits for an RCU grace period.
    unread: Vec<Unread>,
    /// Crumpled notes the cache vouched for (skipped outside wastebasket mode).
    crumpled: usize,
}

impl HomePart {
    fn path(&self, (at, end): (u32, u32)) -> &str {
        &self.paths[at as usize..end as usize]
    }

    /// The note `unread` of this home (number `home`) as a file to open: its directory is
    /// reached again from the home by path handles (`last` keeps the one reached before, as
    /// the notes of one directory come one after another). `None` when a directory on the way
    /// is gone or became a symlink since the walk (as if the note were gone).
    fn reach(
        &self,
        home: usize,
        unread: &Unread,
        last: &mut Option<(usize, String, Arc<Dir>)>,
    ) -> Result<Option<NoteFile>, confine::Error> {
        let rel = self.path(unread.rel);
        let name_at = unread.name_at as usize;
        let parent = &rel[..name_at.saturating_sub(1)];
        let Some(home_dir) = &self.dir else {
            return Ok(None);
        };
        let dir = match last {
            Some((h, p, d)) if *h == home && p == parent => Arc::clone(d),
            _ if parent.is_empty() => Arc::clone(home_dir),
            _ => {
                let mut dir: Option<Dir> = None;
                for name in parent.split('/') {
                    let from: &Dir = dir.as_ref().unwrap_or(home_dir);
                    match from.child_handle(OsStr::new(name)) {
                        Ok(Some(next)) => dir = Some(next),
                        Ok(None) => return Ok(None),
                        Err(e) if e.kind == confine::Kind::Symlink => return Ok(None),
                        Err(e) => return Err(e),
                    }
                }
                match dir {
                    Some(dir) => Arc::new(dir),
                    None => return Ok(None),
                }
            }
        };
        *last = Some((home, parent.to_owned(), Arc::clone(&dir)));
        Ok(Some(NoteFile::new(&dir, rel, name_at, unread.stat)))
    }

    /// The walk's sink for this home (number `home`, address prefix `prefix`), and the cache
    /// it consults: every note file is recorded; one the cache vouches for is decided at once
    /// (no handle kept), the others are kept to be read. Nothing depends on the order the
    /// files come in (hits are sorted by a total order later, files to read are read by
    /// position).
    fn sink<'a>(
        &'a mut self,
        tally: &'a mut Tally,
        cache: CacheRef<'a>,
        home: usize,
        prefix: &'a str,
        plan: &'a Plan,
    ) -> impl FnMut(&Arc<Dir>, &str, usize, Option<FileStat>) + Send + 'a {
        let HomePart {
            paths,
            hits,
            unread,
            crumpled,
            ..
        } = self;
        move |dir: &Arc<Dir>, rel: &str, name_at: usize, stat: Option<FileStat>| {
            let cached = cache.get();
            if tally.ends.is_empty()
                && let Some(cache) = cached
            {
                tally.ends.reserve(cache.len() + 16);
            }
            let at = paths.len() as u32;
            paths.push_str(rel);
            let end = paths.len() as u32;
            tally.ends.push(end);
            let entry = match (cached, &stat) {
                (Some(cache), Some(stat)) => cache.get_near(rel, stat, &mut tally.near),
                _ => None,
            };
            if entry.is_some() || cached.is_some_and(|c| c.contains(rel)) {
                tally.present += 1;
            }
            if let Some(re) = &plan.pattern {
                let display = &mut tally.display;
                display.clear();
                display.push_str(prefix);
                display.push_str(rel);
                if !re.is_match(display) {
                    return;
                }
            }
            let name = OsStr::new(&rel[name_at..]);
            match entry.and_then(|e| from_cache(e, plan, dir, name)) {
                Some(Ranked::Skip) => {}
                Some(Ranked::Crumpled) => *crumpled += 1,
                Some(Ranked::Hit(updated, meta)) => {
                    hits.push(Hit::new(updated, home, (at, end), meta));
                }
                None => unread.push(Unread {
                    rel: (at, end),
                    name_at: name_at as u32,
                    stat,
                }),
            }
        }
    }

    /// After the walk: what the cache keeps of the home's directories, and forgetting the
    /// files that are gone (only when some are: no set is built otherwise).
    fn walked(&mut self, seen: DirsSeen, tally: Tally) {
        let HomePart { cache, paths, .. } = self;
        if let Some(cache) = cache.as_mut() {
            cache.dirs_walked(seen);
            if tally.present < cache.len() {
                let mut at = 0usize;
                let seen: rustc_hash::FxHashSet<&str> = tally
                    .ends
                    .iter()
                    .map(|&end| {
                        let path = &paths[at..end as usize];
                        at = end as usize;
                        path
                    })
                    .collect();
                cache.retain_seen(&seen);
            }
        }
    }
}

/// What a scan's walk counts for one home besides its part: where each walked path ends in
/// the part's path text, how many files the cache has an entry for, and the address being
/// tested against the glob.
#[derive(Default)]
struct Tally {
    ends: Vec<u32>,
    present: usize,
    display: String,
    /// Where to look first in the cache for the next file (`HomeCache::get_near`).
    near: usize,
}

/// A note a listing must read: its path in its home's path text, where its name starts, and
/// its `lstat` from the walk (with the cache).
struct Unread {
    rel: (u32, u32),
    name_at: u32,
    stat: Option<FileStat>,
}

/// A listed note before its row is built: its ranking key (`updatedAt` as seconds and
/// nanoseconds since the epoch), its home and path, and its metadata unless its cache entry
/// holds it.
struct Hit {
    secs: i64,
    nanos: u32,
    home: u32,
    rel: (u32, u32),
    meta: Option<Box<NoteMeta>>,
}

impl Hit {
    fn new(
        updated: DateTime<FixedOffset>,
        home: usize,
        rel: (u32, u32),
        meta: Option<Box<NoteMeta>>,
    ) -> Hit {
        Hit {
            secs: updated.timestamp(),
            nanos: updated.timestamp_subsec_nanos(),
            home: home as u32,
            rel,
            meta,
        }
    }
}

/// [`crate::notes::query::address_order`] of two addresses given as (prefix, path), without
/// joining them.
fn address_order_parts(
    (a_prefix, a_rel): (&str, &str),
    (b_prefix, b_rel): (&str, &str),
) -> std::cmp::Ordering {
    a_prefix
        .chars()
        .chain(a_rel.chars())
        .flat_map(char::to_lowercase)
        .cmp(
            b_prefix
                .chars()
                .chain(b_rel.chars())
                .flat_map(char::to_lowercase),
        )
        .then_with(|| {
            a_prefix
                .bytes()
                .chain(a_rel.bytes())
                .cmp(b_prefix.bytes().chain(b_rel.bytes()))
        })
}

/// A listing in recency order (most recently updated first; ties by address, then home),
/// whose rows are built only when asked for: a listing shows a few hundred rows of
/// thousands of notes.
pub struct NoteList {
    /// What the listing could not see.
    pub status: Status,
    /// Some home (or namespace) could not be read.
    failed: bool,
    homes: Vec<Option<Home>>,
    prefixes: Vec<String>,
    parts: Vec<HomePart>,
    hits: Vec<Hit>,
}

impl std::fmt::Debug for NoteList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoteList")
            .field("status", &self.status)
            .field("len", &self.hits.len())
            .finish_non_exhaustive()
    }
}

impl NoteList {
    /// How many notes are listed.
    pub fn len(&self) -> usize {
        self.hits.len()
    }

    /// Whether no note is listed.
    pub fn is_empty(&self) -> bool {
        self.hits.is_empty()
    }

    /// Whether some home (or namespace) could not be read (see `status`).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// The `i`-th row (0: the most recently updated note).
    pub fn row(&self, i: usize) -> Option<NoteRow> {
        let hit = self.hits.get(i)?;
        let home = hit.home as usize;
        let part = &self.parts[home];
        let vpath = part.path(hit.rel);
        let meta = match &hit.meta {
            Some(meta) => NoteMeta::clone(meta),
            // Decoded once already while ranking: the same bytes decode the same again.
            None => part.cache.as_ref()?.entry_of(vpath)?.facts()?.meta?,
        };
        Some(NoteRow {
            address: Address {
                home: self.homes[home].clone()?,
                vpath: vpath.to_owned(),
            },
            display: format!("{}{vpath}", self.prefixes[home]),
            meta,
        })
    }

    /// The rows in order, each built as it is taken.
    pub fn rows(&self) -> impl Iterator<Item = NoteRow> + '_ {
        (0..self.hits.len()).filter_map(|i| self.row(i))
    }
}

fn strict<T>((rows, failed): (Vec<T>, bool)) -> Result<Vec<T>, NoteError> {
    if failed {
        return Err(NoteError::io(io::Error::other(
            "a notes home could not be read",
        )));
    }
    Ok(rows)
}

enum Examined {
    Skip,
    Crumpled,
    Failed,
    Hit(Box<NoteMeta>),
}

/// A note ranked from its cache entry: skipped, crumpled, or listed with its `updatedAt` (and
/// its metadata when the entry does not hold it decoded).
enum Ranked {
    Skip,
    Crumpled,
    Hit(DateTime<FixedOffset>, Option<Box<NoteMeta>>),
}

/// A note's outcome from its valid cache entry (listings), without opening the file (`name`
/// in `dir`); `None` when the cache cannot vouch for it (a record that does not decode).
fn from_cache(entry: EntryRef<'_>, plan: &Plan, dir: &Dir, name: &OsStr) -> Option<Ranked> {
    // The crumpled test is a flag of the entry: nothing is decoded for a skipped note.
    let crumpled = entry.list_crumpled();
    if crumpled != plan.wastebasket {
        return Some(if crumpled {
            Ranked::Crumpled
        } else {
            Ranked::Skip
        });
    }
    let facts = entry.facts()?;
    Some(match facts.meta {
        Some(meta) => Ranked::Hit(meta.updated_at, None),
        None => match examine_bytes(&facts.block, dir, name, plan) {
            Examined::Hit(meta) => Ranked::Hit(meta.updated_at, Some(meta)),
            Examined::Crumpled => Ranked::Crumpled,
            Examined::Skip | Examined::Failed => Ranked::Skip,
        },
    })
}

/// Examine one note the cache could not answer for, from its file; with a cache (`learn`,
/// listings), also what the cache should learn. Learning decodes the frontmatter block once
/// and answers from those facts, exactly as a later listing answers from the cache entry.
fn examine(
    file: &NoteFile,
    buf: &mut Vec<u8>,
    plan: &Plan,
    learn: bool,
) -> (Examined, Option<Box<CacheEntry>>) {
    // A listing needs only the frontmatter block: read the head of the file.
    let opened = match read_head_stat(file, buf) {
        Ok(opened) => opened,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (Examined::Skip, None),
        Err(_) => return (Examined::Failed, None),
    };
    let name = file.name();
    // Learned only when the file opened is still the one the walk `lstat`ed (same identity,
    // size and times): the entry is kept under that `stat`, and a file replaced or changed
    // in between (or reached through a directory that was replaced) is read again next time.
    // A file the walk did not `lstat` (an empty cache) is kept under the `fstat` taken when it
    // was opened, before it was read: a change while it is read gives it a newer `stat`.
    let learned_stat = if learn {
        stat_to_learn(file.stat, opened)
    } else {
        None
    };
    if let Some(stat) = learned_stat
        && let Some(block) = frontmatter::block_prefix(buf)
    {
        let facts = Facts::of_block(block, &file.dir, name);
        let outcome = if facts.list_crumpled != plan.wastebasket {
            if facts.list_crumpled {
                Examined::Crumpled
            } else {
                Examined::Skip
            }
        } else {
            match &facts.meta {
                Some(meta) => Examined::Hit(Box::new(meta.clone())),
                None => examine_bytes(&facts.block, &file.dir, name, plan),
            }
        };
        let entry = CacheEntry {
            stat,
            facts,
            chars: None,
        };
        return (outcome, Some(Box::new(entry)));
    }
    (examine_bytes(buf, &file.dir, name, plan), None)
}

/// Examine the head `bytes` of the note file `name` in `dir` (or the frontmatter block the
/// cache holds for it: the same bytes give the same answer).
fn examine_bytes(bytes: &[u8], dir: &Dir, name: &OsStr, plan: &Plan) -> Examined {
    let crumpled = frontmatter::block_has_key(bytes, "crumpledAt");
    if crumpled != plan.wastebasket {
        return if crumpled {
            Examined::Crumpled
        } else {
            Examined::Skip
        };
    }
    let fields = frontmatter::fields_of_bytes(bytes);
    let fallback = stamp_fallback(&fields, dir, name, epoch());
    Examined::Hit(Box::new(NoteMeta::from_fields(&fields, fallback)))
}

/// How much of a note a listing reads first; frontmatter blocks are a few hundred bytes.
pub(crate) const HEAD_BYTES: usize = 4096;

/// Read the head of a file into `buf`: at least its frontmatter block (or the whole file when
/// the block does not end within [`HEAD_BYTES`]). One `read` for a typical note instead of
/// reading a long body a listing (or the boot index) never looks at.
pub(crate) fn read_head_into(file: &NoteFile, buf: &mut Vec<u8>) -> io::Result<()> {
    read_head_stat(file, buf).map(drop)
}

/// [`read_head_into`], returning the `stat` of the file as opened.
pub(crate) fn read_head_stat(file: &NoteFile, buf: &mut Vec<u8>) -> io::Result<FileStat> {
    let (mut file, stat) = file
        .dir
        .open_file_stat(file.name())?
        .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
    let stat = FileStat::of_stat(&stat);
    let size = stat.size;
    buf.clear();
    let head = usize::try_from(size).map_or(HEAD_BYTES, |s| s.min(HEAD_BYTES));
    read_up_to(&mut file, buf, 0, head as u64)?;
    if buf.len() < HEAD_BYTES || frontmatter::block_prefix(buf).is_some() {
        return Ok(stat); // the whole file (as opened), or its block is in the head
    }
    // No closed block in the head: read the rest so parsing sees what it would.
    let len = buf.len();
    read_up_to(&mut file, buf, len, size)?;
    Ok(stat)
}

/// The `stat` a cache entry learned from a file read now is kept under: the walk's `lstat`
/// when the file opened still matches it (otherwise nothing is learned: it changed or was
/// replaced in between), or the `fstat` as opened when the walk did not `lstat` it. Listings
/// and boot both learn by this rule.
pub(crate) fn stat_to_learn(walked: Option<FileStat>, opened: FileStat) -> Option<FileStat> {
    match walked {
        Some(walked) => (walked == opened).then_some(walked),
        None => Some(opened),
    }
}

/// Append to the first `len` bytes of `buf` until it holds `size` bytes or the file ends, with
/// plain `read` calls.
fn read_up_to(file: &mut fs::File, buf: &mut Vec<u8>, mut len: usize, size: u64) -> io::Result<()> {
    let want = usize::try_from(size).unwrap_or(usize::MAX);
    while len < want {
        let chunk = (want - len).min(1 << 20);
        if buf.len() < len + chunk {
            buf.resize(len + chunk, 0);
        }
        match file.read(&mut buf[len..len + chunk]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                buf.truncate(len);
                return Err(e);
            }
        }
    }
    buf.truncate(len);
    Ok(())
}

/// What one [`process_parallel`] worker reuses from file to file: its read buffer, and the
/// directory it reached last (home number, path in the home, handle).
#[derive(Default)]
struct Scratch {
    buf: Vec<u8>,
    dir: Option<(usize, String, Arc<Dir>)>,
}

/// Run `f` over `items` on a few threads (files are independent); results keep item order.
#[allow(
    clippy::expect_used,
    reason = "scan workers do not panic because they only read"
)]
fn process_parallel<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T, &mut Scratch) -> R + Sync,
) -> Vec<R> {
    let threads = crate::threads::worker_threads();
    if threads <= 1 || items.len() < 64 {
        let mut scratch = Scratch::default();
        return items.iter().map(|item| f(item, &mut scratch)).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                let f = &f;
                scope.spawn(move || {
                    let mut scratch = Scratch {
                        buf: Vec::with_capacity(8192),
                        dir: None,
                    };
                    part.iter()
                        .map(|item| f(item, &mut scratch))
                        .collect::<Vec<R>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .expect("scan workers do not panic because they only read")
            })
            .collect()
    })
}

/// One note file found by [`walk`]: its path relative to the home and where to open it.
#[derive(Debug, Clone)]
pub(crate) struct NoteFile {
    /// `a/b.md`, relative to the home.
    pub rel: String,
    /// The directory holding it (reached without following symlinks).
    pub dir: Arc<Dir>,
    /// Where its file name starts in `rel`.
    name_at: usize,
    /// Its `lstat` (not following it), when the walk was asked for it; `None` for a file that
    /// vanished meanwhile.
    pub stat: Option<FileStat>,
}

impl NoteFile {
    /// The file at `rel` in its home (its name from `name_at`), in `dir`.
    pub fn new(dir: &Arc<Dir>, rel: &str, name_at: usize, stat: Option<FileStat>) -> NoteFile {
        NoteFile {
            rel: rel.to_owned(),
            dir: Arc::clone(dir),
            name_at,
            stat,
        }
    }

    /// Its file name in `dir`.
    pub fn name(&self) -> &OsStr {
        OsStr::new(&self.rel[self.name_at..])
    }

    /// Open it for reading (never following a symlink); a vanished file is `NotFound`.
    pub fn open(&self) -> io::Result<fs::File> {
        Ok(self.open_sized()?.0)
    }

    /// [`NoteFile::open`], with its size when opened.
    pub fn open_sized(&self) -> io::Result<(fs::File, u64)> {
        self.dir
            .open_file_sized(self.name())?
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
}

/// Open a home directory under `root` without following a symlink anywhere below the root:
/// `None` when the root or the home does not exist; a symlink is a `Kind::Symlink` error.
pub(crate) fn open_home<S: AsRef<OsStr>>(
    root: &Path,
    components: &[S],
) -> Result<Option<Dir>, confine::Error> {
    match Dir::open_root(root)? {
        Some(root) => root.walk(components),
        None => Ok(None),
    }
}

/// For tests: the note files under `dir` as (`a/b.md`, path), through [`walk_files`].
#[cfg(test)]
pub(crate) fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) -> io::Result<()> {
    if let Some(opened) = Dir::open_root(dir)? {
        let mut files = Vec::new();
        walk_files(Arc::new(opened), rel, false, &mut files)?;
        out.extend(files.into_iter().map(|f| {
            let path = dir.join(&f.rel);
            (f.rel, path)
        }));
    }
    Ok(())
}

/// Regular `.md` files under `dir` (symlinks never followed), collected through
/// [`walk_each`] (for tests and references); with `with_stat`, each with its `lstat`.
#[cfg(test)]
pub(crate) fn walk_files(
    dir: Arc<Dir>,
    rel: &str,
    with_stat: bool,
    out: &mut Vec<NoteFile>,
) -> Result<(), confine::Error> {
    walk_each(dir, rel, with_stat, None, &mut |dir, rel, name_at, stat| {
        out.push(NoteFile::new(dir, rel, name_at, stat));
    })
    .map(drop)
}

pub(crate) use walk::{CacheRef, HomeWalk, WalkSink, WithStat, for_each_parallel, walk_homes};

/// Walk the note files under `dir` (at `rel`), calling `sink` for each (see
/// [`walk::walk_homes`], which walks several homes at once): returns what the cache should
/// remember.
pub(crate) fn walk_each(
    dir: Arc<Dir>,
    rel: &str,
    with_stat: bool,
    cache: Option<&HomeCache>,
    sink: &mut WalkSink<'_>,
) -> Result<DirsSeen, confine::Error> {
    let with_stat = if with_stat {
        WithStat::All
    } else {
        WithStat::None
    };
    let walked = walk_homes(vec![HomeWalk {
        start: walk::Start::Open(dir),
        rel: rel.to_owned(),
        with_stat,
        cache: CacheRef::Ready(cache),
        sink,
    }])
    .pop()
    .unwrap_or(Ok(None))?;
    Ok(walked.map(|(_, seen)| seen).unwrap_or_default())
}

/// Append `name` to the directory path `path` (emptiness: the home itself); returns where
/// the name starts.
fn push_name(path: &mut String, name: &str) -> usize {
    if !path.is_empty() {
        path.push('/');
    }
    path.push_str(name);
    path.len() - name.len()
}

/// Slug-named entries of `<root>/<namespace>` that may be homes (directories, and symlinks,
/// which the listing then reports unavailable), sorted; a missing namespace has none.
fn slug_dirs(root: &Path, namespace: &str) -> Result<Vec<String>, confine::Error> {
    let Some(dir) = open_home(root, &[namespace])? else {
        return Ok(Vec::new());
    };
    let mut slugs: Vec<String> = dir
        .entries()?
        .into_iter()
        .filter(|(_, kind)| matches!(kind, EntryKind::Dir | EntryKind::Symlink))
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| is_slug(name))
        .collect();
    slugs.sort();
    Ok(slugs)
}

/// A note's place: its directory (reached without following symlinks) and its file name.
struct Place {
    dir: Dir,
    name: OsString,
}

impl Place {
    /// The note's text (invalid UTF-8 replaced); `None` when it does not exist.
    fn read(&self) -> Result<Option<String>, NoteError> {
        Ok(self.dir.read(&self.name).map_err(confined)?.map(|bytes| {
            match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            }
        }))
    }

    /// Replace the note atomically, in its directory handle.
    fn write(&self, text: &str) -> Result<(), NoteError> {
        self.dir
            .write_atomic(&self.name, text.as_bytes())
            .map_err(confined)
    }
}

/// A confinement failure as a notes error: a symlink under the root is `path_escapes_root`;
/// anything else is an `io_error` whose cause (for the stderr line) names the operation and
/// the path.
fn confined(e: confine::Error) -> NoteError {
    match e.kind {
        confine::Kind::Symlink => err(
            ErrorKind::PathEscapesRoot,
            "address goes through a symlink under the notes root; symlinks are never followed: refused",
        ),
        _ => NoteError::io(e.into()),
    }
}

fn escape_error() -> NoteError {
    err(
        ErrorKind::PathEscapesRoot,
        "address resolves outside the notes root (through a symlink): refused",
    )
}

fn not_found() -> NoteError {
    err(ErrorKind::NotFound, "note not found")
}

/// Pending reads taken from the access journal for one note.
struct Pending {
    rel: String,
    entries: Vec<Entry>,
}

/// Parse a note and fold the pending reads that belong to it (same raw `createdAt`), exactly
/// as the reads would have left the file; the flag says whether any read was folded.
fn parse_with_pending(
    raw: &str,
    place: &Place,
    entries: &[Entry],
    now: DateTime<FixedOffset>,
) -> (NoteMeta, String, bool) {
    let parsed = frontmatter::parse(raw);
    let reads = access::matching(entries, parsed.fields.get("createdAt"));
    // A timestamp missing from the file was filled by the first read that rewrote it (from
    // the file's time, which reads no longer change, in that read's offset).
    let first = access::first_time(&reads).unwrap_or(now);
    let fallback = stamp_fallback(&parsed.fields, &place.dir, &place.name, first);
    let mut meta = NoteMeta::from_fields(&parsed.fields, fallback);
    access::apply(&mut meta, &reads);
    (meta, parsed.body.into_owned(), !reads.is_empty())
}

/// Fold every pending read of the access journal of `root` (kept under `cache_dir`) into its
/// note, each under the note's lock, with an atomic durable write: after this the files carry
/// all access metadata (`dream` calls it before its baseline). Reads of notes that no longer
/// exist, or that were replaced by a different note (another `createdAt`), are dropped.
/// Returns how many notes were rewritten.
pub fn fold_pending_access(root: &Path, cache_dir: &Path) -> Result<usize, NoteError> {
    let journal = Journal::new(&root_cache_dir(cache_dir, root));
    let mut folded = 0;
    for rel in journal.pending_paths()? {
        let safe = Path::new(&rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
            && rel.ends_with(".md");
        if !safe {
            journal.take(&rel)?;
            continue;
        }
        // Reached from the root's handle without following a symlink, as every note is.
        let mut dirs: Vec<&str> = rel.split('/').collect();
        let name = OsString::from(dirs.pop().unwrap_or_default());
        let opened = Dir::open_root(root).and_then(|r| match r {
            Some(r) => r.walk(&dirs),
            None => Ok(None),
        });
        let place = match opened {
            Ok(Some(dir)) => Place { dir, name },
            Ok(None) | Err(_) => {
                journal.take(&rel)?;
                continue;
            }
        };
        let Some(_lock) = place.dir.lock_existing(&place.name).map_err(confined)? else {
            journal.take(&rel)?;
            continue;
        };
        let entries = journal.take(&rel)?;
        let Some(raw) = place.read()? else {
            continue;
        };
        let (meta, body, changed) = parse_with_pending(&raw, &place, &entries, epoch());
        if !changed {
            continue;
        }
        let text = frontmatter::serialize(&meta.to_fields(), &body);
        if let Err(e) = place.write(&text) {
            journal.restore(&rel, &entries);
            return Err(e);
        }
        folded += 1;
    }
    Ok(folded)
}

fn epoch() -> DateTime<FixedOffset> {
    DateTime::UNIX_EPOCH.fixed_offset()
}

/// Parse a note file read from `path`; a timestamp it lacks (or that is not a date) takes the
/// file's modification time, the truest date the filesystem has for a hand-written note.
fn parse_note_at(raw: &str, place: &Place, now: DateTime<FixedOffset>) -> (NoteMeta, String) {
    let parsed = frontmatter::parse(raw);
    let fallback = stamp_fallback(&parsed.fields, &place.dir, &place.name, now);
    (
        NoteMeta::from_fields(&parsed.fields, fallback),
        parsed.body.into_owned(),
    )
}

/// What a missing or unreadable timestamp of the note at `path` becomes: the file's
/// modification time (in `otherwise`'s offset), or `otherwise` when the file cannot be
/// stat'ed. The stat happens only when some timestamp needs it, so well-formed notes cost
/// nothing extra.
pub(crate) fn stamp_fallback(
    fields: &serde_json::Map<String, serde_json::Value>,
    dir: &Dir,
    name: &OsStr,
    otherwise: DateTime<FixedOffset>,
) -> DateTime<FixedOffset> {
    if NoteMeta::has_all_stamps(fields) {
        return otherwise;
    }
    file_time_or(dir, name, otherwise)
}

/// The modification time of `name` in `dir` (in `otherwise`'s offset), or `otherwise` when the
/// file cannot be stat'ed.
pub(crate) fn file_time_or(
    dir: &Dir,
    name: &OsStr,
    otherwise: DateTime<FixedOffset>,
) -> DateTime<FixedOffset> {
    dir.mtime_ms(name)
        .ok()
        .flatten()
        .and_then(DateTime::from_timestamp_millis)
        .map(|t| t.with_timezone(otherwise.offset()))
        .unwrap_or(otherwise)
}

/// Apply edits in order against the evolving body; returns the new body and how many edits
/// changed something.
pub fn apply_edits(
    body: &str,
    edits: &[Edit],
    replace_all: bool,
) -> Result<(String, usize), NoteError> {
    let mut next = body.to_owned();
    let mut applied = 0;
    for (i, edit) in edits.iter().enumerate() {
        if edit.old_text.is_empty() {
            return Err(err(
                ErrorKind::NoMatch,
                format!("edit {i}: oldText must be a non-empty string"),
            )
            .with_edit(i));
        }
        let starts: Vec<usize> = next.match_indices(&edit.old_text).map(|(s, _)| s).collect();
        if starts.is_empty() {
            return Err(err(
                ErrorKind::NoMatch,
                format!("edit {i}: oldText does not occur in the note body"),
            )
            .with_edit(i));
        }
        if starts.len() > 1 && !replace_all {
            let mut line_numbers = Vec::with_capacity(starts.len());
            let (mut line, mut scanned) = (1usize, 0usize);
            for &start in &starts {
                line += memchr::memchr_iter(b'\n', &next.as_bytes()[scanned..start]).count();
                scanned = start;
                line_numbers.push(line);
            }
            let sample: Vec<String> = line_numbers.iter().take(8).map(|n| n.to_string()).collect();
            let more = if line_numbers.len() > 8 {
                format!(", and {} more", line_numbers.len() - 8)
            } else {
                String::new()
            };
            let mut e = err(
                ErrorKind::AmbiguousEdit,
                format!(
                    "edit {i}: oldText occurs {} times (lines {}{more}); pass replace_all to replace every occurrence",
                    starts.len(),
                    sample.join(", ")
                ),
            )
            .with_edit(i);
            e.line_numbers = line_numbers;
            return Err(e);
        }
        if edit.old_text != edit.new_text {
            applied += 1;
        }
        next = if replace_all {
            next.replace(&edit.old_text, &edit.new_text)
        } else {
            let start = starts[0];
            let mut out = String::with_capacity(next.len() + edit.new_text.len());
            out.push_str(&next[..start]);
            out.push_str(&edit.new_text);
            out.push_str(&next[start + edit.old_text.len()..]);
            out
        };
    }
    Ok((next, applied))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A listing learns a cache entry only for the file the walk `lstat`ed: when the file as
    /// opened has another `stat` (changed or replaced in between), the answer is what was read
    /// but nothing is cached under the walk's `stat`. A file the walk did not `lstat` is
    /// learned under its `fstat` as opened.
    #[test]
    fn a_file_changed_since_its_lstat_is_answered_but_not_learned() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(
            tmp.path().join("a.md"),
            "---\nupdatedAt: 2026-01-01T00:00:00.000+00:00\n---\n\nbody",
        )
        .unwrap();
        let root = Arc::new(Dir::open_root(tmp.path()).unwrap().unwrap());
        let walked = FileStat::of_stat(&root.lstat(OsStr::new("a.md")).unwrap().unwrap());
        let plan = Plan {
            homes: HomeSelection::Homes(Vec::new()),
            pattern: None,
            wastebasket: false,
        };
        let mut buf = Vec::new();
        let same = NoteFile::new(&root, "a.md", 0, Some(walked));
        let (outcome, entry) = examine(&same, &mut buf, &plan, true);
        assert!(matches!(outcome, Examined::Hit(_)));
        assert_eq!(entry.map(|e| e.stat), Some(walked));
        // Not `lstat`ed by the walk (an empty cache): learned under the `fstat` as opened.
        let unwalked = NoteFile::new(&root, "a.md", 0, None);
        let (_, entry) = examine(&unwalked, &mut buf, &plan, true);
        assert_eq!(entry.map(|e| e.stat), Some(walked));
        let (_, entry) = examine(&unwalked, &mut buf, &plan, false);
        assert!(entry.is_none(), "nothing is learned without a cache");
        for stale in [
            FileStat {
                size: walked.size + 1,
                ..walked
            },
            FileStat {
                ino: walked.ino + 1,
                ..walked
            },
            FileStat {
                ctime_nsec: (walked.ctime_nsec + 1) % 1_000_000_000,
                ..walked
            },
        ] {
            let file = NoteFile::new(&root, "a.md", 0, Some(stale));
            let (outcome, entry) = examine(&file, &mut buf, &plan, true);
            match outcome {
                Examined::Hit(meta) => assert_eq!(meta.updated_at.timestamp(), 1_767_225_600),
                _ => panic!("the note is listed"),
            }
            assert!(
                entry.is_none(),
                "learned under a stat that is not the file's"
            );
        }
    }

    fn now() -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339("2026-01-01T00:00:00.000+00:00").unwrap()
    }

    fn store(dir: &Path) -> Store {
        Store::new(Identity::new(dir, Some("s1"), "demo-1a2b3c4d", "ann", "gpt").unwrap())
    }

    #[test]
    fn edits_apply_in_order_and_report_ambiguity_lines() {
        let edit = |o: &str, n: &str| Edit {
            old_text: o.into(),
            new_text: n.into(),
        };
        let (out, applied) =
            apply_edits("a b a", &[edit("b", "c"), edit("c", "c")], false).unwrap();
        assert_eq!((out.as_str(), applied), ("a c a", 1));
        let e = apply_edits("x\ny x\n\nx", &[edit("x", "z")], false).unwrap_err();
        assert_eq!(e.code(), "ambiguous_edit");
        assert_eq!(e.line_numbers, [1, 2, 4]);
        assert_eq!(e.edit_index, Some(0));
        let (out, _) = apply_edits("x\ny x", &[edit("x", "z")], true).unwrap();
        assert_eq!(out, "z\ny z");
        assert_eq!(
            apply_edits("a", &[edit("", "b")], false)
                .unwrap_err()
                .code(),
            "no_match"
        );
    }

    #[test]
    fn symlinks_out_of_the_root_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("human")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("human/out")).unwrap();
        std::os::unix::fs::symlink(root.path().join("human"), root.path().join("project")).unwrap();
        let store = store(root.path());
        let e = store.write("@human/out/x", "b", None, now()).unwrap_err();
        assert_eq!(e.code(), "path_escapes_root");
        assert!(store.read("@human/out/x", now()).is_err());
        assert!(fs::read_dir(outside.path()).unwrap().next().is_none());
    }

    /// What one step of a random session does to a store.
    #[derive(Debug, Clone)]
    enum Op {
        Write(usize, String),
        /// A read; `true`: the journalled store reads with `read_skipping_pending`.
        Read(usize, bool),
        Update(usize, String),
        Crumple(usize),
        Rename(usize, usize),
        /// Another program writes a new note file (its own `createdAt`; `{}` is replaced).
        Hand(usize, String),
        Delete(usize),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        let name = 0usize..4;
        prop_oneof![
            (name.clone(), "[a-c ]{0,6}").prop_map(|(i, c)| Op::Write(i, c)),
            (name.clone(), any::<bool>()).prop_map(|(i, skip)| Op::Read(i, skip)),
            (name.clone(), any::<bool>()).prop_map(|(i, skip)| Op::Read(i, skip)),
            (name.clone(), "[a-c]{1,3}").prop_map(|(i, c)| Op::Update(i, c)),
            name.clone().prop_map(Op::Crumple),
            (name.clone(), name.clone()).prop_map(|(a, b)| Op::Rename(a, b)),
            (
                name.clone(),
                prop_oneof![
                    Just("---\norigin: user\ncreatedAt: {}\n---\n\nhand".to_owned()),
                    Just("---\ncreatedAt: {}\naccessCount: 2.5\n---\n\nx".to_owned()),
                ]
            )
                .prop_map(|(i, c)| Op::Hand(i, c)),
            name.prop_map(Op::Delete),
        ]
    }

    fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut files = Vec::new();
        let dir = Dir::open_root(root).unwrap().unwrap();
        walk_files(Arc::new(dir), "", false, &mut files).unwrap();
        files
            .into_iter()
            .map(|f| {
                let bytes = fs::read(root.join(&f.rel)).unwrap();
                (f.rel, bytes)
            })
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(40))]
        /// Deferring access bumps to the journal changes when they reach the file, never what:
        /// after the same operations and a fold, every file is byte-identical to the store that
        /// rewrote notes on every read, and every read returned the same metadata.
        #[test]
        fn deferred_access_bumps_fold_to_the_same_files(ops in proptest::collection::vec(op(), 1..40)) {
            let eager_dir = tempfile::tempdir().unwrap();
            let lazy_dir = tempfile::tempdir().unwrap();
            let cache = tempfile::tempdir().unwrap();
            let eager = store(eager_dir.path());
            let lazy = store(lazy_dir.path()).with_cache_dir(Some(cache.path()));
            let names = ["@human/a", "@human/d/b", "@self/c", "n"];
            // Hand-written notes without createdAt, present from the start.
            for root in [eager_dir.path(), lazy_dir.path()] {
                fs::create_dir_all(root.join("human/d")).unwrap();
                fs::write(root.join("human/d/b.md"), "---\norigin: user\n---\n\nhand").unwrap();
                fs::create_dir_all(root.join("pi/session/s1")).unwrap();
                fs::write(root.join("pi/session/s1/n.md"), "plain").unwrap();
                // Missing stamps fall back to the file time: the same in both trees.
                for hand in ["human/d/b.md", "pi/session/s1/n.md"] {
                    fs::File::options().write(true).open(root.join(hand)).unwrap()
                        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600))
                        .unwrap();
                }
            }
            for (step, op) in ops.iter().enumerate() {
                let now = now() + chrono::Duration::milliseconds(1500 * step as i64);
                for (store, root) in [(&eager, eager_dir.path()), (&lazy, lazy_dir.path())] {
                    let path = |i: usize| store.address(names[i]).unwrap().file_path(store.identity()).unwrap();
                    match op {
                        Op::Write(i, c) => { store.write(names[*i], c, None, now).unwrap(); }
                        Op::Read(..) | Op::Hand(..) | Op::Delete(_) => {}
                        Op::Update(i, c) => {
                            let _ = store.update(names[*i], &[Edit { old_text: "a".into(), new_text: c.clone() }], UpdateOptions { replace_all: true, ..UpdateOptions::default() }, now);
                        }
                        Op::Crumple(i) => {
                            let _ = store.update(names[*i], &[], UpdateOptions { crumpled: Some(true), ..UpdateOptions::default() }, now);
                        }
                        Op::Rename(a, b) => { let _ = store.rename(names[*a], names[*b], now); }
                    }
                    if let Op::Hand(i, c) = op {
                        let created = format_stamp(now);
                        crate::fsio::write_atomic(&path(*i), c.replace("{}", &created).as_bytes()).unwrap();
                        // Its missing stamps fall back to its file time: the same in both trees.
                        fs::File::options().write(true).open(path(*i)).unwrap()
                            .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600 + step as u64))
                            .unwrap();
                    }
                    if let Op::Delete(i) = op {
                        let _ = fs::remove_file(path(*i));
                    }
                    let _ = root;
                }
                if let Op::Read(i, skip) = op {
                    let a = eager.read(names[*i], now).unwrap().map(|n| (n.meta, n.body));
                    let b = if *skip {
                        lazy.read_skipping_pending(names[*i], now)
                    } else {
                        lazy.read(names[*i], now)
                    };
                    let mut b = b.unwrap().map(|n| (n.meta, n.body));
                    if *skip {
                        // Pending reads are left out of the access fields only.
                        if let (Some((a, _)), Some((b, _))) = (&a, &mut b) {
                            b.last_accessed = a.last_accessed;
                            b.access_count = a.access_count;
                        }
                    }
                    proptest::prop_assert_eq!(a, b, "read {} at step {}", names[*i], step);
                }
            }
            fold_pending_access(lazy_dir.path(), cache.path()).unwrap();
            proptest::prop_assert_eq!(tree(eager_dir.path()), tree(lazy_dir.path()));
        }
    }

    #[test]
    fn refused_writes_leave_no_directories_behind() {
        let root = tempfile::tempdir().unwrap();
        let store = store(root.path());
        let big = "x".repeat(1_000_000);
        assert_eq!(
            store
                .write("@human/a/b/c", &big, None, now())
                .unwrap_err()
                .code(),
            "too_large"
        );
        assert!(fs::read_dir(root.path()).unwrap().next().is_none());
        assert!(store.read("@human/zz/missing", now()).unwrap().is_none());
        assert!(fs::read_dir(root.path()).unwrap().next().is_none());
    }
}
