//! What every subcommand shares: exit codes, output formats, reading the one JSON request,
//! printing the one result, and resolving identity/paths from flags and environment.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Ctx, Io};
use crate::envelope::{Refusal, Reply};

/// Documented exit codes (see `docs/protocol.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success, including "nothing to do" (a gated dream skip).
    Ok,
    /// A refusal (`ok:false`), doctor issues found, or a failed dream.
    Refused,
    /// Usage error or malformed request.
    Usage,
    /// An I/O or internal failure.
    Internal,
    /// A lock held by another run.
    LockHeld,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Refused => 1,
            Exit::Usage => 2,
            Exit::Internal => 70,
            Exit::LockHeld => 75,
        }
    }
}

/// What goes to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The JSON envelope on one line.
    Json,
    /// The model-facing text.
    Text,
    /// The JSON envelope with an added top-level `"text"` field holding the model-facing text.
    Both,
}

/// Refusal codes that mean "the request itself is malformed" (exit 2).
const USAGE_CODES: &[&str] = &["invalid_request", "invalid_identity"];
/// Refusal codes that mean "we failed", not "you asked for something refusable" (exit 70).
const INTERNAL_CODES: &[&str] = &["io_error", "internal"];

/// Print `reply` in the chosen format and return the exit code its outcome implies.
pub fn emit(reply: &Reply, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    emit_with_cause(reply, None, ctx, io)
}

/// [`emit`], with the cause of an I/O or internal failure appended to its one stderr line
/// (the envelope's message stays fixed and path-free).
pub fn emit_with_cause(
    reply: &Reply,
    cause: Option<&str>,
    ctx: &Ctx,
    io: &mut Io,
) -> anyhow::Result<Exit> {
    let exit = match &reply.outcome {
        Ok(_) => Exit::Ok,
        Err(r) if USAGE_CODES.contains(&r.code.as_str()) => Exit::Usage,
        Err(r) if INTERNAL_CODES.contains(&r.code.as_str()) => Exit::Internal,
        Err(_) => Exit::Refused,
    };
    match ctx.format {
        Format::Json => writeln!(io.stdout, "{}", reply.envelope())?,
        Format::Text => writeln!(io.stdout, "{}", reply.text)?,
        Format::Both => {
            let mut envelope = reply.envelope();
            envelope["text"] = json!(reply.text);
            writeln!(io.stdout, "{envelope}")?;
        }
    }
    if exit == Exit::Internal
        && let Err(r) = &reply.outcome
    {
        match cause {
            Some(cause) => writeln!(io.stderr, "error: {}: {cause}", r.message)?,
            None => writeln!(io.stderr, "error: {}", r.message)?,
        }
    }
    io.stdout.flush()?;
    Ok(exit)
}

/// Read the one JSON request from stdin. Empty stdin (only whitespace) is the empty object, so
/// `pi-context notes-list </dev/null` works from a shell. Malformed JSON, unknown fields and
/// wrong types become an `invalid_request` refusal (exit 2).
pub fn read_request<T: DeserializeOwned>(io: &mut Io) -> Result<T, Refusal> {
    let mut raw = String::new();
    io.stdin.read_to_string(&mut raw).map_err(|e| {
        Refusal::plain(
            "invalid_request",
            format!("could not read the request from stdin: {e}"),
        )
    })?;
    let raw = if raw.trim().is_empty() {
        "{}"
    } else {
        raw.as_str()
    };
    serde_json::from_str(raw)
        .map_err(|e| Refusal::plain("invalid_request", format!("invalid request: {e}")))
}

/// Print an `invalid_request` refusal (exit 2) for a request that parsed but breaks the
/// schema's bounds; `problem` is what is wrong, after the shared "invalid request: " prefix.
pub fn invalid_request(
    problem: impl std::fmt::Display,
    ctx: &Ctx,
    io: &mut Io,
) -> anyhow::Result<Exit> {
    let refusal = Refusal::plain("invalid_request", format!("invalid request: {problem}"));
    emit(&Reply::refused(refusal), ctx, io)
}

/// Whether an error chain bottoms out in a closed stdout pipe (we then end quietly).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The notes root: `--notes-home`, else `PI_NOTES_HOME` when set and non-empty, else
/// `~/.agents/notes`. Relative values resolve against the working directory.
pub fn resolve_notes_home(flag: Option<&Path>, ctx: &Ctx) -> PathBuf {
    let chosen = match (flag, ctx.var_non_empty("PI_NOTES_HOME")) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some(env)) => PathBuf::from(env),
        (None, None) => {
            let home = ctx
                .var_non_empty("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/"));
            home.join(".agents").join("notes")
        }
    };
    absolute_from(&ctx.cwd, &chosen)
}

/// The identity flags shared by every command that touches notes (`notes-*`, `boot-render`):
/// flatten this into a command's `Args` and call [`IdentityArgs::resolve`].
#[derive(Debug, Clone, Default, clap::Args)]
pub struct IdentityArgs {
    /// Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes].
    #[arg(long, value_name = "DIR")]
    pub notes_home: Option<PathBuf>,
    /// Pi session id: names this session's home (bare addresses). Without it, bare addresses
    /// are refused with `no_session` and listings skip the session home.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Directory whose repository names the project home [default: the working directory].
    #[arg(long, value_name = "DIR", conflicts_with = "project_key")]
    pub cwd: Option<PathBuf>,
    /// Use this project key instead of deriving one from --cwd.
    #[arg(long, value_name = "KEY")]
    pub project_key: Option<String>,
    /// Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined,
    /// else anonymous].
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Model id; the slug of the part after the last "/" names @model/ [default: default].
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
}

impl IdentityArgs {
    /// Resolve flags and environment into a validated identity; an invalid value is an
    /// `invalid_identity` refusal (exit 2).
    pub fn resolve(&self, ctx: &Ctx) -> Result<crate::notes::Identity, Refusal> {
        use crate::notes::{Identity, model_slug, project_key, slugify};
        let root = resolve_notes_home(self.notes_home.as_deref(), ctx);
        let project = match &self.project_key {
            Some(key) => key.clone(),
            None => {
                let dir = self.cwd.as_deref().unwrap_or(&ctx.cwd);
                project_key(&absolute_from(&ctx.cwd, dir))
            }
        };
        let agent = match (&self.agent, ctx.var("PI_NOTES_AGENT")) {
            (Some(flag), _) => slugify(flag),
            (None, Some(env)) => slugify(env),
            (None, None) => "anonymous".into(),
        };
        let model = self
            .model
            .as_deref()
            .map_or_else(|| "default".into(), model_slug);
        Identity::new(root, self.session_id.as_deref(), &project, &agent, &model).map_err(|e| {
            Refusal::new(
                "invalid_identity",
                e.message,
                Some(json!({"field": e.field})),
            )
        })
    }
}

/// `--no-cache`, for the commands the notes metadata cache or the access journal speeds up.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct CacheArgs {
    /// Work without the cache directory: read every note file instead of trusting the notes
    /// metadata cache (which is neither read nor written); notes-read then writes its access
    /// bump into the note itself (durably) instead of the access journal.
    #[arg(long)]
    pub no_cache: bool,
}

/// The one cache directory (history index, notes metadata): `$PI_CONTEXT_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/pi-context`, else `~/.cache/pi-context`; relative values resolve against the
/// working directory. `None` when none of these can be named (no `HOME`): callers then work
/// without a cache. A cache is never the truth, so nothing here creates or checks the directory.
pub fn resolve_cache_dir(ctx: &Ctx) -> Option<PathBuf> {
    let chosen = if let Some(dir) = ctx.var_non_empty("PI_CONTEXT_CACHE_DIR") {
        PathBuf::from(dir)
    } else if let Some(xdg) = ctx.var_non_empty("XDG_CACHE_HOME") {
        PathBuf::from(xdg).join("pi-context")
    } else {
        PathBuf::from(ctx.var_non_empty("HOME")?)
            .join(".cache")
            .join("pi-context")
    };
    Some(absolute_from(&ctx.cwd, &chosen))
}

/// `path` made absolute against `base` and lexically normalised (no symlink resolution).
pub fn absolute_from(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        crate::fsio::normalise_lexically(path)
    } else {
        crate::fsio::normalise_lexically(&base.join(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx_with(vars: &[(&str, &str)]) -> Ctx {
        Ctx {
            env: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            cwd: PathBuf::from("/work/dir"),
            now: chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap(),
            format: Format::Json,
        }
    }

    #[test]
    fn cache_dir_prefers_explicit_then_xdg_then_home() {
        let all = [
            ("PI_CONTEXT_CACHE_DIR", "rel/cache"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(
            resolve_cache_dir(&ctx_with(&all)),
            Some(PathBuf::from("/work/dir/rel/cache"))
        );
        assert_eq!(
            resolve_cache_dir(&ctx_with(&all[1..])),
            Some(PathBuf::from("/xdg/pi-context"))
        );
        assert_eq!(
            resolve_cache_dir(&ctx_with(&[("XDG_CACHE_HOME", ""), ("HOME", "/home/u")])),
            Some(PathBuf::from("/home/u/.cache/pi-context"))
        );
        assert_eq!(resolve_cache_dir(&ctx_with(&[])), None);
    }

    #[test]
    fn absolute_from_normalises_lexically() {
        assert_eq!(
            absolute_from(Path::new("/a/b"), Path::new("../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(
            absolute_from(Path::new("/a"), Path::new("/x/y/")),
            PathBuf::from("/x/y")
        );
    }
}
