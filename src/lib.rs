// Non-test code may not `unwrap` or `expect`: every remaining one sits on an invariant, with an
// `allow` naming it (see docs/architecture.md).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
//! pi-context: durable memory for coding agents whose context window gets wiped.
//!
//! The crate is a set of pure domain libraries (`notes`, `session`, `history`, `boot`,
//! `budget`, `dream`, `doctor`) plus a thin command-line layer (`cli`) that resolves the
//! environment and flags into explicit values, calls one domain, and prints one JSON result.
//! Domains never print, exit, read environment variables or read the clock.

pub mod boot;
pub mod budget;
pub mod cli;
pub mod confine;
pub mod doctor;
pub mod dream;
pub mod envelope;
pub mod fsio;
pub mod history;
pub mod memory;
pub mod notes;
pub mod protocol;
pub mod session;
pub mod sync;
mod threads;

#[cfg(test)]
mod robustness_proptests;
pub mod window;
pub mod words;
