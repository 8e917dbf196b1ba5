//! `pi-context history-read`: one event's document window.

use serde::Deserialize;

use super::{LooseInt, SessionArgs, int_field};
use crate::cli::common::read_request;
use crate::cli::error::invalid_request;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
use crate::history::read::{DEFAULT_LIMIT_CHARS, MAX_LIMIT_CHARS, ReadOptions};

/// Read one event's document.
///
/// A window of the event's document (default 12,000 characters; a negative `offset_chars` counts
/// back from the end), with tool execution metadata. Request on stdin: `{"seq", "offset_chars",
/// "limit_chars"}`; continue with `next_offset_chars`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub source: SessionArgs,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The event's seq (from history_list or history_search).
    // Required (the handler refuses its absence); a missing `Option` reads as `None` anyway.
    #[schemars(required, range(min = 1))]
    pub seq: Option<LooseInt>,
    /// Start position in characters; negative counts back from the end.
    #[schemars(extend("default" = 0))]
    #[serde(default)]
    pub offset_chars: Option<LooseInt>,
    /// Characters to return.
    #[schemars(
        range(min = 1, max = crate::history::read::MAX_LIMIT_CHARS),
        extend("default" = crate::history::read::DEFAULT_LIMIT_CHARS)
    )]
    #[serde(default)]
    pub limit_chars: Option<LooseInt>,
}

fn options(request: &Request) -> Result<ReadOptions, String> {
    let seq = int_field("seq", &request.seq, 1, None)?.ok_or("seq is required")?;
    Ok(ReadOptions {
        seq: seq as u64,
        offset_chars: int_field("offset_chars", &request.offset_chars, i64::MIN, None)?
            .unwrap_or(0),
        limit_chars: int_field(
            "limit_chars",
            &request.limit_chars,
            1,
            Some(MAX_LIMIT_CHARS as i64),
        )?
        .map_or(DEFAULT_LIMIT_CHARS, |n| n as usize),
    })
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let request = read_request::<Request>(io)?;
    let options = options(&request).map_err(invalid_request)?;
    args.source.answer(ctx, |opened| {
        crate::history::read::read_in(opened, &options)
    })
}
