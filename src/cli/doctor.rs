//! `pi-context doctor`: read-only check of a notes home. Resolves the home (flag, then
//! `PI_NOTES_HOME`, then `~/.agents/notes`), runs [`crate::doctor::check`], prints the bounded
//! report, and maps "issues found" to exit 1 while the envelope stays `ok:true` (the check
//! itself succeeded). It never creates the home.

use std::path::PathBuf;

use serde::Deserialize;

use crate::cli::common::{Exit, emit, read_request, resolve_notes_home};
use crate::cli::{Ctx, Io};
use crate::envelope::Reply;

/// Flags of `doctor`; the request on stdin is [`Request`].
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Checks the root layout, the frontmatter of every note, backtick-quoted note addresses in bodies \
and MAP.md entries that point nowhere, and the dream lock. Never creates, repairs or commits \
anything, and never creates a missing home.

Request on stdin (may be empty): {\"all_issues\": bool} lists every issue past the 32 KiB \
output budget.

Exit status: 0 clean; 1 issues found (the envelope is still ok:true); 2 usage error or \
malformed request.")]
pub struct Args {
    /// The notes home to check (default: PI_NOTES_HOME when non-empty, else ~/.agents/notes).
    /// It is never created.
    #[arg(long, value_name = "DIR")]
    pub notes_home: Option<PathBuf>,
}

/// The request on stdin.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Request {
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
