//! `pi-context project-key`: print the project key of a directory (the key that names its
//! `@project/` home). Reads no request.

use serde_json::json;

use crate::cli::common::absolute_from;
use crate::cli::{CmdError, Ctx, Io};
use crate::envelope::Reply;
use crate::notes::identity::{key_of_root, project_root};

/// Print the project key of a directory.
///
/// Prints `{"project_key", "root"}`. Linked worktrees share the key of their main checkout. Reads
/// no request.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to key [default: the working directory].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<std::path::PathBuf>,
}

pub fn run(args: Args, ctx: &Ctx, _io: &mut Io) -> Result<Reply, CmdError> {
    let dir = absolute_from(&ctx.cwd, args.cwd.as_deref().unwrap_or(&ctx.cwd));
    let root = project_root(&dir);
    let key = key_of_root(&root);
    let root = root.to_string_lossy().into_owned();
    let text = key.clone();
    Ok(Reply::ok(json!({"project_key": key, "root": root}), text))
}
