//! The work queue of the notes walks (listing and boot in `walk`, search in `search`): one LIFO
//! stack of items shared by a few workers, where working on an item may produce more (a
//! directory yields its subdirectories and chunks of its files), so a worker finding the stack
//! empty waits while others are still busy, and all stop once nothing is queued or busy.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

pub(crate) struct WorkQueue<T, S> {
    state: Mutex<State<T, S>>,
    ready: Condvar,
}

struct State<T, S> {
    items: Vec<T>,
    /// Items taken and not finished (each may add more).
    busy: usize,
    /// What the caller counts as items finish (e.g. what the walk has discovered so far).
    tally: S,
}

impl<T, S: Copy> WorkQueue<T, S> {
    /// A queue holding `items` (the last is taken first) and the tally's start.
    pub(crate) fn new(items: Vec<T>, tally: S) -> Self {
        WorkQueue {
            state: Mutex::new(State {
                items,
                busy: 0,
                tally,
            }),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T, S>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next item, waiting while other workers may still add some; `None` once all is
    /// done. Items `drop_item` refuses are dropped unworked.
    pub(crate) fn next(&self, drop_item: impl Fn(&T) -> bool) -> Option<T> {
        let mut state = self.lock();
        loop {
            while let Some(item) = state.items.pop() {
                if drop_item(&item) {
                    continue;
                }
                state.busy += 1;
                return Some(item);
            }
            if state.busy == 0 {
                // Dropped items can empty the queue with no `finish` left to wake the others.
                self.ready.notify_all();
                return None;
            }
            state = self
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Finish an item taken with [`WorkQueue::next`]: queue what it produced (`more` is left
    /// empty) and count it into the tally. Returns how many items now wait, and the tally.
    pub(crate) fn finish(&self, more: &mut Vec<T>, count: impl FnOnce(&mut S)) -> (usize, S) {
        let mut state = self.lock();
        state.busy -= 1;
        count(&mut state.tally);
        let added = more.len();
        state.items.append(more);
        let all_done = state.busy == 0 && state.items.is_empty();
        let after = (state.items.len(), state.tally);
        drop(state);
        if all_done || added > 1 {
            self.ready.notify_all();
        } else if added == 1 {
            self.ready.notify_one();
        }
        after
    }
}

#[cfg(test)]
mod tests {
    use super::WorkQueue;

    /// Items that produce items, worked by four threads: every item is worked exactly once,
    /// the tally counts them all, and every worker stops.
    #[test]
    fn produced_items_are_all_worked_once_and_every_worker_stops() {
        // Item n > 0 produces n - 1 and n - 2 (while ≥ 0): a tree of fib-many items.
        let queue = WorkQueue::new(vec![12u32, 7], 0usize);
        let worked = std::sync::Mutex::new(Vec::new());
        let tally = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    let mut more = Vec::new();
                    while let Some(n) = queue.next(|&n| n == 3) {
                        worked.lock().unwrap().push(n);
                        more.extend((1..=2).filter(|d| n >= *d).map(|d| n - d));
                        let (_, counted) = queue.finish(&mut more, |t| *t += 1);
                        tally.fetch_max(counted, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        // Items produced by the tree of `n`, with 3s dropped (and their subtrees unproduced).
        fn count(n: u32) -> usize {
            if n == 3 {
                return 0;
            }
            1 + (1..=2)
                .filter(|d| n >= *d)
                .map(|d| count(n - d))
                .sum::<usize>()
        }
        let worked = worked.into_inner().unwrap();
        assert_eq!(worked.len(), count(12) + count(7));
        assert!(!worked.contains(&3));
        assert_eq!(tally.into_inner(), count(12) + count(7));
    }
}
