//! `pi-context completions <shell>`: print a completion script generated from the clap
//! definition, so completions can never drift from the real flags (a test compares the
//! checked-in files under `completions/` with this output).

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::common::Exit;
use crate::cli::{Cli, Ctx, Io};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to generate for.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: Args, _ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "pi-context", io.stdout);
    Ok(Exit::Ok)
}
