//! How many threads a command's parallel work may use.

use std::sync::OnceLock;

/// The machine's available parallelism (CPU affinity and cgroup quota), at most 8: beyond
/// that a tool call's walk or scan gains nothing a short-lived process can use. Asked of the
/// system once per process (it reads cgroup files), then remembered.
pub(crate) fn worker_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    })
}
