//! A read-only mapping of a range of a session file, for a scan that only reads it (the
//! search's line hits): the scan reads the page cache where it lies instead of having every
//! byte copied into a buffer first, which was half of such a scan's time.
//!
//! A mapped file can shrink while it is read (Pi rewrites a session file it migrates), and
//! reading a mapped page past the file's new end raises SIGBUS, which would end the process.
//! So while a mapping is alive it is registered with a SIGBUS handler that replaces such a
//! page by a page of zeros and marks the mapping torn; the reader asks [`MappedSession::torn`]
//! after its scan and reports the file changed instead of using what it read. A SIGBUS at
//! any other address goes to the handler that was there before (std's, or the default that
//! ends the process).
//!
//! Pages already scanned are dropped with [`MappedSession::release`] so the scan's resident
//! memory stays a window, not the range.

use std::ffi::c_void;
use std::fs::File;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// How many mappings can be registered at once (one per scanning thread); a mapping asked for
/// beyond that is not made (the caller reads instead).
const SLOTS: usize = 16;

/// Slot `i` is taken.
static TAKEN: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
/// The mapped address range of slot `i` (`start` 0: none).
static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static ENDS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// A page of slot `i` was past the file's end and was replaced by zeros.
static TORN: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// The SIGBUS action before ours, written once before ours is installed and only read after.
struct Previous(std::cell::UnsafeCell<std::mem::MaybeUninit<libc::sigaction>>);
// SAFETY: written once inside `INSTALL` before the handler that reads it can run.
unsafe impl Sync for Previous {}
static PREVIOUS: Previous = Previous(std::cell::UnsafeCell::new(std::mem::MaybeUninit::zeroed()));
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigbus(_signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut c_void) {
    // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
    let address = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for slot in 0..SLOTS {
        let start = STARTS[slot].load(Ordering::Acquire);
        if start != 0 && start <= address && address < ENDS[slot].load(Ordering::Acquire) {
            // Zeros in place of the page gone (mmap is async-signal-safe); the access is
            // then run again and reads them.
            // SAFETY: replaces one page inside a mapping this module made and still owns.
            let zeros = unsafe {
                libc::mmap(
                    (address & !(page - 1)) as *mut c_void,
                    page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if zeros != libc::MAP_FAILED {
                TORN[slot].store(true, Ordering::Release);
                return;
            }
        }
    }
    // Not ours: the action before ours takes it when the access faults again.
    // SAFETY: `PREVIOUS` was written before this handler was installed.
    unsafe {
        libc::sigaction(
            libc::SIGBUS,
            (*PREVIOUS.0.get()).as_ptr(),
            std::ptr::null_mut(),
        )
    };
}

fn install() -> bool {
    INSTALL.call_once(|| {
        PAGE.store(rustix::param::page_size(), Ordering::Relaxed);
        // SAFETY: a zeroed sigaction is a valid value to fill; `PREVIOUS` is written here,
        // before the handler that reads it is installed, and never again.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let previous = (*PREVIOUS.0.get()).as_mut_ptr();
            if libc::sigaction(libc::SIGBUS, &action, previous) == 0 {
                INSTALLED.store(true, Ordering::Release);
            }
        }
    });
    INSTALLED.load(Ordering::Acquire)
}

/// `[offset, offset + len)` of a session file, mapped read-only and guarded (module docs).
pub struct MappedSession {
    base: *mut c_void,
    mapped: usize,
    /// Where `offset` lies in the mapping.
    start: usize,
    len: usize,
    slot: usize,
}

// The mapping is owned memory like a `Vec<u8>`'s: nothing else refers to it.
unsafe impl Send for MappedSession {}
unsafe impl Sync for MappedSession {}

impl MappedSession {
    /// Map `[offset, offset + len)` of `file`; `None` when `len` is 0, the range is not in
    /// the file, no slot is free, the handler cannot be installed or the mapping fails (the
    /// caller then reads the range).
    pub fn map(file: &File, offset: u64, len: usize) -> Option<MappedSession> {
        let size = file.metadata().ok()?.len();
        if len == 0 || offset.checked_add(len as u64)? > size || !install() {
            return None;
        }
        let slot = (0..SLOTS).find(|&slot| {
            TAKEN[slot]
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        let page = PAGE.load(Ordering::Relaxed) as u64;
        let aligned = offset - offset % page;
        let start = (offset - aligned) as usize;
        let mapped = start + len;
        use rustix::mm::{MapFlags, ProtFlags};
        // SAFETY: a fresh read-only mapping (no address given) of a range checked to lie in
        // the file; a page the file loses while mapped is guarded (module docs).
        let base = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                mapped,
                ProtFlags::READ,
                MapFlags::PRIVATE,
                file,
                aligned,
            )
        };
        let Ok(base) = base else {
            TAKEN[slot].store(false, Ordering::Release);
            return None;
        };
        TORN[slot].store(false, Ordering::Relaxed);
        ENDS[slot].store(base as usize + mapped, Ordering::Release);
        STARTS[slot].store(base as usize, Ordering::Release);
        Some(MappedSession {
            base,
            mapped,
            start,
            len,
            slot,
        })
    }

    /// The mapped bytes. Where the file shrank under them they read as zeros, and
    /// [`MappedSession::torn`] says so.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `start + len <= mapped` bytes are mapped readable until drop; a page the
        // file lost reads as zeros (module docs).
        unsafe { std::slice::from_raw_parts((self.base as *const u8).add(self.start), self.len) }
    }

    /// Drop the resident pages wholly before byte `upto` of [`MappedSession::bytes`]; they
    /// are read again from the file if touched again.
    pub fn release(&self, upto: usize) {
        let end = (self.start + upto.min(self.len)) / PAGE.load(Ordering::Relaxed)
            * PAGE.load(Ordering::Relaxed);
        if end > 0 {
            // SAFETY: advises pages of this mapping only; reading them again is valid.
            let _ =
                unsafe { rustix::mm::madvise(self.base, end, rustix::mm::Advice::LinuxDontNeed) };
        }
    }

    /// Whether a page read was past the file's end (the file shrank): what was read there
    /// was zeros, not the file.
    pub fn torn(&self) -> bool {
        TORN[self.slot].load(Ordering::Acquire)
    }
}

impl Drop for MappedSession {
    fn drop(&mut self) {
        STARTS[self.slot].store(0, Ordering::Release);
        ENDS[self.slot].store(0, Ordering::Release);
        // SAFETY: unmaps exactly what `map` mapped, once.
        let _ = unsafe { rustix::mm::munmap(self.base, self.mapped) };
        TAKEN[self.slot].store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn maps_a_range_and_releases_what_was_read() {
        let mut file = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..50_000u32).map(|i| (i % 253) as u8).collect();
        file.write_all(&bytes).unwrap();
        for (offset, len) in [(0, 1), (0, 50_000), (4095, 2), (5000, 40_000), (49_999, 1)] {
            let m = MappedSession::map(&file, offset, len).unwrap();
            let range = offset as usize..offset as usize + len;
            assert_eq!(m.bytes(), &bytes[range.clone()]);
            m.release(len / 2);
            assert_eq!(m.bytes(), &bytes[range], "released pages read again");
            assert!(!m.torn());
        }
        assert!(
            MappedSession::map(&file, 49_999, 2).is_none(),
            "past the end"
        );
        assert!(MappedSession::map(&file, 0, 0).is_none());
    }

    #[test]
    fn a_file_that_shrinks_under_its_mapping_reads_zeros_and_says_so() {
        let page = rustix::param::page_size();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![b'x'; 4 * page]).unwrap();
        let m = MappedSession::map(&file, 0, 4 * page).unwrap();
        file.set_len(page as u64 + 10).unwrap();
        // Without the guard this read ends the test process with SIGBUS.
        let tail: u64 = m.bytes()[2 * page..].iter().map(|&b| u64::from(b)).sum();
        assert_eq!(tail, 0);
        assert!(m.torn());
        assert_eq!(
            m.bytes()[0],
            b'x',
            "the pages still in the file are the file"
        );
        drop(m);
        let again = MappedSession::map(&file, 0, page).unwrap();
        assert!(!again.torn(), "a new mapping starts untorn");
    }
}
