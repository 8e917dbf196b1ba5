//! The sync state of a home as `doctor` reports it, read-only and offline: the local line,
//! and per remote branch it was synced with, how many local commits that remote has not
//! received yet. Nothing is fetched (a remote that cannot be reached is not a problem of
//! the home) and nothing is written.

use std::path::Path;

use git2::Repository;
use serde::Serialize;

use super::LOCAL_REF;

/// One remote branch this home has synced with.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct RemoteState {
    /// The remote's key in our refs (first 16 hex of the SHA-1 of its URL).
    pub key: String,
    pub branch: String,
    /// The remote's branch as last synced.
    pub last_synced: String,
    /// Commits of the local line the remote has not received.
    pub unpushed_commits: usize,
}

/// The sync state of a home.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct SyncState {
    /// The tip of this machine's synced line (`null`: never synced).
    pub local_head: Option<String>,
    pub remotes: Vec<RemoteState>,
    /// A run was interrupted while bringing a merge into the home (the next run finishes it).
    pub interrupted: bool,
}

/// Read the state; a home without a repository or without a sync line is "never synced".
pub fn read(home: &Path) -> SyncState {
    let mut state = SyncState::default();
    if !home.join(crate::dream::artifacts::GIT_DIR).is_dir() {
        return state;
    }
    let Ok(repo) = Repository::open(home) else {
        return state;
    };
    let local = repo.find_reference(LOCAL_REF).ok().and_then(|r| r.target());
    state.local_head = local.map(|l| l.to_string());
    state.interrupted = repo.find_reference(super::APPLYING_REF).is_ok();
    let Ok(refs) = repo.references_glob("refs/pi-context/sync/remotes/*") else {
        return state;
    };
    let prefix = "refs/pi-context/sync/remotes/";
    for reference in refs.flatten() {
        let (Ok(name), Some(target)) = (reference.name(), reference.target()) else {
            continue;
        };
        let Some((key, branch)) = name
            .strip_prefix(prefix)
            .and_then(|rest| rest.split_once('/'))
        else {
            continue;
        };
        let unpushed = match local {
            Some(l) => repo
                .graph_ahead_behind(l, target)
                .map_or(0, |(ahead, _)| ahead),
            None => 0,
        };
        state.remotes.push(RemoteState {
            key: key.to_string(),
            branch: branch.to_string(),
            last_synced: target.to_string(),
            unpushed_commits: unpushed,
        });
    }
    state
}
