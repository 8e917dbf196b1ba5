//! The Git audit of a dream run, with git2: the notes home is its own repository (created
//! when absent), the lock and temp files ([`EXCLUDE_LINES`]) are excluded through
//! `.git/info/exclude` (so no tracked `.gitignore` appears in the notes), and every snapshot stages the whole home (additions,
//! changes and deletions) and commits only when something is staged, except that a
//! repository without HEAD always gets its first commit (an empty baseline is still a
//! baseline). The author is Git's configured identity, else the fixed `pi-context` identity;
//! the commit time is the instant the caller passes (this module never reads the clock).

use std::fs;
use std::io::Write;
use std::path::Path;

use chrono::{DateTime, FixedOffset};
use git2::{IndexAddOption, Repository, Signature, Time};

/// The lines kept in `.git/info/exclude`: the dream/sync lock and its sidecar, and the temp
/// files of atomic writes (`.<name>.<random>.tmp`, see `fsio::write_atomic`), so neither a
/// dream snapshot nor a sync ever commits them.
pub const EXCLUDE_LINES: [&str; 2] = [super::artifacts::LOCK_FILES_PATTERN, ".*.tmp"];
/// Identity used when Git has none configured.
pub const FALLBACK_NAME: &str = "pi-context";
pub const FALLBACK_EMAIL: &str = "pi-context@localhost";

/// A snapshot that succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// HEAD after the snapshot (a new commit or the unchanged HEAD).
    pub commit: String,
    /// Whether a new commit was created.
    pub created: bool,
}

/// A snapshot that failed; the message says why (Git's own words).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AuditError(pub String);

impl AuditError {
    pub fn code(&self) -> &'static str {
        "audit_failed"
    }
}

impl From<git2::Error> for AuditError {
    fn from(e: git2::Error) -> Self {
        AuditError(e.message().to_string())
    }
}

/// Open the home's own repository, initialising it when `<home>/.git` is absent. A `.git`
/// that is not a directory is refused (the home would then belong to someone else's setup).
pub fn open_or_init(home: &Path) -> Result<Repository, AuditError> {
    let dot_git = home.join(".git");
    let repo = match fs::symlink_metadata(&dot_git) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Repository::init(home)?,
        Err(e) => {
            return Err(AuditError(format!(
                "cannot inspect {}: {e}",
                dot_git.display()
            )));
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(AuditError(format!(
                "{} is not a directory; the notes home must be its own Git repository",
                dot_git.display()
            )));
        }
        Ok(_) => Repository::open(home)?,
    };
    ensure_excluded(&repo)?;
    Ok(repo)
}

fn ensure_excluded(repo: &Repository) -> Result<(), AuditError> {
    let info = repo.path().join("info");
    let exclude = info.join("exclude");
    let current = fs::read_to_string(&exclude).unwrap_or_default();
    let missing: Vec<&str> = EXCLUDE_LINES
        .into_iter()
        .filter(|line| !current.lines().any(|l| l.trim() == *line))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let io = |e: std::io::Error| AuditError(format!("cannot update {}: {e}", exclude.display()));
    fs::create_dir_all(&info).map_err(io)?;
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&exclude)
        .map_err(io)?;
    let sep = if current.is_empty() || current.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    writeln!(file, "{sep}{}", missing.join("\n")).map_err(io)?;
    Ok(())
}

/// Stage everything under the home and commit with `message` when something is staged (or
/// when there is no HEAD yet).
pub fn snapshot(
    home: &Path,
    message: &str,
    now: DateTime<FixedOffset>,
) -> Result<Snapshot, AuditError> {
    let repo = open_or_init(home)?;
    let mut index = repo.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.update_all(["*"], None)?;
    index.write()?;
    let tree_id = index.write_tree()?;
    let head = match repo.head() {
        Ok(head) => Some(head.peel_to_commit()?),
        Err(e)
            if e.code() == git2::ErrorCode::UnbornBranch
                || e.code() == git2::ErrorCode::NotFound =>
        {
            None
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(head) = &head
        && head.tree_id() == tree_id
    {
        return Ok(Snapshot {
            commit: head.id().to_string(),
            created: false,
        });
    }
    let tree = repo.find_tree(tree_id)?;
    let signature = signature(&repo, now)?;
    let parents: Vec<&git2::Commit> = head.iter().collect();
    let id = repo.commit(
        Some("HEAD"),
        &signature,
        &signature,
        message,
        &tree,
        &parents,
    )?;
    Ok(Snapshot {
        commit: id.to_string(),
        created: true,
    })
}

/// The author and committer of a commit made at `now`: Git's configured identity, else the
/// fixed `pi-context` one.
pub fn signature(
    repo: &Repository,
    now: DateTime<FixedOffset>,
) -> Result<Signature<'static>, git2::Error> {
    let time = Time::new(now.timestamp(), now.offset().local_minus_utc() / 60);
    match repo.signature() {
        Ok(configured) => Signature::new(
            configured.name().unwrap_or(FALLBACK_NAME),
            configured.email().unwrap_or(FALLBACK_EMAIL),
            &time,
        ),
        Err(_) => Signature::new(FALLBACK_NAME, FALLBACK_EMAIL, &time),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339("2026-11-30T12:00:00+00:00").unwrap()
    }

    #[test]
    fn fresh_home_gets_an_empty_baseline_then_commits_only_changes() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let first = snapshot(h, "baseline x", now()).unwrap();
        assert!(first.created);
        let again = snapshot(h, "dream x", now()).unwrap();
        assert_eq!(
            again,
            Snapshot {
                commit: first.commit.clone(),
                created: false
            }
        );
        fs::write(h.join(".dream.lock"), "1 t").unwrap();
        fs::write(h.join(".dream.lock.last-run"), "t").unwrap();
        fs::write(h.join(".note.md.abc123.tmp"), "half").unwrap();
        assert!(
            !snapshot(h, "dream y", now()).unwrap().created,
            "lock and temp files are excluded"
        );
        fs::create_dir_all(h.join("human")).unwrap();
        fs::write(h.join("human/a.md"), "a").unwrap();
        let added = snapshot(h, "dream z", now()).unwrap();
        assert!(added.created);
        fs::remove_file(h.join("human/a.md")).unwrap();
        let removed = snapshot(h, "dream w", now()).unwrap();
        assert!(removed.created, "deletions are staged");
        let repo = Repository::open(h).unwrap();
        let head = repo.head().unwrap().peel_to_commit().unwrap();
        assert_eq!(head.message().unwrap(), "dream w");
        assert_eq!(head.tree().unwrap().len(), 0);
    }

    #[test]
    fn dot_git_file_is_an_audit_failure() {
        let home = tempfile::tempdir().unwrap();
        fs::write(home.path().join(".git"), "gitdir: elsewhere").unwrap();
        assert!(snapshot(home.path(), "baseline", now()).is_err());
    }
}
