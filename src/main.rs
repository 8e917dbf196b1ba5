//! The `pi-context` binary: everything lives in the library; this only hands the real
//! process world (stdin, stdout, stderr, environment, clock) to `cli::main`.

fn main() -> std::process::ExitCode {
    pi_context::cli::main()
}
