//! Memory a call no longer needs, and whether to free it at all. A process that answers one
//! command and exits (every CLI command but `mcp`) leaves such memory to the exit, which
//! returns all of a process's pages at once; freeing a large structure piece by piece (a free
//! per heap string, an unmap per large block) costs a cold read time it could spend answering.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::Scope;

static EXIT_FOLLOWS: AtomicBool = AtomicBool::new(false);

/// Declare that this process exits once its command has answered (the CLI does, for every
/// command but `mcp`, which serves calls until its input ends).
pub fn exit_follows_the_call() {
    EXIT_FOLLOWS.store(true, Ordering::Relaxed);
}

/// Free `value`, which must be pure memory (no file, lock or other resource whose drop does
/// something), on a thread of `scope` while the caller goes on; or, when the process exits
/// after this call, not at all.
pub(crate) fn release<'scope, T: Send + 'scope>(scope: &'scope Scope<'scope, '_>, value: T) {
    if EXIT_FOLLOWS.load(Ordering::Relaxed) {
        std::mem::forget(value);
    } else {
        scope.spawn(move || drop(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Counted<'a>(&'a AtomicUsize);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn released_memory_is_freed_unless_the_process_exits_after_the_call() {
        // Both halves in one test: the flag is for the whole process and is never unset.
        let drops = AtomicUsize::new(0);
        std::thread::scope(|scope| release(scope, Counted(&drops)));
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "freed on a thread of the scope"
        );
        exit_follows_the_call();
        std::thread::scope(|scope| release(scope, Counted(&drops)));
        assert_eq!(drops.load(Ordering::SeqCst), 1, "left to the exit");
    }
}
