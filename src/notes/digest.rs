//! SHA-1 for the notes domain's names: the cache directory of a notes root, the access journal
//! file of a note, the hash part of a project key. Every input is a path or a short text.
//!
//! Computed with `sha1_smol` (portable code only) rather than the `sha1` crate, whose first use
//! probes the CPU for SHA instructions with three `cpuid`s: under a hypervisor each one traps
//! (≈ 20 µs here), about 100 times what hashing a path costs, paid by every `notes-read`. The
//! history index (`session::index`), which hashes 64 KiB edges of session files, keeps `sha1`.

/// The SHA-1 digest of `bytes`.
pub fn sha1(bytes: &[u8]) -> [u8; 20] {
    sha1_smol::Sha1::from(bytes).digest().bytes()
}

/// Lowercase hexadecimal of the first `n` bytes of `digest` (all of them when `n` is larger).
pub fn hex(digest: &[u8], n: usize) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(2 * n.min(digest.len()));
    for b in digest.iter().take(n) {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha1::Digest;

    #[test]
    fn equals_the_sha1_crate() {
        let long = "é/".repeat(500);
        for text in ["", "/tmp/x", "human/topic-008/note-00042.md", long.as_str()] {
            let expected: [u8; 20] = sha1::Sha1::digest(text.as_bytes()).into();
            assert_eq!(sha1(text.as_bytes()), expected, "{text:?}");
        }
        // sha1("abc"), FIPS 180-2 appendix A.
        assert_eq!(
            hex(&sha1(b"abc"), 20),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(hex(&sha1(b"abc"), 4), "a9993e36");
    }
}
