//! The store: the operations on notes under one identity (write, read, update, rename, list,
//! search). Every read-modify-write holds the cross-process lock of the note's physical file
//! and replaces it atomically; a refusal leaves the tree byte-identical (directories created
//! for a lock are removed again). Paths that resolve outside the notes root through a symlink
//! are refused. The caller passes "now"; nothing here reads the clock or the environment.

use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use chrono::{DateTime, FixedOffset};

use super::address::{Address, Home, Scope, no_session};
use super::error::{ErrorKind, NoteError, err};
use super::frontmatter;
use super::identity::{Identity, is_slug};
use super::note::{NoteMeta, Origin, format_stamp, serialize_note};
use super::query::{HomeSelection, LineMatch, Matcher, Plan, Query, body_matches, recency_order};
use crate::fsio;

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
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// One `{oldText, newText}` edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
}

/// Switches of an update besides its edits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpdateOptions {
    pub origin: Option<Origin>,
    /// `Some(true)` crumples (keeps an existing time), `Some(false)` smooths.
    pub crumpled: Option<bool>,
    pub replace_all: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    pub meta: NoteMeta,
    /// All matching lines (at most one match per line).
    pub matches_total: usize,
    /// The first `max_matches_per_file` of them.
    pub matches: Vec<LineMatch>,
}

/// What a listing or search could not see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// Crumpled notes skipped (outside wastebasket mode).
    pub crumpled_excluded: usize,
    /// Labels of homes that failed to read (`session`, `@project`, `@agents/<slug>`, …).
    pub homes_unavailable: Vec<String>,
}

/// Rows plus status.
#[derive(Debug, Clone)]
pub struct WithStatus<T> {
    pub rows: Vec<T>,
    pub status: Status,
}

impl Store {
    pub fn new(identity: Identity) -> Store {
        Store { identity }
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
        let path = self.physical(&address)?;
        let origin = origin.unwrap_or(Origin::Myself);
        let body = frontmatter::strip_leading_frontmatter(content);
        let created_dirs = missing_ancestors(&path);
        let result = (|| {
            let _lock = fsio::lock_path(&path)?;
            let existing = read_optional(&path)?;
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
                    let (meta, _) = parse_note_at(raw, &path, now);
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
            fsio::write_atomic(&path, text.as_bytes())?;
            Ok(WriteReceipt {
                address: address.clone(),
                outcome,
                meta,
            })
        })();
        if result.is_err() {
            remove_created_dirs(&created_dirs);
        }
        result
    }

    /// Read a note: `None` when it does not exist. Bumps `lastAccessed` and `accessCount` on
    /// disk (under the lock), for any home, including crumpled and hand-written notes.
    pub fn read(
        &self,
        address: &str,
        now: DateTime<FixedOffset>,
    ) -> Result<Option<ReadNote>, NoteError> {
        let address = self.address(address)?;
        address.check_path_cap()?;
        let path = self.physical(&address)?;
        let Some(_lock) = fsio::lock_existing(&path)? else {
            return Ok(None);
        };
        let Some(raw) = read_optional(&path)? else {
            return Ok(None);
        };
        let (mut meta, body) = parse_note_at(&raw, &path, now);
        meta.last_accessed = now;
        meta.access_count += 1.0;
        let text = frontmatter::serialize(&meta.to_fields(), &body);
        fsio::write_atomic(&path, text.as_bytes())?;
        Ok(Some(ReadNote {
            address,
            meta,
            body,
        }))
    }

    /// Read a note without touching it (no lock, no access bump): for doctor, dream and boot.
    pub fn peek(&self, address: &Address) -> Result<Option<(NoteMeta, String)>, NoteError> {
        let path = self.physical(address)?;
        let Some(raw) = read_optional(&path)? else {
            return Ok(None);
        };
        Ok(Some(parse_note_at(&raw, &path, epoch())))
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
        let path = self.physical(&address)?;
        let Some(_lock) = fsio::lock_existing(&path)? else {
            return Err(not_found());
        };
        let Some(raw) = read_optional(&path)? else {
            return Err(not_found());
        };
        let (mut meta, body) = parse_note_at(&raw, &path, now);
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
        fsio::write_atomic(&path, text.as_bytes())?;
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
        let source = self.physical(&from)?;
        let target = self.physical(&to)?;
        if source == target {
            return Err(err(
                ErrorKind::NothingToDo,
                "rename_to resolves to the same note",
            ));
        }
        if !exists(&source)? {
            return Err(not_found());
        }
        let created_dirs = missing_ancestors(&target);
        let result = (|| {
            let _locks = fsio::lock_paths(&[&source, &target])?;
            let Some(raw) = read_optional(&source)? else {
                return Err(not_found());
            };
            let replaced_crumpled_target = match read_optional(&target)? {
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
            let (mut meta, body) = parse_note_at(&raw, &source, now);
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
            let text = serialize_note(&meta, &body)?;
            fsio::write_atomic(&target, text.as_bytes())?;
            fs::remove_file(&source)?;
            Ok(RenameReceipt {
                from: from.clone(),
                to: to.clone(),
                meta,
                replaced_crumpled_target,
            })
        })();
        if result.is_err() {
            remove_created_dirs(&created_dirs);
        }
        result
    }

    /// Notes matching `query`, most recently updated first. Fails on the first home that
    /// cannot be read; see [`Store::list_with_status`] for the tolerant form.
    pub fn list(&self, query: &Query) -> Result<Vec<NoteRow>, NoteError> {
        let listing = self.scan(query, &Scan::List)?;
        strict(listing.map_rows(|r| match r {
            Hit::Row(row) => Some(row),
            Hit::Search(_) => None,
        }))
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
        let listing = self.scan(query, &Scan::List)?;
        Ok(listing.into_status(|r| match r {
            Hit::Row(row) => Some(row),
            Hit::Search(_) => None,
        }))
    }

    /// Case-insensitive literal search (any of `queries`) over note bodies, recent first.
    pub fn search<S: AsRef<str>>(
        &self,
        queries: &[S],
        query: &Query,
        max_matches_per_file: Option<usize>,
    ) -> Result<Vec<SearchRow>, NoteError> {
        let matcher = Matcher::new(queries)?;
        let listing = self.scan(query, &Scan::Search(matcher, max_matches_per_file))?;
        strict(listing.map_rows(|r| match r {
            Hit::Search(row) => Some(row),
            Hit::Row(_) => None,
        }))
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
        let matcher = Matcher::new(queries)?;
        let listing = self.scan(query, &Scan::Search(matcher, max_matches_per_file))?;
        Ok(listing.into_status(|r| match r {
            Hit::Search(row) => Some(row),
            Hit::Row(_) => None,
        }))
    }

    /// The physical path of a note: the lexical path with its existing part resolved through
    /// symlinks, refused when that leaves the notes root.
    fn physical(&self, address: &Address) -> Result<PathBuf, NoteError> {
        let lexical = address.file_path(&self.identity)?;
        resolve_inside(&self.identity.root, &lexical)
    }

    #[allow(
        clippy::expect_used,
        reason = "candidates only come from readable homes"
    )]
    fn scan(&self, query: &Query, scan: &Scan) -> Result<Scanned, NoteError> {
        let plan = query.plan(&self.identity)?;
        let homes = self.homes_of(&plan, query)?;
        let mut candidates = Vec::new();
        let mut home_failed = vec![false; homes.len()];
        let mut extra_unavailable = Vec::new();
        for (index, home) in homes.iter().enumerate() {
            let home = match home {
                Ok(home) => home,
                Err(label) => {
                    extra_unavailable.push(label.clone());
                    continue;
                }
            };
            let Some(dir) = home.dir(&self.identity) else {
                continue;
            };
            let prefix = home.prefix();
            let mut files = Vec::new();
            if walk(&dir, "", &mut files).is_err() {
                home_failed[index] = true;
                continue;
            }
            for (rel, path) in files {
                let display = format!("{prefix}{rel}");
                if plan
                    .pattern
                    .as_ref()
                    .is_some_and(|re| !re.is_match(&display))
                {
                    continue;
                }
                candidates.push(Candidate {
                    home: index,
                    rel,
                    display,
                    path,
                });
            }
        }
        let outcomes = process_parallel(&candidates, |candidate, buf| {
            examine(candidate, buf, &plan, scan)
        });
        let mut crumpled = vec![0usize; homes.len()];
        let mut hits = Vec::new();
        for (candidate, outcome) in candidates.into_iter().zip(outcomes) {
            match outcome {
                Examined::Skip => {}
                Examined::Crumpled => crumpled[candidate.home] += 1,
                Examined::Failed => home_failed[candidate.home] = true,
                Examined::Hit(meta, matches) => hits.push((candidate, meta, matches)),
            }
        }
        let mut rows: Vec<(usize, Hit)> = hits
            .into_iter()
            .filter(|(c, _, _)| !home_failed[c.home])
            .map(|(c, meta, matches)| {
                let meta = *meta;
                let home = homes[c.home]
                    .as_ref()
                    .expect("candidates only come from readable homes")
                    .clone();
                let address = Address { home, vpath: c.rel };
                let hit = match matches {
                    None => Hit::Row(NoteRow {
                        address,
                        display: c.display,
                        meta,
                    }),
                    Some((matches, matches_total)) => Hit::Search(SearchRow {
                        address,
                        display: c.display,
                        meta,
                        matches_total,
                        matches,
                    }),
                };
                (c.home, hit)
            })
            .collect();
        rows.sort_by(|(_, a), (_, b)| {
            let (at, ad) = a.key();
            let (bt, bd) = b.key();
            recency_order(at, ad, bt, bd)
        });
        let mut status = Status::default();
        for (index, home) in homes.iter().enumerate() {
            if home_failed[index] {
                let label = home.as_ref().map(Home::label).unwrap_or_else(|l| l.clone());
                status.homes_unavailable.push(label);
            } else {
                status.crumpled_excluded += crumpled[index];
            }
        }
        status.homes_unavailable.extend(extra_unavailable);
        let first_error = home_failed.iter().any(|f| *f) || !status.homes_unavailable.is_empty();
        Ok(Scanned {
            rows: rows.into_iter().map(|(_, hit)| hit).collect(),
            status,
            failed: first_error,
        })
    }

    /// The homes a plan reads; an unreadable namespace is `Err(label)`.
    fn homes_of(&self, plan: &Plan, query: &Query) -> Result<Vec<Result<Home, String>>, NoteError> {
        Ok(match &plan.homes {
            HomeSelection::Homes(homes) => {
                if query.scope == Some(Scope::Session) && self.identity.session_id.is_none() {
                    return Err(no_session());
                }
                homes.iter().cloned().map(Ok).collect()
            }
            HomeSelection::Namespace(scope) => {
                let (dir, label) = match scope {
                    Scope::Agent => (self.identity.root.join("agents"), "@agents"),
                    _ => (self.identity.root.join("models"), "@models"),
                };
                match slug_dirs(&dir) {
                    Ok(slugs) => slugs
                        .into_iter()
                        .map(|slug| {
                            Ok(Home {
                                scope: *scope,
                                who: Some(slug),
                            })
                        })
                        .collect(),
                    Err(_) => vec![Err(label.to_owned())],
                }
            }
        })
    }
}

enum Scan {
    List,
    Search(Matcher, Option<usize>),
}

enum Hit {
    Row(NoteRow),
    Search(SearchRow),
}

impl Hit {
    fn key(&self) -> (DateTime<FixedOffset>, &str) {
        match self {
            Hit::Row(r) => (r.meta.updated_at, &r.display),
            Hit::Search(r) => (r.meta.updated_at, &r.display),
        }
    }
}

struct Scanned {
    rows: Vec<Hit>,
    status: Status,
    failed: bool,
}

impl Scanned {
    fn map_rows<T>(self, f: impl Fn(Hit) -> Option<T>) -> (Vec<T>, bool) {
        (self.rows.into_iter().filter_map(f).collect(), self.failed)
    }

    fn into_status<T>(self, f: impl Fn(Hit) -> Option<T>) -> WithStatus<T> {
        WithStatus {
            rows: self.rows.into_iter().filter_map(f).collect(),
            status: self.status,
        }
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

struct Candidate {
    home: usize,
    rel: String,
    display: String,
    path: PathBuf,
}

enum Examined {
    Skip,
    Crumpled,
    Failed,
    Hit(Box<NoteMeta>, Option<(Vec<LineMatch>, usize)>),
}

fn examine(candidate: &Candidate, buf: &mut Vec<u8>, plan: &Plan, scan: &Scan) -> Examined {
    let read = match scan {
        // A listing needs only the frontmatter block: read the head of the file.
        Scan::List => read_head_into(&candidate.path, buf),
        Scan::Search(..) => read_into(&candidate.path, buf),
    };
    match read {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Examined::Skip,
        Err(_) => return Examined::Failed,
    }
    let crumpled = frontmatter::block_has_key(buf, "crumpledAt");
    if crumpled != plan.wastebasket {
        return if crumpled {
            Examined::Crumpled
        } else {
            Examined::Skip
        };
    }
    match scan {
        Scan::List => {
            let fields = frontmatter::fields_of_bytes(buf);
            let fallback = stamp_fallback(&fields, &candidate.path, epoch());
            Examined::Hit(Box::new(NoteMeta::from_fields(&fields, fallback)), None)
        }
        Scan::Search(matcher, max) => {
            let (Some(bytes_re), Some(text_re)) = (&matcher.bytes, &matcher.text) else {
                return Examined::Skip;
            };
            // Cheap rejection on the raw bytes: most notes cannot match at all.
            if !bytes_re.is_match(buf) {
                return Examined::Skip;
            }
            let text = String::from_utf8_lossy(buf);
            let parsed = frontmatter::parse(&text);
            let (matches, total) = body_matches(text_re, &parsed.body, *max);
            if total == 0 {
                return Examined::Skip;
            }
            let fallback = stamp_fallback(&parsed.fields, &candidate.path, epoch());
            let meta = NoteMeta::from_fields(&parsed.fields, fallback);
            Examined::Hit(Box::new(meta), Some((matches, total)))
        }
    }
}

/// Read a whole file into `buf` with plain `read` calls: `read_to_end` on a `File` first asks
/// for its size and position (two extra syscalls per note, a measurable share of a 10,000-note
/// listing).
fn read_into(path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut file = fs::File::open(path)?;
    buf.clear();
    read_to_end_plain(&mut file, buf, 0)
}

/// How much of a note a listing reads first; frontmatter blocks are a few hundred bytes.
pub(crate) const HEAD_BYTES: usize = 4096;

/// Read the head of a file into `buf`: at least its frontmatter block (or the whole file when
/// the block does not end within [`HEAD_BYTES`]). One `read` for a typical note instead of
/// reading a long body a listing (or the boot index) never looks at.
pub(crate) fn read_head_into(path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut file = fs::File::open(path)?;
    buf.clear();
    buf.resize(HEAD_BYTES, 0);
    let mut len = 0;
    while len < HEAD_BYTES {
        match file.read(&mut buf[len..]) {
            Ok(0) => {
                buf.truncate(len);
                return Ok(());
            }
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if frontmatter::block_prefix(buf).is_some() {
        return Ok(());
    }
    // No closed block in the head: read the rest so parsing sees what it would.
    read_to_end_plain(&mut file, buf, len)
}

/// Append the rest of `file` to the first `len` bytes of `buf`, with plain `read` calls.
fn read_to_end_plain(file: &mut fs::File, buf: &mut Vec<u8>, mut len: usize) -> io::Result<()> {
    loop {
        if buf.len() - len < 4096 {
            buf.resize(len + 16 * 1024, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(())
}

/// Run `f` over `items` on a few threads (files are independent); results keep item order.
#[allow(
    clippy::expect_used,
    reason = "scan workers do not panic because they only read"
)]
fn process_parallel<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T, &mut Vec<u8>) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if threads <= 1 || items.len() < 64 {
        let mut buf = Vec::new();
        return items.iter().map(|item| f(item, &mut buf)).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                let f = &f;
                scope.spawn(move || {
                    let mut buf = Vec::with_capacity(8192);
                    part.iter()
                        .map(|item| f(item, &mut buf))
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

/// Regular `.md` files under `dir` (not following symlinks), as (`a/b.md`, path). A missing
/// `dir` is empty. The one definition of which files are notes (the boot index uses it too).
pub(crate) fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) -> io::Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound && rel.is_empty() => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let kind = entry.file_type()?;
        let Ok(name) = entry.file_name().into_string() else {
            continue; // not addressable
        };
        let child_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if kind.is_dir() {
            walk(&entry.path(), &child_rel, out)?;
        } else if kind.is_file() && name.ends_with(".md") {
            out.push((child_rel, entry.path()));
        }
    }
    Ok(())
}

/// Slug-named directories under `dir`, sorted (a missing `dir` has none).
fn slug_dirs(dir: &Path) -> io::Result<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut slugs = Vec::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir()
            && let Ok(name) = entry.file_name().into_string()
            && is_slug(&name)
        {
            slugs.push(name);
        }
    }
    slugs.sort();
    Ok(slugs)
}

/// Resolve the existing part of `lexical` through symlinks; refuse when the result is not
/// under the (resolved) notes root.
fn resolve_inside(root: &Path, lexical: &Path) -> Result<PathBuf, NoteError> {
    let Ok(rel) = lexical.strip_prefix(root) else {
        return Err(escape_error());
    };
    let root_phys = match fs::canonicalize(root) {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(lexical.to_path_buf()),
        Err(e) => return Err(NoteError::io(e)),
    };
    let mut existing = root_phys.clone();
    let mut components = rel.components().peekable();
    while let Some(component) = components.peek() {
        let Component::Normal(name) = component else {
            return Err(escape_error());
        };
        let next = existing.join(name);
        match fs::symlink_metadata(&next) {
            Ok(meta) => {
                existing = if meta.file_type().is_symlink() {
                    match fs::canonicalize(&next) {
                        Ok(p) => p,
                        // A dangling link: where it would write is not ours to follow.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            return Err(escape_error());
                        }
                        Err(e) => return Err(NoteError::io(e)),
                    }
                } else {
                    next
                };
                components.next();
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Err(e) => return Err(NoteError::io(e)),
        }
    }
    if !existing.starts_with(&root_phys) {
        return Err(escape_error());
    }
    let mut physical = existing;
    for component in components {
        physical.push(component.as_os_str());
    }
    Ok(physical)
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

fn epoch() -> DateTime<FixedOffset> {
    DateTime::UNIX_EPOCH.fixed_offset()
}

/// Parse a note file read from `path`; a timestamp it lacks (or that is not a date) takes the
/// file's modification time, the truest date the filesystem has for a hand-written note.
fn parse_note_at(raw: &str, path: &Path, now: DateTime<FixedOffset>) -> (NoteMeta, String) {
    let parsed = frontmatter::parse(raw);
    let fallback = stamp_fallback(&parsed.fields, path, now);
    (
        NoteMeta::from_fields(&parsed.fields, fallback),
        parsed.body.into_owned(),
    )
}

/// What a missing or unreadable timestamp of the note at `path` becomes: the file's
/// modification time (in `otherwise`'s offset), or `otherwise` when the file cannot be
/// stat'ed. The stat happens only when some timestamp needs it, so well-formed notes cost
/// nothing extra.
fn stamp_fallback(
    fields: &serde_json::Map<String, serde_json::Value>,
    path: &Path,
    otherwise: DateTime<FixedOffset>,
) -> DateTime<FixedOffset> {
    if NoteMeta::has_all_stamps(fields) {
        return otherwise;
    }
    fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(|t| DateTime::<chrono::Utc>::from(t).with_timezone(otherwise.offset()))
        .unwrap_or(otherwise)
}

fn exists(path: &Path) -> Result<bool, NoteError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(NoteError::io(e)),
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, NoteError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(NoteError::io(e)),
    }
}

/// The ancestors of `path` that do not exist yet, deepest first.
fn missing_ancestors(path: &Path) -> Vec<PathBuf> {
    let mut missing = Vec::new();
    let mut current = path.parent();
    while let Some(dir) = current {
        if dir.as_os_str().is_empty() || fs::symlink_metadata(dir).is_ok() {
            break;
        }
        missing.push(dir.to_path_buf());
        current = dir.parent();
    }
    missing
}

/// Undo directory creation after a refusal (only directories that are still empty).
fn remove_created_dirs(dirs: &[PathBuf]) {
    for dir in dirs {
        if fs::remove_dir(dir).is_err() {
            break;
        }
    }
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
