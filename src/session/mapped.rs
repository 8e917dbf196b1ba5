//! A private mapping of part of a cache file (the session index), so a call uses the
//! index's arrays where the page cache holds them: no copy into fresh memory, no page zeroed
//! for it. It is mapped read-only (a writable private mapping would be populated by copying
//! every page); [`Mapped::writable`] makes it writable, and then only the pages written (a
//! few patched records) are copied, privately: the file is never changed through it.
//!
//! Only the index's own files are mapped, never a session file: an index file is never
//! truncated or rewritten in place by this program (every write is a new file renamed over
//! the old one, which leaves a mapping of the old one intact), and its length is checked
//! before it is mapped, so no access can fall past its end.

use std::fs::File;
use std::ops::Deref;

/// `len` bytes of a file from `offset`, mapped privately.
pub struct Mapped {
    base: *mut std::ffi::c_void,
    /// Bytes mapped from the page boundary at or before `offset`.
    mapped: usize,
    /// Where `offset` lies in the mapping.
    start: usize,
    len: usize,
    writable: bool,
}

// The mapping is owned memory like a `Vec<u8>`'s: nothing else refers to it.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Map `[offset, offset + len)` of `file` (all pages at once: they are read in full);
    /// `None` when the file is shorter, `len` is 0, or the mapping fails.
    pub fn map(file: &File, offset: u64, len: usize) -> Option<Mapped> {
        let size = file.metadata().ok()?.len();
        if len == 0 || offset.checked_add(len as u64)? > size {
            return None;
        }
        let page = rustix::param::page_size() as u64;
        let aligned = offset - offset % page;
        let start = (offset - aligned) as usize;
        let mapped = start.checked_add(len)?;
        use rustix::mm::{MapFlags, ProtFlags};
        // SAFETY: a fresh mapping (no address given) of a range checked to lie in the file;
        // the file is an index file, only ever replaced by rename (module docs).
        let base = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                mapped,
                ProtFlags::READ,
                MapFlags::PRIVATE | MapFlags::POPULATE,
                file,
                aligned,
            )
        }
        .ok()?;
        Some(Mapped {
            base,
            mapped,
            start,
            len,
            writable: false,
        })
    }

    /// The bytes, writable (privately: copy on write of the pages written); `None` when the
    /// protection cannot be changed.
    pub fn writable(&mut self) -> Option<&mut [u8]> {
        if !self.writable {
            use rustix::mm::MprotectFlags;
            // SAFETY: changes the protection of exactly the pages `map` mapped.
            unsafe {
                rustix::mm::mprotect(
                    self.base,
                    self.mapped,
                    MprotectFlags::READ | MprotectFlags::WRITE,
                )
            }
            .ok()?;
            self.writable = true;
        }
        // SAFETY: `start + len <= mapped` bytes are mapped readable and writable (private)
        // until drop, and `&mut self` makes this the only reference.
        Some(unsafe {
            std::slice::from_raw_parts_mut((self.base as *mut u8).add(self.start), self.len)
        })
    }
}

impl Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `start + len <= mapped` bytes are mapped readable until drop.
        unsafe { std::slice::from_raw_parts((self.base as *const u8).add(self.start), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `map` mapped, once.
        let _ = unsafe { rustix::mm::munmap(self.base, self.mapped) };
    }
}

impl std::fmt::Debug for Mapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapped({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn maps_any_range_of_the_file_and_writes_stay_private() {
        let mut file = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        file.write_all(&bytes).unwrap();
        for (offset, len) in [
            (0, 1),
            (0, 20_000),
            (44, 9_000),
            (4095, 2),
            (4096, 4096),
            (19_999, 1),
        ] {
            let mut m = Mapped::map(&file, offset, len).unwrap();
            assert_eq!(&m[..], &bytes[offset as usize..offset as usize + len]);
            m.writable().unwrap()[0] ^= 0xff;
            assert_eq!(m[0], bytes[offset as usize] ^ 0xff);
        }
        let mut back = Vec::new();
        use std::io::{Read, Seek};
        file.rewind().unwrap();
        file.read_to_end(&mut back).unwrap();
        assert_eq!(back, bytes, "the file is never written");
        assert!(Mapped::map(&file, 19_999, 2).is_none(), "past the end");
        assert!(Mapped::map(&file, 5, 0).is_none());
    }
}
