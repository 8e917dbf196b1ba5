//! `pi-context history-windows`: the reset windows of the active branch.

use crate::cli::common::{Exit, not_implemented};
use crate::cli::{Ctx, Io};

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    not_implemented("history-windows", ctx, io)
}
