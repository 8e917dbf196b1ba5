//! `pi-context history-search`: events whose document contains a literal.

use serde::Deserialize;
use serde_json::Value;

use super::{FilterFields, LooseInt, SessionArgs, reply};
use crate::cli::common::{query_strings, read_request};
use crate::cli::error::invalid_request;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;

/// Search a session's events for literals.
///
/// All roles, including tool names, arguments, output and nested calls; several queries are ORed.
/// Request on stdin: `{"query": "text" | ["a", "b"], "limit", "roles", "before", "after",
/// "window_id", "max_chars_per_item"}`. Each hit's `offset_chars` addresses the document
/// `history-read` returns for that seq.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub source: SessionArgs,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// A literal, or several literals matched as alternatives; case-insensitive, no regex.
    // Required (the handler refuses its absence); a missing `Option` reads as `None` anyway.
    #[schemars(with = "crate::cli::schema::OneOrMany", required)]
    pub query: Option<Value>,
    /// Maximum event rows on the page.
    #[schemars(range(min = 1), extend("default" = crate::history::DEFAULT_LIMIT))]
    #[serde(default)]
    pub limit: Option<LooseInt>,
    /// Only events of these roles (user, assistant, tool, context). Without it, history_list shows the conversation and folds tool and context runs.
    #[schemars(with = "Option<crate::cli::schema::Roles>")]
    #[serde(default)]
    pub roles: Option<Value>,
    /// Only events with a seq below this (pass older_before to page back).
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub before: Option<LooseInt>,
    /// Only events with a seq above this (pass newer_after to page forward).
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub after: Option<LooseInt>,
    /// Only events of this context window (ids from history_windows).
    #[schemars(length(min = 1))]
    #[serde(default)]
    pub window_id: Option<String>,
    /// Preview length per event, in characters.
    #[schemars(range(min = 1), extend("default" = crate::history::DEFAULT_MAX_CHARS_PER_ITEM))]
    #[serde(default)]
    pub max_chars_per_item: Option<LooseInt>,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let request = read_request::<Request>(io)?;
    let queries = match request.query {
        None | Some(Value::Null) => Err("query is required"),
        Some(query) => query_strings(query),
    }
    .map_err(invalid_request)?;
    let filters = FilterFields {
        limit: request.limit,
        roles: request.roles,
        before: request.before,
        after: request.after,
        window_id: request.window_id,
        max_chars_per_item: request.max_chars_per_item,
    };
    let options = filters.options().map_err(invalid_request)?;
    let path = args.source.path(ctx);
    let index = args.source.index(ctx);
    let leaf = args.source.leaf.as_deref();
    let rendered = crate::history::search(&path, leaf, &queries, &options, &index.mode())?;
    Ok(reply(rendered))
}
