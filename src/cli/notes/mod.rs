//! The `notes-*` family: one module per verb over `crate::notes`. Each parses its one JSON
//! request (unknown fields refused), resolves the identity from flags and environment, calls
//! the store with `ctx.now`, and prints the bounded result of `notes::wire`.

pub mod list;
pub mod read;
pub mod search;
pub mod update;
pub mod write;

use serde::de::DeserializeOwned;

use crate::cli::common::{
    Exit, IdentityArgs, emit, emit_with_cause, read_request, resolve_cache_dir,
};
use crate::cli::{Ctx, Io};
use crate::envelope::{Refusal, Reply};
use crate::notes::wire::{Rendered, refusal_parts};
use crate::notes::{ErrorKind, NoteError, Scope, Store};

/// Read the request and resolve the identity, or print the refusal and give its exit code.
/// The store uses the shared cache directory (metadata cache, access journal) unless
/// `use_cache` is false (`--no-cache`).
pub(crate) fn prepare<T: DeserializeOwned>(
    identity: &IdentityArgs,
    use_cache: bool,
    ctx: &Ctx,
    io: &mut Io,
) -> anyhow::Result<Result<(T, Store), Exit>> {
    let request = match read_request::<T>(io) {
        Ok(request) => request,
        Err(refusal) => return Ok(Err(emit(&Reply::refused(refusal), ctx, io)?)),
    };
    match identity.resolve(ctx) {
        Ok(identity) => {
            let cache = use_cache.then(|| resolve_cache_dir(ctx)).flatten();
            let store = Store::new(identity).with_cache_dir(cache.as_deref());
            Ok(Ok((request, store)))
        }
        Err(refusal) => Ok(Err(emit(&Reply::refused(refusal), ctx, io)?)),
    }
}

/// Print a rendered result or a library error.
pub(crate) fn finish(
    result: Result<Rendered, NoteError>,
    ctx: &Ctx,
    io: &mut Io,
) -> anyhow::Result<Exit> {
    match result {
        Ok(rendered) => emit(&Reply::ok(rendered.data, rendered.text), ctx, io),
        Err(error) => {
            let (code, message, details) = refusal_parts(&error);
            let reply = Reply::refused(Refusal::new(code, message, details));
            let cause = error.source.as_ref().map(ToString::to_string);
            emit_with_cause(&reply, cause.as_deref(), ctx, io)
        }
    }
}

/// The `scope` field of list/search.
#[allow(clippy::expect_used, reason = "strings serialise")]
pub(crate) fn parse_scope(scope: Option<&str>) -> Result<Option<Scope>, NoteError> {
    match scope {
        None => Ok(None),
        Some(name) => Scope::parse(name).map(Some).ok_or_else(|| {
            NoteError::new(
                ErrorKind::InvalidScope,
                format!(
                    "scope must be one of session, project, human, agent, model (got {})",
                    serde_json::to_string(name).expect("strings serialise")
                ),
            )
        }),
    }
}
