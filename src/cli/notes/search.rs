//! `pi-context notes-search`: search note bodies for literals, case-insensitively.

use serde::Deserialize;
use serde_json::Value;

use super::{prepare, reply, selection};
use crate::cli::common::{IdentityArgs, query_strings};
use crate::cli::error::invalid_request;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
use crate::notes::wire::{search_lines_kept, search_result};

/// Search note bodies for literals, case-insensitively.
///
/// Request on stdin: `{"query": string | [string], "pattern"?, "scope"?, "who"?, "wastebasket"?,
/// "limit"?, "max_matches_per_file"?}`. Several queries are ORed; matching is literal with Unicode
/// simple case folding.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub identity: IdentityArgs,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// A literal, or several literals matched as alternatives; case-insensitive, no regex.
    #[schemars(with = "crate::cli::schema::OneOrMany")]
    pub query: Value,
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
    /// At most this many matching lines per note.
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub max_matches_per_file: Option<u64>,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let (request, store) = prepare::<Request>(&args.identity, false, ctx, io)?;
    if request.limit == Some(0) || request.max_matches_per_file == Some(0) {
        return Err(invalid_request(
            "limit and max_matches_per_file must be at least 1",
        ));
    }
    // A wrong shape is a malformed request; an empty string is left to the matcher, which
    // refuses it as `invalid_query`.
    let queries = query_strings(request.query).map_err(invalid_request)?;
    let query = selection(
        request.pattern,
        request.scope.as_deref(),
        request.who,
        request.wastebasket,
    )?;
    let per_file = request.max_matches_per_file.map(|m| m as usize);
    let limit = request.limit.map(|l| l as usize);
    let listing = store.search_keeping(&queries, &query, per_file, search_lines_kept(limit))?;
    Ok(reply(search_result(&listing, limit, store.identity())?))
}
