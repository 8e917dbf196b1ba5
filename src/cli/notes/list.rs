//! `pi-context notes-list`: list notes, most recently updated first.

use serde::Deserialize;

use super::{prepare, reply, selection};
use crate::cli::common::NotesArgs;
use crate::cli::error::invalid_request;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
use crate::notes::wire::list_result;

/// List notes, most recently updated first.
///
/// Request on stdin (all optional): `{"pattern", "scope", "who", "wastebasket", "limit"}`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub notes: NotesArgs,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Glob over addresses to narrow the set, e.g. @project/** or *.md.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Only this home: session, project, human, agent or model.
    #[schemars(with = "Option<crate::notes::Scope>")]
    #[serde(default)]
    pub scope: Option<String>,
    /// With scope agent or model: whose home (default: yours).
    #[serde(default)]
    pub who: Option<String>,
    /// Look at crumpled notes instead of live ones.
    #[serde(default)]
    pub wastebasket: Option<bool>,
    /// At most this many notes.
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub limit: Option<u64>,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let (identity, use_cache) = (&args.notes.identity, !args.notes.cache.no_cache);
    let (request, store) = prepare::<Request>(identity, use_cache, ctx, io)?;
    if request.limit == Some(0) {
        return Err(invalid_request("limit must be at least 1"));
    }
    let query = selection(
        request.pattern,
        request.scope.as_deref(),
        request.who,
        request.wastebasket,
    )?;
    let listing = store.list_ranked(&query)?;
    let limit = request.limit.map(|l| l as usize);
    Ok(reply(list_result(&listing, limit, store.identity())?))
}
