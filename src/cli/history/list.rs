//! `pi-context history-list`: one page of a session's events.

use super::{FilterFields, SessionArgs, finish};
use crate::cli::common::{Exit, emit, invalid_request, read_request};
use crate::cli::{Ctx, Io};
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

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let request = match read_request::<FilterFields>(io) {
        Ok(request) => request,
        Err(refusal) => return emit(&Reply::refused(refusal), ctx, io),
    };
    let options = match request.options() {
        Ok(options) => options,
        Err(message) => return invalid_request(message, ctx, io),
    };
    let path = args.source.path(ctx);
    finish(
        super::answer_once(
            &path,
            args.source.leaf.as_deref(),
            &args.source.index(ctx).mode(),
            |opened| crate::history::list_in(opened, &options),
        ),
        ctx,
        io,
    )
}
