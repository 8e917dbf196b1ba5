//! `pi-context notes-write`: create or overwrite a note.

use serde::Deserialize;

use super::{finish, prepare};
use crate::cli::common::{Exit, IdentityArgs};
use crate::cli::{Ctx, Io};
use crate::notes::Origin;
use crate::notes::wire::write_result;

/// Create or overwrite a note.
///
/// Request on stdin: `{"address", "content", "origin"?}`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub identity: IdentityArgs,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Note address: a bare path for this session (plan.md), or @project/…, @human/…, @self/…, @model/….
    pub address: String,
    /// The whole markdown body.
    pub content: String,
    /// Who the content comes from: "self" (you, the default), "user" (the human said it), "external" (a document, a tool, the web).
    #[serde(default)]
    pub origin: Option<Origin>,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let (request, store) = match prepare::<Request>(&args.identity, true, ctx, io)? {
        Ok(prepared) => prepared,
        Err(exit) => return Ok(exit),
    };
    let result = store
        .write(&request.address, &request.content, request.origin, ctx.now)
        .map(|receipt| write_result(&receipt, store.identity()));
    finish(result, ctx, io)
}
