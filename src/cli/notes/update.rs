//! `pi-context notes-update`: edit, crumple, smooth, re-origin or rename a note.

use serde::Deserialize;

use super::{prepare, reply};
use crate::cli::common::IdentityArgs;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
use crate::notes::wire::{rename_result, update_result};
use crate::notes::{Edit, ErrorKind, NoteError, Origin, UpdateOptions};

/// Edit, crumple, smooth, re-origin or rename a note.
///
/// Request on stdin: `{"address", "edits"?: [{"oldText","newText"}], "replace_all"?, "origin"?,
/// "crumpled"?, "rename_to"?}`. Edits apply in order, all or none.
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
    /// Text replacements, applied in order as one batch (all or none).
    #[serde(default)]
    pub edits: Option<Vec<Edit>>,
    /// Who the content comes from: "self" (you, the default), "user" (the human said it), "external" (a document, a tool, the web).
    #[serde(default)]
    pub origin: Option<Origin>,
    /// true crumples the note (obsolete), false smooths it back.
    #[serde(default)]
    pub crumpled: Option<bool>,
    /// Replace every occurrence of each oldText.
    #[serde(default)]
    pub replace_all: Option<bool>,
    /// New address; use alone, without edits, origin, crumpled or replace_all.
    #[serde(default)]
    pub rename_to: Option<String>,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let (request, store) = prepare::<Request>(&args.identity, true, ctx, io)?;
    let edits: Vec<Edit> = request.edits.unwrap_or_default();
    let rename_to = request.rename_to.filter(|r| !r.is_empty());
    let rendered = match rename_to {
        Some(target) => {
            if !edits.is_empty()
                || request.origin.is_some()
                || request.crumpled.is_some()
                || request.replace_all == Some(true)
            {
                return Err(NoteError::new(
                    ErrorKind::InvalidScope,
                    "rename_to is used alone: do not combine it with edits, origin, crumpled, or replace_all",
                )
                .into());
            }
            let receipt = store.rename(&request.address, &target, ctx.now)?;
            rename_result(&receipt, store.identity())?
        }
        None => {
            let options = UpdateOptions {
                origin: request.origin,
                crumpled: request.crumpled,
                replace_all: request.replace_all.unwrap_or(false),
            };
            let receipt = store.update(&request.address, &edits, options, ctx.now)?;
            update_result(&receipt, store.identity())?
        }
    };
    Ok(reply(rendered))
}
