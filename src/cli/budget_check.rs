//! `pi-context budget-check`: the context-budget decision.

use crate::cli::common::{Exit, not_implemented};
use crate::cli::{Ctx, Io};

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    not_implemented("budget-check", ctx, io)
}
