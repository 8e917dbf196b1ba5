//! `pi-context notes-read`: read a window of a note's body, with its metadata.

use serde::Deserialize;

use super::{finish, prepare};
use crate::cli::common::{CacheArgs, Exit, IdentityArgs, invalid_request};
use crate::cli::{Ctx, Io};
use crate::notes::wire::{DEFAULT_READ_WINDOW_CHARS, MAX_READ_WINDOW_CHARS, read_result};
use crate::notes::{ErrorKind, NoteError};

/// Read a window of a note's body, with its metadata.
///
/// Request on stdin: `{"address", "offset_chars"?, "limit_chars"?}`; continue with
/// `next_offset_chars`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub identity: IdentityArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
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

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let (request, store) = match prepare::<Request>(&args.identity, !args.cache.no_cache, ctx, io)?
    {
        Ok(prepared) => prepared,
        Err(exit) => return Ok(exit),
    };
    let limit = request
        .limit_chars
        .unwrap_or(DEFAULT_READ_WINDOW_CHARS as u64);
    if limit == 0 || limit > MAX_READ_WINDOW_CHARS as u64 {
        return invalid_request(
            format!("limit_chars must be between 1 and {MAX_READ_WINDOW_CHARS} (got {limit})"),
            ctx,
            io,
        );
    }
    // The read (and its access bump) happens before the offset is judged, as the original.
    let result = store.read(&request.address, ctx.now).and_then(|note| {
        let note = note.ok_or_else(|| NoteError::new(ErrorKind::NotFound, "note not found"))?;
        read_result(
            &note,
            request.offset_chars.unwrap_or(0),
            limit as usize,
            store.identity(),
        )
    });
    finish(result, ctx, io)
}
