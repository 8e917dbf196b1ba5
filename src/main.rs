#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
//! The `pi-context` binary: everything lives in the library; this only hands the real
//! process world (stdin, stdout, stderr, environment, clock) to `cli::main`.

fn main() -> std::process::ExitCode {
    pi_context::cli::main()
}
