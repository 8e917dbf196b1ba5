//! `pi-context doctor`: read-only check of a notes home. Resolves the home (flag, then
//! `PI_NOTES_HOME`, then `~/.agents/notes`), runs [`crate::doctor::check`], prints the bounded
//! report, and maps "issues found" to exit 1 while the envelope stays `ok:true` (the check
//! itself succeeded). It never creates the home.

use serde::Deserialize;

use crate::cli::common::{Exit, NotesHomeArg, read_request};
use crate::cli::{Answer, CmdError, Ctx, Io};
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
    // The notes home to check (never created); the flag and its help are `NotesHomeArg`'s.
    #[command(flatten)]
    pub home: NotesHomeArg,
}

/// The request on stdin.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Request {
    /// List every issue, even past the 32 KiB output budget (for logs and pipelines).
    all_issues: bool,
}

/// The report, `ok:true` either way; issues found exit 1.
pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Answer, CmdError> {
    let request: Request = read_request(io)?;
    let home = args.home.resolve(ctx);
    let report = crate::doctor::check(&home);
    let (data, text) = crate::doctor::bound(&report, !request.all_issues);
    let exit = if report.clean() {
        Exit::Ok
    } else {
        Exit::Refused
    };
    Ok(Answer::Reply(Reply::ok(&data, text), exit))
}
