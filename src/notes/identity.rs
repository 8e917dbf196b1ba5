//! Who is asking: the notes root, session, project, agent and model that every address is
//! resolved against, plus the two derivations the CLI uses to build one (`slugify`,
//! `project_key`). Construction validates every field; nothing here reads the environment.

use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::envelope::{DomainError, ErrorClass, Refusal};

/// The identity a [`crate::notes::Store`] resolves addresses against.
///
/// `session_id` is optional: without it, session-scoped (bare) addresses are refused with
/// `no_session`, listings and searches simply skip the session home, and the other four homes
/// work normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The notes root (absolute).
    pub root: PathBuf,
    pub session_id: Option<String>,
    pub project_key: String,
    /// Current agent slug (`@self/` = `@agents/<agent>/`).
    pub agent: String,
    /// Current model slug (`@model/` = `@models/<model>/`).
    pub model: String,
}

/// A field of an [`Identity`] that does not satisfy its rule: `invalid_identity`, a malformed
/// request (the flags or environment that name the identity).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct IdentityError {
    pub field: &'static str,
    pub message: String,
}

impl DomainError for IdentityError {
    fn code(&self) -> &'static str {
        "invalid_identity"
    }

    fn class(&self) -> ErrorClass {
        ErrorClass::Usage
    }

    fn to_refusal(&self) -> Refusal {
        Refusal::new(
            self.code(),
            self.message.clone(),
            Some(serde_json::json!({"field": self.field})),
        )
    }
}

impl Identity {
    /// Validate and build an identity.
    ///
    /// ```
    /// use pi_context::notes::Identity;
    /// let id = Identity::new("/tmp/notes", Some("s1"), "demo-1a2b3c4d", "anonymous", "default")?;
    /// assert_eq!(id.agent, "anonymous");
    /// assert!(Identity::new("/tmp/notes", Some("a/b"), "k", "anonymous", "default").is_err());
    /// # Ok::<(), pi_context::notes::IdentityError>(())
    /// ```
    pub fn new(
        root: impl Into<PathBuf>,
        session_id: Option<&str>,
        project_key: &str,
        agent: &str,
        model: &str,
    ) -> Result<Identity, IdentityError> {
        let root = root.into();
        if root.as_os_str().is_empty() || !root.is_absolute() {
            return Err(IdentityError {
                field: "root",
                message: "notes root must be a non-empty absolute path".into(),
            });
        }
        if let Some(session) = session_id {
            check_component("session_id", session)?;
        }
        check_component("project_key", project_key)?;
        check_slug("agent", agent)?;
        check_slug("model", model)?;
        Ok(Identity {
            root,
            session_id: session_id.map(str::to_owned),
            project_key: project_key.to_owned(),
            agent: agent.to_owned(),
            model: model.to_owned(),
        })
    }
}

fn check_component(field: &'static str, value: &str) -> Result<(), IdentityError> {
    if value.is_empty() {
        return Err(IdentityError {
            field,
            message: format!("notes context {field} must be a non-empty string"),
        });
    }
    if value == "." || value == ".." || value.contains(['\\', '/', '\0', ':']) {
        return Err(IdentityError {
            field,
            message: format!("notes context {field} must be a safe single directory component"),
        });
    }
    Ok(())
}

fn check_slug(field: &'static str, value: &str) -> Result<(), IdentityError> {
    if !is_slug(value) {
        return Err(IdentityError {
            field,
            message: format!("notes context {field} must be a canonical lowercase slug"),
        });
    }
    Ok(())
}

/// Whether `value` matches `^[a-z0-9]+(?:-[a-z0-9]+)*$`.
pub fn is_slug(value: &str) -> bool {
    !value.is_empty()
        && !value.starts_with('-')
        && !value.ends_with('-')
        && !value.contains("--")
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Lowercase (full Unicode), collapse every run outside `[a-z0-9]` into one `-`, trim dashes;
/// empty becomes `root`.
///
/// ```
/// use pi_context::notes::slugify;
/// assert_eq!(slugify("Test Agent"), "test-agent");
/// assert_eq!(slugify("First.Model"), "first-model");
/// assert_eq!(slugify("Café"), "caf");
/// assert_eq!(slugify(""), "root");
/// ```
pub fn slugify(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut pending_dash = false;
    for c in value.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(c);
        } else {
            pending_dash = true;
        }
    }
    if out.is_empty() { "root".into() } else { out }
}

/// The model slug of a model id: the slug of the part after the last `/`.
///
/// ```
/// assert_eq!(pi_context::notes::model_slug("provider/First.Model"), "first-model");
/// ```
pub fn model_slug(model_id: &str) -> String {
    slugify(model_id.rsplit('/').next().unwrap_or(model_id))
}

/// The repository root a directory belongs to (linked worktrees map to their main checkout),
/// or the directory itself outside any repository. `dir` must be absolute; it is normalised
/// lexically and need not exist.
pub fn project_root(dir: &Path) -> PathBuf {
    let abs = crate::fsio::normalise_lexically(dir);
    let mut current: Option<&Path> = Some(&abs);
    while let Some(d) = current {
        let dot_git = d.join(".git");
        match fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => return d.to_path_buf(),
            Ok(_) => return worktree_main(d, &dot_git),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return d.to_path_buf(),
        }
        current = d.parent();
    }
    abs
}

/// `.git` is a file: a linked worktree's `gitdir: <main>/.git/worktrees/<name>` points back
/// at the main checkout; submodules and separate git dirs keep `d`.
fn worktree_main(d: &Path, dot_git: &Path) -> PathBuf {
    let Ok(text) = fs::read_to_string(dot_git) else {
        return d.to_path_buf();
    };
    let Some(target) = text.lines().find_map(|line| {
        line.strip_prefix("gitdir:")
            .map(str::trim)
            .filter(|t| !t.is_empty())
    }) else {
        return d.to_path_buf();
    };
    let resolved = crate::fsio::normalise_lexically(&d.join(target));
    let parts: Vec<Component> = resolved.components().collect();
    let Some(i) = parts.iter().rposition(|c| c.as_os_str() == "worktrees") else {
        return d.to_path_buf();
    };
    if i == 0 || i + 2 != parts.len() {
        return d.to_path_buf();
    }
    let common: PathBuf = parts[..i].iter().collect();
    if common.file_name().is_some_and(|n| n == ".git") {
        return common
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| d.to_path_buf());
    }
    d.to_path_buf()
}

/// `basename(root) + "-" + first 8 hex of SHA-1(root)` for the repository containing `dir`.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let key = pi_context::notes::project_key(&dir.path().join("my-project"));
/// assert!(key.starts_with("my-project-"));
/// assert_eq!(key.len(), "my-project-".len() + 8);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn project_key(dir: &Path) -> String {
    key_of_root(&project_root(dir))
}

/// The key of an already-resolved project root.
pub fn key_of_root(root: &Path) -> String {
    let text = root.to_string_lossy();
    let hex = super::digest::hex(&super::digest::sha1(text.as_bytes()), 4);
    let base = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{base}-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha1::{Digest, Sha1};

    #[test]
    fn slug_rules() {
        assert!(is_slug("a-b-9"));
        assert!(!is_slug("-a"));
        assert!(!is_slug("a--b"));
        assert!(!is_slug("A"));
        assert!(!is_slug(""));
        assert_eq!(slugify("--Hello,  World!--"), "hello-world");
    }

    #[test]
    fn key_matches_sha1_of_root() {
        // sha1("/tmp/x") = 1c0e2ab9…
        let key = key_of_root(Path::new("/tmp/x"));
        let digest = Sha1::digest(b"/tmp/x");
        assert_eq!(
            key,
            format!(
                "x-{:02x}{:02x}{:02x}{:02x}",
                digest[0], digest[1], digest[2], digest[3]
            )
        );
    }

    #[test]
    fn subdirectories_and_linked_worktrees_share_the_main_key() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        fs::create_dir_all(main.join(".git/worktrees/feature")).unwrap();
        let wt = tmp.path().join("wt");
        fs::create_dir_all(wt.join("src")).unwrap();
        fs::write(
            wt.join(".git"),
            format!(
                "gitdir: {}\n",
                main.join(".git/worktrees/feature").display()
            ),
        )
        .unwrap();
        let want = key_of_root(&main);
        assert_eq!(project_key(&main), want);
        assert_eq!(project_key(&main.join("not/there")), want);
        assert_eq!(project_key(&wt.join("src")), want);
        // A submodule-style gitdir keeps its own directory.
        let sub = tmp.path().join("sub");
        fs::create_dir_all(&sub).unwrap();
        fs::write(sub.join(".git"), "gitdir: ../main/.git/modules/sub\n").unwrap();
        assert_eq!(project_root(&sub), sub);
    }
}
