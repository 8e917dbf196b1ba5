//! `sync`: the same notes on every machine, through a Git remote, with nothing ever lost.
//!
//! The notes home is already a Git repository (the dream's audit, on `HEAD`). Sync keeps its
//! own line of history beside it, so the dream's audit (which also records session homes)
//! never leaves the machine: `refs/pi-context/sync/local` is this machine's synced line, a
//! private index (`.git/pi-context-sync-index`) caches the stat data of the synced files, and
//! the remote's branch is that same line shared by every machine. One run, under the home's
//! one lock for Git work (`.dream.lock`, so sync and dream never run at once):
//! 1. finish an apply a crashed run left half done (`refs/pi-context/sync/applying`);
//! 2. list the remote's branch and fetch it when new ([`remote`]);
//! 3. refuse a remote that is not a descendant of what this machine last synced with it
//!    (`remote_rewritten`), unless told to adopt it (the old line then gets a tag);
//! 4. commit the home's notes (`*.md`, session homes only when asked) onto the local line;
//! 5. merge note by note ([`merge`], [`tree`]), and bring the result into the home file by
//!    file, each under the notes' own per-file lock, never overwriting a note that changed
//!    since step 4 (such a note is merged again instead);
//! 6. push without force; a remote that moved meanwhile means another round from step 2.
//!
//! Like every domain it reads no environment and no clock and prints nothing: the caller
//! passes the home, the remote, the host name, "now" and the lock token.

pub mod merge;
pub mod remote;
pub mod state;
pub mod tree;

#[cfg(test)]
mod proptests;

use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset};
use git2::{Index, Oid, Repository};
use serde::Serialize;

use crate::dream::{artifacts, audit, lock};
use crate::envelope::{DomainError, ErrorClass};

/// This machine's synced line.
pub const LOCAL_REF: &str = "refs/pi-context/sync/local";
/// Set while a merge result is being brought into the home; a run that finds it finishes it.
pub const APPLYING_REF: &str = "refs/pi-context/sync/applying";
/// The private index of the synced files (stat cache), inside `.git`.
pub const INDEX_FILE: &str = "pi-context-sync-index";
/// Where `--adopt-remote` tags the line it leaves behind.
pub const ADOPT_TAG_PREFIX: &str = "refs/tags/pi-context/before-adopt-";
/// Rounds of fetch-merge-push when the remote keeps moving.
const MAX_ROUNDS: usize = 4;

/// What to sync with and how.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// The notes home (absolute).
    pub home: &'a Path,
    /// A remote name of the home's repository or a URL; `None`: the remote named `origin`.
    pub remote: Option<&'a str>,
    /// The remote branch.
    pub branch: &'a str,
    /// Take a rewritten remote as the new line instead of refusing it.
    pub adopt_remote: bool,
    /// Also sync the session homes `pi/session/*`.
    pub include_sessions: bool,
    /// This machine's name (for commit messages and conflict note names).
    pub host: &'a str,
    pub now: DateTime<FixedOffset>,
    /// The lock's `<pid> <token>`.
    pub pid: u32,
    pub token: &'a str,
}

/// Why a sync did not complete.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// `.dream.lock` exists: a dream or another sync is running, or one crashed.
    #[error(
        "lock already exists at {}; a dream or a sync is running, or a crashed run left it \
         (verify none is running, then remove it by hand)",
        path.display()
    )]
    LockHeld { path: PathBuf },
    /// No `--remote`, no setting, and no remote named `origin`.
    #[error(
        "no remote: pass --remote NAME|URL, set pi-context.syncRemote in Pi's settings, \
         or add a Git remote named origin to the notes home"
    )]
    NoRemote,
    /// The branch name is not a valid Git branch name.
    #[error("invalid request: {0:?} is not a valid branch name")]
    InvalidBranch(String),
    /// The URL needs a transport this build of libgit2 lacks.
    #[error(
        "{url}: this build of pi-context has no {transport} transport; use a file path, \
         file:// or git:// URL (see docs/protocol.md, sync)"
    )]
    UnsupportedTransport {
        url: String,
        transport: &'static str,
    },
    /// The remote cannot be reached (network, a missing path, an unmounted disk).
    #[error("cannot reach the remote {url}: {message}")]
    Unreachable { url: String, message: String },
    /// The remote's branch is not a descendant of what this machine last synced.
    #[error(
        "the remote {url} was rewritten: its branch ({}) does not descend from {last_synced}, \
         which this machine last synced; nothing was changed. If the rewrite was meant, \
         run again with --adopt-remote (the old line is kept under a tag)",
        remote_tip.as_deref().unwrap_or("deleted")
    )]
    RemoteRewritten {
        url: String,
        remote_tip: Option<String>,
        last_synced: String,
    },
    /// The remote refused the push for another reason than having moved.
    #[error("the remote {url} refused the push: {message}")]
    PushRejected { url: String, message: String },
    /// The remote moved under every one of our rounds.
    #[error("the remote {url} moved during each of {MAX_ROUNDS} rounds; try again later")]
    RemoteBusy { url: String },
    /// The home's repository cannot be used (e.g. `.git` is a file).
    #[error("the notes home's repository: {0}")]
    Repository(String),
    /// A local Git or file-system failure.
    #[error("{0}")]
    Io(String),
}

impl SyncError {
    pub fn code(&self) -> &'static str {
        match self {
            SyncError::LockHeld { .. } => "lock_held",
            SyncError::NoRemote => "no_remote",
            SyncError::InvalidBranch(_) => "invalid_request",
            SyncError::UnsupportedTransport { .. } => "unsupported_transport",
            SyncError::Unreachable { .. } => "remote_unreachable",
            SyncError::RemoteRewritten { .. } => "remote_rewritten",
            SyncError::PushRejected { .. } => "push_rejected",
            SyncError::RemoteBusy { .. } => "remote_busy",
            SyncError::Repository(_) => "repository_unusable",
            SyncError::Io(_) => "io_error",
        }
    }

    /// What kind of refusal the code is: a bad branch name is a malformed request; a held
    /// lock or a remote that kept moving is busy; an unreachable remote is unavailable; a
    /// local failure is ours.
    pub fn class(&self) -> ErrorClass {
        match self {
            SyncError::InvalidBranch(_) => ErrorClass::Usage,
            SyncError::LockHeld { .. } | SyncError::RemoteBusy { .. } => ErrorClass::Busy,
            SyncError::Unreachable { .. } => ErrorClass::Unavailable,
            SyncError::Io(_) => ErrorClass::Internal,
            SyncError::NoRemote
            | SyncError::UnsupportedTransport { .. }
            | SyncError::RemoteRewritten { .. }
            | SyncError::PushRejected { .. }
            | SyncError::Repository(_) => ErrorClass::Refused,
        }
    }
}

impl DomainError for SyncError {
    fn code(&self) -> &'static str {
        SyncError::code(self)
    }

    fn class(&self) -> ErrorClass {
        SyncError::class(self)
    }
}

impl From<git2::Error> for SyncError {
    fn from(e: git2::Error) -> Self {
        SyncError::Io(format!("git: {}", e.message()))
    }
}

impl From<std::io::Error> for SyncError {
    fn from(e: std::io::Error) -> Self {
        SyncError::Io(e.to_string())
    }
}

/// The remote as resolved.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct RemoteInfo {
    /// The Git remote's name, when one was used.
    pub name: Option<String>,
    pub url: String,
}

/// How the local line and the remote's branch came together.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Integration {
    /// Nothing on either side to exchange.
    UpToDate,
    /// Only this machine had new commits: pushed.
    Pushed,
    /// Only the remote had new commits: brought into the home.
    FastForward,
    /// Both had: merged note by note, then pushed.
    Merged,
}

/// One conflict: the live note kept this machine's version; the other side is beside it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Conflict {
    /// The live note, relative to the home.
    pub path: String,
    /// The conflict note holding the other side, relative to the home.
    pub conflict_path: String,
    pub reason: merge::ConflictReason,
    /// The metadata key, for a field conflict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// What a sync did, in numbers.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Counts {
    /// Files changed on this machine since its last sync (committed in this run).
    pub local_changes: usize,
    /// Files of the home written or removed to bring in the remote's changes.
    pub incoming_changes: usize,
    /// Notes both sides changed whose changes were combined.
    pub merged: usize,
    /// Notes deleted on one side and edited on the other: the edit was kept.
    pub kept_edits: usize,
    /// Notes changed by someone else while the sync ran: merged with the incoming version
    /// instead of being overwritten.
    pub changed_during_sync: usize,
    /// Conflict notes written.
    pub conflicts: usize,
    /// Rounds of fetch-merge-push (more than one when the remote moved meanwhile).
    pub rounds: usize,
}

/// A completed sync.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Outcome {
    pub notes_home: PathBuf,
    pub remote: RemoteInfo,
    pub branch: String,
    pub sessions_included: bool,
    pub integration: Integration,
    /// The commit now on both sides (`null` when both are still empty).
    pub head: Option<String>,
    /// The remote's branch as found (`null` when it did not exist).
    pub remote_before: Option<String>,
    /// The commit recording this machine's changes, when there were any.
    pub local_commit: Option<String>,
    pub pushed: bool,
    /// With `--adopt-remote` on a rewritten remote: the tag keeping the old line.
    pub adopted_tag: Option<String>,
    /// An interrupted earlier run's apply was finished first.
    pub resumed: bool,
    pub counts: Counts,
    pub conflicts: Vec<Conflict>,
}

/// Run one sync of `opts.home` under the home's lock.
pub fn sync(opts: &Options) -> Result<Outcome, SyncError> {
    let full = format!("refs/heads/{}", opts.branch);
    if opts.branch.is_empty() || !git2::Reference::is_valid_name(&full) {
        return Err(SyncError::InvalidBranch(opts.branch.to_string()));
    }
    // Name the remote before anything is created, so a refusal leaves the home as it was.
    let existing = if opts.home.join(artifacts::GIT_DIR).is_dir() {
        Repository::open(opts.home).ok()
    } else {
        None
    };
    let remote = remote::resolve(existing.as_ref(), opts.remote)?;
    remote::check_transport(&remote.url)?;
    drop(existing);
    fs::create_dir_all(opts.home).map_err(|e| {
        SyncError::Io(format!(
            "cannot create the notes home {}: {e}",
            opts.home.display()
        ))
    })?;
    let held = match lock::acquire_for_sync(opts.home, opts.pid, opts.token) {
        Ok(held) => held,
        Err(lock::LockError::Held { path }) => return Err(SyncError::LockHeld { path }),
        Err(e) => return Err(SyncError::Io(e.to_string())),
    };
    let result = run_locked(opts, remote);
    // Sync never touches the dream's sidecar, so both releases only remove the lock.
    let _ = held.release();
    result
}

/// Whether a path of the home (`/`-separated, relative) is synced: notes (`*.md`) outside
/// hidden directories, session homes only when asked.
pub fn is_synced_path(path: &str, include_sessions: bool) -> bool {
    path.ends_with(".md")
        && path
            .split('/')
            .all(|c| !c.is_empty() && !c.starts_with('.') && c != "..")
        && (include_sessions || !path.starts_with("pi/session/"))
}

/// The key of a remote URL in our ref names (first 16 hex of its SHA-1).
pub fn remote_key(url: &str) -> String {
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(url.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// `refs/pi-context/sync/remotes/<key>/<branch>`: the remote's branch as this machine last
/// synced it.
pub fn synced_ref(key: &str, branch: &str) -> String {
    format!("refs/pi-context/sync/remotes/{key}/{branch}")
}

fn fetched_ref(key: &str, branch: &str) -> String {
    format!("refs/pi-context/sync/fetched/{key}/{branch}")
}

pub(crate) fn ref_target(repo: &Repository, name: &str) -> Result<Option<Oid>, SyncError> {
    match repo.find_reference(name) {
        Ok(r) => Ok(r.target()),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn set_ref(repo: &Repository, name: &str, oid: Oid, message: &str) -> Result<(), SyncError> {
    repo.reference(name, oid, true, message)?;
    Ok(())
}

fn delete_ref(repo: &Repository, name: &str) -> Result<(), SyncError> {
    match repo.find_reference(name) {
        Ok(mut r) => Ok(r.delete()?),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Lock files of our own refs and index that a killed run left: only pi-context writes
/// there, and only under the home lock we now hold, so they are stale by construction.
fn clear_stale_git_locks(repo: &Repository) {
    let git = repo.path();
    let _ = fs::remove_file(git.join(format!("{INDEX_FILE}.lock")));
    for dir in ["refs/pi-context", "refs/tags/pi-context"] {
        let mut stack = vec![git.join(dir)];
        while let Some(d) = stack.pop() {
            let Ok(entries) = fs::read_dir(&d) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(path),
                    Ok(_) if path.extension().is_some_and(|e| e == "lock") => {
                        let _ = fs::remove_file(&path);
                    }
                    _ => {}
                }
            }
        }
    }
}

/// How many times the home's scan is tried before its error is reported.
const SCAN_ATTEMPTS: usize = 8;

/// Run the scan of the home (`diff_index_to_workdir`), again when it fails. libgit2 hashes a
/// file with the size it stat'ed earlier in the scan and reports a file that grew or shrank
/// meanwhile as "error reading file for hashing": a `notes-*` write replacing a note during the
/// scan (the scan takes no note lock, by design). Each try is a fresh scan, so only a file
/// that keeps changing under every one of [`SCAN_ATTEMPTS`] tries (or a real read failure)
/// fails the sync.
fn scan_retrying<T>(mut scan: impl FnMut() -> Result<T, git2::Error>) -> Result<T, git2::Error> {
    let mut attempt = 1;
    loop {
        match scan() {
            Err(e) if attempt < SCAN_ATTEMPTS && e.class() == git2::ErrorClass::Os => {
                attempt += 1;
            }
            result => return result,
        }
    }
}

fn open_index(repo: &Repository) -> Result<Index, SyncError> {
    let mut index = Index::open(&repo.path().join(INDEX_FILE))?;
    repo.set_index(&mut index)?;
    Ok(index)
}

/// The state a run carries between its steps.
struct Run<'r, 'o> {
    repo: &'r Repository,
    opts: &'o Options<'o>,
    index: Index,
    stamp: String,
    outcome: Outcome,
}

fn run_locked(opts: &Options, remote: RemoteInfo) -> Result<Outcome, SyncError> {
    let repo = audit::open_or_init(opts.home).map_err(|e| SyncError::Repository(e.0))?;
    clear_stale_git_locks(&repo);
    let key = remote_key(&remote.url);
    let index = open_index(&repo)?;
    let mut run = Run {
        repo: &repo,
        opts,
        index,
        stamp: crate::dream::stamp(opts.now),
        outcome: Outcome {
            notes_home: opts.home.to_path_buf(),
            remote: remote.clone(),
            branch: opts.branch.to_string(),
            sessions_included: opts.include_sessions,
            integration: Integration::UpToDate,
            head: None,
            remote_before: None,
            local_commit: None,
            pushed: false,
            adopted_tag: None,
            resumed: false,
            counts: Counts::default(),
            conflicts: Vec::new(),
        },
    };
    run.resume()?;
    let synced = synced_ref(&key, opts.branch);
    let fetched = fetched_ref(&key, opts.branch);
    let mut adopt = false;
    for round in 1..=MAX_ROUNDS {
        run.outcome.counts.rounds = round;
        let tip = remote::fetch(&repo, &remote.url, opts.branch, &fetched)?;
        if round == 1 {
            run.outcome.remote_before = tip.map(|t| t.to_string());
        }
        if let Some(last) = ref_target(&repo, &synced)? {
            let descends = match tip {
                Some(t) => t == last || repo.graph_descendant_of(t, last)?,
                None => false,
            };
            if !descends {
                if !opts.adopt_remote {
                    return Err(SyncError::RemoteRewritten {
                        url: remote.url.clone(),
                        remote_tip: tip.map(|t| t.to_string()),
                        last_synced: last.to_string(),
                    });
                }
                let tag = format!("{ADOPT_TAG_PREFIX}{}", run.stamp);
                set_ref(
                    &repo,
                    &tag,
                    last,
                    "pi-context sync: line left by --adopt-remote",
                )?;
                run.outcome.adopted_tag = Some(tag);
                adopt = true;
            }
        }
        let ours = run.commit_local()?;
        let head = run.integrate(ours, tip, adopt)?;
        run.outcome.head = head.map(|h| h.to_string());
        let Some(head) = head else {
            return Ok(run.outcome);
        };
        if Some(head) == tip {
            set_ref(&repo, &synced, head, "pi-context sync: in step")?;
            return Ok(run.outcome);
        }
        match remote::push(&repo, &remote.url, LOCAL_REF, opts.branch)? {
            remote::Pushed::Done => {
                set_ref(&repo, &synced, head, "pi-context sync: pushed")?;
                run.outcome.pushed = true;
                if run.outcome.integration == Integration::UpToDate {
                    run.outcome.integration = Integration::Pushed;
                }
                return Ok(run.outcome);
            }
            remote::Pushed::RemoteMoved => continue,
        }
    }
    Err(SyncError::RemoteBusy { url: remote.url })
}

impl Run<'_, '_> {
    fn signature(&self) -> Result<git2::Signature<'static>, SyncError> {
        Ok(audit::signature(self.repo, self.opts.now)?)
    }

    /// Finish bringing a merge result into the home when a killed run left it half done.
    fn resume(&mut self) -> Result<(), SyncError> {
        let Some(to) = ref_target(self.repo, APPLYING_REF)? else {
            return Ok(());
        };
        let from = ref_target(self.repo, LOCAL_REF)?;
        if from != Some(to) {
            self.advance(from, to)?;
        } else {
            delete_ref(self.repo, APPLYING_REF)?;
        }
        self.outcome.resumed = true;
        Ok(())
    }

    /// Commit the home's synced files onto the local line; the new tip (or the old one when
    /// nothing changed; `None` while both the line and the home are empty).
    fn commit_local(&mut self) -> Result<Option<Oid>, SyncError> {
        let home = self.opts.home;
        let include = self.opts.include_sessions;
        if include {
            self.materialise_carried_sessions()?;
        }
        // One scan of the home against the index (stat data first, a hash only when the
        // stat differs), refreshing the stat data of unchanged files so the next run need
        // not hash them again.
        let mut options = git2::DiffOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .update_index(true)
            .skip_binary_check(true);
        let changed: Vec<(String, bool)> = {
            let diff = scan_retrying(|| {
                self.repo
                    .diff_index_to_workdir(Some(&self.index), Some(&mut options))
            })?;
            diff.deltas()
                .filter_map(|delta| {
                    let path = delta
                        .new_file()
                        .path()
                        .or_else(|| delta.old_file().path())?
                        .to_str()?
                        .to_string();
                    let present = delta.status() != git2::Delta::Deleted;
                    Some((path, present))
                })
                .filter(|(path, _)| is_synced_path(path, include))
                .collect()
        };
        for (path, present) in changed {
            let regular =
                present && fs::symlink_metadata(home.join(&path)).is_ok_and(|m| m.is_file());
            if regular {
                // libgit2 reads the size it stat'ed; a note replaced between the scan and the
                // read (a `notes-*` write right now) fails that read. Try again, and if the
                // file keeps changing, leave it for the next run (it stays a local change).
                let mut added = Err(git2::Error::from_str("not tried"));
                for _ in 0..3 {
                    added = self.index.add_path(Path::new(&path));
                    if added.is_ok() {
                        break;
                    }
                }
                if added.is_err() && !home.join(&path).exists() {
                    let _ = self.index.remove_path(Path::new(&path));
                }
            } else {
                match self.index.remove_path(Path::new(&path)) {
                    Err(e) if e.code() != git2::ErrorCode::NotFound => return Err(e.into()),
                    _ => {}
                }
            }
        }
        let tree_id = self.index.write_tree_to(self.repo)?;
        // Written after the tree so the index keeps the tree cache: the next run's
        // write_tree then only rebuilds the directories that changed.
        self.index.write()?;
        let previous = ref_target(self.repo, LOCAL_REF)?;
        let previous_commit = previous.map(|p| self.repo.find_commit(p)).transpose()?;
        let previous_tree = previous_commit.as_ref().map(|c| c.tree()).transpose()?;
        if previous_tree.as_ref().map(|t| t.id()) == Some(tree_id) {
            return Ok(previous);
        }
        let tree = self.repo.find_tree(tree_id)?;
        if previous.is_none() && tree.is_empty() {
            return Ok(None);
        }
        let diff = self
            .repo
            .diff_tree_to_tree(previous_tree.as_ref(), Some(&tree), None)?;
        self.outcome.counts.local_changes += diff.deltas().len();
        let signature = self.signature()?;
        let parents: Vec<&git2::Commit> = previous_commit.iter().collect();
        let id = self.repo.commit(
            Some(LOCAL_REF),
            &signature,
            &signature,
            &format!("sync {}: local changes on {}", self.stamp, self.opts.host),
            &tree,
            &parents,
        )?;
        self.outcome.local_commit = Some(id.to_string());
        Ok(Some(id))
    }

    /// Session notes the line carried while this home did not sync sessions were never
    /// written here: their index entries still have the zero stat data `read_tree` gives.
    /// Before the first run that syncs sessions, write those that are missing, so they are
    /// not mistaken for local deletions (at worst a session note deleted here between two
    /// runs comes back: nothing is lost).
    fn materialise_carried_sessions(&mut self) -> Result<(), SyncError> {
        let carried: Vec<(String, Oid)> = self
            .index
            .iter()
            .filter(|e| e.mtime.seconds() == 0 && e.file_size == 0 && e.ctime.seconds() == 0)
            .filter_map(|e| Some((String::from_utf8(e.path).ok()?, e.id)))
            .filter(|(path, _)| path.starts_with("pi/session/") && is_synced_path(path, true))
            .collect();
        if carried.is_empty() {
            return Ok(());
        }
        let fail = |e: crate::confine::Error| SyncError::Io(e.to_string());
        let root = crate::confine::Dir::create_root(self.opts.home).map_err(fail)?;
        let mut created = Vec::new();
        for (path, id) in carried {
            let parts: Vec<&str> = path.split('/').collect();
            let Some((name, dirs)) = parts.split_last() else {
                continue;
            };
            let name = std::ffi::OsStr::new(*name);
            let Ok(dir) = root.walk_create(dirs, &mut created) else {
                continue;
            };
            let Ok(_lock) = dir.lock(name) else {
                continue;
            };
            if matches!(dir.lstat(name), Ok(None)) {
                let blob = self.repo.find_blob(id)?;
                dir.write_atomic(name, blob.content()).map_err(fail)?;
            }
        }
        Ok(())
    }

    /// Bring the local line and the remote's tip together; the commit to push (or that both
    /// already share).
    fn integrate(
        &mut self,
        ours: Option<Oid>,
        theirs: Option<Oid>,
        adopt: bool,
    ) -> Result<Option<Oid>, SyncError> {
        let repo = self.repo;
        let (o, t) = match (ours, theirs) {
            (None, None) => return Ok(None),
            (Some(o), None) => return Ok(Some(o)),
            (None, Some(t)) => {
                self.advance(None, t)?;
                self.outcome.integration = Integration::FastForward;
                return Ok(Some(t));
            }
            (Some(o), Some(t)) => (o, t),
        };
        if o == t {
            return Ok(Some(o));
        }
        if !adopt && repo.graph_descendant_of(o, t)? {
            return Ok(Some(o));
        }
        if !adopt && repo.graph_descendant_of(t, o)? {
            self.advance(Some(o), t)?;
            self.outcome.integration = Integration::FastForward;
            return Ok(Some(t));
        }
        let base = if adopt {
            None
        } else {
            match repo.merge_base(o, t) {
                Ok(b) => Some(repo.find_commit(b)?.tree()?),
                Err(e) if e.code() == git2::ErrorCode::NotFound => None,
                Err(e) => return Err(e.into()),
            }
        };
        let ours_commit = repo.find_commit(o)?;
        let theirs_commit = repo.find_commit(t)?;
        let merged = tree::merge_trees(
            repo,
            base.as_ref(),
            &ours_commit.tree()?,
            &theirs_commit.tree()?,
            self.opts.host,
            &self.stamp,
        )?;
        self.outcome.counts.merged += merged.combined;
        self.outcome.counts.kept_edits += merged.kept_edits;
        self.outcome.counts.conflicts += merged.conflicts.len();
        self.outcome.conflicts.extend(merged.conflicts);
        let tree = repo.find_tree(merged.tree)?;
        let signature = self.signature()?;
        let m = repo.commit(
            None,
            &signature,
            &signature,
            &format!(
                "sync {}: merge {} {} on {}",
                self.stamp, self.outcome.remote.url, self.opts.branch, self.opts.host
            ),
            &tree,
            &[&ours_commit, &theirs_commit],
        )?;
        self.advance(Some(o), m)?;
        self.outcome.integration = Integration::Merged;
        Ok(Some(m))
    }

    /// Move the home and the local line from `from` to `to`: mark the move, write the
    /// changed files, then move the line and drop the mark (a crash in between is finished
    /// by the next run's [`Run::resume`]).
    fn advance(&mut self, from: Option<Oid>, to: Oid) -> Result<(), SyncError> {
        let repo = self.repo;
        set_ref(repo, APPLYING_REF, to, "pi-context sync: applying")?;
        let from_tree = from
            .map(|f| repo.find_commit(f).and_then(|c| c.tree()))
            .transpose()?;
        let to_tree = repo.find_commit(to)?.tree()?;
        let applied = tree::apply(
            repo,
            self.opts.home,
            from_tree.as_ref(),
            &to_tree,
            self.opts.include_sessions,
            self.opts.host,
            &self.stamp,
        )?;
        self.outcome.counts.incoming_changes += applied.changed;
        self.outcome.counts.changed_during_sync += applied.changed_during_sync;
        self.outcome.counts.conflicts += applied.conflicts.len();
        self.outcome.conflicts.extend(applied.conflicts);
        set_ref(repo, LOCAL_REF, to, "pi-context sync: applied")?;
        delete_ref(repo, APPLYING_REF)?;
        // The index follows the line; stat data of unchanged entries is kept, so the next
        // run only re-reads the files written here.
        self.index.read_tree(&to_tree)?;
        self.index.write()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_failing_on_a_file_changed_meanwhile_is_tried_again_a_bounded_number_of_times() {
        let changing = || {
            git2::Error::new(
                git2::ErrorCode::GenericError,
                git2::ErrorClass::Os,
                "error reading file for hashing: ",
            )
        };
        let mut tries = 0;
        let ok = scan_retrying(|| {
            tries += 1;
            if tries < 3 {
                Err(changing())
            } else {
                Ok(tries)
            }
        });
        assert_eq!(ok.unwrap(), 3);
        let mut tries = 0;
        let failed: Result<(), _> = scan_retrying(|| {
            tries += 1;
            Err(changing())
        });
        assert!(failed.is_err());
        assert_eq!(tries, SCAN_ATTEMPTS);
        // Another kind of failure is reported at once.
        let mut tries = 0;
        let other: Result<(), _> = scan_retrying(|| {
            tries += 1;
            Err(git2::Error::from_str("corrupt index"))
        });
        assert!(other.is_err());
        assert_eq!(tries, 1);
    }

    #[test]
    fn synced_paths_are_notes_outside_hidden_dirs_and_sessions() {
        assert!(is_synced_path("human/a.md", false));
        assert!(is_synced_path("dreams/2026.md", false));
        assert!(!is_synced_path("human/a.txt", false));
        assert!(!is_synced_path(".git/x.md", false));
        assert!(!is_synced_path("human/.a.md.123.tmp", false));
        assert!(!is_synced_path("pi/session/s1/a.md", false));
        assert!(is_synced_path("pi/session/s1/a.md", true));
    }
}
