//! `pi-context doctor`: read-only check of a notes home. Resolves the home (flag, then
//! `PI_NOTES_HOME`, then `~/.agents/notes`), runs [`crate::doctor::check`], prints the bounded
//! report, and maps "issues found" to exit 1 while the envelope stays `ok:true` (the check
//! itself succeeded). It never creates the home.

use std::path::PathBuf;

use serde::Deserialize;

use crate::cli::common::{Exit, emit, read_request, resolve_notes_home};
use crate::cli::{Ctx, Io};
use crate::envelope::Reply;

/// Check a notes home without changing it: root layout, frontmatter of every note, note
/// addresses in bodies and MAP.md entries that point nowhere, and the dream lock. Exit 0 when
/// clean, 1 when issues were found (the envelope is still ok:true), 2 on usage errors.
/// Request on stdin (may be empty): {"all_issues": bool}.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The notes home to check (default: PI_NOTES_HOME when non-empty, else ~/.agents/notes).
    /// It is never created.
    #[arg(long, value_name = "DIR")]
    pub notes_home: Option<PathBuf>,
}

/// The request on stdin.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Request {
    /// List every issue, even past the 32 KiB output budget (for logs and pipelines).
    all_issues: bool,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let request: Request = match read_request(io) {
        Ok(request) => request,
        Err(refusal) => return emit(&Reply::refused(refusal), ctx, io),
    };
    let home = resolve_notes_home(args.notes_home.as_deref(), ctx);
    let report = crate::doctor::check(&home);
    let (data, text) = crate::doctor::bound(&report, !request.all_issues);
    let exit = emit(&Reply::ok(&data, text), ctx, io)?;
    Ok(if exit == Exit::Ok && !report.clean() {
        Exit::Refused
    } else {
        exit
    })
}
