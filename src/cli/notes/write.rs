//! `pi-context notes-write`: create or overwrite a note.

use serde::Deserialize;

use super::{prepare, reply};
use crate::cli::common::IdentityArgs;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
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

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let (request, store) = prepare::<Request>(&args.identity, true, ctx, io)?;
    let receipt = store.write(&request.address, &request.content, request.origin, ctx.now)?;
    Ok(reply(write_result(&receipt, store.identity())))
}
