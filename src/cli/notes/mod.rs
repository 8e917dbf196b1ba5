//! The `notes-*` family: one module per verb over `crate::notes`. Each parses its one JSON
//! request (unknown fields refused), resolves the identity from flags and environment, calls
//! the store with `ctx.now`, and prints the bounded result of `notes::wire`.

pub mod list;
pub mod read;
pub mod search;
pub mod update;
pub mod write;

use serde::de::DeserializeOwned;

use crate::cli::common::{IdentityArgs, read_request, resolve_cache_dir};
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
use crate::notes::wire::Rendered;
use crate::notes::{ErrorKind, NoteError, Query, Scope, Store};

/// Read the request and resolve the identity into a store. The store uses the shared cache
/// directory (metadata cache, access journal) unless `use_cache` is false (`--no-cache`).
pub(crate) fn prepare<T: DeserializeOwned>(
    identity: &IdentityArgs,
    use_cache: bool,
    ctx: &Ctx,
    io: &mut Io,
) -> Result<(T, Store), CmdError> {
    let request = read_request::<T>(io)?;
    let identity = identity.resolve(ctx)?;
    let cache = use_cache.then(|| resolve_cache_dir(ctx)).flatten();
    Ok((
        request,
        Store::new(identity).with_cache_dir(cache.as_deref()),
    ))
}

/// The reply of a rendered result.
pub(crate) fn reply(rendered: Rendered) -> Reply {
    Reply::ok(rendered.data, rendered.text)
}

/// The selection fields list and search share, as a store query (`scope` checked).
pub(crate) fn selection(
    pattern: Option<String>,
    scope: Option<&str>,
    who: Option<String>,
    wastebasket: Option<bool>,
) -> Result<Query, NoteError> {
    Ok(Query {
        pattern,
        scope: parse_scope(scope)?,
        who,
        wastebasket: wastebasket.unwrap_or(false),
    })
}

/// The `scope` field of list/search.
#[allow(clippy::expect_used, reason = "strings serialise")]
fn parse_scope(scope: Option<&str>) -> Result<Option<Scope>, NoteError> {
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
