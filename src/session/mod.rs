//! Reader for Pi session JSONL files (v1–v3): a streaming decode of every line into a light
//! [`Entry`] skeleton, the id/parentId tree, and the active branch. It never writes or
//! rewrites a session file: older versions are migrated in memory only (v1 gets a synthetic
//! linear chain of ids, v2's `hookMessage` role reads as `custom`).
//!
//! Reading rules follow Pi's own reader: blank lines are skipped; a line that is not one JSON
//! object — including a torn last line while Pi is still appending — is skipped and counted in
//! [`Session::skipped_lines`], never fatal; the first parsed object must be the `session`
//! header. Lines of any length work (the file is read through a buffered reader, one line at a
//! time, so memory stays proportional to the skeleton, not to the file).
//!
//! The skeleton keeps each line's byte range; [`Session::load`] re-reads and fully decodes one
//! entry on demand, so a caller pays for full JSON decoding only of the entries it shows.
//!
//! ```no_run
//! use pi_context::session::Session;
//! let session = Session::open("session.jsonl".as_ref()).expect("a readable session");
//! let leaf = session.leaf(None).expect("the default leaf always resolves");
//! for index in session.active_branch(leaf) {
//!     let entry = &session.entries[index];
//!     println!("{} {:?}", entry.line_no, entry.kind);
//! }
//! ```
//!
//! This module must not project history (seqs, windows, documents): that is `crate::history`.

mod entries;
pub mod index;
mod light;
pub mod mapped;
mod skeleton;

#[cfg(test)]
mod hostile_proptests;

pub use entries::Entries;
pub use index::{IndexMode, IndexUse};

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use std::hash::BuildHasher;

use hashbrown::HashTable;
use thin_vec::ThinVec;

use crate::envelope::{DomainError, ErrorClass};
pub use compact_str::CompactString;
use rustc_hash::FxBuildHasher;
use serde_json::Value;

/// Why a session could not be read. Each variant has a stable [`SessionError::code`].
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The file does not exist.
    #[error("session file {} does not exist", path.display())]
    NotFound { path: PathBuf },
    /// The file has no `session` header as its first JSON object (or has no JSON at all).
    #[error(
        "{} is not a Pi session: its first JSON line is not a session header with a string id",
        path.display()
    )]
    NotASession { path: PathBuf },
    /// `--leaf` names no entry of the file.
    #[error("leaf {leaf:?} names no entry of this session")]
    UnknownLeaf { leaf: String },
    /// Reading failed.
    #[error("could not read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SessionError {
    /// The stable refusal code.
    pub fn code(&self) -> &'static str {
        match self {
            SessionError::NotFound { .. } => "session_not_found",
            SessionError::NotASession { .. } => "not_a_session",
            SessionError::UnknownLeaf { .. } => "unknown_leaf",
            SessionError::Io { .. } => "io_error",
        }
    }

    /// What kind of refusal the code is: a read that failed is ours, the rest the caller's.
    pub fn class(&self) -> ErrorClass {
        match self {
            SessionError::Io { .. } => ErrorClass::Internal,
            _ => ErrorClass::Refused,
        }
    }
}

impl DomainError for SessionError {
    fn code(&self) -> &'static str {
        SessionError::code(self)
    }

    fn class(&self) -> ErrorClass {
        SessionError::class(self)
    }
}

/// The header line.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The session id (header `id`).
    pub id: String,
    /// The format version as written (absent means 1).
    pub version: u64,
    pub timestamp: Option<String>,
}

/// A message role as Pi 1.6.0 writes it (after the v2→v3 `hookMessage` → `custom` rename).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    ToolResult,
    BashExecution,
    Custom,
    BranchSummary,
    CompactionSummary,
    System,
    /// Any other role (or none): ignored by history. Its name is
    /// [`MessageMeta::other_role`] (kept out of the role, which every message's entry
    /// carries).
    Other,
}

/// The light facts of a `message` entry.
///
/// An entry is kept for every line of a session while it is read, so its size is the cold
/// read's memory on a session of short lines: what only some messages have (tool calls, a
/// tool result's id and name) is behind a pointer.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageMeta {
    pub role: Role,
    /// `content` is a JSON array (an assistant's tool calls are counted only then).
    pub content_is_array: bool,
    /// `contentText(content)` is non-empty.
    pub has_text: bool,
    /// The message has a `nestedCalls` key (a tool result's document then shows nested
    /// calls when its value is an object).
    pub has_nested_calls: bool,
    /// `toolCall` blocks in content order: (`id`, `name`) when they are strings. A thin vector
    /// (one pointer, its length on the heap; none allocated when empty): a boxed slice's
    /// length took a word of every message.
    pub tool_calls: ThinVec<ToolCallMeta>,
    /// A message's `toolCallId` and `toolName` (read for tool results) and the name of a
    /// role history does not know, when it has any of them.
    pub extras: Option<Box<MessageExtras>>,
}

/// The facts only some messages have (see [`MessageMeta::extras`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MessageExtras {
    /// `toolCallId`.
    pub tool_call_id: Option<CompactString>,
    /// Where `tool_call_id`'s characters start in the line, when known: the line's bytes
    /// there are the id itself (it holds no escape) and then its closing quote, so an id can
    /// be compared with it by reading those few bytes, not the whole line
    /// ([`SessionFile::tool_result_id_is`]).
    pub tool_call_id_at: Option<u32>,
    /// `toolName`.
    pub tool_name: Option<CompactString>,
    /// The role's name when [`Role::Other`] (`None` for none or an empty one).
    pub other_role: Option<CompactString>,
}

impl MessageMeta {
    /// `toolCallId`, when a string.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.extras.as_ref()?.tool_call_id.as_deref()
    }

    /// Where the `toolCallId`'s characters start in the line, when known
    /// ([`MessageExtras::tool_call_id_at`]).
    pub fn tool_call_id_at(&self) -> Option<u32> {
        self.extras.as_ref()?.tool_call_id_at
    }

    /// `toolName`, when a string.
    pub fn tool_name(&self) -> Option<&str> {
        self.extras.as_ref()?.tool_name.as_deref()
    }

    /// The name of a [`Role::Other`] role (`""` for none).
    pub fn other_role(&self) -> &str {
        self.extras
            .as_ref()
            .and_then(|extras| extras.other_role.as_deref())
            .unwrap_or_default()
    }
}

impl MessageExtras {
    /// The boxed facts, `None` when the message has none of them.
    pub fn boxed(
        tool_call_id: Option<CompactString>,
        tool_call_id_at: Option<u32>,
        tool_name: Option<CompactString>,
        other_role: Option<CompactString>,
    ) -> Option<Box<MessageExtras>> {
        let other_role = other_role.filter(|name| !name.is_empty());
        (tool_call_id.is_some() || tool_name.is_some() || other_role.is_some()).then(|| {
            Box::new(MessageExtras {
                tool_call_id,
                tool_call_id_at,
                tool_name,
                other_role,
            })
        })
    }
}

/// One `toolCall` block of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallMeta {
    pub id: Option<CompactString>,
    pub name: Option<CompactString>,
}

/// The kind of an entry, with the facts the tree and history need.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    Message(MessageMeta),
    Compaction,
    BranchSummary,
    /// (Its type boxed, as [`EntryKind::Other`]'s name: few entries are, and an inline string
    /// made every kind a word larger.)
    CustomMessage {
        custom_type: Option<Box<str>>,
    },
    /// Extension state (boxed: few entries are, and its facts are three strings).
    Custom(Box<CustomMeta>),
    Label,
    SessionInfo,
    ModelChange,
    ThinkingLevelChange,
    Usage,
    ContextEdit,
    /// Any other `type` (or none).
    Other(Option<Box<str>>),
}

/// The facts of a `custom` entry: `window_id` is `data.windowId` when that is a string;
/// `timestamp` the entry's ISO timestamp when a string (a reset marker's window opens at it;
/// kept here, not in every entry, since no other entry's is read).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomMeta {
    pub custom_type: Option<CompactString>,
    pub window_id: Option<CompactString>,
    pub timestamp: Option<String>,
}

/// One entry line, decoded lightly.
#[derive(Debug, Clone)]
pub struct Entry {
    /// 1-based line number in the file.
    pub line_no: u64,
    /// Byte offset of the line start.
    pub offset: u64,
    /// The line's byte length (without its `\n`) shifted left by one, and in the low bit
    /// [`Entry::escapes`]: a `bool` field of its own took a word of padding.
    len_escapes: u64,
    /// Its id (synthesised as `L<line_no>` for v1 files, which have none) and its parent's.
    pub lineage: Lineage,
    pub kind: EntryKind,
}

/// An entry's id and its parent's id (`None` for a root, or a v1 file's first entry).
///
/// Nearly every entry of a Pi session names the entry before it in the file as its parent,
/// so that parent id is not kept twice: an entry is read for every line of a session, and
/// a second id made it 24 bytes larger (5 MB of a cold read's memory on a 100 MiB session of
/// short lines). Which entry is "before" is the caller's to say ([`Entry::parent_id`]).
#[derive(Debug, Clone)]
pub enum Lineage {
    /// The id; the parent is the entry before this one in the file, which has an id.
    Continues(CompactString),
    /// Any other id and parent (boxed, so the usual case takes one id's room).
    Other(Box<(Option<CompactString>, Option<CompactString>)>),
}

impl Lineage {
    /// The lineage of an entry with `id` and `parent`, coming right after `before` in the
    /// file (`None` for the first entry, or when not known). Takes the ids borrowed or owned:
    /// a parent that is the entry before is only compared, never copied.
    pub fn new<S: AsRef<str> + Into<CompactString>>(
        id: Option<S>,
        parent: Option<S>,
        before: Option<&Entry>,
    ) -> Lineage {
        match (id, parent) {
            (Some(id), Some(parent)) if before.and_then(Entry::id) == Some(parent.as_ref()) => {
                Lineage::Continues(id.into())
            }
            (id, parent) => Lineage::Other(Box::new((id.map(Into::into), parent.map(Into::into)))),
        }
    }
}

impl Entry {
    /// The entry of the line at `offset` (`len` bytes without its `\n`, line `line_no`).
    pub fn new(
        line_no: u64,
        offset: u64,
        len: u64,
        escapes: bool,
        lineage: Lineage,
        kind: EntryKind,
    ) -> Entry {
        Entry {
            line_no,
            offset,
            len_escapes: len << 1 | u64::from(escapes),
            lineage,
            kind,
        }
    }

    /// Byte length of the line, without its `\n`.
    pub fn line_len(&self) -> u64 {
        self.len_escapes >> 1
    }

    /// The line holds an escape JavaScript's `JSON.stringify` would not write (see
    /// [`has_foreign_escape`]), so text decoded from it may differ from its bytes.
    pub fn escapes(&self) -> bool {
        self.len_escapes & 1 == 1
    }

    /// A message with a `nestedCalls` key ([`MessageMeta::has_nested_calls`]).
    pub fn has_nested_calls(&self) -> bool {
        matches!(&self.kind, EntryKind::Message(m) if m.has_nested_calls)
    }

    /// Its id.
    pub fn id(&self) -> Option<&str> {
        match &self.lineage {
            Lineage::Continues(id) => Some(id),
            Lineage::Other(ids) => ids.0.as_deref(),
        }
    }

    /// Its parent's id, when it comes right after `before` in the file (`None` for the
    /// first entry).
    pub fn parent_id<'a>(&'a self, before: Option<&'a Entry>) -> Option<&'a str> {
        match &self.lineage {
            Lineage::Continues(_) => before.and_then(Entry::id),
            Lineage::Other(ids) => ids.1.as_deref(),
        }
    }

    /// Whether this entry's parent is `before`, the entry before it in the file (it names
    /// that entry's id): what a bit of [`Session`]'s `continues` says.
    fn continues(&self, before: &Entry) -> bool {
        match &self.lineage {
            Lineage::Continues(_) => true,
            Lineage::Other(ids) => ids.1.is_some() && ids.1.as_deref() == before.id(),
        }
    }

    /// A `custom` entry's ISO timestamp, when a string (`None` for every other entry: only a
    /// reset marker's is read).
    pub fn timestamp(&self) -> Option<&str> {
        match &self.kind {
            EntryKind::Custom(custom) => custom.timestamp.as_deref(),
            _ => None,
        }
    }
}

/// A session file, read once: its header, every entry in file order, and how many lines were
/// skipped as malformed.
#[derive(Debug)]
pub struct Session {
    pub path: PathBuf,
    pub header: Header,
    /// Every entry in file order (the header excluded).
    pub entries: Entries,
    /// Non-blank lines that were not one JSON object (including a torn last line).
    pub skipped_lines: u64,
    /// The id index, built on first use ([`Session::ids_are_unique`] lets another thread
    /// build it while this one works from [`Session::chain_branch`]).
    ids: OnceLock<Ids>,
    /// A bit per entry: its parent id is the id of the entry before it in the file (set by
    /// the decode threads as they push the entries, or on assembly for entries read from the
    /// index and for v1 files; the branch walk reads these bits, not the entries).
    continues: Vec<u64>,
    file: File,
}

/// Entry index by id; a later duplicate wins, as in Pi's index. The table holds only indexes
/// (hashing and comparing `entries[i].id`), so no id is copied.
#[derive(Debug)]
struct Ids {
    by_id: HashTable<usize>,
    /// No id names two entries (then the entry before one whose id is a parent is that
    /// parent, without a lookup).
    unique: bool,
}

impl Ids {
    fn of(entries: &Entries) -> Ids {
        let mut by_id = HashTable::with_capacity(entries.len());
        let mut unique = true;
        for (index, entry) in entries.iter().enumerate() {
            let Some(id) = entry.id() else {
                continue;
            };
            // One probe for both the lookup and the insert.
            match by_id.entry(
                id_hash(id),
                |&i: &usize| entries[i].id() == Some(id),
                |&i: &usize| id_hash(entries[i].id().unwrap_or_default()),
            ) {
                hashbrown::hash_table::Entry::Occupied(mut slot) => {
                    *slot.get_mut() = index;
                    unique = false;
                }
                hashbrown::hash_table::Entry::Vacant(slot) => {
                    slot.insert(index);
                }
            }
        }
        Ids { by_id, unique }
    }
}

impl Session {
    /// Open and read a session file.
    pub fn open(path: &Path) -> Result<Session, SessionError> {
        Ok(Self::open_testing_lines(path, &|_, _| 0)?.0)
    }

    /// Open and read a session file, also testing the raw bytes of every entry line with
    /// `line_test` while streaming; the result holds the flags of every entry. Search uses
    /// this to test lines cheaply without a second pass over the file.
    pub fn open_testing_lines(
        path: &Path,
        line_test: &LineTest<'_>,
    ) -> Result<(Session, EntryFlags), SessionError> {
        let (session, flags, _) = Self::open_indexed(path, Some(line_test), &IndexMode::Off)?;
        Ok((session, flags))
    }

    /// Open and read a session file through its persistent index (see [`index`]): only the
    /// bytes appended since the index was written are decoded. With `line_test`, every entry
    /// line is also tested (one flag per entry; lines known from the index are scanned for
    /// it). Also reports how the index was used. An index that cannot be read, validated or
    /// written never makes this fail: the file is then read in full.
    pub fn open_indexed(
        path: &Path,
        line_test: Option<&LineTest<'_>>,
        mode: &IndexMode<'_>,
    ) -> Result<(Session, EntryFlags, IndexUse), SessionError> {
        let Deferred {
            session,
            flags,
            used: use_,
            pending,
            ..
        } = Self::open_deferred(path, line_test, mode)?;
        let use_ = match pending {
            Some(mut pending) => {
                pending.encode(&session.entries);
                pending.write(None, None, use_)
            }
            None => use_,
        };
        Ok((session, flags, use_))
    }

    /// [`Session::open_indexed`], leaving the index write to the caller: when the index must
    /// be (re)written, the [`index::Pending`] write is handed back so the caller can attach
    /// its own derived data (see [`index::Pending::write`]), and so is the place of a named
    /// leaf's projection beside a reused index ([`index::LeafSlot`]).
    pub fn open_deferred(
        path: &Path,
        line_test: Option<&LineTest<'_>>,
        mode: &IndexMode<'_>,
    ) -> Result<Deferred, SessionError> {
        let io_error = |source: std::io::Error| io_error_of(path, source);
        let file = File::open(path).map_err(io_error)?;
        let meta = file.metadata().map_err(io_error)?;
        let size = meta.len();
        let index::Through {
            mut decoded,
            used,
            pending,
            leaf_slot,
        } = match mode {
            IndexMode::Off | IndexMode::Unavailable => index::Through {
                decoded: decode_range(path, &file, 0, size, line_test, Decoded::empty())?,
                used: if matches!(mode, IndexMode::Off) {
                    IndexUse::Bypassed
                } else {
                    IndexUse::Unavailable
                },
                pending: None,
                leaf_slot: None,
            },
            IndexMode::In { dir, now } => {
                index::open_through_index(path, &file, &meta, dir, *now, line_test)?
            }
        };
        let flags = std::mem::take(&mut decoded.flags);
        let header = decoded.header.ok_or_else(|| SessionError::NotASession {
            path: path.to_path_buf(),
        })?;
        let session = Session::assemble(
            path,
            file,
            header,
            decoded.entries,
            decoded.skipped,
            decoded.continues,
        );
        Ok(Deferred {
            session,
            flags,
            used,
            pending,
            leaf_slot,
        })
    }

    /// The file handle and header, keeping only what reading single lines needs, and the
    /// entries, for the caller to free where it suits it. The id index is freed here: one
    /// table of indexes (2 MB on 225 k entries), given back at once, before the caller's
    /// next allocations.
    pub fn into_parts(self) -> (SessionFile, Entries) {
        let Session {
            path,
            header,
            entries,
            skipped_lines,
            ids: _,
            continues: _,
            file,
        } = self;
        (
            SessionFile {
                path,
                file,
                header,
                skipped_lines,
            },
            entries,
        )
    }

    /// A session from its decoded parts: the in-memory migrations and the id index.
    fn assemble(
        path: &Path,
        file: File,
        header: Header,
        mut entries: Entries,
        skipped: u64,
        continues: Option<Vec<u64>>,
    ) -> Session {
        if header.version < 3 {
            // v2 → v3: the `hookMessage` role was renamed `custom` (chunks decode as v3).
            for entry in entries.iter_mut() {
                if let EntryKind::Message(message) = &mut entry.kind
                    && message.role == Role::Other
                    && message.other_role() == "hookMessage"
                {
                    message.role = Role::Custom;
                    // The name goes with the unknown role (its box too, when nothing is left).
                    message.extras = message.extras.take().and_then(|extras| {
                        MessageExtras::boxed(
                            extras.tool_call_id,
                            extras.tool_call_id_at,
                            extras.tool_name,
                            None,
                        )
                    });
                }
            }
        }
        if header.version < 2 {
            // v1 → v2: a single linear chain in file order, with synthetic ids.
            for (n, entry) in entries.iter_mut().enumerate() {
                let id = compact_str::format_compact!("L{}", entry.line_no);
                entry.lineage = if n == 0 {
                    Lineage::Other(Box::new((Some(id), None)))
                } else {
                    Lineage::Continues(id)
                };
            }
        }
        // The decode threads' bits hold for the file's own ids (v1 ids are made up above).
        let continues = match continues {
            Some(bits) if header.version >= 2 => bits,
            _ => continues_of(&entries),
        };
        Session {
            path: path.to_path_buf(),
            header,
            entries,
            skipped_lines: skipped,
            ids: OnceLock::new(),
            continues,
            file,
        }
    }

    fn ids(&self) -> &Ids {
        self.ids.get_or_init(|| Ids::of(&self.entries))
    }

    /// No id names two entries (builds the id index, if not built yet).
    pub fn ids_are_unique(&self) -> bool {
        self.ids().unique
    }

    /// The entry index of an id (the later of duplicates).
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.ids()
            .by_id
            .find(id_hash(id), |&i| self.entries[i].id() == Some(id))
            .copied()
    }

    /// The branch [`Session::active_branch`] gives for `leaf` *if* [`Session::ids_are_unique`],
    /// found without the id index: every entry from the first to `leaf`, when each continues
    /// the one before it in the file and the first has no parent. `None` otherwise (the branch
    /// must then be walked).
    pub fn chain_branch(&self, leaf: usize) -> Option<Branch<'static>> {
        let first_is_root = self.entries.get(0)?.parent_id(None).is_none();
        // Bits 1..=leaf of `continues`, a word at a time (bit 0, the first entry, is never
        // set: it has no entry before it).
        let last = leaf / 64;
        let chained = (0..=last).all(|w| {
            let mut want = u64::MAX;
            if w == 0 {
                want &= !1;
            }
            if w == last {
                want &= u64::MAX >> (63 - leaf % 64);
            }
            self.continues
                .get(w)
                .is_some_and(|&word| word & want == want)
        });
        (first_is_root && leaf < self.entries.len() && chained)
            .then_some(Branch::Chain { len: leaf + 1 })
    }

    /// The leaf: the entry named `explicit`, else the last entry in file order (`None` when the
    /// session has no entries).
    pub fn leaf(&self, explicit: Option<&str>) -> Result<Option<usize>, SessionError> {
        match explicit {
            Some(id) => self
                .index_of(id)
                .map(Some)
                .ok_or_else(|| SessionError::UnknownLeaf {
                    leaf: id.to_string(),
                }),
            None => Ok(self.entries.len().checked_sub(1)),
        }
    }

    /// The active branch: entry indexes from the root to `leaf` (empty for `None`). The walk
    /// stops at a `null` parent, at a parent id that names no entry, or at a cycle.
    pub fn active_branch(&self, leaf: Option<usize>) -> Vec<usize> {
        let mut path = Vec::new();
        let mut seen = vec![false; self.entries.len()];
        let mut current = leaf;
        let unique = self.ids_are_unique();
        while let Some(index) = current {
            if seen[index] {
                break;
            }
            seen[index] = true;
            path.push(index);
            // Most entries continue the one before them in the file.
            current = if unique && bit(&self.continues, index) {
                Some(index - 1)
            } else {
                self.entries
                    .parent_id(index)
                    .and_then(|parent| self.index_of(parent))
            };
        }
        path.reverse();
        path
    }

    /// The raw bytes of one entry's line, re-read from the file (earlier lines never change
    /// while Pi appends).
    pub fn raw_line(&self, index: usize) -> Result<Vec<u8>, SessionError> {
        let entry = &self.entries[index];
        read_line_at(&self.path, &self.file, entry.offset, entry.line_len())
    }

    /// Fully decode one entry (order-preserving objects), with the in-memory migrations
    /// applied: a v1/v2 `hookMessage` role reads as `custom`.
    pub fn load(&self, index: usize) -> Result<Value, SessionError> {
        let entry = &self.entries[index];
        load_line_at(
            &self.path,
            &self.file,
            self.header.version,
            entry.offset,
            entry.line_len(),
        )
    }
}

/// A branch: entry indexes from the root to the leaf. A chain (every entry from the first,
/// [`Session::chain_branch`], Pi's usual file) is kept as its length, not as a vector of
/// indexes (1.8 MB on 225 k entries, held through a cold call's peak).
#[derive(Debug, Clone, Copy)]
pub enum Branch<'a> {
    /// Entries `0..len`.
    Chain { len: usize },
    /// A walked branch ([`Session::active_branch`]).
    Walked(&'a [usize]),
}

impl<'a> Branch<'a> {
    pub fn len(&self) -> usize {
        match self {
            Branch::Chain { len } => *len,
            Branch::Walked(indexes) => indexes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn last(&self) -> Option<usize> {
        match self {
            Branch::Chain { len } => len.checked_sub(1),
            Branch::Walked(indexes) => indexes.last().copied(),
        }
    }

    /// Its entries are in file order (ascending indexes).
    pub fn is_sorted(&self) -> bool {
        match self {
            Branch::Chain { .. } => true,
            Branch::Walked(indexes) => indexes.is_sorted_by(|a, b| a < b),
        }
    }

    /// Its entry indexes, root first.
    pub fn iter(&self) -> BranchIndexes<'a> {
        match *self {
            Branch::Chain { len } => BranchIndexes::Chain(0..len),
            Branch::Walked(indexes) => BranchIndexes::Walked(indexes.iter()),
        }
    }
}

/// The entry indexes of a [`Branch`].
#[derive(Debug, Clone)]
pub enum BranchIndexes<'a> {
    Chain(std::ops::Range<usize>),
    Walked(std::slice::Iter<'a, usize>),
}

impl Iterator for BranchIndexes<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            BranchIndexes::Chain(range) => range.next(),
            BranchIndexes::Walked(indexes) => indexes.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            BranchIndexes::Chain(range) => range.size_hint(),
            BranchIndexes::Walked(indexes) => indexes.size_hint(),
        }
    }
}

/// What [`Session::open_deferred`] read, and what it leaves to the caller to write.
pub struct Deferred {
    pub session: Session,
    pub flags: EntryFlags,
    pub used: IndexUse,
    /// The index write still to do, if any.
    pub pending: Option<index::Pending>,
    /// Where the projection of a named leaf that is not the default one may be kept.
    pub leaf_slot: Option<index::LeafSlot>,
}

/// A session opened through the front of its index ([`SessionFile::open_reused`]).
pub struct Reopened {
    pub file: SessionFile,
    /// The extra data stored in the index.
    pub extra: index::Extra,
    /// The caller's data of the index's growth file, when one is valid: what the lines
    /// appended between the index file and the growth file add to `extra`.
    pub delta: Option<Vec<u8>>,
    /// The complete lines appended since the index (with its growth file) was written;
    /// `None` when it covers every complete line.
    pub appended: Option<Appended>,
    /// How to read the index's side data when no line was appended (else `appended` has it).
    grow: Option<index::Grow>,
    /// The end of the file's last complete line when it was opened: every line before it is
    /// one the index (with `appended`) covers.
    pub complete: u64,
}

impl Reopened {
    /// The side data stored with the index's extra data (checked, mapped), if any.
    pub fn side(&self) -> Option<mapped::Mapped> {
        match &self.appended {
            Some(appended) => appended.side(),
            None => self.grow.as_ref()?.side(),
        }
    }

    /// The stored projection of the branch ending at `leaf` from the leaf file, when no
    /// line was appended and the leaf file was written for exactly this index state
    /// ([`index::Grow::leaf_projection`]).
    pub fn leaf_projection(&self, leaf: &str) -> Option<(mapped::Mapped, usize)> {
        self.grow.as_ref()?.leaf_projection(leaf)
    }
}

/// The complete lines appended to a session since its index was written, decoded, and what
/// extending the index by them needs.
pub struct Appended {
    decoded: Decoded,
    complete: u64,
    grow: index::Grow,
    /// The new entries' skeleton chunk, once encoded.
    chunk: std::cell::OnceCell<Vec<u8>>,
}

impl Appended {
    /// The new entries, in file order (decoded as v3 entries: no in-memory migration).
    pub fn entries(&self) -> &[Entry] {
        self.decoded.entries.as_slice().unwrap_or_default()
    }

    /// The side data stored with the index's extra data (checked, mapped), if any.
    pub fn side(&self) -> Option<mapped::Mapped> {
        self.grow.side()
    }

    /// The skeleton chunk of the new entries (none for an index kept without its skeleton).
    fn chunk(&self) -> &[u8] {
        if !self.grow.keeps_skeleton() {
            return &[];
        }
        // The first entry was decoded without the one before it.
        self.chunk
            .get_or_init(|| index::chunk_of(&[self.entries()], None))
    }

    /// Whether a growth file with `payload` stays small beside the index file (see
    /// [`index::Grow::delta_fits`]); else the caller folds ([`Self::write`]).
    pub fn delta_fits(&self, payload: usize) -> bool {
        self.grow.delta_fits(payload, self.chunk().len())
    }

    /// Atomically write the index's growth file with `payload` (what every line appended
    /// since the index file adds to its extra data; see [`index::Grow::write_delta`]);
    /// `false` when it could not be kept.
    pub fn write_delta(&self, file: &SessionFile, payload: &[u8]) -> bool {
        self.grow.write_delta(
            &file.file,
            self.complete,
            &self.decoded,
            self.chunk(),
            payload,
        )
    }

    /// Atomically write the whole index extended by these lines (and those of its growth
    /// file), with new `extra` and `side` data (the side in pieces; see
    /// [`index::Grow::write`]); `false` when no index could be kept.
    pub fn write(&self, file: &SessionFile, extra: &[u8], side: &[&[u8]]) -> bool {
        self.grow.write(
            &file.file,
            self.complete,
            &self.decoded,
            self.chunk(),
            &[extra],
            side,
        )
    }
}

/// An open session file without its skeleton: what reading single lines by their byte range
/// needs (the header's version for the in-memory migrations), and the malformed-line count.
#[derive(Debug)]
pub struct SessionFile {
    pub path: PathBuf,
    pub file: File,
    pub header: Header,
    pub skipped_lines: u64,
}

impl SessionFile {
    /// Open a session through a valid index that carries `extra` data (see
    /// [`index::Pending::write`]), without decoding the index's skeleton: only the complete
    /// lines appended since the index was written are decoded (handed back, with what
    /// extending the index needs, as [`Reopened::appended`]), and the bytes after the last
    /// `\n` are decoded live. `None` (never an error about the index) when that is not
    /// possible: no valid index, no extra data, or a tail that holds an entry — the caller
    /// then reads through [`Session::open_deferred`].
    pub fn open_reused(
        path: &Path,
        cache: &Path,
        now: std::time::SystemTime,
    ) -> Result<Option<Reopened>, SessionError> {
        let io_error = |source: std::io::Error| io_error_of(path, source);
        let file = File::open(path).map_err(io_error)?;
        let meta = file.metadata().map_err(io_error)?;
        let size = meta.len();
        let Some(peeked) = index::peek(path, &file, &meta, cache, now)? else {
            return Ok(None);
        };
        let mut so_far = Decoded {
            header: Some(peeked.header),
            lines: peeked.lines,
            skipped: peeked.skipped,
            ..Decoded::default()
        };
        let (mut appended, mut grow) = (None, None);
        if peeked.indexed < peeked.complete {
            let mut decoded =
                decode_range(path, &file, peeked.indexed, peeked.complete, None, so_far)?;
            so_far = Decoded {
                header: decoded.header.clone(),
                lines: decoded.lines,
                skipped: decoded.skipped,
                ..Decoded::default()
            };
            // Few entries: one slice for extending the stored projection.
            decoded.entries.make_contiguous();
            appended = Some(Appended {
                decoded,
                complete: peeked.complete,
                grow: peeked.grow,
                chunk: std::cell::OnceCell::new(),
            });
        } else {
            grow = Some(peeked.grow);
        }
        let tail = decode_range(path, &file, peeked.complete, size, None, so_far)?;
        if !tail.entries.is_empty() {
            return Ok(None);
        }
        let Some(header) = tail.header else {
            return Ok(None);
        };
        Ok(Some(Reopened {
            file: SessionFile {
                path: path.to_path_buf(),
                file,
                header,
                skipped_lines: tail.skipped,
            },
            extra: peeked.extra,
            delta: peeked.delta,
            appended,
            grow,
            complete: peeked.complete,
        }))
    }

    /// The raw bytes of the line at `[offset, offset + len)`.
    pub fn raw_at(&self, offset: u64, len: u64) -> Result<Vec<u8>, SessionError> {
        read_line_at(&self.path, &self.file, offset, len)
    }

    /// Whether the `toolCallId` of the tool result whose line is `[offset, offset + len)` is
    /// `id`. With `id_at`, where a light decode found the id's characters in the line
    /// ([`MessageMeta::tool_call_id_at`]), only the bytes the id would take there and one
    /// more are read; without it the whole line is read and decoded. `None` when the bytes
    /// cannot be read.
    pub fn tool_result_id_is(
        &self,
        offset: u64,
        len: u64,
        id_at: Option<u32>,
        id: &str,
    ) -> Option<bool> {
        let Some(at) = id_at else {
            return Some(self.tool_result_id_at(offset, len)?.as_str() == id);
        };
        // The stored id holds no escape, so it holds no quote, backslash or control
        // character, and its closing quote lies inside the line.
        let want = id.len() as u64 + 1;
        if id.bytes().any(|c| matches!(c, b'"' | b'\\' | 0..0x20)) || u64::from(at) + want > len {
            return Some(false);
        }
        let stored = self.raw_at(offset + u64::from(at), want).ok()?;
        Some(unescaped_id_is(&stored, id))
    }

    /// The `toolCallId` of the tool result whose line is `[offset, offset + len)`, decoded
    /// as a full read decodes it (the same fast and slow paths); `None` when the line cannot
    /// be read or is not a tool result with an id.
    pub fn tool_result_id_at(&self, offset: u64, len: u64) -> Option<CompactString> {
        let body = self.raw_at(offset, len).ok()?;
        with_raw_entry(&body, |raw, _| {
            match entry_from_raw(raw, (0, offset, len, false), 3, None).kind {
                EntryKind::Message(m) if m.role == Role::ToolResult => {
                    m.extras.and_then(|extras| extras.tool_call_id)
                }
                _ => None,
            }
        })
        .flatten()
    }

    /// Fully decode the entry line at `[offset, offset + len)`, with the in-memory
    /// migrations applied.
    pub fn load_at(&self, offset: u64, len: u64) -> Result<Value, SessionError> {
        load_line_at(&self.path, &self.file, self.header.version, offset, len)
    }
}

/// Whether `stored` — the bytes of a line from where an unescaped string's characters start,
/// as many as `id` has and one more — holds exactly `id` and then the closing quote. `id`
/// holds no quote: with one, the string could end inside the bytes compared.
fn unescaped_id_is(stored: &[u8], id: &str) -> bool {
    let id = id.as_bytes();
    stored.len() == id.len() + 1 && stored.starts_with(id) && stored[id.len()] == b'"'
}

#[allow(
    clippy::expect_used,
    reason = "a line fits in memory because it was read"
)]
fn read_line_at(path: &Path, file: &File, offset: u64, len: u64) -> Result<Vec<u8>, SessionError> {
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(len).expect("a line fits in memory because it was read");
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset)
        .map_err(|source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(buf)
}

fn load_line_at(
    path: &Path,
    file: &File,
    version: u64,
    offset: u64,
    len: u64,
) -> Result<Value, SessionError> {
    let raw = read_line_at(path, file, offset, len)?;
    let mut value = parse_value(&raw).ok_or_else(|| SessionError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            // The byte offset, not a line number: the index that found the line keeps no
            // line numbers (they cost 4 bytes of every event line, and the index its share).
            format!("the line at byte {offset} changed since it was read"),
        ),
    })?;
    if version < 3
        && let Some(role) = value.pointer_mut("/message/role")
        && role == "hookMessage"
    {
        *role = Value::String("custom".into());
    }
    Ok(value)
}

/// Whether `line` holds an escape JavaScript's `JSON.stringify` would not write: `\\/`, or a
/// `\\uXXXX` other than the `\\u0000`–`\\u001f` control form (minus `\\b` `\\t` `\\n` `\\f`
/// `\\r`, which JavaScript writes short). A backslash that is itself escaped starts nothing.
pub fn has_foreign_escape(line: &[u8]) -> bool {
    use memchr::memmem;
    use std::sync::LazyLock;
    // Built once per process, not once per line.
    static SLASH: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"\\/"));
    static UNICODE: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\\u"));
    // An escape starts at a backslash preceded by an even run of backslashes.
    let starts_escape =
        |at: usize| line[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0;
    if SLASH.find_iter(line).any(starts_escape) {
        return true;
    }
    UNICODE.find_iter(line).any(|at| {
        if !starts_escape(at) {
            return false;
        }
        let hex = line.get(at + 2..at + 6).unwrap_or(b"");
        let own = hex.len() == 4
            && hex.starts_with(b"00")
            && matches!(hex[2], b'0' | b'1')
            && hex[3].is_ascii_hexdigit()
            && !(hex[2] == b'0'
                && matches!(
                    hex[3].to_ascii_lowercase(),
                    b'8' | b'9' | b'a' | b'c' | b'd'
                ));
        !own
    })
}

/// A test of one entry line's raw bytes, run while the file streams (search's prefilter),
/// given the line with the whole lines after it in the reader's buffer ([`TestedLine`]) and
/// the memo the test keeps for the lines of one reader ([`LineMemo`]).
pub type LineTest<'a> = dyn Fn(&TestedLine<'_>, &mut LineMemo) -> u64 + Sync + 'a;

/// A [`LineTest`]'s flags of the entries, in entry order: the first `tested` entries were
/// tested, and only the flags that are not 0 are kept, as (entry, flags) ascending by entry.
/// A search's test gives 0 to nearly every line (its literals are rare), and a vector of
/// every entry's flags was 1.8 MB of a cold search's peak on a session of 225 k entries.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EntryFlags {
    set: Vec<(usize, u64)>,
    tested: usize,
}

impl EntryFlags {
    /// The flags of the next entry.
    pub fn push(&mut self, flags: u64) {
        if flags != 0 {
            self.set.push((self.tested, flags));
        }
        self.tested += 1;
    }

    /// The flags of the entries after these (`more`'s first entry follows their last).
    pub fn append(&mut self, more: EntryFlags) {
        let base = self.tested;
        self.set.extend(
            more.set
                .into_iter()
                .map(|(entry, flags)| (base + entry, flags)),
        );
        self.tested += more.tested;
    }

    /// How many entries were tested (the first ones).
    pub fn tested(&self) -> usize {
        self.tested
    }

    /// The entries whose flags are not 0, with their flags, ascending.
    pub fn set(&self) -> &[(usize, u64)] {
        &self.set
    }

    /// Entry `entry`'s flags; every bit (a "maybe") for an entry past the tested ones.
    pub fn get(&self, entry: usize) -> u64 {
        if entry >= self.tested {
            return u64::MAX;
        }
        mask_of(&self.set, entry)
    }
}

/// The mask paired with `key` in `set` (ascending by key, each key once); 0 when `key` has
/// none. The sparse masks of entries, of projection lines and of a scan's hits are all kept
/// this way.
pub(crate) fn mask_of(set: &[(usize, u64)], key: usize) -> u64 {
    set.binary_search_by_key(&key, |&(k, _)| k)
        .map_or(0, |i| set[i].1)
}

/// An entry line handed to a [`LineTest`]: its bytes are `hay[..len]`, and the rest of
/// `hay` is the whole lines after it that the reader holds (none past the buffer's last
/// `\n`), so a test may search many lines in one pass and remember, in its memo, where the
/// next line holding what it looks for is. Searching each short line by itself paid a
/// search's setup and its scalar tail once per line.
pub struct TestedLine<'b> {
    pub hay: &'b [u8],
    /// The file offset of `hay[0]` (the line's start).
    pub offset: u64,
    /// The line's length (without its `\n`).
    pub len: usize,
    /// The line holds an escape JavaScript would not write ([`has_foreign_escape`], which the
    /// decode finds anyway: the test need not scan the line again for it).
    pub escapes: bool,
    /// Whether the line's message has a `nestedCalls` key, when the line was just decoded
    /// (`None` when not known: the test then searches the line for the key's name).
    pub nested_calls: Option<bool>,
}

impl<'b> TestedLine<'b> {
    /// One line by itself (nothing after it to search ahead in).
    pub fn alone(line: &'b [u8], offset: u64, escapes: bool) -> TestedLine<'b> {
        TestedLine {
            hay: line,
            offset,
            len: line.len(),
            escapes,
            nested_calls: None,
        }
    }

    /// The line's bytes.
    pub fn body(&self) -> &'b [u8] {
        &self.hay[..self.len]
    }
}

/// What a [`LineTest`] keeps between the lines of one reader, which hands them in file
/// order: for each thing it looks for, where the next line holding it is. Empty for a new
/// reader; the test sizes it.
pub type LineMemo = Vec<NextHit>;

/// Where the next line holding something is, as far as a search looked: unknown yet, at a
/// file offset (inside that line), or in none of the lines before a file offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextHit {
    Unknown,
    At(u64),
    NoneBefore(u64),
}

/// The hash of an entry id in [`Session::by_id`], also stored by history's index side data
/// (FxHash has no random seed: the same in every process; the index checksums use it too, so
/// a change of it invalidates every index).
pub fn id_hash(id: &str) -> u64 {
    FxBuildHasher.hash_one(id)
}

/// The map from a read error to a [`SessionError`].
fn io_error_of(path: &Path, source: std::io::Error) -> SessionError {
    if source.kind() == std::io::ErrorKind::NotFound {
        SessionError::NotFound {
            path: path.to_path_buf(),
        }
    } else {
        SessionError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The decoded lines of a file prefix: what the index stores, plus the flags of a line test.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// The header, once the first parsed object was one.
    pub header: Option<Header>,
    pub entries: Entries,
    /// The line test's flags of the entries (none tested without a test).
    pub flags: EntryFlags,
    /// Malformed lines so far.
    pub skipped: u64,
    /// Lines so far (blank ones included): the next line's number minus one.
    pub lines: u64,
    /// When every entry was decoded from the file here (none read from the index): a bit
    /// per entry, set when its parent is the entry before it ([`Session`]'s `continues`),
    /// found by the decode threads while the entries are in their caches.
    pub continues: Option<Vec<u64>>,
}

impl Decoded {
    pub(crate) fn empty() -> Decoded {
        Decoded::default()
    }
}

/// Decode the lines in `[from, to)` of `file` and append them to `so_far` (the decode of
/// `[0, from)`): the header rule applies while no header is known. `from` must be a line start.
#[allow(clippy::expect_used, reason = "a chunk decoder does not panic")]
pub(crate) fn decode_range(
    path: &Path,
    file: &File,
    from: u64,
    to: u64,
    line_test: Option<&LineTest<'_>>,
    so_far: Decoded,
) -> Result<Decoded, SessionError> {
    let io_error = |source: std::io::Error| io_error_of(path, source);
    if from >= to {
        return Ok(so_far);
    }
    // Large ranges are decoded by several threads, in pieces split at line boundaries; each
    // piece is streamed by its thread's reader, so memory stays independent of the file size.
    let threads = crate::threads::worker_threads();
    let ranges = ((to - from) / PARALLEL_CHUNK_MIN_BYTES).clamp(1, threads as u64);
    let decoded: Vec<(usize, Chunk)> = if ranges == 1 {
        vec![(
            0,
            decode_chunk(file, from, to, line_test).map_err(io_error)?,
        )]
    } else {
        let pieces = Pieces {
            ranges: ranges as usize,
            bytes: DECODE_PIECE_BYTES,
        };
        decode_in_pieces(file, from, to, pieces, line_test).map_err(io_error)?
    };
    fold_chunks(path, decoded, so_far)
}

/// Add the decoded chunks of a range (in file order, each with the index of the thread range
/// it belongs to) to `so_far`, the decode of the bytes before them.
fn fold_chunks(
    path: &Path,
    decoded: Vec<(usize, Chunk)>,
    mut so_far: Decoded,
) -> Result<Decoded, SessionError> {
    let not_a_session = || SessionError::NotASession {
        path: path.to_path_buf(),
    };
    let mut last_range = None;
    for (range, mut chunk) in decoded {
        so_far.skipped += chunk.malformed;
        if so_far.header.is_none() {
            // The first parsed object must be the header; later `session` lines
            // (concatenated files) are not entries, as in Pi's index.
            match chunk.first_session.take() {
                Some(first) if first.entries_before == 0 && so_far.entries.is_empty() => {
                    match first.id {
                        Some(id) => {
                            so_far.header = Some(Header {
                                id,
                                version: first.version,
                                timestamp: first.timestamp,
                            })
                        }
                        None => return Err(not_a_session()),
                    }
                }
                _ if !chunk.entries.is_empty() || !so_far.entries.is_empty() => {
                    return Err(not_a_session());
                }
                _ => {}
            }
        }
        if so_far.lines > 0 {
            for entry in &mut chunk.entries {
                entry.line_no += so_far.lines;
            }
        }
        if so_far.entries.is_empty() && so_far.continues.is_none() {
            so_far.continues = Some(Vec::new());
        }
        if let Some(bits) = &mut so_far.continues {
            let first_continues = match (so_far.entries.last(), chunk.entries.first()) {
                (Some(before), Some(first)) => first.continues(before),
                _ => false,
            };
            if first_continues {
                chunk.continues[0] |= 1;
            }
            append_bits(bits, so_far.entries.len(), &chunk.continues);
        }
        so_far.lines += chunk.line_count;
        // Each chunk's entries stay where its thread put them (no copy); the chunks of one
        // thread's range are one group for the index.
        // (An empty chunk adds no part, so it does not decide the next one's group.)
        let joins = last_range == Some(range);
        if !chunk.entries.is_empty() {
            last_range = Some(range);
        }
        so_far.entries.push_part_in_group(chunk.entries, joins);
        so_far.flags.append(chunk.flags);
    }
    Ok(so_far)
}

/// A bit per entry, set when its parent is the entry before it ([`Session`]'s `continues`).
fn continues_of(entries: &Entries) -> Vec<u64> {
    let mut continues = vec![0u64; entries.len().div_ceil(64)];
    let mut before: Option<&Entry> = None;
    for (index, entry) in entries.iter().enumerate() {
        if before.is_some_and(|before| entry.continues(before)) {
            continues[index / 64] |= 1 << (index % 64);
        }
        before = Some(entry);
    }
    continues
}

/// Bit `i` of `bits` (`false` past its end).
fn bit(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64)
        .is_some_and(|word| word >> (i % 64) & 1 == 1)
}

/// Put the bits of `more` after the first `len` bits of `bits` (bits past `len` are 0).
fn append_bits(bits: &mut Vec<u64>, len: usize, more: &[u64]) {
    let (base, shift) = (len / 64, len % 64);
    bits.resize(base + more.len() + 1, 0);
    for (k, &word) in more.iter().enumerate() {
        bits[base + k] |= word << shift;
        if shift > 0 {
            bits[base + k + 1] |= word >> (64 - shift);
        }
    }
}

/// Files at least this large per extra thread are decoded in parallel chunks.
const PARALLEL_CHUNK_MIN_BYTES: u64 = 8 << 20;

/// The first `session` line of a chunk: the file's header when nothing parsed precedes it.
struct FirstSession {
    /// Entries of the chunk decoded before it.
    entries_before: usize,
    id: Option<String>,
    version: u64,
    timestamp: Option<String>,
}

/// The decoded lines of one chunk, with `line_no`s counted from the chunk start.
struct Chunk {
    /// Every object line other than a `session` line, decoded as a v3 entry.
    entries: Vec<Entry>,
    /// `line_test` of each entry's raw line.
    flags: EntryFlags,
    first_session: Option<FirstSession>,
    /// Non-blank lines that were not one JSON object.
    malformed: u64,
    /// Every line of the chunk, blank ones included.
    line_count: u64,
    /// A bit per entry: its parent is the entry before it in the chunk (the first entry's
    /// bit is left for [`decode_range`], which knows the entry before the chunk).
    continues: Vec<u64>,
}

/// The start of the first line after the one holding byte `at` (after the first `\n` at or
/// after `at`), or `to` when there is none before `to`.
fn line_start_after(file: &File, at: u64, to: u64) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    // Most lines end within a few KiB; longer ones are probed in larger steps.
    let mut probe = vec![0u8; 4 << 10];
    let mut at = at;
    while at < to {
        let want = probe
            .len()
            .min(usize::try_from(to - at).unwrap_or(usize::MAX));
        let n = file.read_at(&mut probe[..want], at)?;
        if n == 0 {
            break;
        }
        if let Some(pos) = memchr::memchr(b'\n', &probe[..n]) {
            return Ok((at + pos as u64 + 1).min(to));
        }
        at += n as u64;
        if probe.len() < 64 << 10 {
            probe.resize(probe.len() * 2, 0);
        }
    }
    Ok(to)
}

/// About how many bytes each piece of a parallel decode holds.
const DECODE_PIECE_BYTES: u64 = 2 << 20;

/// How a parallel decode splits its range: into `ranges` thread ranges of pieces of about
/// `bytes` bytes.
#[derive(Debug, Clone, Copy)]
struct Pieces {
    ranges: usize,
    bytes: u64,
}

/// Decode `[from, to)` on `ranges` threads: the lines of each piece, with the index of the
/// thread range the piece belongs to, in file order.
///
/// The range is cut into pieces of about `split.bytes` (a piece holds the lines that start in
/// it), and the pieces into `split.ranges` ranges of consecutive pieces, one per thread.
/// Each thread decodes its own range from the front into one chunk, then takes the pieces
/// left in the others from their back, one chunk each, until none is left. Fixed ranges, one
/// per thread, often left one thread waiting for the other for a tenth to a third of the
/// decode: the cores of this kind of machine do not run equally fast, and a session's lines
/// are not equally dense everywhere.
#[allow(clippy::expect_used, reason = "a decoding thread does not panic")]
fn decode_in_pieces(
    file: &File,
    from: u64,
    to: u64,
    split: Pieces,
    line_test: Option<&LineTest<'_>>,
) -> std::io::Result<Vec<(usize, Chunk)>> {
    use crate::threads::PieceRange;
    let ranges = split.ranges.max(1);
    let ranges_u64 = ranges as u64;
    // A multiple of `ranges`, so each range starts where the chunk of one thread of equal
    // shares started (the index's chunks stay where they were).
    let pieces = ((to - from) / split.bytes.max(1) / ranges_u64).clamp(1, 1 << 20) * ranges_u64;
    // Where piece `k`'s lines start.
    let start_of = |k: u64| -> std::io::Result<u64> {
        if k == 0 {
            return Ok(from);
        }
        if k >= pieces {
            return Ok(to);
        }
        let cut = u128::from(to - from) * u128::from(k) / u128::from(pieces);
        line_start_after(file, from + cut as u64, to)
    };
    // The pieces of each range not taken yet.
    let left: Vec<PieceRange> = (0..ranges_u64)
        .map(|r| PieceRange::new(pieces * r / ranges_u64, pieces * (r + 1) / ranges_u64))
        .collect();
    let work = |own: usize| -> std::io::Result<Vec<(u64, usize, Chunk)>> {
        let mut reader = LineReader::new(PositionedReader {
            file,
            at: from,
            end: from,
        });
        let mut done = Vec::new();
        // The own range's chunk, and where its lines end.
        let mut front: Option<(u64, Chunk, u64)> = None;
        while let Some(k) = left[own].take(false) {
            let (start, end) = match &front {
                Some((_, _, end)) => (*end, start_of(k + 1)?),
                None => (start_of(k)?, start_of(k + 1)?),
            };
            let (_, chunk, at) = front.get_or_insert_with(|| {
                let share = (to - from) / ranges_u64;
                (k, Chunk::expecting(share), start)
            });
            decode_lines(&mut reader, start, end, chunk, line_test)?;
            *at = end;
        }
        if let Some((k, chunk, _)) = front {
            done.push((k, own, chunk));
        }
        // Then the pieces left in the other ranges, from the back of the one with most left.
        loop {
            let most_left = (0..ranges)
                .filter(|&r| r != own)
                .max_by_key(|&r| left[r].left());
            let Some(k) = most_left.and_then(|r| left[r].take(true).map(|k| (r, k))) else {
                break;
            };
            let (range, k) = k;
            let (start, end) = (start_of(k)?, start_of(k + 1)?);
            let mut chunk = Chunk::expecting(end.saturating_sub(start));
            decode_lines(&mut reader, start, end, &mut chunk, line_test)?;
            done.push((k, range, chunk));
        }
        Ok(done)
    };
    let found: Vec<std::io::Result<Vec<(u64, usize, Chunk)>>> = std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = (0..ranges)
            .map(|own| scope.spawn(move || work(own)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a decoding thread does not panic"))
            .collect()
    });
    let mut chunks = Vec::with_capacity(ranges + 4);
    for part in found {
        chunks.extend(part?);
    }
    chunks.sort_unstable_by_key(|&(k, _, _)| k);
    Ok(chunks
        .into_iter()
        .map(|(_, range, chunk)| (range, chunk))
        .collect())
}

/// Decode one entry line (without its `\n`) as every reader does — the fast decoder, else
/// the slow one (and its repaired text) when the fast one is unsure — and hand its fields
/// and whether it holds an escape JavaScript would not write to `f`; `None` when the line
/// is malformed.
fn with_raw_entry<T>(
    body: &[u8],
    f: impl FnOnce(&mut skeleton::RawEntry<'_>, bool) -> T,
) -> Option<T> {
    let mut raw = skeleton::RawEntry::default();
    match light::decode_into(body, &mut raw) {
        light::Decided::Entry(escapes) => Some(f(&mut raw, escapes)),
        light::Decided::Malformed => None,
        light::Decided::Unsure => match slow_decode(body)? {
            Ok(mut raw) => Some(f(&mut raw, has_foreign_escape(body))),
            Err(fixed) => Some(f(
                &mut skeleton::decode(&fixed).ok()?,
                has_foreign_escape(body),
            )),
        },
    }
}

/// Decode the lines in `[from, to)` of `file`.
fn decode_chunk(
    file: &File,
    from: u64,
    to: u64,
    line_test: Option<&LineTest<'_>>,
) -> std::io::Result<Chunk> {
    // Positioned reads: chunks share one descriptor but never its file offset.
    let mut reader = LineReader::new(PositionedReader {
        file,
        at: from,
        end: from,
    });
    let mut chunk = Chunk::expecting(to - from);
    decode_lines(&mut reader, from, to, &mut chunk, line_test)?;
    Ok(chunk)
}

impl Chunk {
    /// An empty chunk, with room for the lines of about `bytes` bytes.
    fn expecting(bytes: u64) -> Chunk {
        // Reserve for lines of about 2 KB (Pi's lines are mostly longer), so the vectors
        // rarely grow and copy; pages never written are never resident.
        let expected = usize::try_from(bytes / 2048).unwrap_or(0);
        Chunk {
            entries: Vec::with_capacity(expected),
            flags: EntryFlags::default(),
            first_session: None,
            malformed: 0,
            line_count: 0,
            continues: Vec::with_capacity(expected.div_ceil(64)),
        }
    }
}

/// Decode the lines in `[from, to)` of the reader's file (`from` a line start) and add them
/// to `chunk`, which holds the lines right before them (or none).
fn decode_lines(
    reader: &mut LineReader<PositionedReader<'_>>,
    from: u64,
    to: u64,
    chunk: &mut Chunk,
    line_test: Option<&LineTest<'_>>,
) -> std::io::Result<()> {
    reader.restart(from, to);
    let mut memo = LineMemo::new();
    while let Some((offset, body, hay)) = reader.next_line()? {
        chunk.line_count += 1;
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line_no = chunk.line_count;
        let mut take = |raw: &mut skeleton::RawEntry, escapes: bool| {
            if raw.kind.as_deref() == Some("session") {
                if chunk.first_session.is_none() {
                    chunk.first_session = Some(FirstSession {
                        entries_before: chunk.entries.len(),
                        id: raw.id.take().map(Cow::into_owned),
                        version: if raw.version_present {
                            raw.version.unwrap_or(1)
                        } else {
                            1
                        },
                        timestamp: raw.timestamp.take().map(Cow::into_owned),
                    });
                }
            } else {
                let entry = entry_from_raw(
                    raw,
                    (line_no, offset, body.len() as u64, escapes),
                    3,
                    chunk.entries.last(),
                );
                if let Some(line_test) = line_test {
                    let line = TestedLine {
                        hay,
                        offset,
                        len: body.len(),
                        escapes,
                        nested_calls: Some(entry.has_nested_calls()),
                    };
                    chunk.flags.push(line_test(&line, &mut memo));
                }
                let at = chunk.entries.len();
                if at.is_multiple_of(64) {
                    chunk.continues.push(0);
                }
                if chunk
                    .entries
                    .last()
                    .is_some_and(|before| entry.continues(before))
                {
                    chunk.continues[at / 64] |= 1 << (at % 64);
                }
                chunk.entries.push(entry);
            }
        };
        if with_raw_entry(body, &mut take).is_none() {
            chunk.malformed += 1;
        }
    }
    Ok(())
}

/// The slow light decode of a line the fast one left undecided: `None` when the line is
/// malformed (the full decode refuses it, or it is not an object), else its skeleton, or the
/// line with its lone surrogate escapes repaired when only that decodes.
fn slow_decode(body: &[u8]) -> Option<Result<skeleton::RawEntry<'_>, Vec<u8>>> {
    if !parse_value(body).is_some_and(|value| value.is_object()) {
        return None;
    }
    match skeleton::decode(body) {
        Ok(raw) => Some(Ok(raw)),
        Err(_) => repair_lone_surrogates(body).map(Err),
    }
}

/// Reads `[at, end)` of a file with positioned reads.
struct PositionedReader<'f> {
    file: &'f File,
    at: u64,
    end: u64,
}

impl Read for PositionedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let want = (self.end - self.at).min(buf.len() as u64) as usize;
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// A line [`LineReader::next_line`] hands out: its file offset, its bytes, and the bytes from
/// its start to the end of the last whole line in the buffer.
type ReadLine<'b> = (u64, &'b [u8], &'b [u8]);

/// Splits a file into lines in place: a line that lies inside the buffer is handed out as a
/// slice of it (no per-line copy); the buffer grows only for a line longer than itself, so
/// memory stays at about the longest line, whatever the file size.
struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes in `buf`.
    start: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    /// `buf[start..scanned]` is known to hold no `\n`.
    scanned: usize,
    /// The end of the last whole line in `buf` (after its `\n`; 0 for none).
    whole: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
}

impl<'f> LineReader<PositionedReader<'f>> {
    /// Read `[at, end)` of the same file next, keeping the buffer.
    fn restart(&mut self, at: u64, end: u64) {
        self.inner.at = at;
        self.inner.end = end;
        self.base = at;
        (self.start, self.end, self.scanned, self.whole) = (0, 0, 0, 0);
        self.eof = false;
    }
}

impl<R: Read> LineReader<R> {
    fn new(inner: R) -> Self {
        LineReader {
            inner,
            // 256 KiB: a 1 MiB buffer cost 256 page faults on every read of appended lines
            // (≈ 5 µs each here) for no gain in throughput; it still grows for longer lines.
            buf: vec![0; 256 << 10],
            start: 0,
            end: 0,
            scanned: 0,
            whole: 0,
            base: 0,
            eof: false,
        }
    }

    /// The next line without its `\n`, with its file offset, and the bytes from its start to
    /// the end of the last whole line in the buffer (the line and whole lines after it); a
    /// last line without `\n` too.
    fn next_line(&mut self) -> std::io::Result<Option<ReadLine<'_>>> {
        loop {
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[self.scanned..self.end]) {
                let (from, to) = (self.start, self.scanned + pos);
                self.start = to + 1;
                self.scanned = self.start;
                let hay = &self.buf[from..self.whole.max(to)];
                return Ok(Some((self.base + from as u64, &hay[..to - from], hay)));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start < self.end {
                    let from = self.start;
                    self.start = self.end;
                    let line = &self.buf[from..self.end];
                    return Ok(Some((self.base + from as u64, line, line)));
                }
                return Ok(None);
            }
            if self.start > 0 {
                // Every whole line before `start` was handed out.
                self.buf.copy_within(self.start..self.end, 0);
                self.base += self.start as u64;
                self.end -= self.start;
                self.scanned -= self.start;
                self.start = 0;
                self.whole = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    if let Some(pos) = memchr::memrchr(b'\n', &self.buf[self.end..self.end + n]) {
                        self.whole = self.end + pos + 1;
                    }
                    self.end += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Parse one JSON line into a value, accepting what `JSON.parse` accepts beyond serde_json's
/// defaults: lone UTF-16 surrogate escapes read as U+FFFD.
pub fn parse_value(line: &[u8]) -> Option<Value> {
    match serde_json::from_slice(line) {
        Ok(value) => Some(value),
        Err(_) => serde_json::from_slice(&repair_lone_surrogates(line)?).ok(),
    }
}

/// The entry of a decoded line, its fields taken out of `raw`.
fn entry_from_raw(
    raw: &mut skeleton::RawEntry<'_>,
    (line_no, offset, len, escapes): (u64, u64, u64, bool),
    version: u64,
    before: Option<&Entry>,
) -> Entry {
    let kind = match raw.kind.as_deref() {
        Some("message") => {
            let message = raw.message.take().unwrap_or_default();
            let mut other_role = None;
            let role = match message.role.as_deref() {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some("toolResult") => Role::ToolResult,
                Some("bashExecution") => Role::BashExecution,
                Some("custom") => Role::Custom,
                Some("hookMessage") if version < 3 => Role::Custom,
                Some("branchSummary") => Role::BranchSummary,
                Some("compactionSummary") => Role::CompactionSummary,
                Some("system") => Role::System,
                other => {
                    other_role = other.map(CompactString::from);
                    Role::Other
                }
            };
            EntryKind::Message(MessageMeta {
                role,
                content_is_array: message.content.is_array,
                has_text: message.content.has_text,
                has_nested_calls: message.has_nested_calls,
                tool_calls: {
                    let mut calls = message.content.tool_calls;
                    calls.shrink_to_fit();
                    calls
                },
                extras: MessageExtras::boxed(
                    message.tool_call_id,
                    message.tool_call_id_at,
                    message.tool_name,
                    other_role,
                ),
            })
        }
        Some("compaction") => EntryKind::Compaction,
        Some("branch_summary") => EntryKind::BranchSummary,
        Some("custom_message") => EntryKind::CustomMessage {
            custom_type: raw.custom_type.take().map(|name| name.as_str().into()),
        },
        // Only a `custom` entry's timestamp is ever read (a reset marker's window opens at
        // it): the others are not kept (memory of a large session; index size).
        Some("custom") => EntryKind::Custom(Box::new(CustomMeta {
            custom_type: raw.custom_type.take(),
            window_id: raw.data_window_id.take(),
            timestamp: raw.timestamp.take().map(Cow::into_owned),
        })),
        Some("label") => EntryKind::Label,
        Some("session_info") => EntryKind::SessionInfo,
        Some("model_change") => EntryKind::ModelChange,
        Some("thinking_level_change") => EntryKind::ThinkingLevelChange,
        Some("usage") => EntryKind::Usage,
        Some("context_edit") => EntryKind::ContextEdit,
        other => EntryKind::Other(other.map(Box::from)),
    };
    let lineage = Lineage::new(raw.id.take(), raw.parent_id.take(), before);
    Entry::new(line_no, offset, len, escapes, lineage, kind)
}

/// Rewrite `\uD800`–`\uDFFF` escapes that are not part of a valid surrogate pair into
/// `\uFFFD`, so serde_json accepts a line `JSON.parse` accepts. `None` when there is nothing
/// to repair (the line is malformed for another reason).
fn repair_lone_surrogates(line: &[u8]) -> Option<Vec<u8>> {
    fn hex4(bytes: &[u8]) -> Option<u16> {
        let text = std::str::from_utf8(bytes.get(..4)?).ok()?;
        u16::from_str_radix(text, 16).ok()
    }
    memchr::memmem::find(line, b"\\u")?;
    let mut out = Vec::with_capacity(line.len());
    let mut changed = false;
    let mut i = 0;
    while i < line.len() {
        if line[i] == b'\\' && i + 1 < line.len() {
            if line[i + 1] == b'u'
                && let Some(unit) = hex4(&line[i + 2..])
            {
                let is_high = (0xD800..0xDC00).contains(&unit);
                let is_low = (0xDC00..0xE000).contains(&unit);
                let paired_low = is_high
                    && line.get(i + 6..i + 8) == Some(b"\\u")
                    && hex4(&line[i + 8..]).is_some_and(|u| (0xDC00..0xE000).contains(&u));
                if is_high && paired_low {
                    out.extend_from_slice(&line[i..i + 12]);
                    i += 12;
                    continue;
                }
                if is_high || is_low {
                    out.extend_from_slice(b"\\uFFFD");
                    changed = true;
                    i += 6;
                    continue;
                }
            }
            // Any other escape: copy both bytes so an escaped backslash is not re-read.
            out.extend_from_slice(&line[i..i + 2]);
            i += 2;
            continue;
        }
        out.push(line[i]);
        i += 1;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn session_from(text: &str) -> (tempfile::NamedTempFile, Result<Session, SessionError>) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let session = Session::open(file.path());
        (file, session)
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"sess-1","timestamp":"t"}"#;

    /// A cold read keeps an entry per line (225 k of them for 100 MiB of 465-byte lines), so
    /// what only some messages carry stays behind a pointer.
    #[test]
    fn an_entry_stays_small() {
        use std::mem::size_of;
        let sizes = (
            size_of::<Role>(),
            size_of::<EntryKind>(),
            size_of::<Lineage>(),
            size_of::<Entry>(),
        );
        assert!(
            sizes.0 <= 1 && sizes.1 <= 24 && sizes.2 <= 24 && sizes.3 <= 72,
            "{sizes:?}"
        );
    }

    #[test]
    fn a_result_id_is_compared_where_it_lies_without_reading_its_line() {
        let result = r#"{"type":"message","id":"r","parentId":null,"message":{"role":"toolResult","toolCallId":"call-7","toolName":"read","content":[{"type":"text","text":"a long output"}]}}"#;
        let (file, session) = session_from(&format!("{HEADER}\n{result}\n"));
        let session = session.unwrap();
        let entry = &session.entries[0];
        let (offset, len) = (entry.offset, entry.line_len());
        let EntryKind::Message(m) = &entry.kind else {
            panic!("a message: {entry:?}");
        };
        let at = m
            .tool_call_id_at()
            .expect("the light decode knows where the id lies");
        assert_eq!(&result[at as usize..][..7], "call-7\"");
        let (session_file, _) = session.into_parts();
        let is = |id_at, id| session_file.tool_result_id_is(offset, len, id_at, id);
        for id_at in [Some(at), None] {
            assert_eq!(is(id_at, "call-7"), Some(true), "{id_at:?}");
            for other in [
                "call-",
                "call-77",
                "call-8",
                "",
                r#"call-7","toolName"#,
                "call\\-7",
            ] {
                assert_eq!(is(id_at, other), Some(false), "{id_at:?} {other:?}");
            }
        }
        // Only the id's bytes and its closing quote are read: cut the file right after them
        // and the comparison still answers, where reading the whole line cannot.
        let cut = offset + u64::from(at) + "call-7\"".len() as u64;
        file.as_file().set_len(cut).unwrap();
        assert_eq!(is(Some(at), "call-7"), Some(true));
        assert_eq!(is(Some(at), "call-8"), Some(false));
        assert_eq!(is(None, "call-7"), None);
    }

    #[test]
    fn malformed_and_torn_lines_are_skipped_and_counted() {
        let text = format!(
            "{HEADER}\n{}\nnot json\n\n{}\n{{\"type\":\"message\",\"id\":\"c\"",
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"yo"}}"#,
        );
        let (_f, session) = session_from(&text);
        let session = session.unwrap();
        assert_eq!(session.entries.len(), 2);
        assert_eq!(session.skipped_lines, 2);
        assert_eq!(session.leaf(None).unwrap(), Some(1));
        assert_eq!(session.active_branch(Some(1)), vec![0, 1]);
    }

    #[test]
    fn last_line_without_newline_still_counts() {
        let text = format!(
            "{HEADER}\n{}",
            r#"{"type":"label","id":"a","parentId":null,"targetId":"x"}"#
        );
        let (_f, session) = session_from(&text);
        assert_eq!(session.unwrap().entries.len(), 1);
    }

    #[test]
    fn a_file_without_header_is_not_a_session() {
        let (_f, session) = session_from("{\"type\":\"message\"}\n");
        assert_eq!(session.unwrap_err().code(), "not_a_session");
        let (_f, session) = session_from("");
        assert_eq!(session.unwrap_err().code(), "not_a_session");
    }

    #[test]
    fn v1_files_become_a_linear_chain_and_hook_messages_read_as_custom() {
        let text = concat!(
            "{\"type\":\"session\",\"id\":\"old\"}\n",
            "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n",
            "{\"type\":\"message\",\"message\":{\"role\":\"hookMessage\",\"content\":\"b\"}}\n",
            "{\"type\":\"message\",\"message\":{\"role\":\"weird\",\"content\":\"c\"}}\n",
        );
        let (_f, session) = session_from(text);
        let session = session.unwrap();
        assert_eq!(session.header.version, 1);
        assert_eq!(session.entries.parent_id(1), Some("L2"));
        assert_eq!(session.active_branch(Some(1)), vec![0, 1]);
        // The renamed role keeps no name of its own; an unknown one keeps its name.
        assert!(matches!(
            &session.entries[1].kind,
            EntryKind::Message(m) if m.role == Role::Custom && m.extras.is_none()
        ));
        assert!(matches!(
            &session.entries[2].kind,
            EntryKind::Message(m) if m.role == Role::Other && m.other_role() == "weird"
        ));
        assert_eq!(session.load(1).unwrap()["message"]["role"], "custom");
    }

    #[test]
    fn explicit_leaf_and_unknown_leaf() {
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n",
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"1"}}"#,
            r#"{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"2"}}"#,
            r#"{"type":"message","id":"c","parentId":"a","message":{"role":"user","content":"3"}}"#,
        );
        let (_f, session) = session_from(&text);
        let session = session.unwrap();
        assert_eq!(
            session.active_branch(session.leaf(None).unwrap()),
            vec![0, 2]
        );
        assert_eq!(
            session.active_branch(session.leaf(Some("b")).unwrap()),
            vec![0, 1]
        );
        assert_eq!(session.leaf(Some("zz")).unwrap_err().code(), "unknown_leaf");
    }

    #[test]
    fn lone_surrogates_do_not_drop_a_line() {
        let text = format!(
            "{HEADER}\n{}\n",
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x\ud800y \ud83d\ude00"}}"#
        );
        let (_f, session) = session_from(&text);
        let session = session.unwrap();
        assert_eq!(session.entries.len(), 1);
        assert_eq!(
            session.load(0).unwrap()["message"]["content"],
            "x\u{fffd}y 😀"
        );
    }

    #[test]
    fn bits_appended_at_any_offset_keep_their_places() {
        for len in [0usize, 1, 63, 64, 65, 130] {
            for more_len in [1usize, 5, 64, 70, 200] {
                // Every third bit of the first `len`, every second of the rest.
                let mut bits = vec![0u64; len.div_ceil(64)];
                (0..len)
                    .filter(|i| i % 3 == 0)
                    .for_each(|i| bits[i / 64] |= 1 << (i % 64));
                let mut more = vec![0u64; more_len.div_ceil(64)];
                (0..more_len)
                    .filter(|i| i % 2 == 0)
                    .for_each(|i| more[i / 64] |= 1 << (i % 64));
                append_bits(&mut bits, len, &more);
                for i in 0..len + more_len + 64 {
                    let wanted = if i < len {
                        i % 3 == 0
                    } else {
                        i < len + more_len && (i - len) % 2 == 0
                    };
                    assert_eq!(bit(&bits, i), wanted, "len {len}, more {more_len}, bit {i}");
                }
            }
        }
    }

    #[test]
    fn an_id_repeated_in_a_later_part_names_the_later_entry() {
        // The same session with long lines (decoded in parallel parts) and with short ones
        // (one part): an id of the first half is reused near the end, a later entry names it
        // as parent, and the walk and lookups take the later one.
        let session_text = |filler: &str| {
            let mut text = format!("{HEADER}\n");
            let count = 4400;
            let mut previous = String::from("null");
            for i in 0..count {
                let id = if i == count - 10 {
                    "e5".to_string()
                } else {
                    format!("e{i}")
                };
                text.push_str(&format!(
                    r#"{{"type":"message","id":"{id}","parentId":{previous},"message":{{"role":"user","content":"{filler}"}}}}"#
                ));
                text.push('\n');
                // The entry after the repeat names `e5`; the others their predecessor.
                previous = format!("\"{id}\"");
            }
            text
        };
        let long = session_text(&"x".repeat(4000));
        assert!(long.len() > 16 << 20);
        let short = session_text("x");
        let open = |text: &str| {
            let mut file = tempfile::NamedTempFile::new().unwrap();
            file.write_all(text.as_bytes()).unwrap();
            Session::open(file.path()).unwrap()
        };
        let (parted, whole) = (open(&long), open(&short));
        assert_eq!(whole.entries.parts().len(), 1);
        // The decode threads' chain bits, joined across parts, are those of the entries.
        for session in [&parted, &whole] {
            let expected = continues_of(&session.entries);
            let found: Vec<bool> = (0..session.entries.len())
                .map(|i| bit(&session.continues, i))
                .collect();
            let wanted: Vec<bool> = (0..session.entries.len())
                .map(|i| bit(&expected, i))
                .collect();
            assert_eq!(found, wanted);
            // Each entry names the one before it (the repeat too), so only the first has no bit.
            assert_eq!(found.iter().filter(|&&continues| !continues).count(), 1);
        }
        for session in [&parted, &whole] {
            assert_eq!(session.index_of("e5"), Some(4390));
            assert_eq!(session.index_of("e4"), Some(4));
            assert_eq!(session.index_of("e4399"), Some(4399));
            assert_eq!(session.index_of("nope"), None);
            assert!(!session.ids_are_unique());
            let branch = session.active_branch(session.leaf(None).unwrap());
            // e4399 … e4391, the later e5 (4390), e4389 … e6, whose parent `e5` is the later
            // e5 again: the cycle ends the walk.
            assert_eq!(branch.len(), 4394);
            assert_eq!(branch.first(), Some(&6));
            assert_eq!(branch[4384], 4390);
            let from_e5 = session.active_branch(session.leaf(Some("e5")).unwrap());
            assert_eq!(from_e5.last(), Some(&4390));
        }
        assert_eq!(
            parted.active_branch(parted.leaf(None).unwrap()),
            whole.active_branch(whole.leaf(None).unwrap())
        );
    }

    /// Each line comes with the whole lines after it that the buffer holds: never a line
    /// cut by the buffer's end (a search ahead would miss a match in its unread part), and
    /// a last line without `\n` by itself. Reads of a few bytes at a time cut lines
    /// everywhere.
    #[test]
    fn a_line_comes_with_the_whole_lines_after_it_and_no_cut_one() {
        struct Dribble<'a>(&'a [u8], usize);
        impl Read for Dribble<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.1.min(self.0.len()).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let file = b"{\"a\":1}\n\n{\"bb\":22}\nxyz\n{\"last\":0}";
        for step in [1, 3, 7, 64] {
            let mut reader = LineReader::new(Dribble(file, step));
            let mut seen = Vec::new();
            let mut lens = Vec::new();
            while let Some((offset, body, hay)) = reader.next_line().unwrap() {
                let at = offset as usize;
                assert_eq!(&file[at..at + body.len()], body);
                assert!(hay.starts_with(body) && file[at..].starts_with(hay));
                // The hay ends at a line's end: after a `\n`, or where the file ends.
                assert!(
                    hay.ends_with(b"\n") || at + hay.len() == file.len(),
                    "{step} {at}"
                );
                lens.push(hay.len());
                seen.push(body.to_vec());
            }
            assert_eq!(seen.join(&b'\n'), file.to_vec(), "{step}");
            assert_eq!(lens.last(), Some(&b"{\"last\":0}".len()), "{step}");
        }
    }

    /// A line test learns from the decode whether a line's message has a `nestedCalls` key,
    /// from the fast decoder and from the full one (a key written with an escape sends the
    /// line there), and only at the message's level.
    #[test]
    fn a_tested_line_says_whether_its_message_has_nested_calls() {
        let result = |extra: &str| {
            format!(
                r#"{{"type":"message","id":"r","parentId":null,"message":{{"role":"toolResult","toolCallId":"c",{extra}"content":[]}}}}"#
            )
        };
        let lines = [
            result(r#""nestedCalls":{"calls":[]},"#),
            result(r#""x\ty":0,"nestedCalls":null,"#),
            result(r#""details":{"nestedCalls":{}},"#),
            result(r#""x\ty":0,"#),
            result(""),
        ];
        let text = format!("{HEADER}\n{}\n", lines.join("\n"));
        let (file, _) = session_from(&text);
        let (_, flags) =
            Session::open_testing_lines(file.path(), &|line, _| match line.nested_calls {
                Some(nested) => u64::from(nested),
                None => 2,
            })
            .unwrap();
        let by_entry: Vec<u64> = (0..flags.tested()).map(|e| flags.get(e)).collect();
        assert_eq!(by_entry, vec![1, 1, 0, 0, 0]);
        assert_eq!(
            flags.set(),
            &[(0, 1), (1, 1)],
            "only flags other than 0 are kept"
        );
    }

    #[test]
    fn entry_flags_keep_what_is_not_0_and_append_in_entry_order() {
        let mut first = EntryFlags::default();
        for f in [0, 3, 0, 0, 8] {
            first.push(f);
        }
        let mut second = EntryFlags::default();
        for f in [5, 0, 1] {
            second.push(f);
        }
        first.append(second);
        assert_eq!(first.tested(), 8);
        assert_eq!(first.set(), &[(1, 3), (4, 8), (5, 5), (7, 1)]);
        let all: Vec<u64> = (0..9).map(|e| first.get(e)).collect();
        assert_eq!(all, vec![0, 3, 0, 0, 8, 5, 0, 1, u64::MAX]);
    }

    #[test]
    fn pieces_taken_by_any_thread_decode_as_one_reader_does() {
        // Lines of many lengths (some longer than a piece, so pieces cut inside them hold no
        // line start), malformed, torn and blank lines, a second `session` line, and parents
        // that are and are not the entry before.
        let mut text = format!("{HEADER}\n");
        for i in 0..600u32 {
            match i % 97 {
                13 => text.push_str("{torn\n"),
                29 => text.push_str("\n   \n"),
                41 => text.push_str("[1,2]\n"),
                55 => text.push_str(&format!("{HEADER}\n")),
                _ => {
                    let parent = if i % 7 == 0 {
                        i / 2
                    } else {
                        i.saturating_sub(1)
                    };
                    let filler =
                        "y".repeat(((i * 37) % 300) as usize + if i % 50 == 3 { 9000 } else { 0 });
                    text.push_str(&format!(
                        r#"{{"type":"message","id":"e{i}","parentId":"e{parent}","message":{{"role":"user","content":"{filler}"}}}}"#
                    ));
                    text.push('\n');
                }
            }
        }
        text.push_str(r#"{"type":"label","id":"last","parentId":"e599"}"#);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let len = text.len() as u64;
        let test: &LineTest<'_> = &|line, _| u64::from(line.body().len() % 3 == 0);
        let path = file.path();
        let whole = fold_chunks(
            path,
            vec![(0, decode_chunk(file.as_file(), 0, len, Some(test)).unwrap())],
            Decoded::empty(),
        )
        .unwrap();
        assert!(whole.entries.len() > 500);
        for ranges in 1..=4 {
            for bytes in [1, 700, 5000, 40_000] {
                let split = Pieces { ranges, bytes };
                let chunks = decode_in_pieces(file.as_file(), 0, len, split, Some(test)).unwrap();
                let pieced = fold_chunks(path, chunks, Decoded::empty()).unwrap();
                let case = format!("{ranges} ranges of pieces of {bytes} bytes");
                assert_eq!(pieced.entries, whole.entries, "{case}");
                let lines = |d: &Decoded| d.entries.iter().map(|e| e.line_no).collect::<Vec<_>>();
                assert_eq!(lines(&pieced), lines(&whole), "{case}");
                assert_eq!(
                    (pieced.skipped, pieced.lines, &pieced.header),
                    (whole.skipped, whole.lines, &whole.header),
                    "{case}"
                );
                assert_eq!(pieced.flags.set(), whole.flags.set(), "{case}");
                assert_eq!(pieced.flags.tested(), whole.flags.tested(), "{case}");
                assert_eq!(pieced.continues, whole.continues, "{case}");
                // The index's chunks: one per thread range, starting at the first entry after
                // each equal share of the bytes, wherever its pieces were decoded.
                let firsts: Vec<u64> = pieced
                    .entries
                    .prefix_groups(pieced.entries.len())
                    .iter()
                    .map(|group| group[0][0].offset)
                    .collect();
                let mut expected = vec![whole.entries[0].offset];
                for r in 1..ranges as u64 {
                    let cut = len * r / ranges as u64;
                    let first = whole.entries.iter().find(|e| e.offset > cut);
                    if let Some(first) =
                        first.filter(|f| Some(f.offset) != expected.last().copied())
                    {
                        expected.push(first.offset);
                    }
                }
                assert_eq!(firsts, expected, "{case}");
            }
        }
    }

    #[test]
    fn parallel_chunks_agree_with_line_order() {
        // Over 16 MB so that two or more chunks are decoded in parallel where cores allow.
        let filler = "x".repeat(4000);
        let mut text = format!("{HEADER}\n");
        let mut expected = 0;
        for i in 0..4500 {
            if i % 1000 == 999 {
                text.push_str("{torn\n\n");
                continue;
            }
            let parent = if expected == 0 {
                "null".to_string()
            } else {
                format!("\"e{}\"", expected - 1)
            };
            text.push_str(&format!(
                r#"{{"type":"message","id":"e{expected}","parentId":{parent},"message":{{"role":"user","content":"{filler}"}}}}"#
            ));
            text.push('\n');
            expected += 1;
        }
        assert!(text.len() > 16 << 20);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let (session, flags) = Session::open_testing_lines(file.path(), &|line, _| {
            u64::from(line.body().ends_with(b"}}"))
        })
        .unwrap();
        assert_eq!(session.entries.len(), expected);
        assert_eq!(session.skipped_lines, 4);
        assert_eq!(flags.tested(), expected);
        assert!((0..expected).all(|e| flags.get(e) == 1));
        assert_eq!(
            flags.get(expected),
            u64::MAX,
            "past the tested entries: a maybe"
        );
        assert_eq!(
            session.active_branch(session.leaf(None).unwrap()).len(),
            expected
        );
        let lines: Vec<&str> = text.lines().collect();
        for (i, entry) in session.entries.iter().enumerate() {
            assert_eq!(entry.id(), Some(format!("e{i}").as_str()));
            let line = lines[entry.line_no as usize - 1];
            assert_eq!(session.raw_line(i).unwrap(), line.as_bytes());
        }
        // The index built from the chunks (a skeleton chunk per part, each coding its first
        // parent in full) reads back the same.
        let cache = tempfile::tempdir().unwrap();
        let mode = IndexMode::In {
            dir: cache.path(),
            now: std::time::SystemTime::UNIX_EPOCH,
        };
        for expected_use in [IndexUse::Built, IndexUse::Reused] {
            let (indexed, _, used) = Session::open_indexed(file.path(), None, &mode).unwrap();
            assert_eq!(used, expected_use);
            assert_eq!(indexed.entries, session.entries);
            assert_eq!(indexed.skipped_lines, session.skipped_lines);
        }
    }

    #[test]
    fn a_cycle_ends_the_walk() {
        let text = format!(
            "{HEADER}\n{}\n{}\n",
            r#"{"type":"label","id":"a","parentId":"b"}"#,
            r#"{"type":"label","id":"b","parentId":"a"}"#,
        );
        let (_f, session) = session_from(&text);
        let session = session.unwrap();
        assert_eq!(session.active_branch(Some(1)), vec![0, 1]);
    }
}
