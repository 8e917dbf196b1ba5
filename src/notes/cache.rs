//! The notes metadata cache (a cache, never the truth): where it lives.

use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

/// The directory of one notes root inside the shared cache directory:
/// `<cache>/notes/<first 16 hex of SHA-1 of the root path>`.
pub fn root_cache_dir(cache_dir: &Path, root: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let digest = Sha1::digest(root.as_os_str().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    cache_dir.join("notes").join(hex)
}
