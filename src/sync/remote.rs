//! The remote end of a sync, with git2: naming the remote, checking that this build can speak
//! its transport, listing and fetching its branch into our own ref, and pushing without
//! force. Connection failures become [`SyncError::Unreachable`]; a push the remote refuses
//! because it moved becomes [`Pushed::RemoteMoved`] (the caller merges again).
//!
//! Transports: libgit2's built-in local (a path or `file://`) and `git://` transports are
//! always there; `https://` and `ssh://` (and scp-like `user@host:path`) only when libgit2
//! was built with them, which [`git2::Version`] tells at run time.

use git2::{AutotagOption, Direction, FetchOptions, Oid, PushOptions, RemoteCallbacks, Repository};

use super::{RemoteInfo, SyncError, ref_target};

/// The remote: `spec` names a Git remote of the repository (when there is one yet), else it
/// is a URL; no spec means the remote named `origin`.
pub fn resolve(repo: Option<&Repository>, spec: Option<&str>) -> Result<RemoteInfo, SyncError> {
    let name = spec.unwrap_or("origin");
    if git2::Remote::is_valid_name(name)
        && let Some(repo) = repo
        && let Ok(remote) = repo.find_remote(name)
        && let Ok(url) = remote.url()
    {
        return Ok(RemoteInfo {
            name: Some(name.to_string()),
            url: url.to_string(),
        });
    }
    match spec {
        Some(url) if !url.is_empty() => Ok(RemoteInfo {
            name: None,
            url: url.to_string(),
        }),
        _ => Err(SyncError::NoRemote),
    }
}

/// The transport a URL needs, when it is one that may be missing from this build.
fn optional_transport(url: &str) -> Option<&'static str> {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return Some("https");
    }
    if lower.starts_with("ssh://")
        || lower.starts_with("git+ssh://")
        || lower.starts_with("ssh+git://")
    {
        return Some("ssh");
    }
    // scp-like `[user@]host:path`: a colon before any slash, and no scheme.
    if !url.contains("://")
        && let Some(colon) = url.find(':')
        && !url[..colon].contains('/')
        && colon > 1
    {
        return Some("ssh");
    }
    None
}

/// Refuse up front a URL whose transport this build lacks (rather than a vague failure).
pub fn check_transport(url: &str) -> Result<(), SyncError> {
    let version = git2::Version::get();
    match optional_transport(url) {
        Some("https") if !version.https() => Err(SyncError::UnsupportedTransport {
            url: url.to_string(),
            transport: "https",
        }),
        Some("ssh") if !version.ssh() => Err(SyncError::UnsupportedTransport {
            url: url.to_string(),
            transport: "ssh",
        }),
        _ => Ok(()),
    }
}

/// Credentials for the transports that ask (the ssh agent; the platform default otherwise).
fn callbacks<'a>() -> RemoteCallbacks<'a> {
    let mut callbacks = RemoteCallbacks::new();
    callbacks.credentials(|_url, username, allowed| {
        if allowed.contains(git2::CredentialType::SSH_KEY) {
            return git2::Cred::ssh_key_from_agent(username.unwrap_or("git"));
        }
        git2::Cred::default()
    });
    callbacks
}

fn unreachable(url: &str, e: &git2::Error) -> SyncError {
    SyncError::Unreachable {
        url: url.to_string(),
        message: e.message().to_string(),
    }
}

/// The remote's tip of `branch` (`None` when it has no such branch), its objects fetched and
/// `fetched_ref` pointing at it.
pub fn fetch(
    repo: &Repository,
    url: &str,
    branch: &str,
    fetched_ref: &str,
) -> Result<Option<Oid>, SyncError> {
    let head_name = format!("refs/heads/{branch}");
    let mut remote = repo.remote_anonymous(url)?;
    let listed = {
        let connection = remote
            .connect_auth(Direction::Fetch, Some(callbacks()), None)
            .map_err(|e| unreachable(url, &e))?;
        let heads = connection.list().map_err(|e| unreachable(url, &e))?;
        heads
            .iter()
            .find(|h| h.name() == head_name)
            .map(|h| h.oid())
    };
    let Some(tip) = listed else {
        return Ok(None);
    };
    if repo.find_commit(tip).is_err() {
        let mut options = FetchOptions::new();
        options
            .remote_callbacks(callbacks())
            .download_tags(AutotagOption::None)
            .update_fetchhead(false);
        remote
            .fetch(
                &[format!("+{head_name}:{fetched_ref}")],
                Some(&mut options),
                Some("pi-context sync: fetch"),
            )
            .map_err(|e| unreachable(url, &e))?;
        // The branch may have moved again between the listing and the fetch: the ref the
        // fetch wrote is the truth.
        if let Some(fetched) = ref_target(repo, fetched_ref)?
            && repo.find_commit(fetched).is_ok()
        {
            return Ok(Some(fetched));
        }
        return Err(SyncError::Io(format!(
            "fetching {head_name} from {url} did not bring its commit {tip}"
        )));
    }
    repo.reference(fetched_ref, tip, true, "pi-context sync: listed")?;
    Ok(Some(tip))
}

/// How a push ended when it did not fail outright.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    Done,
    /// The remote's branch is no longer what we merged with: fetch and merge again.
    RemoteMoved,
}

/// Push `local_ref` to the remote's `branch`, never forced.
pub fn push(
    repo: &Repository,
    url: &str,
    local_ref: &str,
    branch: &str,
) -> Result<Pushed, SyncError> {
    let mut remote = repo.remote_anonymous(url)?;
    let mut refused: Option<String> = None;
    let result = {
        let mut callbacks = callbacks();
        callbacks.push_update_reference(|_, status| {
            if let Some(message) = status {
                refused = Some(message.to_string());
            }
            Ok(())
        });
        let mut options = PushOptions::new();
        options.remote_callbacks(callbacks);
        remote.push(
            &[format!("{local_ref}:refs/heads/{branch}")],
            Some(&mut options),
        )
    };
    let moved = |message: &str| {
        let m = message.to_ascii_lowercase();
        m.contains("fast-forward")
            || m.contains("fast forward")
            || m.contains("fetch first")
            || m.contains("stale")
            || m.contains("not present locally")
    };
    match result {
        Ok(()) => match refused {
            None => Ok(Pushed::Done),
            Some(message) if moved(&message) => Ok(Pushed::RemoteMoved),
            Some(message) => Err(SyncError::PushRejected {
                url: url.to_string(),
                message,
            }),
        },
        Err(e) if e.code() == git2::ErrorCode::NotFastForward || moved(e.message()) => {
            Ok(Pushed::RemoteMoved)
        }
        Err(e)
            if matches!(
                e.class(),
                git2::ErrorClass::Net
                    | git2::ErrorClass::Os
                    | git2::ErrorClass::Ssh
                    | git2::ErrorClass::Http
                    | git2::ErrorClass::Ssl
            ) =>
        {
            Err(unreachable(url, &e))
        }
        Err(e) => Err(SyncError::PushRejected {
            url: url.to_string(),
            message: e.message().to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_that_may_be_missing_are_recognised() {
        assert_eq!(optional_transport("https://h/x.git"), Some("https"));
        assert_eq!(optional_transport("ssh://git@h/x.git"), Some("ssh"));
        assert_eq!(
            optional_transport("git@github.com:me/notes.git"),
            Some("ssh")
        );
        assert_eq!(optional_transport("git://127.0.0.1:9418/n.git"), None);
        assert_eq!(optional_transport("file:///tmp/n.git"), None);
        assert_eq!(optional_transport("/tmp/n.git"), None);
        assert_eq!(optional_transport("./rel:odd/n.git"), None);
    }
}
