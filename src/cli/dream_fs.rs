//! `pi-context dream-fs write|edit|delete`: the dreamer's jailed file operations, one per
//! call, so the jail is one Rust implementation whatever runs the dreamer. Reads one JSON
//! request, applies it through `dream::jail`, appends the attempt (applied or refused) to
//! the run's journal when `--journal` is given, and prints the envelope.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::cli::common::{NotesHomeArg, decode_value, read_request};
use crate::cli::{CmdError, Ctx, Io};
use crate::dream::jail::{self, Edit, JailError, Receipt};
use crate::dream::journal;
use crate::envelope::{Refusal, Reply};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Op {
    /// Create or replace a file: `{"path","content"}`.
    Write,
    /// Exact-text replacements: `{"path","edits":[{"oldText","newText"}]}`.
    Edit,
    /// Delete a crumpled note: `{"path"}`.
    Delete,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Edit => "edit",
            Op::Delete => "delete",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The operation.
    #[arg(value_enum)]
    pub op: Op,
    // The notes home is the jail; the flag and its help are `NotesHomeArg`'s.
    #[command(flatten)]
    pub home: NotesHomeArg,
    /// Append this attempt, applied or refused, to this JSONL journal (the dream run's).
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteRequest {
    /// The file, relative to the notes home or absolute inside it.
    path: String,
    /// The whole new content of the file.
    content: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditRequest {
    /// The file, relative to the notes home or absolute inside it.
    path: String,
    /// Exact-text replacements: each oldText occurs exactly once, matches do not overlap, all
    /// apply or none.
    #[schemars(length(min = 1))]
    edits: Vec<Edit>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteRequest {
    /// The crumpled note to delete, relative to the notes home or absolute inside it.
    path: String,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Reply, CmdError> {
    let home = args.home.resolve(ctx);
    // The shared bounded reader; the value is decoded per operation below, after the journal
    // has learnt the path it names.
    let parsed = read_request::<Value>(io).map_err(CmdError::from);
    let given_path = parsed
        .as_ref()
        .ok()
        .and_then(|v| v.get("path"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let result = parsed.and_then(|value| apply(args.op, &home, value));
    if let Some(journal_path) = &args.journal {
        let entry = match &result {
            Ok(receipt) => journal::Entry {
                op: args.op.name().into(),
                path: given_path.clone(),
                ok: true,
                outcome: serde_json::to_value(&receipt.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string)),
                target: Some(receipt.target.clone()),
                code: None,
                message: None,
            },
            Err(error) => {
                let refusal = error.refusal();
                journal::Entry {
                    op: args.op.name().into(),
                    path: given_path.clone(),
                    ok: false,
                    outcome: None,
                    target: None,
                    code: refusal.map(|r| r.code.clone()),
                    message: refusal.map(|r| r.message.clone()),
                }
            }
        };
        if let Err(e) = journal::append(journal_path, &entry) {
            writeln!(
                io.stderr,
                "dream-fs: could not append to the journal {}: {e}",
                journal_path.display()
            )?;
        }
    }
    let receipt = result?;
    let outcome = serde_json::to_value(&receipt.outcome)?;
    let text = match args.op {
        Op::Delete => format!("deleted {}", receipt.target),
        _ => format!(
            "{} {} ({} bytes)",
            outcome.as_str().unwrap_or_default(),
            receipt.target,
            receipt.bytes
        ),
    };
    Ok(Reply::ok(
        json!({
            "op": args.op.name(),
            "path": given_path,
            "outcome": outcome,
            "target": receipt.target,
            "bytes": receipt.bytes,
        }),
        text,
    ))
}

fn apply(op: Op, home: &std::path::Path, value: Value) -> Result<Receipt, CmdError> {
    // A refusal names the path it concerns (and the failing edit).
    let refused = |path: &str, e: JailError| {
        let mut details = json!({"path": path});
        if let Some(index) = e.edit_index {
            details["edit_index"] = json!(index);
        }
        let refusal = Refusal::new(e.code(), e.message.clone(), Some(details));
        CmdError::with_refusal(e, refusal)
    };
    match op {
        Op::Write => {
            let r: WriteRequest = decode_value(value)?;
            jail::write(home, &r.path, &r.content).map_err(|e| refused(&r.path, e))
        }
        Op::Edit => {
            let r: EditRequest = decode_value(value)?;
            jail::edit(home, &r.path, &r.edits).map_err(|e| refused(&r.path, e))
        }
        Op::Delete => {
            let r: DeleteRequest = decode_value(value)?;
            jail::delete(home, &r.path).map_err(|e| refused(&r.path, e))
        }
    }
}
