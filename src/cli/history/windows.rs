//! `pi-context history-windows`: the reset windows of the active branch, oldest first.

use serde::Deserialize;

use super::{SessionArgs, finish};
use crate::cli::common::{Exit, emit, read_request};
use crate::cli::{Ctx, Io};
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

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    if let Err(refusal) = read_request::<Request>(io) {
        return emit(&Reply::refused(refusal), ctx, io);
    }
    let path = args.source.path(ctx);
    finish(
        super::answer_once(
            &path,
            args.source.leaf.as_deref(),
            &args.source.index(ctx).mode(),
            crate::history::windows_in,
        ),
        ctx,
        io,
    )
}
