//! `pi-context notes-list`: list notes, most recently updated first.

use serde::Deserialize;

use super::{finish, parse_scope, prepare};
use crate::cli::common::{CacheArgs, Exit, IdentityArgs, invalid_request};
use crate::cli::{Ctx, Io};
use crate::notes::Query;
use crate::notes::wire::list_result;

/// List notes, most recently updated first.
///
/// Request on stdin (all optional): `{"pattern", "scope", "who", "wastebasket", "limit"}`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub identity: IdentityArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Glob over addresses to narrow the set, e.g. @project/** or *.md.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Only this home: session, project, human, agent or model.
    #[schemars(with = "Option<crate::cli::schema::Scope>")]
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

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let (request, store) = match prepare::<Request>(&args.identity, !args.cache.no_cache, ctx, io)?
    {
        Ok(prepared) => prepared,
        Err(exit) => return Ok(exit),
    };
    if request.limit == Some(0) {
        return invalid_request("limit must be at least 1", ctx, io);
    }
    let result = parse_scope(request.scope.as_deref()).and_then(|scope| {
        let query = Query {
            pattern: request.pattern,
            scope,
            who: request.who,
            wastebasket: request.wastebasket.unwrap_or(false),
        };
        let listing = store.list_with_status(&query)?;
        list_result(
            &listing,
            request.limit.map(|l| l as usize),
            store.identity(),
        )
    });
    finish(result, ctx, io)
}
