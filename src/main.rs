#![deny(clippy::unwrap_used, clippy::expect_used)]
#![no_main] // the bin has no unit tests (`test = false` in Cargo.toml)
//! The `pi-context` binary: everything lives in the library; this only hands the real
//! process world (stdin, stdout, stderr, environment, clock) to `cli::main`.
//!
//! The entry point is C's `main`, not Rust's: every tool call of an agent starts one process,
//! and std's runtime start-up (`lang_start`) spends a tenth of a `notes-read` on what a
//! short-lived command does not use — reading `/proc/self/maps` to find the main thread's
//! stack guard, an alternate signal stack and SIGSEGV/SIGBUS handlers that turn a stack
//! overflow into a message. What it does that we rely on is done here, the same way: the
//! standard descriptors are made valid, SIGPIPE is ignored, a panic ends the process with exit
//! code 101 and stdout is flushed at exit. The trade-off (a stack overflow is a plain SIGSEGV,
//! a panic names its thread `<unnamed>`) is in docs/architecture.md, "Process start-up".

use std::ffi::{c_char, c_int};
use std::io::Write;

/// The exit code of a process ended by a panic (what std's runtime returns).
const PANIC_EXIT: u8 = 101;

#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    // glibc hands argc/argv to std itself (`std::env::args` works without `lang_start`).
    open_missing_standard_fds();
    ignore_sigpipe();
    let code = std::panic::catch_unwind(pi_context::cli::main).unwrap_or(PANIC_EXIT);
    // What std's runtime does at exit: whatever is still buffered for stdout is written.
    let _ = std::io::stdout().flush();
    c_int::from(code)
}

/// Make descriptors 0, 1 and 2 valid, as std's runtime does: a process started with one of
/// them closed gets `/dev/null` there, so no file this process opens (a note's temporary file)
/// can take the number and receive what is printed to stdout or stderr.
fn open_missing_standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of three `pollfd`s; a zero timeout never blocks.
    let polled = loop {
        match unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } {
            -1 if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            n => break n,
        }
    };
    for fd in fds {
        let missing = if polled == -1 {
            // poll unavailable (a descriptor limit of 0, no memory): ask each descriptor.
            // SAFETY: F_GETFD on any number is defined; it fails with EBADF when not open.
            let closed = unsafe { libc::fcntl(fd.fd, libc::F_GETFD) } == -1;
            closed && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
        } else {
            fd.revents & libc::POLLNVAL != 0
        };
        // SAFETY: a NUL-terminated path; the lowest free descriptor is the missing one, since
        // the lower ones were made valid first.
        if missing && unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0) } == -1 {
            std::process::abort(); // what std does: nothing safe is left to print to
        }
    }
}

/// Ignore SIGPIPE, as std's runtime does: writing to a closed pipe returns an error (handled
/// as a normal end: exit 0) instead of killing the process. Child processes still start with
/// the default action: std's `Command` resets it in the child.
fn ignore_sigpipe() {
    // SAFETY: setting a standard signal's disposition to SIG_IGN installs no handler code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}
