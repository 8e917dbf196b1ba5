//! `pi-context notes-read`: read a window of a note's body, with its metadata.

use serde::Deserialize;

use super::{prepare, reply};
use crate::cli::common::NotesArgs;
use crate::cli::error::invalid_request;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
use crate::notes::wire::{DEFAULT_READ_WINDOW_CHARS, MAX_READ_WINDOW_CHARS, read_result};
use crate::notes::{ErrorKind, NoteError};

/// Read a window of a note's body, with its metadata.
///
/// Request on stdin: `{"address", "offset_chars"?, "limit_chars"?}`; continue with
/// `next_offset_chars`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub notes: NotesArgs,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Note address: a bare path for this session (plan.md), or @project/…, @human/…, @self/…, @model/….
    pub address: String,
    /// Start position in characters; negative counts back from the end.
    #[schemars(extend("default" = 0))]
    #[serde(default)]
    pub offset_chars: Option<i64>,
    /// Characters to return.
    #[schemars(
        range(min = 1, max = MAX_READ_WINDOW_CHARS),
        extend("default" = DEFAULT_READ_WINDOW_CHARS)
    )]
    #[serde(default)]
    pub limit_chars: Option<u64>,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let (identity, use_cache) = (&args.notes.identity, !args.notes.cache.no_cache);
    let (request, store) = prepare::<Request>(identity, use_cache, ctx, io)?;
    let limit = request
        .limit_chars
        .unwrap_or(DEFAULT_READ_WINDOW_CHARS as u64);
    if limit == 0 || limit > MAX_READ_WINDOW_CHARS as u64 {
        return Err(invalid_request(format_args!(
            "limit_chars must be between 1 and {MAX_READ_WINDOW_CHARS} (got {limit})"
        )));
    }
    // The read (and its access bump) happens before the offset is judged, as the original.
    let note = store
        .read_skipping_pending(&request.address, ctx.now)?
        .ok_or_else(|| NoteError::new(ErrorKind::NotFound, "note not found"))?;
    let offset = request.offset_chars.unwrap_or(0);
    Ok(reply(read_result(
        &note,
        offset,
        limit as usize,
        store.identity(),
    )?))
}
