//! Waiting for the dreamer without polling: one thread blocks in `wait()`, one in the signal
//! iterator, and both report on one channel that the supervisor reads with the run's deadline
//! as its timeout. Whatever ends the wait first (exit, SIGINT/SIGTERM, deadline) decides;
//! anything but an exit ends the dreamer's process group (SIGTERM, SIGKILL after a grace
//! period). Its stdout and stderr are drained on their own threads into bounded buffers.

use std::io::{self, Read};
use std::process::{Child, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use signal_hook::iterator::Signals;

/// How long a dreamer gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(5);
/// How long the output is waited for once the dreamer has ended (a straggler that escaped the
/// process group could keep a pipe open forever).
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// At most this much of the dreamer's stdout (its final text) and stderr is kept.
const CAPTURE_MAX_BYTES: usize = 1024 * 1024;

/// What ended the supervision.
#[derive(Debug)]
pub enum Ended {
    /// The dreamer exited by itself.
    Exited(ExitStatus),
    /// It could not be waited for (then it was ended).
    WaitFailed(io::Error),
    /// SIGINT or SIGTERM reached us (then it was ended).
    Signalled(i32),
    /// The deadline passed (then it was ended).
    TimedOut,
}

/// The end and what the dreamer printed.
#[derive(Debug)]
pub struct Supervised {
    pub ended: Ended,
    pub stdout: String,
    pub stderr: String,
}

enum Event {
    Exited(io::Result<ExitStatus>),
    Signal(i32),
}

/// Wait for `child` (the leader of its own process group) for at most `timeout`, ending its
/// group early when one of `signals` arrives.
pub fn supervise(mut child: Child, timeout: Duration, signals: Option<&mut Signals>) -> Supervised {
    let stdout = capture(child.stdout.take());
    let stderr = capture(child.stderr.take());
    let group = Pid::from_child(&child);
    let (events, received) = mpsc::channel();
    let ended = std::thread::scope(|scope| {
        let exits = events.clone();
        scope.spawn(move || {
            let _ = exits.send(Event::Exited(child.wait()));
        });
        let handle = signals.map(|signals| {
            let handle = signals.handle();
            let caught = events.clone();
            scope.spawn(move || {
                for signal in signals.forever() {
                    if caught.send(Event::Signal(signal)).is_err() {
                        break;
                    }
                }
            });
            handle
        });
        drop(events);
        let ended = match received.recv_timeout(timeout) {
            Ok(Event::Exited(Ok(status))) => Ended::Exited(status),
            Ok(Event::Exited(Err(e))) => {
                // Nothing waits for the leader any more: no grace, only the kill.
                let _ = kill_process_group(group, Signal::KILL);
                Ended::WaitFailed(e)
            }
            Ok(Event::Signal(signal)) => {
                end_group(group, &received);
                Ended::Signalled(signal)
            }
            Err(RecvTimeoutError::Timeout) => {
                end_group(group, &received);
                Ended::TimedOut
            }
            Err(RecvTimeoutError::Disconnected) => Ended::WaitFailed(io::Error::other(
                "the dreamer's waiter ended without a status",
            )),
        };
        if let Some(handle) = handle {
            handle.close();
        }
        ended
    });
    Supervised {
        ended,
        stdout: stdout.finish(),
        stderr: stderr.finish(),
    }
}

/// TERM the dreamer's process group, give the leader the grace period to exit (its exit is
/// reported on `exits`), then KILL the group so no straggler survives. Returns once the leader
/// is gone.
fn end_group(group: Pid, exits: &Receiver<Event>) {
    let _ = kill_process_group(group, Signal::TERM);
    let exited = wait_for_exit(exits, Some(Instant::now() + KILL_GRACE));
    let _ = kill_process_group(group, Signal::KILL);
    if !exited {
        wait_for_exit(exits, None);
    }
}

/// Wait for the leader's exit until `deadline` (without one: until it comes); signals that
/// arrive meanwhile change nothing. Whether it exited.
fn wait_for_exit(exits: &Receiver<Event>, deadline: Option<Instant>) -> bool {
    loop {
        let event = match deadline {
            Some(deadline) => exits
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .ok(),
            None => exits.recv().ok(),
        };
        match event {
            Some(Event::Exited(_)) => return true,
            Some(Event::Signal(_)) => {}
            None => return false,
        }
    }
}

/// A pipe drained on its own thread into a bounded buffer.
struct Captured {
    buffer: Arc<Mutex<Vec<u8>>>,
    closed: Option<Receiver<()>>,
}

fn capture(pipe: Option<impl Read + Send + 'static>) -> Captured {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let closed = pipe.map(|mut pipe| {
        let buffer = Arc::clone(&buffer);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let mut held = buffer.lock().unwrap_or_else(PoisonError::into_inner);
                let room = CAPTURE_MAX_BYTES.saturating_sub(held.len());
                held.extend_from_slice(&chunk[..n.min(room)]);
            }
            let _ = tx.send(());
        });
        rx
    });
    Captured { buffer, closed }
}

impl Captured {
    /// What was read, waiting at most the drain grace for the pipe to close.
    fn finish(self) -> String {
        if let Some(closed) = self.closed {
            let _ = closed.recv_timeout(DRAIN_GRACE);
        }
        let bytes = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}
