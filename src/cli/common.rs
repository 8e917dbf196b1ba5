//! What every subcommand shares: exit codes, output formats, reading the one JSON request,
//! printing the one result, and resolving identity/paths from flags and environment.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::json;

use super::error::RequestError;
use super::strict::Strict;
use super::{Ctx, Io};
use crate::envelope::Reply;
use crate::notes::IdentityError;

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
    /// A remote that could not be reached (`sync`): sysexits' EX_UNAVAILABLE.
    Unavailable,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Refused => 1,
            Exit::Usage => 2,
            Exit::Internal => 70,
            Exit::LockHeld => 75,
            Exit::Unavailable => 69,
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

/// Print `reply` in the chosen format. The exit code and any stderr line are the caller's
/// ([`super::error::finish`]).
pub fn emit(reply: &Reply, ctx: &Ctx, io: &mut Io) -> anyhow::Result<()> {
    // The line and its newline in one buffer: one `write` (a `writeln!` of a line longer than
    // stdout's buffer makes two).
    let line = match ctx.format {
        Format::Json => reply.wire() + "\n",
        Format::Text => format!("{}\n", reply.text),
        Format::Both => {
            let mut envelope = reply.envelope();
            envelope["text"] = json!(reply.text);
            reply.print(&envelope) + "\n"
        }
    };
    io.stdout.write_all(line.as_bytes())?;
    io.stdout.flush()?;
    Ok(())
}

/// The largest request accepted on stdin, in bytes (16 MiB). The largest valid request is a
/// `notes-update` whose `oldText` and `newText` are each a whole 1,000,000-byte note with every
/// byte escaped as `\u00XX` (about 12 MB); anything larger is refused with `too_large` after
/// reading at most one byte past the cap (the rest of stdin is never buffered).
pub const MAX_REQUEST_BYTES: u64 = 16 * 1024 * 1024;

/// Read the one request from stdin as text: at most [`MAX_REQUEST_BYTES`], UTF-8, a leading
/// UTF-8 byte order mark dropped. Empty stdin (only whitespace) is `{}`, so
/// `pi-context notes-list </dev/null` works from a shell.
pub fn read_request_text(io: &mut Io) -> Result<String, RequestError> {
    if io.stdin_is_terminal {
        // A person typed the command at a terminal: say what we wait for instead of hanging
        // silently (one line; nothing is printed when stdin is a pipe or a file).
        let _ = writeln!(
            io.stderr,
            "pi-context: reading one JSON request on stdin (end it with Ctrl-D; an empty request is {{}})"
        );
    }
    let mut raw = Vec::new();
    Read::take(&mut *io.stdin, MAX_REQUEST_BYTES + 1)
        .read_to_end(&mut raw)
        .map_err(|e| RequestError::invalid(format_args!("could not read stdin: {e}")))?;
    if raw.len() as u64 > MAX_REQUEST_BYTES {
        return Err(RequestError::TooLarge);
    }
    let body = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&raw);
    let text = std::str::from_utf8(body).map_err(|e| {
        RequestError::invalid(format_args!(
            "stdin is not valid UTF-8 (first bad byte at offset {})",
            e.valid_up_to() + (raw.len() - body.len())
        ))
    })?;
    if text.trim().is_empty() {
        return Ok("{}".into());
    }
    Ok(text.to_owned())
}

/// The JSON type a request text starts with, when it is not an object.
fn non_object_kind(text: &str) -> Option<&'static str> {
    match text.trim_start().as_bytes().first()? {
        b'{' => None,
        b'[' => Some("an array"),
        b'"' => Some("a string"),
        b't' | b'f' => Some("a boolean"),
        b'n' => Some("null"),
        b'-' | b'0'..=b'9' => Some("a number"),
        _ => Some("not JSON"),
    }
}

fn not_an_object(kind: &str) -> RequestError {
    RequestError::invalid(format_args!(
        "the request must be one JSON object {{…}}, got {kind}"
    ))
}

/// Read the one JSON request from stdin (see [`read_request_text`]) and decode it. Only a JSON
/// object is a request; malformed JSON, unknown fields and wrong types become an
/// `invalid_request` refusal (exit 2) whose message names the field and the JSON type expected.
/// A JSON array is never read as an object field (serde alone would take it as the struct's
/// fields in order): see [`Strict`].
pub fn read_request<T: DeserializeOwned>(io: &mut Io) -> Result<T, RequestError> {
    let text = read_request_text(io)?;
    decode_request(&text)
}

/// Decode a request text (already read): the part of [`read_request`] after stdin.
pub fn decode_request<T: DeserializeOwned>(text: &str) -> Result<T, RequestError> {
    if let Some(kind) = non_object_kind(text) {
        return Err(not_an_object(kind));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(Strict(&mut de))
        .map_err(|e| request_error(e.path().to_string(), e.inner()))?;
    de.end().map_err(|e| request_error(String::new(), &e))?;
    Ok(value)
}

/// Decode an already parsed request value (an object) into its typed form.
pub fn decode_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, RequestError> {
    if !value.is_object() {
        return Err(not_an_object("a non-object value"));
    }
    serde_path_to_error::deserialize(Strict(value))
        .map_err(|e| request_error(e.path().to_string(), e.inner()))
}

/// A decoding error as a caller-facing `invalid_request`: serde's wording with Rust type names
/// replaced by JSON types, and the field named when serde's message does not already name it.
fn request_error(path: String, error: &serde_json::Error) -> RequestError {
    let message = json_wording(&error.to_string());
    // Only type and value errors leave the field unnamed ("invalid type: …, expected …").
    let unnamed = ["invalid type", "invalid value", "invalid length"]
        .iter()
        .any(|p| message.starts_with(p));
    let message = if !unnamed || path.is_empty() || path == "." {
        message
    } else {
        format!("field `{path}`: {message}")
    };
    RequestError::invalid(message)
}

/// Replace the Rust type names serde puts in "expected …" with the JSON types a caller knows.
fn json_wording(message: &str) -> String {
    let mut out = message.to_owned();
    for (rust, json) in [
        ("expected u8", "expected a non-negative integer"),
        ("expected u16", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected usize", "expected a non-negative integer"),
        ("expected i32", "expected an integer"),
        ("expected i64", "expected an integer"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected an object"),
        ("invalid type: sequence", "invalid type: array"),
        ("invalid type: map", "invalid type: object"),
        ("invalid type: unit value", "invalid type: null"),
    ] {
        out = out.replace(rust, json);
    }
    // `expected struct Edit` / `expected enum Origin` / `expected struct variant …`.
    while let Some(at) = out
        .find("expected struct ")
        .or_else(|| out.find("expected enum "))
    {
        let after = &out[at..];
        let skip = if after.starts_with("expected struct ") {
            16
        } else {
            14
        };
        let end = after[skip..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(after.len(), |i| skip + i);
        out.replace_range(at..at + end, "expected an object");
    }
    out
}

/// A `query` field (notes-search, history-search) as its list of literals: a string, or a
/// non-empty array of strings. Any other shape is the problem returned.
pub fn query_strings(value: serde_json::Value) -> Result<Vec<String>, &'static str> {
    use serde_json::Value;
    match value {
        Value::String(s) => Ok(vec![s]),
        Value::Array(items) if !items.is_empty() => items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Ok(s),
                _ => Err("query array elements must be strings"),
            })
            .collect(),
        _ => Err("query must be a string or a non-empty array of strings"),
    }
}

/// Whether an error chain bottoms out in a closed stdout pipe (we then end quietly).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `--notes-home`: the one definition of the flag, flattened into every command that names a
/// notes home (directly, or through [`IdentityArgs`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct NotesHomeArg {
    /// Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes].
    #[arg(long, value_name = "DIR")]
    pub notes_home: Option<PathBuf>,
}

impl NotesHomeArg {
    /// The notes root: `--notes-home`, else `PI_NOTES_HOME` when set and non-empty (a leading
    /// `~` is the home directory, see [`env_path`]), else `~/.agents/notes`. Relative values
    /// resolve against the working directory.
    pub fn resolve(&self, ctx: &Ctx) -> PathBuf {
        let chosen = match (&self.notes_home, env_path(ctx, "PI_NOTES_HOME")) {
            (Some(path), _) => path.clone(),
            (None, Some(env)) => env,
            (None, None) => home_dir(ctx).join(".agents").join("notes"),
        };
        absolute_from(&ctx.cwd, &chosen)
    }
}

/// `$HOME`, or `/` when it is unset or empty.
pub fn home_dir(ctx: &Ctx) -> PathBuf {
    ctx.var_non_empty("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// A path-valued environment variable (set and non-empty) with a leading `~` or `~/` expanded
/// to the home directory, as Pi expands `PI_CODING_AGENT_DIR`. A quoted `PI_NOTES_HOME='~/x'`
/// would otherwise name a directory called `~` under the working directory. `~user` forms are
/// left alone (no user database lookups).
pub fn env_path(ctx: &Ctx, name: &str) -> Option<PathBuf> {
    let value = ctx.var_non_empty(name)?;
    Some(expand_tilde(value, ctx))
}

/// `~` → the home directory, `~/rest` → the home directory joined with `rest`; anything else
/// unchanged.
pub fn expand_tilde(value: &str, ctx: &Ctx) -> PathBuf {
    if value == "~" {
        home_dir(ctx)
    } else if let Some(rest) = value.strip_prefix("~/") {
        home_dir(ctx).join(rest)
    } else {
        PathBuf::from(value)
    }
}

/// The identity flags shared by every command that touches notes (`notes-*`, `boot-render`):
/// flatten this into a command's `Args` and call [`IdentityArgs::resolve`].
#[derive(Debug, Clone, Default, clap::Args)]
pub struct IdentityArgs {
    #[command(flatten)]
    pub home: NotesHomeArg,
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
    pub fn resolve(&self, ctx: &Ctx) -> Result<crate::notes::Identity, IdentityError> {
        use crate::notes::{Identity, model_slug, project_key, slugify};
        let root = self.home.resolve(ctx);
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
        Identity::new(root, self.session_id.as_deref(), &project, &agent, &model)
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

/// The flag block of the commands that read notes through the store (`notes-read`,
/// `notes-list`, `boot-render`, `mcp`): the identity and `--no-cache`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct NotesArgs {
    #[command(flatten)]
    pub identity: IdentityArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// The one cache directory (history index, notes metadata): `$PI_CONTEXT_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/pi-context`, else `~/.cache/pi-context`; relative values resolve against the
/// working directory. `None` when none of these can be named (no `HOME`): callers then work
/// without a cache. A cache is never the truth, so nothing here creates or checks the directory.
pub fn resolve_cache_dir(ctx: &Ctx) -> Option<PathBuf> {
    let chosen = if let Some(dir) = env_path(ctx, "PI_CONTEXT_CACHE_DIR") {
        dir
    } else if let Some(xdg) = env_path(ctx, "XDG_CACHE_HOME") {
        xdg.join("pi-context")
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
            cwd: PathBuf::from("/home/u/dir"),
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
            Some(PathBuf::from("/home/u/dir/rel/cache"))
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
    fn a_leading_tilde_in_a_path_variable_is_the_home_directory() {
        let ctx = ctx_with(&[
            ("HOME", "/home/u"),
            ("A", "~/notes"),
            ("B", "~"),
            ("C", "~other/x"),
            ("D", "rel/~/x"),
        ]);
        assert_eq!(env_path(&ctx, "A"), Some(PathBuf::from("/home/u/notes")));
        assert_eq!(env_path(&ctx, "B"), Some(PathBuf::from("/home/u")));
        assert_eq!(env_path(&ctx, "C"), Some(PathBuf::from("~other/x")));
        assert_eq!(env_path(&ctx, "D"), Some(PathBuf::from("rel/~/x")));
        assert_eq!(env_path(&ctx, "UNSET"), None);
        assert_eq!(
            NotesHomeArg::default().resolve(&ctx_with(&[("HOME", "/h"), ("PI_NOTES_HOME", "~/n")])),
            PathBuf::from("/h/n")
        );
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
