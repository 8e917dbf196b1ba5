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

/// A range of piece numbers that threads take pieces from, at either end, without a lock:
/// the first piece not taken and the one after the last not taken share one word, so a
/// taking is one compare-and-swap. At most 2^32 pieces.
pub(crate) struct PieceRange(std::sync::atomic::AtomicU64);

impl PieceRange {
    /// Pieces `front..back` (each below 2^32).
    pub(crate) fn new(front: u64, back: u64) -> PieceRange {
        debug_assert!(front <= u64::from(u32::MAX) && back <= u64::from(u32::MAX));
        PieceRange(std::sync::atomic::AtomicU64::new(back << 32 | front))
    }

    /// The first piece not taken, or (`from_back`) the last; `None` when none is left.
    pub(crate) fn take(&self, from_back: bool) -> Option<u64> {
        use std::sync::atomic::Ordering;
        let mut now = self.0.load(Ordering::Relaxed);
        loop {
            let (front, back) = (now & u64::from(u32::MAX), now >> 32);
            if front >= back {
                return None;
            }
            let (k, then) = if from_back {
                (back - 1, (back - 1) << 32 | front)
            } else {
                (front, back << 32 | (front + 1))
            };
            match self
                .0
                .compare_exchange_weak(now, then, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(k),
                Err(seen) => now = seen,
            }
        }
    }

    /// How many pieces are left (at once out of date when other threads take pieces).
    pub(crate) fn left(&self) -> u64 {
        let now = self.0.load(std::sync::atomic::Ordering::Relaxed);
        (now >> 32).saturating_sub(now & u64::from(u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::PieceRange;

    #[test]
    fn pieces_are_taken_once_from_either_end() {
        let range = PieceRange::new(3, 8);
        assert_eq!(range.left(), 5);
        assert_eq!(range.take(false), Some(3));
        assert_eq!(range.take(true), Some(7));
        assert_eq!(range.take(true), Some(6));
        assert_eq!(range.take(false), Some(4));
        assert_eq!(range.left(), 1);
        assert_eq!(range.take(true), Some(5));
        assert_eq!(
            (range.take(false), range.take(true), range.left()),
            (None, None, 0)
        );
        // Four threads taking from both ends take each piece exactly once.
        let range = PieceRange::new(0, 10_000);
        let mut taken: Vec<u64> = std::thread::scope(|scope| {
            let range = &range;
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    scope.spawn(move || {
                        std::iter::from_fn(|| range.take(t % 2 == 1)).collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        taken.sort_unstable();
        assert_eq!(taken, (0..10_000).collect::<Vec<_>>());
    }
}
