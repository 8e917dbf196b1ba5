//! `pi-context history-list`: one page of a session's events.

use super::{FilterFields, SessionArgs};
use crate::cli::common::read_request;
use crate::cli::error::invalid_request;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;

/// Page through the events of a session.
///
/// By default the newest page of the conversation (user and assistant turns, tool and context runs
/// folded). Request on stdin: `{"limit", "roles", "before", "after", "window_id",
/// "max_chars_per_item"}`, all optional; pass `older_before` back as `before` (or `newer_after` as
/// `after`) to page.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub source: SessionArgs,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let request = read_request::<FilterFields>(io)?;
    let options = request.options().map_err(invalid_request)?;
    args.source
        .answer(ctx, |opened| crate::history::list_in(opened, &options))
}
