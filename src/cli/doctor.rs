//! `pi-context doctor`: read-only check of a notes home.

use crate::cli::common::{Exit, not_implemented};
use crate::cli::{Ctx, Io};

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    not_implemented("doctor", ctx, io)
}
