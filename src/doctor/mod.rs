//! `doctor`: a read-only check of a notes home — the root layout, the frontmatter of every
//! note, concrete note addresses in bodies and `MAP.md` entries that point nowhere, and the
//! dream lock. It owns the walk, the issue kinds and the report; [`frontmatter`] holds the
//! strict metadata check, [`addresses`] the reference check, [`render`] the bounded result and
//! its text.
//!
//! It must never create, repair, lock or commit anything: it only lists directories, reads
//! `lstat` data and reads file bytes (no note-store read, which would bump access metadata).
//! A missing home is reported, never created. Every problem, including an I/O error on one
//! entry, becomes an [`Issue`] of that entry, so one unreadable corner never hides the rest.
//! Like every domain it reads no environment and no clock: the caller passes the home.

pub mod addresses;
pub mod frontmatter;
pub mod render;

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::dream::artifacts;
use crate::notes::{MAX_NOTE_BYTES, is_slug};

pub use render::{Bounded, bound, render_text};

/// A note file larger than this is not read at all (the notes store refuses notes over
/// [`MAX_NOTE_BYTES`], so such a file is broken whatever it holds); reading it would only
/// cost memory.
const MAX_NOTE_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// A lock file is a pid and a UUID; anything longer than this is malformed without reading on.
const MAX_LOCK_BYTES: u64 = 256;

/// Root entries that belong to dream and its audit, and legacy dream artifacts: not notes,
/// never inspected (docs/spec/dream-doctor.md §12.2).
const IGNORED_ROOT_ENTRIES: &[&str] = &[
    artifacts::GIT_DIR,
    artifacts::REPORTS_DIR,
    "snapshots",
    "trash",
    artifacts::LAST_RUN_FILE,
    artifacts::SYNC_GATE_FILE,
];

/// The stable machine code of one kind of problem. The wire form is the snake_case name
/// ([`IssueKind::code`]); new kinds may be added, existing ones never change meaning.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum IssueKind {
    /// The home does not exist (it is not created).
    HomeMissing,
    /// The home is not a real directory (a file, or a symlink: symlinks are not followed).
    HomeNotDirectory,
    /// An entry could not be listed, stat'ed or read.
    CannotInspect,
    /// A well-formed `.dream.lock` is present: a dream is running, or one crashed.
    LockPresent,
    /// A `.dream.lock` that is not a regular file holding `<pid> <uuid>`.
    LockMalformed,
    /// A root entry that is neither a home nor a dream artifact.
    UnexpectedRootEntry,
    /// `human/`, `agents/`, `models/`, `project/`, `pi/`, `pi/session/` or one of their
    /// per-owner children is not a real directory.
    NotADirectory,
    /// A child of `agents/` or `models/` whose name is not a slug.
    InvalidSlug,
    /// A child of `project/` whose name is not `<name>-<8 lowercase hex>`.
    InvalidProjectKey,
    /// An entry of `pi/` other than `session/`.
    UnexpectedPiEntry,
    /// A symlink inside a home (not followed, not inspected).
    Symlink,
    /// A file inside a home that is not a `.md` note (or not a regular file).
    UnexpectedFile,
    /// A temp file of pi-context (`.<name>.<6 alphanumerics>.tmp`) left by an interrupted
    /// write; the next write into its directory removes it once it is an hour old.
    StaleTempFile,
    /// A note that is not valid UTF-8.
    NotUtf8,
    /// A note file over the store's 1,000,000-byte limit (the store refuses to rewrite it).
    NoteTooLarge,
    /// A note without a closed frontmatter block at byte 0.
    FrontmatterMissing,
    /// A metadata key that appears more than once.
    DuplicateKey,
    /// `origin` missing or not `user`/`self`/`external`.
    InvalidOrigin,
    /// `accessCount` missing or not a non-negative integer.
    InvalidAccessCount,
    /// `createdAt`/`updatedAt`/`lastAccessed` missing or not a date; `crumpledAt` not a date.
    InvalidTimestamp,
    /// The obsolete `scope` key (the home determines the scope).
    ObsoleteScope,
    /// A backtick-quoted note address that does not parse.
    InvalidAddress,
    /// An `@project/` address in a note outside any project home.
    ProjectContextUnavailable,
    /// A concrete address whose note does not exist.
    TargetMissing,
    /// A live conflict note left by `sync` (the other side of a clash, beside its note).
    SyncConflict,
}

impl IssueKind {
    /// The stable wire code.
    pub fn code(self) -> &'static str {
        match self {
            IssueKind::HomeMissing => "home_missing",
            IssueKind::HomeNotDirectory => "home_not_directory",
            IssueKind::CannotInspect => "cannot_inspect",
            IssueKind::LockPresent => "lock_present",
            IssueKind::LockMalformed => "lock_malformed",
            IssueKind::UnexpectedRootEntry => "unexpected_root_entry",
            IssueKind::NotADirectory => "not_a_directory",
            IssueKind::InvalidSlug => "invalid_slug",
            IssueKind::InvalidProjectKey => "invalid_project_key",
            IssueKind::UnexpectedPiEntry => "unexpected_pi_entry",
            IssueKind::Symlink => "symlink",
            IssueKind::UnexpectedFile => "unexpected_file",
            IssueKind::StaleTempFile => "stale_temp_file",
            IssueKind::NotUtf8 => "not_utf8",
            IssueKind::NoteTooLarge => "note_too_large",
            IssueKind::FrontmatterMissing => "frontmatter_missing",
            IssueKind::DuplicateKey => "duplicate_key",
            IssueKind::InvalidOrigin => "invalid_origin",
            IssueKind::InvalidAccessCount => "invalid_access_count",
            IssueKind::InvalidTimestamp => "invalid_timestamp",
            IssueKind::ObsoleteScope => "obsolete_scope",
            IssueKind::InvalidAddress => "invalid_address",
            IssueKind::ProjectContextUnavailable => "project_context_unavailable",
            IssueKind::TargetMissing => "target_missing",
            IssueKind::SyncConflict => "sync_conflict",
        }
    }
}

/// One problem found: where (path relative to the home with `/` separators, `.` for the home
/// itself), what kind, and a message that says what to do. `key` names the metadata key of a
/// frontmatter issue, `address` the reference of an address issue, `line` the one-based line
/// in the file where that key or reference is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Issue {
    pub path: String,
    pub kind: IssueKind,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Issue {
    pub fn new(path: impl Into<String>, kind: IssueKind, message: impl Into<String>) -> Self {
        Issue {
            path: path.into(),
            kind,
            message: message.into(),
            key: None,
            address: None,
            line: None,
        }
    }
}

/// What was looked at, so a clean report says how much it covered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Counts {
    /// `.md` files whose frontmatter was checked (maps included).
    pub notes: usize,
    /// Of those, files named `MAP.md`.
    pub maps: usize,
    /// Distinct concrete addresses resolved against the tree (per file).
    pub addresses_checked: usize,
    /// `@self/…` and `@model/…` addresses, which a static check cannot resolve.
    pub addresses_skipped: usize,
    /// Every issue found (listed or not).
    pub issues: usize,
}

/// The full result of one check, before bounding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The home that was checked, as given (absolute).
    pub home: PathBuf,
    pub counts: Counts,
    /// In traversal order: root entries bytewise-sorted, each home walked depth-first with
    /// entries bytewise-sorted, per file the frontmatter issues before the address issues.
    pub issues: Vec<Issue>,
    /// The sync state (`None` when the home was never synced). Unpushed commits and an
    /// unreachable remote are facts, not issues; live conflict notes are issues.
    pub sync: Option<crate::sync::state::SyncState>,
}

impl Report {
    pub fn clean(&self) -> bool {
        self.issues.is_empty()
    }

    /// The number of issues per kind, ordered by kind code.
    pub fn issues_by_kind(&self) -> BTreeMap<&'static str, usize> {
        let mut by_kind = BTreeMap::new();
        for issue in &self.issues {
            *by_kind.entry(issue.kind.code()).or_insert(0) += 1;
        }
        by_kind
    }
}

/// Check the notes home at `home` (an absolute path). Never fails: every problem, I/O errors
/// included, is an issue in the report.
///
/// ```
/// use pi_context::doctor::{IssueKind, bound, check};
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir_all(dir.path().join("human"))?;
/// std::fs::write(dir.path().join("human/MAP.md"), "---\norigin: self\n---\n\n- `gone.md`\n")?;
/// let report = check(dir.path());
/// let kinds: Vec<IssueKind> = report.issues.iter().map(|i| i.kind).collect();
/// assert_eq!(kinds[0], IssueKind::InvalidAccessCount);
/// assert_eq!(kinds.last(), Some(&IssueKind::TargetMissing));
/// let (data, text) = bound(&report, true);
/// assert!(!data.clean && text.starts_with("human/MAP.md: missing/invalid accessCount"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn check(home: &Path) -> Report {
    let mut walk = Walk::new(home);
    walk.root();
    let Walk {
        counts,
        slots,
        files,
        ..
    } = walk;
    // References are resolved after the walk, against every regular file it saw; only a
    // target it did not see (a symlink, a directory, a path outside the homes) costs a `stat`.
    let issues: Vec<Issue> = slots
        .into_iter()
        .filter(|slot| match &slot.unless_exists {
            None => true,
            Some(target) => !files.contains(target) && fs::metadata(target).is_err(),
        })
        .map(|slot| slot.issue)
        .collect();
    let sync = crate::sync::state::read(home);
    Report {
        home: home.to_path_buf(),
        counts: Counts {
            issues: issues.len(),
            ..counts
        },
        issues,
        sync: sync.local_head.is_some().then_some(sync),
    }
}

/// One issue found during the walk; `unless_exists` makes it conditional on a path missing.
struct Slot {
    issue: Issue,
    unless_exists: Option<PathBuf>,
}

/// The home a note lives in, as address resolution needs it: the walked root (where bare
/// addresses resolve) and, for `project/<key>/`, the project root (where `@project/` does).
#[derive(Debug, Clone)]
struct HomeRoot {
    abs: PathBuf,
    project: Option<PathBuf>,
    /// A session home: each note's own `project` key, when well-formed, gives its project
    /// context (the store records the project of the session's working directory there).
    session: bool,
}

struct Walk {
    home: PathBuf,
    counts: Counts,
    slots: Vec<Slot>,
    /// Every regular file seen inside the homes.
    files: HashSet<PathBuf>,
}

/// A directory entry: its name and whether `lstat` says directory / regular file / symlink.
struct Entry {
    name: OsString,
    kind: EntryKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    Dir,
    File,
    Symlink,
    Other,
}

fn entry_kind(file_type: fs::FileType) -> EntryKind {
    if file_type.is_symlink() {
        EntryKind::Symlink
    } else if file_type.is_dir() {
        EntryKind::Dir
    } else if file_type.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    }
}

/// `rel` joined with `name`, `/`-separated, for display (`.` is the home itself).
fn join_rel(rel: &str, name: &str) -> String {
    if rel == "." || rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

const EXPECTED_DIRECTORY: &str =
    "expected a directory (symlinks are not followed); check its location/type";

impl Walk {
    fn new(home: &Path) -> Self {
        Walk {
            home: home.to_path_buf(),
            counts: Counts::default(),
            slots: Vec::new(),
            files: HashSet::new(),
        }
    }

    fn push(&mut self, issue: Issue) {
        self.slots.push(Slot {
            issue,
            unless_exists: None,
        });
    }

    fn issue(&mut self, path: impl Into<String>, kind: IssueKind, message: impl Into<String>) {
        self.push(Issue::new(path, kind, message));
    }

    fn cannot_inspect(&mut self, path: impl Into<String>, err: &std::io::Error) {
        self.issue(
            path,
            IssueKind::CannotInspect,
            format!("cannot inspect: {err}"),
        );
    }

    /// The entries of `dir`, bytewise-sorted by name (a deterministic order on every
    /// platform), or `None` after reporting why it could not be listed.
    fn list(&mut self, dir: &Path, rel: &str) -> Option<Vec<Entry>> {
        let reader = match fs::read_dir(dir) {
            Ok(reader) => reader,
            Err(err) => {
                self.cannot_inspect(rel, &err);
                return None;
            }
        };
        let mut entries = Vec::new();
        for item in reader {
            match item.and_then(|e| Ok((e.file_name(), e.file_type()?))) {
                Ok((name, file_type)) => entries.push(Entry {
                    name,
                    kind: entry_kind(file_type),
                }),
                Err(err) => {
                    self.cannot_inspect(rel, &err);
                    return None;
                }
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Some(entries)
    }

    fn root(&mut self) {
        let home = self.home.clone();
        match fs::symlink_metadata(&home) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                self.issue(
                    ".",
                    IssueKind::HomeMissing,
                    "cannot inspect: the notes home does not exist (doctor does not create it)",
                );
                return;
            }
            Err(err) => {
                self.cannot_inspect(".", &err);
                return;
            }
            Ok(meta) if !meta.file_type().is_dir() => {
                self.issue(".", IssueKind::HomeNotDirectory, EXPECTED_DIRECTORY);
                return;
            }
            Ok(_) => {}
        }
        let Some(entries) = self.list(&home, ".") else {
            return;
        };
        for entry in entries {
            let name = entry.name.to_string_lossy().into_owned();
            let abs = home.join(&entry.name);
            let rel = name.clone();
            match name.as_str() {
                artifacts::LOCK_FILE => self.lock(&abs, &rel, entry.kind),
                n if IGNORED_ROOT_ENTRIES.contains(&n) => {}
                "human" => {
                    if self.expect_dir(&rel, entry.kind) {
                        let root = HomeRoot {
                            abs: abs.clone(),
                            project: None,
                            session: false,
                        };
                        self.walk_dir(&abs, &rel, &root);
                    }
                }
                "agents" | "models" => {
                    if self.expect_dir(&rel, entry.kind) {
                        self.owners(&abs, &rel, name == "agents");
                    }
                }
                "project" => {
                    if self.expect_dir(&rel, entry.kind) {
                        self.projects(&abs, &rel);
                    }
                }
                "pi" => {
                    if self.expect_dir(&rel, entry.kind) {
                        self.pi(&abs, &rel);
                    }
                }
                _ => self.issue(
                    rel,
                    IssueKind::UnexpectedRootEntry,
                    "unexpected root entry; expected human/, project/, agents/, models/, \
                     pi/session/ or dream artifacts",
                ),
            }
        }
    }

    /// Report `rel` unless it is a real directory; true when it is one.
    fn expect_dir(&mut self, rel: &str, kind: EntryKind) -> bool {
        if kind == EntryKind::Dir {
            true
        } else {
            self.issue(rel, IssueKind::NotADirectory, EXPECTED_DIRECTORY);
            false
        }
    }

    fn lock(&mut self, abs: &Path, rel: &str, kind: EntryKind) {
        const ADVICE: &str = "verify no dream is running before manual removal; liveness not \
                              inferred";
        let valid = kind == EntryKind::File && {
            let mut content = Vec::new();
            let read = fs::File::open(abs)
                .and_then(|f| f.take(MAX_LOCK_BYTES + 1).read_to_end(&mut content));
            match read {
                Ok(_) => lock_content_is_valid(&content),
                Err(err) => {
                    self.cannot_inspect(rel, &err);
                    return;
                }
            }
        };
        if valid {
            self.issue(
                rel,
                IssueKind::LockPresent,
                format!("lock present; {ADVICE}"),
            );
        } else {
            self.issue(
                rel,
                IssueKind::LockMalformed,
                format!("malformed lock (expected a file holding \"<pid> <uuid>\"); {ADVICE}"),
            );
        }
    }

    /// `agents/` or `models/`: every child is a slug-named directory holding one owner's home.
    fn owners(&mut self, dir: &Path, rel: &str, agents: bool) {
        let Some(entries) = self.list(dir, rel) else {
            return;
        };
        for entry in entries {
            let name = entry.name.to_string_lossy().into_owned();
            let child_rel = join_rel(rel, &name);
            if !is_slug(&name) {
                let what = if agents { "agent" } else { "model" };
                self.issue(
                    child_rel.clone(),
                    IssueKind::InvalidSlug,
                    format!("invalid {what} slug; expected [a-z0-9-]"),
                );
            }
            if self.expect_dir(&child_rel, entry.kind) {
                let abs = dir.join(&entry.name);
                let root = HomeRoot {
                    abs: abs.clone(),
                    project: None,
                    session: false,
                };
                self.walk_dir(&abs, &child_rel, &root);
            }
        }
    }

    /// `project/`: every child is a `<name>-<8 hex>` directory, walked as a project home (a
    /// badly named one is walked anyway, so its notes are still checked).
    fn projects(&mut self, dir: &Path, rel: &str) {
        let Some(entries) = self.list(dir, rel) else {
            return;
        };
        for entry in entries {
            let name = entry.name.to_string_lossy().into_owned();
            let child_rel = join_rel(rel, &name);
            if !is_project_key(&name) {
                self.issue(
                    child_rel.clone(),
                    IssueKind::InvalidProjectKey,
                    "invalid project key; expected <name>-<8 hex>",
                );
            }
            if self.expect_dir(&child_rel, entry.kind) {
                let abs = dir.join(&entry.name);
                let root = HomeRoot {
                    abs: abs.clone(),
                    project: Some(abs.clone()),
                    session: false,
                };
                self.walk_dir(&abs, &child_rel, &root);
            }
        }
    }

    /// `pi/`: only `session/` may be there; each `pi/session/<id>/` is a session home, with no
    /// project context (its notes' `@project/` references cannot be resolved statically).
    fn pi(&mut self, dir: &Path, rel: &str) {
        let Some(entries) = self.list(dir, rel) else {
            return;
        };
        for entry in entries {
            let name = entry.name.to_string_lossy().into_owned();
            let child_rel = join_rel(rel, &name);
            if name != "session" {
                self.issue(
                    child_rel,
                    IssueKind::UnexpectedPiEntry,
                    "unexpected directory; expected pi/session/<id>/",
                );
                continue;
            }
            if !self.expect_dir(&child_rel, entry.kind) {
                continue;
            }
            let sessions_abs = dir.join(&entry.name);
            let Some(sessions) = self.list(&sessions_abs, &child_rel) else {
                continue;
            };
            for session in sessions {
                let session_name = session.name.to_string_lossy().into_owned();
                let session_rel = join_rel(&child_rel, &session_name);
                if self.expect_dir(&session_rel, session.kind) {
                    let abs = sessions_abs.join(&session.name);
                    let root = HomeRoot {
                        abs: abs.clone(),
                        project: None,
                        session: true,
                    };
                    self.walk_dir(&abs, &session_rel, &root);
                }
            }
        }
    }

    /// Walk one home (or a subdirectory of it) depth-first.
    fn walk_dir(&mut self, dir: &Path, rel: &str, root: &HomeRoot) {
        let Some(entries) = self.list(dir, rel) else {
            return;
        };
        for entry in entries {
            let name = entry.name.to_string_lossy().into_owned();
            let child_rel = join_rel(rel, &name);
            let abs = dir.join(&entry.name);
            match entry.kind {
                EntryKind::Symlink => self.issue(
                    child_rel,
                    IssueKind::Symlink,
                    "symlink not inspected; replace with a regular note/directory",
                ),
                EntryKind::Dir => self.walk_dir(&abs, &child_rel, root),
                EntryKind::File if name.ends_with(".md") => {
                    self.note(&abs, &child_rel, &name, root);
                    self.files.insert(abs);
                }
                EntryKind::File if crate::confine::is_temp_name(&entry.name) => {
                    self.files.insert(abs);
                    self.issue(
                        child_rel,
                        IssueKind::StaleTempFile,
                        "temp file left by an interrupted write; the next write into this \
                         directory removes it once it is an hour old, or delete it",
                    );
                }
                EntryKind::File => {
                    self.files.insert(abs);
                    self.issue(
                        child_rel,
                        IssueKind::UnexpectedFile,
                        "unexpected file in note home; inspect and relocate it",
                    );
                }
                EntryKind::Other => self.issue(
                    child_rel,
                    IssueKind::UnexpectedFile,
                    "unexpected file in note home; inspect and relocate it",
                ),
            }
        }
    }

    fn note(&mut self, abs: &Path, rel: &str, name: &str, root: &HomeRoot) {
        let bytes = match read_note_bytes(abs) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                self.counts.notes += 1;
                self.issue(
                    rel,
                    IssueKind::NoteTooLarge,
                    format!(
                        "note file exceeds {MAX_NOTE_FILE_BYTES} bytes (not read); the notes \
                         store refuses notes over {MAX_NOTE_BYTES} bytes: split it"
                    ),
                );
                return;
            }
            Err(err) => {
                self.cannot_inspect(rel, &err);
                return;
            }
        };
        self.counts.notes += 1;
        let is_map = name == "MAP.md";
        if is_map {
            self.counts.maps += 1;
        }
        if bytes.len() > MAX_NOTE_BYTES {
            self.issue(
                rel,
                IssueKind::NoteTooLarge,
                format!(
                    "note is {} bytes; the notes store refuses notes over {MAX_NOTE_BYTES} \
                     bytes: split it",
                    bytes.len()
                ),
            );
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            self.issue(
                rel,
                IssueKind::NotUtf8,
                "note is not valid UTF-8; the notes tools cannot read it: re-encode it",
            );
            return;
        };
        let Some(block) = frontmatter::split(text) else {
            self.issue(
                rel,
                IssueKind::FrontmatterMissing,
                "missing or unclosed frontmatter; add a valid metadata block",
            );
            return;
        };
        for mut issue in frontmatter::check(&block) {
            issue.path = rel.to_string();
            self.push(issue);
        }
        if crate::sync::tree::is_conflict_name(name)
            && !block.fields.iter().any(|f| f.key == "crumpledAt")
            && let Some(of) = block
                .fields
                .iter()
                .find(|f| f.key == crate::sync::tree::CONFLICT_KEY)
        {
            self.issue(
                rel,
                IssueKind::SyncConflict,
                format!(
                    "sync conflict: the other machine's version of {}; merge what should stay \
                     into that note, then crumple this one",
                    of.value
                ),
            );
        }
        let own_project = if root.session {
            block
                .fields
                .iter()
                .rev()
                .find(|f| f.key == "project")
                .filter(|f| is_project_key(f.value) && !f.value.contains(['/', '\\', '\0']))
                .map(|f| self.home.join("project").join(f.value))
        } else {
            None
        };
        let scan = addresses::check(
            block.body,
            block.body_line,
            is_map,
            &addresses::Resolve {
                home: &self.home,
                root: &root.abs,
                project: own_project.as_deref().or(root.project.as_deref()),
            },
        );
        self.counts.addresses_checked += scan.checked;
        self.counts.addresses_skipped += scan.skipped;
        for (mut issue, unless_exists) in scan.issues {
            issue.path = rel.to_string();
            self.slots.push(Slot {
                issue,
                unless_exists,
            });
        }
    }
}

/// The bytes of a note, or `None` when the file is too large to be a note at all.
fn read_note_bytes(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let file = fs::File::open(path)?;
    // Sized from the open file, so one note costs open, fstat, two reads and close.
    let size = file.metadata()?.len();
    if size > MAX_NOTE_FILE_BYTES {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(size as usize + 1);
    file.take(MAX_NOTE_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_NOTE_FILE_BYTES {
        return Ok(None);
    }
    Ok(Some(bytes))
}

/// `^[1-9]\d* <uuid>\s*$`, case-insensitive, where `<uuid>` is 8-4-4-4-12 hex digits.
pub fn lock_content_is_valid(content: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(content) else {
        return false;
    };
    let text = text.trim_end();
    let Some((pid, uuid)) = text.split_once(' ') else {
        return false;
    };
    let pid_ok = pid.starts_with(|c: char| ('1'..='9').contains(&c))
        && pid.bytes().all(|b| b.is_ascii_digit());
    let groups: Vec<&str> = uuid.split('-').collect();
    let uuid_ok = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    pid_ok && uuid_ok
}

/// `^.+-[0-9a-f]{8}$`: a basename, a dash, 8 lowercase hex digits (docs/spec/dream-doctor.md §12.2).
pub fn is_project_key(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 10 && {
        let (head, hex) = bytes.split_at(bytes.len() - 8);
        head.last() == Some(&b'-') && hex.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_grammar() {
        let uuid = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0";
        assert!(lock_content_is_valid(format!("4242 {uuid}").as_bytes()));
        assert!(lock_content_is_valid(
            format!("1 {}\n", uuid.to_uppercase()).as_bytes()
        ));
        assert!(!lock_content_is_valid(format!("0 {uuid}").as_bytes()));
        assert!(!lock_content_is_valid(format!("042 {uuid}").as_bytes()));
        assert!(!lock_content_is_valid(format!("12  {uuid}").as_bytes()));
        assert!(!lock_content_is_valid(format!(" 12 {uuid}").as_bytes()));
        assert!(!lock_content_is_valid(b"12 not-a-uuid"));
        assert!(!lock_content_is_valid(b"12"));
        assert!(!lock_content_is_valid(b""));
        assert!(!lock_content_is_valid(
            b"12 0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0 extra"
        ));
    }

    #[test]
    fn io_errors_become_cannot_inspect_issues_of_that_entry() {
        // Running as root defeats permission tricks, so the walk is driven directly on a
        // directory that vanished between listing and visiting.
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut walk = Walk::new(dir.path());
        let gone = dir.path().join("human/gone");
        let root = HomeRoot {
            abs: dir.path().join("human"),
            project: None,
            session: false,
        };
        walk.walk_dir(&gone, "human/gone", &root);
        walk.note(&gone.join("x.md"), "human/gone/x.md", "x.md", &root);
        let got: Vec<(&str, IssueKind)> = walk
            .slots
            .iter()
            .map(|s| (s.issue.path.as_str(), s.issue.kind))
            .collect();
        assert_eq!(
            got,
            vec![
                ("human/gone", IssueKind::CannotInspect),
                ("human/gone/x.md", IssueKind::CannotInspect),
            ]
        );
        assert!(walk.slots[0].issue.message.starts_with("cannot inspect: "));
        assert_eq!(walk.counts.notes, 0);
    }

    #[test]
    fn project_key_shape() {
        assert!(is_project_key("my-project-a1b2c3d4"));
        assert!(is_project_key("x-00000000"));
        assert!(!is_project_key("-00000000"));
        assert!(!is_project_key("x-A1B2C3D4"));
        assert!(!is_project_key("x-a1b2c3d"));
        assert!(!is_project_key("xa1b2c3d4"));
    }
}
