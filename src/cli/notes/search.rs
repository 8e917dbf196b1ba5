//! `pi-context notes-search`: search note bodies for literals, case-insensitively.

use serde::Deserialize;
use serde_json::Value;

use super::{finish, parse_scope, prepare};
use crate::cli::common::{Exit, IdentityArgs, invalid_request};
use crate::cli::{Ctx, Io};
use crate::notes::Query;
use crate::notes::wire::search_result;

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
    /// At most this many matching lines per note.
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub max_matches_per_file: Option<u64>,
}

/// The `query` field as a list of strings. A wrong shape (not a string, an empty array, an
/// element that is not a string) is a malformed request (`invalid_request`, exit 2); an empty
/// string is left to the matcher, which refuses it as `invalid_query`.
fn queries(value: Value) -> Result<Vec<String>, &'static str> {
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

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let (request, store) = match prepare::<Request>(&args.identity, false, ctx, io)? {
        Ok(prepared) => prepared,
        Err(exit) => return Ok(exit),
    };
    if request.limit == Some(0) || request.max_matches_per_file == Some(0) {
        return invalid_request("limit and max_matches_per_file must be at least 1", ctx, io);
    }
    let queries = match queries(request.query) {
        Ok(queries) => queries,
        Err(problem) => return invalid_request(problem, ctx, io),
    };
    let result = (|| {
        let query = Query {
            pattern: request.pattern,
            scope: parse_scope(request.scope.as_deref())?,
            who: request.who,
            wastebasket: request.wastebasket.unwrap_or(false),
        };
        let listing = store.search_with_status(
            &queries,
            &query,
            request.max_matches_per_file.map(|m| m as usize),
        )?;
        search_result(
            &listing,
            request.limit.map(|l| l as usize),
            store.identity(),
        )
    })();
    finish(result, ctx, io)
}
