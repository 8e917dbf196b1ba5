//! The persistent, incremental index of a session file: the decoded skeleton of its complete
//! lines (entries with their byte ranges, ids, parents, timestamps, kinds, roles, tool-call
//! ids and names, marker window ids, the header, the malformed-line count), so a call decodes
//! only the bytes Pi appended since the last one. It is a cache, never the truth:
//!
//! - Where: `<cache dir>/history/<sha1 of the canonical session path>.idx`; the cache directory
//!   is handed in by the caller. The session file is never written.
//! - Validity: the index names the same canonical path, the file is the same file (device and
//!   inode), has not shrunk below the indexed length, and the first and last 4 KiB of the
//!   indexed bytes still hash the same; the index file itself carries a magic, a format
//!   version and a checksum of its body, and must decode exactly. Anything else rebuilds it.
//! - Growth: only complete lines (ending in `\n`) are indexed; the bytes after the last `\n`
//!   (a line Pi is still writing) are decoded on every call and left for the next one.
//! - Growth file: an extension by a caller that keeps extra data (history's stored
//!   projection) may write only a small `<name>.grow` next to the index file (what the lines
//!   since add, and their skeleton chunks), bound to the index file by its preamble and valid
//!   by the same rule for the bytes it covers; it is folded into a new index file once it
//!   passes an eighth of it ([`Grow::write_delta`], [`Grow::write`]).
//! - Safety: written to a temp file in the same directory and renamed over the old one, so two
//!   processes extending it at once each leave a whole, valid index (the last rename wins);
//!   an index that cannot be written (read-only or full disk) or would exceed 10 % of the
//!   bytes it covers is simply not kept: the call answers without it.
//! - Housekeeping: every call looks at a few index files (bounded work); one whose session
//!   file is gone gets a `.gone` marker, and is removed with it once the marker is 30 days old.

use std::fs::{self, File, Metadata};
use std::hash::BuildHasher;
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use compact_str::CompactString;
use rustc_hash::{FxBuildHasher, FxHashMap};
use sha1::{Digest, Sha1};
use thin_vec::ThinVec;

use super::mapped::Mapped;
use super::{
    CustomMeta, Decoded, Entries, Entry, EntryFlags, EntryKind, Header, LineMemo, LineReader,
    LineTest, Lineage, MessageExtras, MessageMeta, PositionedReader, Role, SessionError,
    TestedLine, ToolCallMeta, decode_range, io_error_of,
};

/// How a read may use the index.
#[derive(Debug, Clone, Copy)]
pub enum IndexMode<'a> {
    /// `--no-index`: read the whole file, touch no index.
    Off,
    /// No cache directory could be named: read the whole file.
    Unavailable,
    /// Use (and keep up to date) the index under `dir` (the cache directory); `now` ages the
    /// housekeeping markers.
    In { dir: &'a Path, now: SystemTime },
}

/// How a call used the index (`data.index` of every history result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IndexUse {
    /// No valid index existed; one was written from a full read.
    Built,
    /// A valid index was extended by the complete lines appended since, and rewritten.
    Extended,
    /// A valid index covered every complete line.
    Reused,
    /// `--no-index`.
    Bypassed,
    /// No index could be used or kept (no cache directory, unwritable, too large): the file
    /// was read in full.
    Unavailable,
}

impl IndexUse {
    pub fn as_str(self) -> &'static str {
        match self {
            IndexUse::Built => "built",
            IndexUse::Extended => "extended",
            IndexUse::Reused => "reused",
            IndexUse::Bypassed => "bypassed",
            IndexUse::Unavailable => "unavailable",
        }
    }
}

/// First bytes of every index file.
const MAGIC: &[u8; 8] = b"PICXHIDX";
/// The format version; any other is rebuilt.
const FORMAT: u32 = 12;
/// Bytes hashed at each end of the indexed range.
const EDGE: u64 = 4096;
/// An index larger than this share of the bytes it covers is not kept (percent).
const MAX_SHARE_PERCENT: u64 = 10;
/// The head's skeleton length of an index file kept without its skeleton (the caller's extra
/// data fitted the share only without it): such a file serves [`peek`] alone; a read that
/// needs the skeleton decodes the session file.
const NO_SKELETON: u64 = u64::MAX;
/// A `.gone` marker this old removes its index.
const GONE_AFTER: Duration = Duration::from_secs(30 * 24 * 3600);
/// Index files looked at per call by the housekeeping.
const HOUSEKEEPING_PER_CALL: usize = 16;

/// The subdirectory of the cache directory holding session indexes.
pub fn index_dir(cache: &Path) -> PathBuf {
    cache.join("history")
}

/// The growth file next to an index (`<name>.grow`): what was appended since the index was
/// written (see [`Grow::write_delta`]).
pub fn grow_path(index: &Path) -> PathBuf {
    index.with_extension("grow")
}

/// The leaf file next to an index (`<name>.leaf`): the projection of the last leaf named
/// that is not the default one, for the index state it was built from (see [`LeafSlot`]).
pub fn leaf_path(index: &Path) -> PathBuf {
    index.with_extension("leaf")
}

/// The index file of a session (by its canonical path).
pub fn index_path(cache: &Path, canonical: &Path) -> PathBuf {
    let digest = Sha1::digest(canonical.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    index_dir(cache).join(format!("{hex}.idx"))
}

/// Read a session through its index (see the module docs): the decoded file, with flags from
/// `test` for every entry when there is one, how the index was used, and the index write
/// still to do (for `Built` and `Extended`, and for a reused index without extra data).
pub(crate) fn open_through_index(
    path: &Path,
    file: &File,
    meta: &Metadata,
    cache: &Path,
    now: SystemTime,
    test: Option<&LineTest<'_>>,
) -> Result<Through, SessionError> {
    let size = meta.len();
    let io_error = |source: std::io::Error| io_error_of(path, source);
    let complete = complete_end(file, size).map_err(io_error)?;
    housekeeping(&index_dir(cache), now);
    let Ok(canonical) = fs::canonicalize(path) else {
        let decoded = decode_range(path, file, 0, size, test, Decoded::empty())?;
        return Ok(Through {
            decoded,
            used: IndexUse::Unavailable,
            pending: None,
            leaf_slot: None,
        });
    };
    let target = index_path(cache, &canonical);
    let identity = Identity {
        path: canonical.as_os_str().as_encoded_bytes().to_vec(),
        dev: meta.dev(),
        ino: meta.ino(),
    };
    let bytes = fs::read(&target).ok();
    let loaded = bytes
        .as_deref()
        .and_then(decode)
        .filter(|stored| stored.valid_for(&identity, file, complete));
    // Where a reused index with extra data would keep a named leaf's projection.
    let slot = bytes.as_deref().and_then(|bytes| {
        let pre = preamble(bytes)?;
        Some(LeafSlot {
            target: leaf_path(&target),
            binding: leaf_binding(&pre, &[0; GROW_BINDING]),
            room: room_beside(complete, bytes.len() as u64),
        })
    });
    // A valid index kept without its skeleton (its extra data is what it is for) is not
    // replaced by one without extra data.
    let keep_existing = loaded.is_none()
        && bytes
            .as_deref()
            .is_some_and(|bytes| omits_skeleton(bytes, &identity, file, complete));
    drop(bytes);
    let (stored, use_, had_extra) = match loaded {
        Some(stored) => {
            let indexed = stored.indexed_len;
            let had_extra = stored.has_extra;
            let mut decoded = stored.decoded;
            if let Some(test) = test {
                decoded.flags = scan_flags(file, &decoded.entries, test).map_err(io_error)?;
            }
            if indexed < complete {
                let decoded = decode_range(path, file, indexed, complete, test, decoded)?;
                (decoded, IndexUse::Extended, had_extra)
            } else {
                (decoded, IndexUse::Reused, had_extra)
            }
        }
        None => {
            let decoded = decode_range(path, file, 0, complete, test, Decoded::empty())?;
            (decoded, IndexUse::Built, false)
        }
    };
    let pending = if use_ != IndexUse::Reused || !had_extra {
        Pending::new(target, identity, file, complete, &stored).map(|mut pending| {
            pending.keep_existing = keep_existing;
            pending
        })
    } else {
        None
    };
    let pending_missing = pending.is_none() && use_ != IndexUse::Reused;
    let indexed_entries = stored.entries.len();
    let decoded = decode_range(path, file, complete, size, test, stored)?;
    // No index could be encoded (no header yet): nothing is kept.
    let use_ = if pending_missing {
        IndexUse::Unavailable
    } else {
        use_
    };
    // A leaf file holds a projection of exactly the indexed lines (as the stored one): not
    // when the line after the last `\n` holds an entry. (Not beside an index kept without
    // its skeleton either: it is kept so because the projection alone nearly fills the
    // share.)
    // (An index reused with its extra data is the one case with no write pending.)
    let leaf_slot = slot.filter(|_| {
        use_ == IndexUse::Reused && had_extra && decoded.entries.len() == indexed_entries
    });
    Ok(Through {
        decoded,
        used: use_,
        pending,
        leaf_slot,
    })
}

/// What [`open_through_index`] read and what is left to write.
pub(crate) struct Through {
    pub decoded: Decoded,
    pub used: IndexUse,
    /// The index write still to do (for `Built` and `Extended`, and for a reused index
    /// without extra data).
    pub pending: Option<Pending>,
    /// Where a named leaf's projection may be kept (an index reused with its extra data).
    pub leaf_slot: Option<LeafSlot>,
}

/// What a valid index holds besides its skeleton (see [`peek`]).
pub(crate) struct Peeked {
    pub header: Header,
    pub lines: u64,
    pub skipped: u64,
    /// The end of the indexed lines (≤ `complete`).
    pub indexed: u64,
    /// The end of the last complete line of the file now.
    pub complete: u64,
    /// The caller's extra data.
    pub extra: Extra,
    /// The caller's data of a valid growth file written since (see [`Grow::write_delta`]):
    /// what the lines `[indexed of the index file, indexed)` add to `extra`.
    pub delta: Option<Vec<u8>>,
    /// How to extend the index by lines appended since (when `indexed < complete`).
    pub grow: Grow,
}

/// The extra data of an index, as read (the tail of the mapped front section, so it is not
/// copied).
pub struct Extra {
    buf: Mapped,
    at: usize,
}

impl Extra {
    /// The mapped front section and where in it the extra data starts.
    pub fn into_parts(self) -> (Mapped, usize) {
        (self.buf, self.at)
    }
}

/// What extending a peeked index in place needs: its open file (so the unchanged skeleton
/// chunks are copied from the very file the head was read from, even if another process
/// renames a new index over it meanwhile), where its sections are, and which session file
/// it belongs to.
pub struct Grow {
    index: File,
    /// The index file's length.
    index_len: u64,
    target: PathBuf,
    identity: Identity,
    /// The index file's preamble (a growth file names it).
    pre: Pre,
    side_at: u64,
    side_len: u64,
    side_sum: u64,
    back_at: u64,
    back_len: u64,
    /// The skeleton chunks of a valid growth file (entries appended since the index file).
    grown_chunks: Vec<u8>,
    /// What binds a leaf file to the valid growth file read ([`grow_binding`]; zeros for
    /// none).
    grown: [u8; GROW_BINDING],
}

impl Grow {
    /// Whether the index file holds the skeleton (else extensions add no skeleton chunks
    /// and it stays without one; see [`NO_SKELETON`]).
    pub fn keeps_skeleton(&self) -> bool {
        self.back_len != NO_SKELETON
    }

    /// The side data stored with the extra data (mapped), checked (`None` when absent or
    /// damaged).
    pub fn side(&self) -> Option<Mapped> {
        let side = Mapped::map(
            &self.index,
            self.side_at,
            usize::try_from(self.side_len).ok()?,
        )?;
        (blocks_sum(&[&side]) == self.side_sum).then_some(side)
    }

    /// The stored projection of the branch ending at `leaf`, when the leaf file holds one
    /// for exactly this index state (the index file and its growth file, if any), checked:
    /// the mapped body of the leaf file and where the projection starts in it.
    pub fn leaf_projection(&self, leaf: &str) -> Option<(Mapped, usize)> {
        read_leaf(
            &leaf_path(&self.target),
            &leaf_binding(&self.pre, &self.grown),
            leaf,
        )
    }

    /// Atomically write the index extended by `appended` (the decode of the complete lines
    /// `[indexed, complete)` appended to the peeked head: its `lines` and `skipped` are the
    /// totals so far, its entries only the new ones; `chunk` their skeleton chunk,
    /// [`chunk_of`]), with the caller's new `extra` and `side` data: the old skeleton chunks
    /// (of the index file, then of its growth file) are copied unchanged and the new entries
    /// added as one more chunk; the growth file is then removed. Data that would push the
    /// index past its share of the file is dropped (the index is then kept without it).
    /// Returns whether an index was written.
    pub(crate) fn write(
        &self,
        file: &File,
        complete: u64,
        appended: &Decoded,
        chunk: &[u8],
        extra: &[&[u8]],
        side: &[&[u8]],
    ) -> bool {
        let Some(head) = self.grown_head(file, complete, appended, chunk.len()) else {
            return false;
        };
        let written = if self.keeps_skeleton() {
            let back = Back::Copy {
                from: &self.index,
                at: self.back_at,
                len: self.back_len,
                chunks: [&self.grown_chunks, chunk],
            };
            write_index(&self.target, complete, &head, extra, side, &back).is_some()
                || write_index(&self.target, complete, &head, &[], &[], &back).is_some()
        } else {
            // Without a skeleton the file is only worth its extra data; `chunk` is empty.
            pieces_len(extra) != 0
                && chunk.is_empty()
                && write_index(
                    &self.target,
                    complete,
                    &head,
                    extra,
                    side,
                    &Back::Whole(&[]),
                )
                .is_some()
        };
        if written {
            let _ = fs::remove_file(grow_path(&self.target));
            let _ = fs::remove_file(leaf_path(&self.target));
        }
        written
    }

    /// The head of an index (or growth file) covering `complete` bytes of `file` once
    /// `appended` and its skeleton chunk of `chunk` bytes are added; `None` when `appended` has no header or the file's edges cannot be read.
    fn grown_head(
        &self,
        file: &File,
        complete: u64,
        appended: &Decoded,
        chunk: usize,
    ) -> Option<Vec<u8>> {
        let header = appended.header.as_ref()?;
        let (head_hash, tail_hash) = edges(file, complete).ok()?;
        let back_len = if self.keeps_skeleton() {
            self.back_len + (self.grown_chunks.len() + chunk) as u64
        } else if chunk == 0 {
            NO_SKELETON
        } else {
            return None;
        };
        let head = encode_head(
            &self.identity,
            complete,
            &head_hash,
            &tail_hash,
            header,
            (appended.lines, appended.skipped, back_len),
        );
        Some(head)
    }

    /// Bytes of a growth file holding `payload` and the skeleton chunks since the index file
    /// (those of the growth file read, and `chunk`).
    fn delta_len(&self, payload: usize, chunk: usize) -> u64 {
        (GROW_PREAMBLE + BINDING + self.identity.path.len() + 160 + payload) as u64
            + (self.grown_chunks.len() + chunk) as u64
    }

    /// Whether a growth file holding `payload` and `chunk` stays small beside the index
    /// file (at most an eighth of it); else the caller folds everything into a new index
    /// file ([`Self::write`]).
    pub(crate) fn delta_fits(&self, payload: usize, chunk: usize) -> bool {
        self.delta_len(payload, chunk) * GROW_SHARE <= self.index_len
    }

    /// Atomically write the growth file (temp file + rename) instead of the whole index: the
    /// index file stays as it is, and the growth file — bound to it by its preamble (lengths
    /// and checksums), with its own head (the file's bytes now covered, their edge hashes,
    /// line and malformed counts), the caller's `payload` (what the appended lines add to
    /// its extra data, since the index file) and the skeleton chunks since the index file
    /// (the growth file's, then `chunk` of `appended`) — is read with it while it is valid.
    /// Returns whether it was written (`false`: unwritable, or past the index's share).
    pub(crate) fn write_delta(
        &self,
        file: &File,
        complete: u64,
        appended: &Decoded,
        chunk: &[u8],
        payload: &[u8],
    ) -> bool {
        let Some(head) = self.grown_head(file, complete, appended, chunk.len()) else {
            return false;
        };
        let mut body = Out {
            buf: Vec::with_capacity(
                BINDING + head.len() + payload.len() + self.grown_chunks.len() + chunk.len() + 16,
            ),
        };
        body.buf.extend_from_slice(&binding(&self.pre));
        body.buf.extend_from_slice(&head);
        body.bytes(payload);
        body.buf.extend_from_slice(&self.grown_chunks);
        body.buf.extend_from_slice(chunk);
        let total = self.index_len + (GROW_PREAMBLE + body.buf.len()) as u64;
        if total * 100 > complete * MAX_SHARE_PERCENT {
            return false;
        }
        let mut preamble = Vec::with_capacity(GROW_PREAMBLE);
        preamble.extend_from_slice(GROW_MAGIC);
        preamble.extend_from_slice(&FORMAT.to_le_bytes());
        preamble.extend_from_slice(&(body.buf.len() as u64).to_le_bytes());
        preamble.extend_from_slice(&checksum(&body.buf).to_le_bytes());
        let Some(dir) = self.target.parent() else {
            return false;
        };
        let written = (|| -> std::io::Result<()> {
            let mut temp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
            temp.write_all(&preamble)?;
            temp.write_all(&body.buf)?;
            temp.persist(grow_path(&self.target)).map_err(|e| e.error)?;
            Ok(())
        })();
        if written.is_ok() {
            // A leaf file of the state before is stale: it would only hold a share.
            let _ = fs::remove_file(leaf_path(&self.target));
        }
        written.is_ok()
    }
}

/// First bytes of every growth file.
const GROW_MAGIC: &[u8; 8] = b"PICXHGRW";
/// Bytes before a growth file's body: magic, format, body length and checksum.
const GROW_PREAMBLE: usize = 8 + 4 + 8 + 8;
/// Bytes of the index file's preamble fields that bind a growth file to it.
const BINDING: usize = 32;
/// A growth file is kept while it is at most this fraction (1/n) of its index file.
const GROW_SHARE: u64 = 8;

/// What binds a growth file to its index file: the index file's front and side lengths and
/// checksums.
fn binding(pre: &Pre) -> [u8; BINDING] {
    let mut out = [0u8; BINDING];
    out[..8].copy_from_slice(&(pre.front_len as u64).to_le_bytes());
    out[8..16].copy_from_slice(&pre.front_sum.to_le_bytes());
    out[16..24].copy_from_slice(&pre.side_len.to_le_bytes());
    out[24..].copy_from_slice(&pre.side_sum.to_le_bytes());
    out
}

/// Bytes of what binds a leaf file to a growth file: its body's length and checksum.
const GROW_BINDING: usize = 16;

/// What binds a leaf file to the growth file read: its body's length and checksum.
fn grow_binding(body_len: u64, body_sum: u64) -> [u8; GROW_BINDING] {
    let mut out = [0u8; GROW_BINDING];
    out[..8].copy_from_slice(&body_len.to_le_bytes());
    out[8..].copy_from_slice(&body_sum.to_le_bytes());
    out
}

/// First bytes of every leaf file.
const LEAF_MAGIC: &[u8; 8] = b"PICXHLEF";
/// Bytes before a leaf file's body: magic, format, body length and checksum.
const LEAF_PREAMBLE: usize = 8 + 4 + 8 + 8;
/// Where the body's checksum lies in a leaf file's preamble.
const LEAF_SUM_AT: usize = 20;
/// Bytes of what binds a leaf file to an index state.
const LEAF_BINDING: usize = BINDING + GROW_BINDING;

/// What binds a leaf file to an index state: the index file's binding (as a growth file's,
/// [`binding`]), then the growth file's ([`grow_binding`]; zeros when there is none). Every
/// state has its own: a leaf file is read only with the very index state its projection was
/// built from, so the lines it names are the ones that index covers.
fn leaf_binding(pre: &Pre, grown: &[u8; GROW_BINDING]) -> [u8; LEAF_BINDING] {
    let mut out = [0u8; LEAF_BINDING];
    out[..BINDING].copy_from_slice(&binding(pre));
    out[BINDING..].copy_from_slice(grown);
    out
}

/// Bytes a leaf file may take beside an index file of `index_len` bytes covering `complete`
/// bytes: what the index leaves of its share.
fn room_beside(complete: u64, index_len: u64) -> u64 {
    (complete.saturating_mul(MAX_SHARE_PERCENT) / 100).saturating_sub(index_len)
}

/// An index file as written: its preamble's fields and its length.
struct Written {
    pre: Pre,
    len: u64,
}

/// Where the projection of a named leaf that is not the default one may be kept beside a
/// reused index: the leaf file, bound to the index state the projection was built from (a
/// call naming that leaf again reads it instead of decoding the skeleton and building the
/// projection: [`Grow::leaf_projection`]). One leaf per session is kept, the last named;
/// any write of the index or of its growth file removes it.
pub struct LeafSlot {
    target: PathBuf,
    binding: [u8; LEAF_BINDING],
    /// Bytes the leaf file may take: what the index file leaves of its share.
    room: u64,
}

impl LeafSlot {
    /// Atomically write the leaf file: the binding, `leaf`, and `projection` (in pieces).
    /// `false` when it would pass the room left or cannot be written.
    pub fn write(&self, leaf: &str, projection: &[&[u8]]) -> bool {
        let mut head = Out {
            buf: Vec::with_capacity(LEAF_BINDING + leaf.len() + 10),
        };
        head.buf.extend_from_slice(&self.binding);
        head.bytes(leaf.as_bytes());
        let body_len = head.buf.len() + pieces_len(projection);
        if (LEAF_PREAMBLE + body_len) as u64 > self.room {
            return false;
        }
        let Some(dir) = self.target.parent() else {
            return false;
        };
        let written = (|| -> std::io::Result<()> {
            let mut temp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
            temp.write_all(LEAF_MAGIC)?;
            temp.write_all(&FORMAT.to_le_bytes())?;
            temp.write_all(&(body_len as u64).to_le_bytes())?;
            temp.write_all(&0u64.to_le_bytes())?;
            let pieces: Vec<&[u8]> = std::iter::once(&head.buf[..])
                .chain(projection.iter().copied())
                .collect();
            let sum = write_blocks(temp.as_file_mut(), &pieces)?;
            temp.as_file()
                .write_all_at(&sum.to_le_bytes(), LEAF_SUM_AT as u64)?;
            temp.persist(&self.target).map_err(|e| e.error)?;
            Ok(())
        })();
        written.is_ok()
    }
}

/// The leaf file at `path` when it is whole, for `leaf` and bound to `binding`: its body,
/// mapped, and where the caller's projection starts in it.
fn read_leaf(path: &Path, binding: &[u8; LEAF_BINDING], leaf: &str) -> Option<(Mapped, usize)> {
    let file = File::open(path).ok()?;
    let mut pre = [0u8; LEAF_PREAMBLE];
    file.read_exact_at(&mut pre, 0).ok()?;
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(pre.get(at..at + 8)?.try_into().ok()?))
    };
    if pre[..8] != LEAF_MAGIC[..] || u32::from_le_bytes(pre[8..12].try_into().ok()?) != FORMAT {
        return None;
    }
    let body_len = word(12)?;
    if file.metadata().ok()?.len() != (LEAF_PREAMBLE as u64).checked_add(body_len)? {
        return None;
    }
    let body = Mapped::map(&file, LEAF_PREAMBLE as u64, usize::try_from(body_len).ok()?)?;
    let mut r = In { buf: &body, at: 0 };
    // The binding and the leaf first: a stale file is told without its checksum.
    if r.take(LEAF_BINDING)? != binding || r.bytes()? != leaf.as_bytes() {
        return None;
    }
    let at = r.at;
    (blocks_sum(&[&body]) == word(LEAF_SUM_AT)?).then_some((body, at))
}

/// A valid growth file of the index file read (`pre`, `base`): its head, the caller's
/// payload and the skeleton chunks since the index file. `None` when there is none, or it
/// is damaged, foreign, bound to another index file, or no longer matches the session
/// file (the index's own rule: same path, device and inode, not shrunk, edge hashes).
fn read_grow(
    path: &Path,
    pre: &Pre,
    base: &Head,
    identity: &Identity,
    file: &File,
    complete: u64,
) -> Option<GrowRead> {
    let bytes = fs::read(path).ok()?;
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    if bytes.get(..8)? != GROW_MAGIC
        || u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) != FORMAT
    {
        return None;
    }
    let body = bytes.get(GROW_PREAMBLE..)?;
    if word(12)? != body.len() as u64 || checksum(body) != word(20)? {
        return None;
    }
    let mut r = In { buf: body, at: 0 };
    if r.take(BINDING)? != binding(pre) {
        return None;
    }
    let head = decode_head(&mut r)?;
    let payload = r.bytes()?.to_vec();
    let chunks = &body[r.at..];
    // Whole chunks, each with its checksum.
    let mut rest = chunks;
    while !rest.is_empty() {
        (_, rest) = split_chunk(rest)?;
    }
    let valid = head.back_len == base.back_len.checked_add(chunks.len() as u64)?
        && head.indexed_len > base.indexed_len
        && head.lines >= base.lines
        && head.header == base.header
        && head.valid_for(identity, file, complete);
    let binding = grow_binding(word(12)?, word(20)?);
    valid.then(|| GrowRead {
        head,
        payload,
        chunks: chunks.to_vec(),
        binding,
    })
}

/// A valid growth file as read: its head, the caller's payload, the skeleton chunks since
/// the index file, and what binds a leaf file to it.
struct GrowRead {
    head: Head,
    payload: Vec<u8>,
    chunks: Vec<u8>,
    binding: [u8; GROW_BINDING],
}

/// The head and extra data of a valid index of `file` that carries extra data, without
/// decoding its skeleton (only the front section is read and checked). `None` for anything
/// else.
pub(crate) fn peek(
    path: &Path,
    file: &File,
    meta: &Metadata,
    cache: &Path,
    now: SystemTime,
) -> Result<Option<Peeked>, SessionError> {
    let complete = complete_end(file, meta.len()).map_err(|e| io_error_of(path, e))?;
    housekeeping(&index_dir(cache), now);
    let Ok(canonical) = fs::canonicalize(path) else {
        return Ok(None);
    };
    let identity = Identity {
        path: canonical.as_os_str().as_encoded_bytes().to_vec(),
        dev: meta.dev(),
        ino: meta.ino(),
    };
    let target = index_path(cache, &canonical);
    let Some((index, index_len, pre, front)) = read_front(&target) else {
        return Ok(None);
    };
    let mut r = In { buf: &front, at: 0 };
    let Some(head) = decode_head(&mut r) else {
        return Ok(None);
    };
    let Some(extra_len) = r.u().and_then(|n| usize::try_from(n).ok()) else {
        return Ok(None);
    };
    let extra_at = r.at;
    if extra_len == 0
        || extra_at.checked_add(extra_len) != Some(front.len())
        || !head.valid_for(&identity, file, complete)
    {
        return Ok(None);
    }
    let side_at = (PREAMBLE + pre.front_len) as u64;
    let Some(back_at) = side_at.checked_add(pre.side_len) else {
        return Ok(None);
    };
    let grown = read_grow(&grow_path(&target), &pre, &head, &identity, file, complete);
    let (now, delta, grown_chunks, grown) = match grown {
        Some(read) => (read.head, Some(read.payload), read.chunks, read.binding),
        None => (head, None, Vec::new(), [0; GROW_BINDING]),
    };
    let back_len = now.back_len - grown_chunks.len() as u64;
    Ok(Some(Peeked {
        header: now.header,
        lines: now.lines,
        skipped: now.skipped,
        indexed: now.indexed_len,
        complete,
        extra: Extra {
            buf: front,
            at: extra_at,
        },
        delta,
        grow: Grow {
            index,
            index_len,
            target,
            identity,
            side_at,
            side_len: pre.side_len,
            side_sum: pre.side_sum,
            pre,
            back_at,
            back_len,
            grown_chunks,
            grown,
        },
    }))
}

/// The offset just past the last `\n` of the file (0 when there is none).
fn complete_end(file: &File, size: u64) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut end = size;
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let want = (end - start) as usize;
        file.read_exact_at(&mut buf[..want], start)?;
        if let Some(pos) = memchr::memrchr(b'\n', &buf[..want]) {
            return Ok(start + pos as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// `test` of every entry's line, for entries known from the index (one pass over their bytes,
/// in parallel ranges for large files).
#[allow(clippy::expect_used, reason = "a scanning thread does not panic")]
fn scan_flags(file: &File, entries: &Entries, test: &LineTest<'_>) -> std::io::Result<EntryFlags> {
    let Some(last) = entries.last() else {
        return Ok(EntryFlags::default());
    };
    let bytes = last.offset + last.line_len();
    let threads = crate::threads::worker_threads();
    let groups = (bytes / super::PARALLEL_CHUNK_MIN_BYTES).clamp(1, threads as u64) as usize;
    let per = entries.len().div_ceil(groups);
    let scan = |group: &[Entry]| -> std::io::Result<EntryFlags> {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            return Ok(EntryFlags::default());
        };
        let mut reader = LineReader::new(PositionedReader {
            file,
            at: first.offset,
            end: last.offset + last.line_len(),
        });
        reader.base = first.offset;
        let mut flags = EntryFlags::default();
        let mut memo = LineMemo::new();
        while flags.tested() < group.len() {
            let Some((offset, body, hay)) = reader.next_line()? else {
                break;
            };
            let entry = &group[flags.tested()];
            if offset == entry.offset {
                let line = TestedLine {
                    hay,
                    offset,
                    len: body.len(),
                    escapes: entry.escapes(),
                    nested_calls: Some(entry.has_nested_calls()),
                };
                flags.push(test(&line, &mut memo));
            }
        }
        // A line that no longer reads where it was (cannot happen for a validated index):
        // keep it a maybe.
        while flags.tested() < group.len() {
            flags.push(u64::MAX);
        }
        Ok(flags)
    };
    // Groups of about `per` entries, none spanning two parts.
    let groups: Vec<&[Entry]> = entries
        .parts()
        .iter()
        .flat_map(|part| part.chunks(per))
        .collect();
    if let [group] = groups.as_slice() {
        return scan(group);
    }
    let parts: Vec<std::io::Result<EntryFlags>> = std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .into_iter()
            .map(|group| scope.spawn(move || scan(group)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a scanning thread does not panic"))
            .collect()
    });
    let mut flags = EntryFlags::default();
    for part in parts {
        flags.append(part?);
    }
    Ok(flags)
}

/// Which file an index belongs to.
struct Identity {
    path: Vec<u8>,
    dev: u64,
    ino: u64,
}

/// The head of an index file: which file and which bytes of it it covers.
struct Head {
    identity: Identity,
    indexed_len: u64,
    head_hash: [u8; 20],
    tail_hash: [u8; 20],
    lines: u64,
    skipped: u64,
    header: Header,
    /// Bytes of the skeleton section (its chunks).
    back_len: u64,
}

impl Head {
    fn valid_for(&self, identity: &Identity, file: &File, complete: u64) -> bool {
        self.identity.path == identity.path
            && self.identity.dev == identity.dev
            && self.identity.ino == identity.ino
            && self.indexed_len <= complete
            && self.lines <= self.indexed_len
            && edges(file, self.indexed_len)
                .is_ok_and(|(h, t)| h == self.head_hash && t == self.tail_hash)
    }
}

/// A decoded index file.
struct Stored {
    head: Head,
    indexed_len: u64,
    /// Whether it carries extra data.
    has_extra: bool,
    decoded: Decoded,
}

impl Stored {
    fn valid_for(&self, identity: &Identity, file: &File, complete: u64) -> bool {
        self.head.valid_for(identity, file, complete)
    }
}

/// SHA-1 of the first and of the last `EDGE` bytes of `[0, len)`.
pub(crate) fn edges(file: &File, len: u64) -> std::io::Result<([u8; 20], [u8; 20])> {
    let hash = |from: u64, to: u64| -> std::io::Result<[u8; 20]> {
        let mut buf = vec![0u8; (to - from) as usize];
        file.read_exact_at(&mut buf, from)?;
        Ok(Sha1::digest(&buf).into())
    };
    Ok((
        hash(0, len.min(EDGE))?,
        hash(len.saturating_sub(EDGE), len)?,
    ))
}

/// An index write still to do: the encoded head and skeleton of `[0, complete)`, to which the
/// caller may add its own extra data before it is written. For a version 3 file the skeleton
/// is encoded only by [`Pending::encode`] (from the session's entries, which are then exactly
/// the decoded ones), so the caller can run it on another core while it works on the entries.
pub struct Pending {
    target: PathBuf,
    complete: u64,
    entries: usize,
    identity: Identity,
    hashes: ([u8; 20], [u8; 20]),
    header: Header,
    lines: u64,
    skipped: u64,
    /// The head and skeleton chunks, once encoded.
    encoded: Option<(Vec<u8>, Vec<Vec<u8>>)>,
    /// The index file is a valid one kept without its skeleton: written over only with
    /// extra data.
    keep_existing: bool,
}

impl Pending {
    fn new(
        target: PathBuf,
        identity: Identity,
        file: &File,
        complete: u64,
        decoded: &Decoded,
    ) -> Option<Pending> {
        let header = decoded.header.as_ref()?;
        let hashes = edges(file, complete).ok()?;
        let mut pending = Pending {
            target,
            complete,
            entries: decoded.entries.len(),
            identity,
            hashes,
            header: header.clone(),
            lines: decoded.lines,
            skipped: decoded.skipped,
            encoded: None,
            keep_existing: false,
        };
        if header.version < 3 {
            // Older files are migrated in memory once assembled: their skeleton is encoded
            // from the entries as decoded, now.
            pending.encode(&decoded.entries);
        }
        Some(pending)
    }

    /// Encode the head and skeleton from the session's entries (the first [`Self::entries`]
    /// of them are the indexed ones); nothing when already encoded.
    pub fn encode(&mut self, entries: &Entries) {
        if self.encoded.is_some() {
            return;
        }
        // A chunk per group of parts of the indexed entries (one per decode thread's range of
        // a full read, one per part read from the index), each group on its own thread: the
        // decode threads encoded them as they went, but the chunks then stayed in memory
        // through the projection's build (≈ 5 MB of a cold call's peak on a session of 225 k
        // short lines).
        let mut before = None;
        let groups: Vec<(Vec<&[Entry]>, Option<&Entry>)> = entries
            .prefix_groups(self.entries)
            .into_iter()
            .map(|group| {
                let last = group.last().and_then(|slice| slice.last());
                (group, std::mem::replace(&mut before, last))
            })
            .collect();
        let skeleton: Vec<Vec<u8>> = std::thread::scope(|scope| {
            let (first, rest) = groups.split_first()?;
            let others: Vec<_> = rest
                .iter()
                .map(|(group, before)| scope.spawn(move || chunk_of(group, *before)))
                .collect();
            let mut chunks = vec![chunk_of(&first.0, first.1)];
            for other in others {
                chunks.push(
                    other
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                );
            }
            Some(chunks)
        })
        .unwrap_or_default();
        let back_len = skeleton.iter().map(Vec::len).sum::<usize>();
        self.encoded = Some((self.head(back_len as u64), skeleton));
    }

    /// The head section, for a skeleton of `back_len` bytes ([`NO_SKELETON`]: none).
    fn head(&self, back_len: u64) -> Vec<u8> {
        encode_head(
            &self.identity,
            self.complete,
            &self.hashes.0,
            &self.hashes.1,
            &self.header,
            (self.lines, self.skipped, back_len),
        )
    }

    /// How many entries the index covers (the session's first ones; more may follow in a
    /// line after the last `\n`).
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Whether the index file is a valid one kept without its skeleton, which only a write
    /// with extra data replaces.
    pub fn keeps_existing(&self) -> bool {
        self.keep_existing
    }

    /// Atomically write the index with `extra` (data derived from exactly the indexed lines,
    /// e.g. history's projection; `None` for none) and `side` (data only an extension reads,
    /// see [`Grow::side`]), each in pieces. When the whole would pass the index's share of
    /// the file, the skeleton is left out (the extra data and side serve the calls that read
    /// them, and an extension in place); when that is still too large, the extra data and
    /// side are dropped. Returns how the call used the index: `used`, or `Unavailable` when a
    /// `Built`/`Extended` index could not be kept.
    /// Not written (as if it could not be) when [`Self::encode`] was not called.
    pub fn write(
        &self,
        extra: Option<&[&[u8]]>,
        side: Option<&[&[u8]]>,
        used: IndexUse,
    ) -> IndexUse {
        self.write_keeping(extra, side, used).0
    }

    /// [`Self::write`], and where a named leaf's projection may be kept beside the index
    /// written, when it was written with `extra` ([`LeafSlot`]).
    pub fn write_keeping(
        &self,
        extra: Option<&[&[u8]]>,
        side: Option<&[&[u8]]>,
        used: IndexUse,
    ) -> (IndexUse, Option<LeafSlot>) {
        let (kept, with_extra) = match &self.encoded {
            None => (None, false),
            Some((head, skeleton)) => {
                let back = Back::Whole(skeleton);
                match extra {
                    Some(extra) if pieces_len(extra) != 0 => {
                        let side = side.unwrap_or_default();
                        let with_extra =
                            write_index(&self.target, self.complete, head, extra, side, &back)
                                .or_else(|| {
                                    write_index(
                                        &self.target,
                                        self.complete,
                                        &self.head(NO_SKELETON),
                                        extra,
                                        side,
                                        &Back::Whole(&[]),
                                    )
                                });
                        match with_extra {
                            Some(written) => (Some(written), true),
                            None => (
                                write_index(&self.target, self.complete, head, &[], &[], &back),
                                false,
                            ),
                        }
                    }
                    _ if self.keep_existing => (None, false),
                    _ => (
                        write_index(&self.target, self.complete, head, &[], &[], &back),
                        false,
                    ),
                }
            }
        };
        if kept.is_some() {
            // A growth file and a leaf file belong to the index file just replaced.
            let _ = fs::remove_file(grow_path(&self.target));
            let _ = fs::remove_file(leaf_path(&self.target));
        }
        let written = kept.is_some();
        let slot = kept.filter(|_| with_extra).map(|written| LeafSlot {
            target: leaf_path(&self.target),
            binding: leaf_binding(&written.pre, &[0; GROW_BINDING]),
            room: room_beside(self.complete, written.len),
        });
        let used = if written || used == IndexUse::Reused {
            used
        } else {
            IndexUse::Unavailable
        };
        (used, slot)
    }
}

/// The skeleton section of an index being written.
enum Back<'a> {
    /// Chunks holding every entry.
    Whole(&'a [Vec<u8>]),
    /// The chunks of an existing index file (`len` bytes at `at`), then more (encoded).
    Copy {
        from: &'a File,
        at: u64,
        len: u64,
        chunks: [&'a [u8]; 2],
    },
}

/// The length of bytes given in pieces (the caller's extra data, the side).
fn pieces_len(pieces: &[&[u8]]) -> usize {
    pieces.iter().map(|p| p.len()).sum()
}

/// Write an index file atomically (temp file + rename): preamble, front (`head` and
/// `extra`, the extra data in pieces), `side` (in pieces), skeleton chunks. `None` when it
/// would exceed its share of the `complete` bytes it covers or cannot be written.
fn write_index(
    target: &Path,
    complete: u64,
    head: &[u8],
    extra: &[&[u8]],
    side: &[&[u8]],
    back: &Back<'_>,
) -> Option<Written> {
    // The front is the head, the extra data's length, the extra data (written from its
    // pieces as they are: it can be megabytes).
    let extra_len = pieces_len(extra);
    let mut front = Out {
        buf: Vec::with_capacity(head.len() + 16),
    };
    front.buf.extend_from_slice(head);
    front.u(extra_len as u64);
    let front_head = front.buf;
    let front_len = front_head.len() + extra_len;
    let back_len = match back {
        Back::Whole(chunks) => chunks.iter().map(|c| c.len() as u64).sum(),
        Back::Copy { len, chunks, .. } => len + (chunks[0].len() + chunks[1].len()) as u64,
    };
    let side_len = pieces_len(side);
    let total = (PREAMBLE + front_len + side_len) as u64 + back_len;
    if total * 100 > complete * MAX_SHARE_PERCENT {
        return None;
    }
    let mut preamble = Vec::with_capacity(PREAMBLE);
    preamble.extend_from_slice(MAGIC);
    preamble.extend_from_slice(&FORMAT.to_le_bytes());
    preamble.extend_from_slice(&(front_len as u64).to_le_bytes());
    // The checksums of the front and the side are known once they are written (each block
    // is hashed as it goes out): their places are filled in last.
    preamble.extend_from_slice(&0u64.to_le_bytes());
    preamble.extend_from_slice(&(side_len as u64).to_le_bytes());
    preamble.extend_from_slice(&0u64.to_le_bytes());
    let dir = target.parent()?;
    let written = fs::create_dir_all(dir).and_then(|()| {
        let mut temp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
        temp.write_all(&preamble)?;
        temp.write_all(&front_head)?;
        let extra_sum = write_blocks(temp.as_file_mut(), extra)?;
        let side_sum = write_blocks(temp.as_file_mut(), side)?;
        let front_sum = front_sum(&front_head, extra_sum);
        temp.as_file()
            .write_all_at(&front_sum.to_le_bytes(), FRONT_SUM_AT as u64)?;
        temp.as_file()
            .write_all_at(&side_sum.to_le_bytes(), (PREAMBLE - 8) as u64)?;
        let pre = Pre {
            front_len,
            front_sum,
            side_len: side_len as u64,
            side_sum,
        };
        match back {
            Back::Whole(chunks) => {
                for chunk in *chunks {
                    temp.write_all(chunk)?;
                }
            }
            Back::Copy {
                from,
                at,
                len,
                chunks,
            } => {
                use std::io::{Read, Seek, SeekFrom};
                let mut from: &File = from;
                from.seek(SeekFrom::Start(*at))?;
                let copied = std::io::copy(&mut from.take(*len), temp.as_file_mut())?;
                if copied != *len {
                    return Err(std::io::Error::other("index file shrank while copied"));
                }
                for chunk in chunks {
                    temp.write_all(chunk)?;
                }
            }
        }
        temp.persist(target).map_err(|e| e.error)?;
        Ok(pre)
    });
    written.ok().map(|pre| Written { pre, len: total })
}

/// The fixed width of a chunk's first line number: a varint padded with continuation bits
/// (the reader takes up to 10 bytes for a `u64`). A format fact: decode threads once wrote
/// their chunk before knowing which line it starts at, and moved that number on in place.
const WIDE: usize = 10;

fn wide_varint(v: u64) -> [u8; WIDE] {
    let mut out = [0u8; WIDE];
    for (k, byte) in out.iter_mut().enumerate() {
        let bits = ((v >> (7 * k)) & 0x7f) as u8;
        *byte = if k + 1 < WIDE { bits | 0x80 } else { bits };
    }
    out
}

// ------------------------------------------------------------------------------- encoding

/// A writer of the varint-framed layouts (the index, the memo of line hits).
pub(crate) struct Out {
    pub(crate) buf: Vec<u8>,
}

impl Out {
    pub(crate) fn u(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.buf.push(byte);
                return;
            }
            self.buf.push(byte | 0x80);
        }
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.u(b.len() as u64);
        self.buf.extend_from_slice(b);
    }
}

/// Names that repeat (tool names, custom types, unknown roles and kinds), each written in full
/// where it first occurs and referred to by number after that. Ids are written in full: they
/// are nearly all distinct, so a table of them costs a hash insert per id and more bytes.
#[derive(Default)]
struct Interner<'a> {
    /// Each name's number, in the order of first occurrence.
    names: FxHashMap<&'a str, u64>,
}

impl<'a> Interner<'a> {
    /// 0 for `None`; 1 then the name, at its first occurrence; else 2 + its number.
    fn name(&mut self, out: &mut Out, s: Option<&'a str>) {
        match s {
            None => out.u(0),
            Some(s) => {
                let next = self.names.len() as u64;
                let number = *self.names.entry(s).or_insert(next);
                if number == next {
                    out.u(1);
                    out.bytes(s.as_bytes());
                } else {
                    out.u(number + 2);
                }
            }
        }
    }
}

/// An id written in full: 0 for `None`, else 1 then the id.
fn put_id(out: &mut Out, s: Option<&str>) {
    match s {
        None => out.u(0),
        Some(s) => {
            out.u(1);
            out.bytes(s.as_bytes());
        }
    }
}

fn role_tag(role: &Role) -> u64 {
    match role {
        Role::User => 0,
        Role::Assistant => 1,
        Role::ToolResult => 2,
        Role::BashExecution => 3,
        Role::Custom => 4,
        Role::BranchSummary => 5,
        Role::CompactionSummary => 6,
        Role::System => 7,
        Role::Other => 8,
    }
}

/// One skeleton chunk of the entries of `slices` (consecutive in the file, in order), which
/// come right after `before` in the file: its body's length and checksum, then the body: its
/// entry count and entries (offsets, line numbers and timestamps coded against the chunk's
/// previous entry, the first line number at a fixed width), its strings interned as they
/// come.
pub(crate) fn chunk_of<'a>(slices: &[&'a [Entry]], before: Option<&'a Entry>) -> Vec<u8> {
    let count: usize = slices.iter().map(|slice| slice.len()).sum();
    let mut strings = Interner {
        names: FxHashMap::with_capacity_and_hasher(64, Default::default()),
    };
    // About 9 bytes of offsets, 9 of id and 40 of tool call or result id per entry.
    let mut body = Out {
        buf: Vec::with_capacity(16 + WIDE + count * 64),
    };
    // The length and checksum, then the entry count and the entries.
    body.buf.extend_from_slice(&[0; 16]);
    body.u(count as u64);
    let mut previous_end = 0u64;
    let mut previous_line = 0u64;
    let mut previous_id: Option<&str> = None;
    let mut previous_ts: &str = "";
    // The call ids of the latest message with tool calls: a tool result names one of them.
    let mut latest_calls: &[ToolCallMeta] = &[];
    let mut entry_before = before;
    for (n, entry) in slices.iter().copied().flatten().enumerate() {
        if n == 0 {
            body.buf.extend_from_slice(&wide_varint(entry.line_no));
        } else {
            body.u(entry.line_no - previous_line);
        }
        body.u(entry.offset - previous_end);
        body.u(entry.line_len() << 1 | u64::from(entry.escapes()));
        previous_line = entry.line_no;
        previous_end = entry.offset + entry.line_len();
        put_id(&mut body, entry.id());
        // Parent: 0 none, 1 the previous entry's id, else 2 then the id.
        // The first entry's parent is coded in full, even when it is the entry before the
        // chunk (`previous_id` starts empty).
        match entry.parent_id(entry_before.replace(entry)) {
            None => body.u(0),
            Some(p) if previous_id == Some(p) => body.u(1),
            Some(p) => {
                body.u(2);
                body.bytes(p.as_bytes());
            }
        }
        previous_id = entry.id();
        // Timestamp: 0 none, else 1 + the prefix shared with the previous one, then the rest.
        match entry.timestamp() {
            None => body.u(0),
            Some(ts) => {
                let shared = shared_prefix(ts, previous_ts);
                body.u(shared as u64 + 1);
                body.bytes(&ts.as_bytes()[shared..]);
                previous_ts = ts;
            }
        }
        match &entry.kind {
            EntryKind::Message(m) => {
                body.u(0);
                let flags = u64::from(m.content_is_array)
                    | (u64::from(m.has_text) << 1)
                    | (u64::from(m.has_nested_calls) << 2);
                body.u(role_tag(&m.role) << 3 | flags);
                if m.role == Role::Other {
                    strings.name(&mut body, Some(m.other_role()));
                }
                body.u(m.tool_calls.len() as u64);
                for call in &m.tool_calls {
                    put_id(&mut body, call.id.as_deref());
                    strings.name(&mut body, call.name.as_deref());
                }
                // The result's call id: 0 none, 1 then the id, else 2 + the index of the
                // latest calls' id it equals.
                match m.tool_call_id() {
                    None => body.u(0),
                    Some(id) => match latest_calls
                        .iter()
                        .position(|c| c.id.as_deref() == Some(id))
                    {
                        Some(k) => body.u(k as u64 + 2),
                        None => {
                            body.u(1);
                            body.bytes(id.as_bytes());
                        }
                    },
                }
                // Where the id lies in its line: 0 unknown, else 1 + the offset.
                if m.tool_call_id().is_some() {
                    body.u(m.tool_call_id_at().map_or(0, |at| u64::from(at) + 1));
                }
                strings.name(&mut body, m.tool_name());
                if !m.tool_calls.is_empty() {
                    latest_calls = &m.tool_calls;
                }
            }
            EntryKind::Compaction => body.u(1),
            EntryKind::BranchSummary => body.u(2),
            EntryKind::CustomMessage { custom_type } => {
                body.u(3);
                strings.name(&mut body, custom_type.as_deref());
            }
            EntryKind::Custom(custom) => {
                body.u(4);
                strings.name(&mut body, custom.custom_type.as_deref());
                put_id(&mut body, custom.window_id.as_deref());
            }
            EntryKind::Label => body.u(5),
            EntryKind::SessionInfo => body.u(6),
            EntryKind::ModelChange => body.u(7),
            EntryKind::ThinkingLevelChange => body.u(8),
            EntryKind::Usage => body.u(9),
            EntryKind::ContextEdit => body.u(10),
            EntryKind::Other(kind) => {
                body.u(11);
                strings.name(&mut body, kind.as_deref());
            }
        }
    }
    let mut buf = body.buf;
    let (len, sum) = (buf.len() as u64 - 16, checksum(&buf[16..]));
    buf[..8].copy_from_slice(&len.to_le_bytes());
    buf[8..16].copy_from_slice(&sum.to_le_bytes());
    buf
}

/// The length in bytes of the longest common prefix of `a` and `b` made of whole
/// characters. Compared a byte at a time, then cut back to a character boundary (the bytes
/// before it are the same in both, so it is one in both): going a character at a time cost
/// ≈ 100 cycles per timestamp of the skeleton.
fn shared_prefix(a: &str, b: &str) -> usize {
    let mut shared = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(shared) {
        shared -= 1;
    }
    shared
}

/// The head section: which file and bytes the index covers, and the header.
fn encode_head(
    identity: &Identity,
    indexed_len: u64,
    head_hash: &[u8; 20],
    tail_hash: &[u8; 20],
    header: &Header,
    (lines, skipped, back_len): (u64, u64, u64),
) -> Vec<u8> {
    let mut out = Out {
        buf: Vec::with_capacity(identity.path.len() + 128),
    };
    out.bytes(&identity.path);
    out.u(identity.dev);
    out.u(identity.ino);
    out.u(indexed_len);
    out.buf.extend_from_slice(head_hash);
    out.buf.extend_from_slice(tail_hash);
    out.u(lines);
    out.u(skipped);
    out.bytes(header.id.as_bytes());
    out.u(header.version);
    match &header.timestamp {
        None => out.u(0),
        Some(ts) => {
            out.u(1);
            out.bytes(ts.as_bytes());
        }
    }
    out.u(back_len);
    out.buf
}

/// The checksum of an index body.
fn checksum(body: &[u8]) -> u64 {
    FxBuildHasher.hash_one(body)
}

/// The extra data and the side section are checksummed in blocks of this many bytes (the
/// last one shorter).
const BLOCK: usize = 64 << 10;

/// The checksum of bytes given in pieces (their concatenation): the checksums of its
/// `BLOCK`-byte blocks, combined. So a caller's extra data and side are written straight
/// from the arrays they are made of (a projection's records; runs of the old side and the
/// few new values), without assembling them in memory first.
fn blocks_sum(pieces: &[&[u8]]) -> u64 {
    let mut blocks = Blocks::default();
    for piece in pieces {
        blocks.push(piece, &mut |_| Ok(())).unwrap_or_default();
    }
    blocks.finish(&mut |_| Ok(())).unwrap_or_default()
}

/// Write bytes given in pieces to `out` (through one block-sized buffer) and return their
/// checksum ([`blocks_sum`]).
fn write_blocks(out: &mut File, pieces: &[&[u8]]) -> std::io::Result<u64> {
    let mut blocks = Blocks::default();
    let mut emit = |block: &[u8]| out.write_all(block);
    for piece in pieces {
        blocks.push(piece, &mut emit)?;
    }
    blocks.finish(&mut emit)
}

/// Cuts a byte stream into `BLOCK`-byte blocks, hashing each (and handing it on).
#[derive(Default)]
struct Blocks {
    stage: Vec<u8>,
    sums: Vec<u64>,
}

impl Blocks {
    fn push(
        &mut self,
        mut bytes: &[u8],
        emit: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        while !bytes.is_empty() {
            if self.stage.is_empty() && bytes.len() >= BLOCK {
                // A whole block in place: no copy.
                let (block, rest) = bytes.split_at(BLOCK);
                self.sums.push(checksum(block));
                emit(block)?;
                bytes = rest;
                continue;
            }
            let take = (BLOCK - self.stage.len()).min(bytes.len());
            self.stage.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.stage.len() == BLOCK {
                self.sums.push(checksum(&self.stage));
                emit(&self.stage)?;
                self.stage.clear();
            }
        }
        Ok(())
    }

    fn finish(
        mut self,
        emit: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<u64> {
        if !self.stage.is_empty() {
            self.sums.push(checksum(&self.stage));
            emit(&self.stage)?;
        }
        Ok(FxBuildHasher.hash_one(&self.sums))
    }
}

/// The checksum of a front section from those of its head (with the extra data's length)
/// and of its extra data ([`blocks_sum`]), so the extra data is written from its pieces
/// without copying them behind the head.
fn front_sum(head: &[u8], extra_sum: u64) -> u64 {
    FxBuildHasher.hash_one((checksum(head), extra_sum))
}

/// Whether a front section read back has checksum `sum`: where its extra data starts is
/// read from the (not yet trusted, bounds-checked) head.
fn front_ok(front: &[u8], sum: u64) -> bool {
    let mut r = In { buf: front, at: 0 };
    decode_head(&mut r).and_then(|_| r.u()).is_some() && {
        let (head, extra) = front.split_at(r.at);
        front_sum(head, blocks_sum(&[extra])) == sum
    }
}

/// A reader of what [`Out`] writes; `None` on any truncation or overflow.
pub(crate) struct In<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> In<'a> {
    pub(crate) fn u(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.buf.get(self.at)?;
            self.at += 1;
            v |= u64::from(byte & 0x7f).checked_shl(shift)?;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.buf.get(self.at..end)?;
        self.at = end;
        Some(out)
    }
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u()?).ok()?;
        self.take(n)
    }
    /// Counted bytes that are UTF-8, borrowed.
    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }
    fn string(&mut self) -> Option<String> {
        self.str().map(String::from)
    }
    fn hash(&mut self) -> Option<[u8; 20]> {
        self.take(20)?.try_into().ok()
    }
}

/// Bytes before the front section: magic, format, front length and checksum, side length
/// and checksum.
const PREAMBLE: usize = 8 + 4 + 8 + 8 + 8 + 8;
/// Where the front's checksum lies in the preamble.
const FRONT_SUM_AT: usize = 20;

/// The preamble's fields.
#[derive(Clone, Copy)]
struct Pre {
    front_len: usize,
    front_sum: u64,
    side_len: u64,
    side_sum: u64,
}

/// The preamble's fields, when the magic and format are right.
fn preamble(bytes: &[u8]) -> Option<Pre> {
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    (bytes.get(..8)? == MAGIC && u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) == FORMAT)
        .then_some(())?;
    Some(Pre {
        front_len: usize::try_from(word(12)?).ok()?,
        front_sum: word(FRONT_SUM_AT)?,
        side_len: word(28)?,
        side_sum: word(36)?,
    })
}

/// The front (head and extra data), side and back (skeleton chunks, not checked here)
/// sections of a whole index file whose magic, format and front and side checksums are
/// right.
fn checked_sections(file: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let pre = preamble(file)?;
    let rest = file.get(PREAMBLE..)?;
    let (front, rest) = rest.split_at_checked(pre.front_len)?;
    let (side, back) = rest.split_at_checked(usize::try_from(pre.side_len).ok()?)?;
    (front_ok(front, pre.front_sum) && blocks_sum(&[side]) == pre.side_sum)
        .then_some((front, side, back))
}

/// The open index file `path`, its length, its preamble and its checked front section
/// (nothing else is read or checked).
fn read_front(path: &Path) -> Option<(File, u64, Pre, Mapped)> {
    let file = File::open(path).ok()?;
    let mut pre = [0u8; PREAMBLE];
    file.read_exact_at(&mut pre, 0).ok()?;
    let pre = preamble(&pre)?;
    let len = file.metadata().ok()?.len();
    // Mapped, not read: the page cache's pages are used as they are (`Mapped::map` checks
    // the length).
    let front = Mapped::map(&file, PREAMBLE as u64, pre.front_len)?;
    front_ok(&front, pre.front_sum).then_some((file, len, pre, front))
}

fn decode_head(r: &mut In<'_>) -> Option<Head> {
    let identity = Identity {
        path: r.bytes()?.to_vec(),
        dev: r.u()?,
        ino: r.u()?,
    };
    let indexed_len = r.u()?;
    let head_hash = r.hash()?;
    let tail_hash = r.hash()?;
    let lines = r.u()?;
    let skipped = r.u()?;
    let header = Header {
        id: r.string()?,
        version: r.u()?,
        timestamp: match r.u()? {
            0 => None,
            1 => Some(r.string()?),
            _ => return None,
        },
    };
    let back_len = r.u()?;
    Some(Head {
        identity,
        indexed_len,
        head_hash,
        tail_hash,
        lines,
        skipped,
        header,
        back_len,
    })
}

/// The first skeleton chunk of `bytes` (length, checksum, body) and what follows it; `None`
/// when it is cut short or its checksum does not match its body.
fn split_chunk(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = usize::try_from(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?)).ok()?;
    let sum = u64::from_le_bytes(bytes.get(8..16)?.try_into().ok()?);
    let end = 16usize.checked_add(len)?;
    let body = bytes.get(16..end)?;
    (checksum(body) == sum).then(|| (body, &bytes[end..]))
}

/// Decode an index file; `None` for anything but a whole index of this format.
/// Whether the index file `file` (its bytes) holds its skeleton; `None` when it is damaged.
#[cfg(test)]
pub(crate) fn keeps_skeleton(file: &[u8]) -> Option<bool> {
    let (front, _side, _back) = checked_sections(file)?;
    let head = decode_head(&mut In { buf: front, at: 0 })?;
    Some(head.back_len != NO_SKELETON)
}

/// Whether `file` is a valid index of `[0, complete)` of the session file (`identity`) kept
/// without its skeleton (see [`NO_SKELETON`]).
fn omits_skeleton(file: &[u8], identity: &Identity, session: &File, complete: u64) -> bool {
    let Some((front, _side, back)) = checked_sections(file) else {
        return false;
    };
    let mut r = In { buf: front, at: 0 };
    let Some(head) = decode_head(&mut r) else {
        return false;
    };
    head.back_len == NO_SKELETON
        && back.is_empty()
        && r.bytes().is_some_and(|extra| !extra.is_empty())
        && r.at == front.len()
        && head.valid_for(identity, session, complete)
}

fn decode(file: &[u8]) -> Option<Stored> {
    let (front, _side, mut back) = checked_sections(file)?;
    let mut r = In { buf: front, at: 0 };
    let head = decode_head(&mut r)?;
    let has_extra = !r.bytes()?.is_empty();
    if r.at != front.len() || back.len() as u64 != head.back_len {
        return None;
    }
    let (indexed_len, lines) = (head.indexed_len, head.lines);
    if lines > indexed_len {
        return None;
    }
    let mut entries: Vec<Entry> = Vec::new();
    while !back.is_empty() {
        let body;
        (body, back) = split_chunk(back)?;
        decode_chunk(body, indexed_len, lines, &mut entries)?;
    }
    Some(Stored {
        decoded: Decoded {
            header: Some(head.header.clone()),
            entries: entries.into(),
            flags: super::EntryFlags::default(),
            skipped: head.skipped,
            lines,
            continues: None,
        },
        head,
        indexed_len,
        has_extra,
    })
}

/// Decode one skeleton chunk's body onto `entries`; `None` unless it decodes exactly.
fn decode_chunk(body: &[u8], indexed_len: u64, lines: u64, entries: &mut Vec<Entry>) -> Option<()> {
    let mut r = In { buf: body, at: 0 };
    // Names in the order of their first occurrence (see `Interner`).
    let mut names: Vec<CompactString> = Vec::new();
    let mut name = |r: &mut In<'_>| -> Option<Option<CompactString>> {
        match r.u()? {
            0 => Some(None),
            1 => {
                let s = CompactString::from(r.str()?);
                names.push(s.clone());
                Some(Some(s))
            }
            n => Some(Some(names.get(usize::try_from(n - 2).ok()?)?.clone())),
        }
    };
    let id = |r: &mut In<'_>| -> Option<Option<CompactString>> {
        match r.u()? {
            0 => Some(None),
            1 => Some(Some(r.str()?.into())),
            _ => None,
        }
    };
    let entries_count = usize::try_from(r.u()?).ok()?;
    // Every entry takes at least seven bytes.
    if entries_count > body.len() / 7 {
        return None;
    }
    entries.reserve(entries_count);
    let mut previous_end = 0u64;
    let mut previous_line = 0u64;
    let mut previous_ts = String::new();
    // Where the latest message with tool calls is in `entries` (a result names one of them).
    let mut latest_calls: Option<usize> = None;
    for _ in 0..entries_count {
        let line_no = previous_line.checked_add(r.u()?)?;
        let offset = previous_end.checked_add(r.u()?)?;
        let len_and_escapes = r.u()?;
        let (len, escapes) = (len_and_escapes >> 1, len_and_escapes & 1 == 1);
        let end = offset.checked_add(len)?;
        if line_no > lines || end > indexed_len {
            return None;
        }
        previous_line = line_no;
        previous_end = end;
        let entry_id = id(&mut r)?;
        let lineage = match (r.u()?, entry_id) {
            (0, id) => Lineage::Other(Box::new((id, None))),
            (1, id) => {
                let before = entries.last()?.id()?;
                match id {
                    Some(id) => Lineage::Continues(id),
                    None => Lineage::Other(Box::new((None, Some(before.into())))),
                }
            }
            (2, id) => Lineage::new(id, Some(r.str()?.into()), entries.last()),
            _ => return None,
        };
        let mut timestamp = match r.u()? {
            0 => None,
            n => {
                let shared = usize::try_from(n - 1).ok()?;
                let mut ts = previous_ts.get(..shared)?.to_string();
                ts.push_str(r.str()?);
                previous_ts.clone_from(&ts);
                Some(ts)
            }
        };
        let kind = match r.u()? {
            0 => {
                let tag = r.u()?;
                let mut other_role = None;
                let role = match tag >> 3 {
                    0 => Role::User,
                    1 => Role::Assistant,
                    2 => Role::ToolResult,
                    3 => Role::BashExecution,
                    4 => Role::Custom,
                    5 => Role::BranchSummary,
                    6 => Role::CompactionSummary,
                    7 => Role::System,
                    8 => {
                        other_role = Some(name(&mut r)??);
                        Role::Other
                    }
                    _ => return None,
                };
                let calls = usize::try_from(r.u()?).ok()?;
                if calls > body.len() {
                    return None;
                }
                let mut tool_calls = ThinVec::with_capacity(calls);
                for _ in 0..calls {
                    let call_id = id(&mut r)?;
                    tool_calls.push(ToolCallMeta {
                        id: call_id,
                        name: name(&mut r)?,
                    });
                }
                let tool_call_id = match r.u()? {
                    0 => None,
                    1 => Some(r.str()?.into()),
                    n => {
                        let EntryKind::Message(latest) = &entries.get(latest_calls?)?.kind else {
                            return None;
                        };
                        let k = usize::try_from(n - 2).ok()?;
                        Some(latest.tool_calls.get(k)?.id.clone()?)
                    }
                };
                let tool_call_id_at = match tool_call_id {
                    None => None,
                    Some(_) => match r.u()? {
                        0 => None,
                        at => Some(u32::try_from(at - 1).ok()?),
                    },
                };
                if !tool_calls.is_empty() {
                    latest_calls = Some(entries.len());
                }
                EntryKind::Message(MessageMeta {
                    role,
                    content_is_array: tag & 1 == 1,
                    has_text: tag & 2 == 2,
                    has_nested_calls: tag & 4 == 4,
                    tool_calls,
                    extras: MessageExtras::boxed(
                        tool_call_id,
                        tool_call_id_at,
                        name(&mut r)?,
                        other_role,
                    ),
                })
            }
            1 => EntryKind::Compaction,
            2 => EntryKind::BranchSummary,
            3 => EntryKind::CustomMessage {
                custom_type: name(&mut r)?.map(|name| name.as_str().into()),
            },
            4 => {
                let custom_type = name(&mut r)?;
                EntryKind::Custom(Box::new(CustomMeta {
                    custom_type,
                    window_id: id(&mut r)?,
                    timestamp: timestamp.take(),
                }))
            }
            5 => EntryKind::Label,
            6 => EntryKind::SessionInfo,
            7 => EntryKind::ModelChange,
            8 => EntryKind::ThinkingLevelChange,
            9 => EntryKind::Usage,
            10 => EntryKind::ContextEdit,
            11 => EntryKind::Other(name(&mut r)?.map(|name| name.as_str().into())),
            _ => return None,
        };
        // Only a `custom` entry keeps its timestamp.
        if timestamp.is_some() {
            return None;
        }
        entries.push(Entry::new(line_no, offset, len, escapes, lineage, kind));
    }
    (r.at == body.len()).then_some(())
}

// --------------------------------------------------------------------------- housekeeping

/// Look at a few index files, starting at a place that moves with `now`: mark those whose
/// session is gone, remove those marked more than 30 days ago, and stale temp files. Errors
/// are ignored (the next call tries again).
fn housekeeping(dir: &Path, now: SystemTime) {
    let Ok(read) = fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<std::ffi::OsString> =
        read.filter_map(|e| e.ok().map(|e| e.file_name())).collect();
    if names.is_empty() {
        return;
    }
    names.sort();
    let seed = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as usize);
    let start = seed % names.len();
    let older_than = |path: &Path, age: Duration| {
        fs::metadata(path)
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|d| d > age))
    };
    for name in names
        .iter()
        .cycle()
        .skip(start)
        .take(HOUSEKEEPING_PER_CALL.min(names.len()))
    {
        let path = dir.join(name);
        let text = name.to_string_lossy();
        if text.starts_with(".tmp-") {
            if older_than(&path, Duration::from_secs(24 * 3600)) {
                let _ = fs::remove_file(&path);
            }
            continue;
        }
        let Some(stem) = text.strip_suffix(".idx") else {
            continue;
        };
        let marker = dir.join(format!("{stem}.gone"));
        match session_path_of(&path) {
            Some(session) if session.exists() => {
                let _ = fs::remove_file(&marker);
            }
            _ if marker.exists() => {
                if older_than(&marker, GONE_AFTER) {
                    let _ = fs::remove_file(&path);
                    let _ = fs::remove_file(dir.join(format!("{stem}.hits")));
                    let _ = fs::remove_file(dir.join(format!("{stem}.grow")));
                    let _ = fs::remove_file(dir.join(format!("{stem}.leaf")));
                    let _ = fs::remove_file(&marker);
                }
            }
            _ => {
                let _ = File::create(&marker);
            }
        }
    }
}

/// The session path an index file names (read from its first bytes only).
fn session_path_of(index: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = vec![0u8; PREAMBLE + 10 + 4096];
    let mut file = File::open(index).ok()?;
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return None,
        }
    }
    let body = head.get(PREAMBLE..n)?;
    if head.get(..8)? != MAGIC {
        return None;
    }
    let mut r = In { buf: body, at: 0 };
    let bytes = r.bytes()?;
    use std::os::unix::ffi::OsStrExt;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;

    #[test]
    fn a_shared_prefix_ends_at_a_character_boundary() {
        let by_chars = |a: &str, b: &str| {
            a.char_indices()
                .zip(b.chars())
                .take_while(|((_, x), y)| x == y)
                .last()
                .map_or(0, |((i, x), _)| i + x.len_utf8())
        };
        let cases = [
            ("2026-11-30T06:52:14.460Z", "2026-11-30T06:52:14.949Z", 20),
            ("2026-11-30T06:52:14.460Z", "2026-11-30T06:52:14.460Z", 24),
            ("", "2026", 0),
            ("ab", "abc", 2),
            // `é` and `è` share their first byte; `€` and `₤` their first two.
            ("xé", "xè", 1),
            ("a€b", "a₤b", 1),
            ("日本", "日付", 3),
            ("x", "", 0),
        ];
        for (a, b, expected) in cases {
            assert_eq!(shared_prefix(a, b), expected, "{a:?} {b:?}");
            assert_eq!(shared_prefix(a, b), by_chars(a, b), "{a:?} {b:?}");
            assert_eq!(shared_prefix(b, a), by_chars(b, a), "{b:?} {a:?}");
        }
    }

    /// A small session whose index stays under its 10 % share.
    fn session_file(dir: &Path, entries: usize) -> PathBuf {
        let path = dir.join("s.jsonl");
        let mut file = File::create(&path).unwrap();
        writeln!(file, r#"{{"type":"session","version":3,"id":"idx-test","timestamp":"2026-01-01T00:00:00.000Z"}}"#).unwrap();
        for i in 0..entries {
            let parent = if i == 0 {
                "null".into()
            } else {
                format!("\"e{}\"", i - 1)
            };
            let body = if i % 3 == 1 {
                format!(
                    r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"c{i}","name":"read","arguments":{{"path":"{}"}}}}]}}"#,
                    "p".repeat(300)
                )
            } else if i % 3 == 2 {
                format!(
                    r#"{{"role":"toolResult","toolCallId":"c{}","toolName":"read","content":[{{"type":"text","text":"{}"}}]}}"#,
                    i - 1,
                    "o".repeat(300)
                )
            } else {
                format!(
                    r#"{{"role":"user","content":"hello {i} {}"}}"#,
                    "u".repeat(300)
                )
            };
            writeln!(file, r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:{:02}.000Z","message":{body}}}"#, i % 60).unwrap();
        }
        writeln!(file, "not json").unwrap();
        path
    }

    fn open(path: &Path, cache: &Path) -> (Session, IndexUse) {
        let mode = IndexMode::In {
            dir: cache,
            now: SystemTime::UNIX_EPOCH,
        };
        let (session, _, used) = Session::open_indexed(path, None, &mode).unwrap();
        (session, used)
    }

    fn same(a: &Session, b: &Session) -> bool {
        a.header == b.header && a.entries == b.entries && a.skipped_lines == b.skipped_lines
    }

    #[test]
    fn every_way_a_skeleton_names_a_string_reads_back() {
        // Ids written in full, a parent that is not the entry before (a branch), results
        // naming the first and second call of the latest calls and one naming no call of
        // them (one with nested calls), names repeated and new, an unknown role and kind, a
        // window id.
        let lines = [
            r#"{"type":"session","version":3,"id":"skel","timestamp":"2026-01-01T00:00:00.000Z"}"#,
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-one","name":"read","arguments":{}},{"type":"toolCall","id":"call-two","name":"bash","arguments":{}}]}}"#,
            r#"{"type":"message","id":"r2","parentId":"a1","timestamp":"t","message":{"role":"toolResult","toolCallId":"call-two","toolName":"bash","content":[]}}"#,
            r#"{"type":"message","id":"r1","parentId":"r2","timestamp":"t","message":{"role":"toolResult","toolCallId":"call-one","toolName":"read","content":[],"nestedCalls":{"calls":[]}}}"#,
            r#"{"type":"message","id":"r0","parentId":"r1","timestamp":"t","message":{"role":"toolResult","toolCallId":"call-zero","toolName":"grep","content":[]}}"#,
            r#"{"type":"message","id":"b1","parentId":"a1","timestamp":"t","message":{"role":"wizard","content":"x"}}"#,
            r#"{"type":"custom","id":"w1","parentId":"b1","timestamp":"2026-01-01T00:00:05.000Z","customType":"pi-context","data":{"windowId":"win-7"}}"#,
            r#"{"type":"custom","id":"w2","parentId":"w1","timestamp":"2026-01-01T00:00:06.000Z","customType":"pi-context","data":{"windowId":"win-8"}}"#,
            r#"{"type":"novelty","id":"n1","parentId":"w2"}"#,
            r#"{"type":"message","id":"a2","parentId":"n1","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-three","name":"read","arguments":{}}]}}"#,
            r#"{"type":"message","id":"r3","parentId":"a2","timestamp":"t","message":{"role":"toolResult","toolCallId":"call-one","toolName":"read","content":[]}}"#,
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        // A long line keeps the index within its 10 % share of the file.
        let padding = format!(
            r#"{{"type":"message","id":"p1","parentId":"r3","timestamp":"t","message":{{"role":"user","content":"{}"}}}}"#,
            "x".repeat(60_000)
        );
        fs::write(&path, lines.join("\n") + "\n" + &padding + "\n").unwrap();
        let cache = tempfile::tempdir().unwrap();
        let plain = Session::open(&path).unwrap();
        assert_eq!(open(&path, cache.path()).1, IndexUse::Built);
        let (indexed, used) = open(&path, cache.path());
        assert_eq!(used, IndexUse::Reused);
        assert!(same(&plain, &indexed));
        let EntryKind::Message(m) = &indexed.entries[2].kind else {
            panic!("a message")
        };
        assert_eq!(m.tool_call_id(), Some("call-one"));
        assert!(indexed.entries[2].has_nested_calls() && !indexed.entries[1].has_nested_calls());
        assert_eq!(indexed.entries.parent_id(4), Some("a1"));
    }

    #[test]
    fn built_then_reused_then_extended_and_torn_lines_wait() {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let path = session_file(dir.path(), 12);
        let plain = Session::open(&path).unwrap();
        let (first, used) = open(&path, cache.path());
        assert_eq!(used, IndexUse::Built);
        assert!(same(&first, &plain));
        let (second, used) = open(&path, cache.path());
        assert_eq!(used, IndexUse::Reused);
        assert!(same(&second, &plain));
        // A torn line is decoded on each call but not indexed.
        let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
        write!(file, r#"{{"type":"message","id":"t","parentId":"e11","message":{{"role":"user","content":"torn"#).unwrap();
        let (torn, used) = open(&path, cache.path());
        assert_eq!(used, IndexUse::Reused);
        assert!(same(&torn, &Session::open(&path).unwrap()));
        assert_eq!(torn.skipped_lines, plain.skipped_lines + 1);
        writeln!(file, r#""}}}}"#).unwrap();
        let (grown, used) = open(&path, cache.path());
        assert_eq!(used, IndexUse::Extended);
        assert!(same(&grown, &Session::open(&path).unwrap()));
        assert_eq!(grown.entries.len(), plain.entries.len() + 1);
        assert_eq!(open(&path, cache.path()).1, IndexUse::Reused);
    }

    #[test]
    fn a_checksum_of_pieces_is_that_of_their_concatenation_and_they_are_written_whole() {
        use std::io::{Read, Seek};
        let whole: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let want = blocks_sum(&[&whole]);
        for cuts in [
            vec![],
            vec![1],
            vec![65_535, 65_536, 65_537],
            vec![3, 70_000, 131_072, 199_999],
        ] {
            let mut pieces: Vec<&[u8]> = Vec::new();
            let mut from = 0;
            for &cut in &cuts {
                pieces.push(&whole[from..cut]);
                from = cut;
            }
            pieces.push(&whole[from..]);
            assert_eq!(blocks_sum(&pieces), want, "cuts {cuts:?}");
            let mut file = tempfile::tempfile().unwrap();
            assert_eq!(write_blocks(&mut file, &pieces).unwrap(), want);
            let mut back = Vec::new();
            file.rewind().unwrap();
            file.read_to_end(&mut back).unwrap();
            assert_eq!(back, whole, "cuts {cuts:?}");
        }
        let mut changed = whole.clone();
        changed[131_072] ^= 1;
        assert_ne!(blocks_sum(&[&changed]), want);
        assert_ne!(blocks_sum(&[&whole[..199_999]]), want);
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_of_the_index_is_detected_and_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let path = session_file(dir.path(), 9);
        let plain = Session::open(&path).unwrap();
        assert_eq!(open(&path, cache.path()).1, IndexUse::Built);
        let target = index_path(cache.path(), &fs::canonicalize(&path).unwrap());
        let good = fs::read(&target).unwrap();
        assert!(good.len() * 10 <= fs::metadata(&path).unwrap().len() as usize);
        for at in 0..good.len() {
            for damaged in [
                {
                    let mut b = good.clone();
                    b[at] ^= 0x5a;
                    b
                },
                good[..at].to_vec(),
            ] {
                fs::write(&target, &damaged).unwrap();
                let (session, used) = open(&path, cache.path());
                assert_eq!(used, IndexUse::Built, "damage at byte {at}");
                assert!(same(&session, &plain), "damage at byte {at}");
                assert_eq!(fs::read(&target).unwrap(), good, "rebuilt at byte {at}");
            }
        }
    }

    #[test]
    fn a_replaced_or_rewritten_session_file_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let path = session_file(dir.path(), 30);
        assert_eq!(open(&path, cache.path()).1, IndexUse::Built);
        // Same length, other bytes at the end of the indexed range: rebuilt.
        let mut bytes = fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 20] = b'x';
        fs::write(&path, &bytes).unwrap();
        let (session, used) = open(&path, cache.path());
        assert_eq!(used, IndexUse::Built);
        assert!(same(&session, &Session::open(&path).unwrap()));
        // A new file (other inode) under the same name: rebuilt.
        let other = dir.path().join("other.jsonl");
        fs::copy(&path, &other).unwrap();
        fs::rename(&other, &path).unwrap();
        assert_eq!(open(&path, cache.path()).1, IndexUse::Built);
        // Shrunk: rebuilt.
        let bytes = fs::read(&path).unwrap();
        let cut = bytes.len() / 2;
        let cut = cut + bytes[cut..].iter().position(|&b| b == b'\n').unwrap() + 1;
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(cut as u64)
            .unwrap();
        let (session, used) = open(&path, cache.path());
        assert_eq!(used, IndexUse::Built);
        assert!(same(&session, &Session::open(&path).unwrap()));
    }

    #[test]
    fn an_unwritable_cache_means_no_index_and_the_same_answer() {
        let dir = tempfile::tempdir().unwrap();
        let path = session_file(dir.path(), 9);
        let blocker = dir.path().join("not-a-dir");
        fs::write(&blocker, "x").unwrap();
        let (session, used) = open(&path, &blocker.join("cache"));
        assert_eq!(used, IndexUse::Unavailable);
        assert!(same(&session, &Session::open(&path).unwrap()));
    }

    #[test]
    fn indexes_of_vanished_sessions_go_after_thirty_days() {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let path = session_file(dir.path(), 9);
        open(&path, cache.path());
        let target = index_path(cache.path(), &fs::canonicalize(&path).unwrap());
        let hdir = index_dir(cache.path());
        // The files beside the index go with it.
        let beside = ["grow", "leaf", "hits"].map(|ext| target.with_extension(ext));
        for file in &beside {
            fs::write(file, "x").unwrap();
        }
        fs::remove_file(&path).unwrap();
        let now = SystemTime::now();
        housekeeping(&hdir, now);
        assert!(target.exists(), "marked, not removed");
        let marker = target.with_extension("gone");
        assert!(marker.exists());
        housekeeping(&hdir, now + Duration::from_secs(29 * 24 * 3600));
        assert!(target.exists());
        housekeeping(&hdir, now + Duration::from_secs(31 * 24 * 3600));
        assert!(!target.exists() && !marker.exists());
        assert!(beside.iter().all(|file| !file.exists()));
        // A session that comes back loses its marker.
        let path = session_file(dir.path(), 9);
        open(&path, cache.path());
        fs::write(&marker, "").unwrap();
        housekeeping(&hdir, now);
        assert!(!marker.exists() && target.exists());
    }
}
