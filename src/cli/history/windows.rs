//! `pi-context history-windows`: the reset windows of the active branch, oldest first.

use serde::Deserialize;

use super::SessionArgs;
use crate::cli::common::read_request;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;

/// List the reset windows of a session's active branch.
///
/// Oldest first, with their seq ranges and event counts. Request on stdin: `{}` (no fields).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub source: SessionArgs,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    read_request::<Request>(io)?;
    args.source.answer(ctx, crate::history::windows_in)
}
