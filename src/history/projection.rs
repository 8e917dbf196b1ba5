//! The history projection (docs/spec/history.md §2–§5): seqs allocated over every entry in file
//! order, the active branch decoded into raw items, reset windows from markers, and call/result
//! pairing into public events. Built from the session skeleton only — no message text — so it
//! is cheap even for a very large file; documents are built per event on demand
//! (`super::document`). It must not decide paging or rendering.

use hashbrown::HashTable;
use rustc_hash::{FxHashMap, FxHashSet};
use std::ops::Range;

use crate::protocol::root_window_id;
use crate::session::{Branch, Entry, EntryKind, MessageMeta, Role, Session, id_hash};

/// The reset-marker custom types: pi-context's, and the same marker after the 0.38 rename.
pub const MARKER_TYPES: &[&str] = &["pi-context/reset-marker", "notesoup/reset-marker"];

/// A public event role.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EventRole {
    User,
    Assistant,
    Tool,
    Context,
}

impl EventRole {
    pub fn as_str(self) -> &'static str {
        match self {
            EventRole::User => "user",
            EventRole::Assistant => "assistant",
            EventRole::Tool => "tool",
            EventRole::Context => "context",
        }
    }
}

/// Where an event's facts come from (indexes into `Projection::lines`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A user, assistant or context event: one entry's text.
    Text { entry: usize },
    /// A tool call (the `block`-th toolCall of an assistant entry), with its paired result.
    Call {
        entry: usize,
        block: usize,
        result: Option<usize>,
    },
    /// A toolResult no call claimed.
    Result { entry: usize },
    /// A `bashExecution` message.
    Bash { entry: usize },
}

impl Source {
    /// The entry whose timestamp is the event's `created_at`.
    pub fn entry(self) -> usize {
        match self {
            Source::Text { entry }
            | Source::Call { entry, .. }
            | Source::Result { entry }
            | Source::Bash { entry } => entry,
        }
    }
}

/// One public event, without its document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    pub seq: u64,
    /// Index into `Projection::windows`.
    pub window: usize,
    pub role: EventRole,
    pub source: Source,
    /// For user/assistant events: whether the document is non-empty (the conversation view
    /// hides empty ones). Always true for other roles.
    pub has_text: bool,
    /// Tool events: the tool name as folds count it (`unknown` when missing), as an index
    /// into `Projection::tool_names`; [`NO_TOOL`] for other events.
    pub tool_name: u32,
}

/// `Event::tool_name` of an event that is not a tool event.
pub const NO_TOOL: u32 = u32::MAX;

/// Where one session line of an event is in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    /// Byte offset of the line start.
    pub offset: u64,
    /// Byte length, without the `\n`.
    pub len: u64,
    /// The line holds an escape JavaScript would not write (search treats it as a "maybe").
    pub escapes: bool,
    /// The line's message has a `nestedCalls` key ([`crate::session::Entry::has_nested_calls`]):
    /// what search's nested-call rule is chosen by, without looking for the key in the bytes.
    pub nested_calls: bool,
}

/// One window of the active branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub window_id: String,
    /// The opening marker's entry timestamp (`None` for the root window).
    pub created_at: Option<String>,
    /// Its events, as a range of `Projection::events`.
    pub events: Range<usize>,
}

/// A projection as [`Projection::build_with_entries`] builds it, with what the build learns
/// on the way that storing it needs (the side data of `super::flat`).
pub struct Built<'s> {
    pub projection: Projection,
    /// The calls whose id no tool result of the branch has, the first of each id, in event
    /// order: (event index, id).
    pub open: Vec<(usize, &'s str)>,
    /// The branch's tool results with an id, in branch order.
    branch_results: Vec<ResultOf>,
    /// The first of them with each call id (indexes into `branch_results`: a table of
    /// 4-byte slots stays in the caches where one of the records did not).
    results: HashTable<u32>,
    /// The projection line of each session entry (`u32::MAX`: none).
    line_of: Vec<u32>,
}

impl Built<'_> {
    /// The projection and the projection line of each session entry (`u32::MAX`: none),
    /// the rest dropped (it borrows the session).
    pub fn into_projection(self) -> (Projection, Vec<u32>) {
        (self.projection, self.line_of)
    }

    /// The first tool result of each call id on the branch, in no order (read only when the
    /// projection is stored, for its side data). The first line of a result id is always
    /// its first result's on the branch: a later one is never shown at a call, so its line
    /// is made at its own place, after the first's.
    pub fn tool_results(&self) -> impl Iterator<Item = BranchResult> + '_ {
        self.results.iter().map(|&i| {
            let r = &self.branch_results[i as usize];
            BranchResult {
                hash: r.hash,
                line: self.line_of[r.entry as usize],
                at: r.at,
            }
        })
    }
}

/// A tool result of the branch: its call id's hash (`id_hash`), its line in the projection,
/// and where the id's characters lie in that line when known
/// ([`crate::session::MessageMeta::tool_call_id_at`]).
pub struct BranchResult {
    pub hash: u64,
    pub line: u32,
    pub at: Option<u32>,
}

/// The first tool result of a call id on the branch, as the build pairs calls with it. The id
/// itself is read from the entry when two hashes meet ([`result_id`]): a record is kept per
/// result of the branch, and a `&str` made it half as large again.
struct ResultOf {
    /// `id_hash(id)`.
    hash: u64,
    seq: u64,
    entry: u32,
    /// Where the id's characters lie in the result's line, when known.
    at: Option<u32>,
}

/// A tool call of the branch with an id: its assistant entry and block (where its id is read,
/// [`call_id`]), the id's hash, and the first result of the branch with that id (its seq and
/// entry) once looked up: `found_seq` 0 for none (seqs start at 1). 32 bytes, where the id as
/// a `&str` and the result as an `Option` took 64.
#[derive(Clone, Copy)]
struct CallKey {
    /// `id_hash(id)`.
    hash: u64,
    found_seq: u64,
    entry: u32,
    block: u32,
    found_entry: u32,
}

impl CallKey {
    fn found(&self) -> Option<(u64, usize)> {
        (self.found_seq != 0).then_some((self.found_seq, self.found_entry as usize))
    }
}

/// The `toolCallId` of the tool result at `entry` (`""` for none).
fn result_id(session: &Session, entry: u32) -> &str {
    match &session.entries[entry as usize].kind {
        EntryKind::Message(m) => m.tool_call_id().unwrap_or_default(),
        _ => "",
    }
}

/// The id of block `block`'s tool call in the assistant message at `entry` (`""` for none).
fn call_id(session: &Session, entry: u32, block: u32) -> &str {
    match &session.entries[entry as usize].kind {
        EntryKind::Message(m) => m
            .tool_calls
            .get(block as usize)
            .and_then(|call| call.id.as_deref())
            .unwrap_or_default(),
        _ => "",
    }
}

/// The seqs of entries asked for in ascending order, counted as they are asked: the seq of
/// an entry is the first after those of every entry before it in the file (0 for an entry
/// without one). Entries skipped between two asked for are counted from the session; a
/// branch of consecutive entries (a chain) reads none.
struct RunningSeq<'s> {
    entries: &'s crate::session::Entries,
    /// The entries before this one are counted in `next`.
    counted_to: usize,
    next: u64,
}

impl<'s> RunningSeq<'s> {
    /// Before the first entry (seqs start at 1).
    fn new(entries: &'s crate::session::Entries) -> Self {
        RunningSeq {
            entries,
            counted_to: 0,
            next: 1,
        }
    }

    /// The seq of entry `index`, whose kind has `count` seqs; `index` must be after the
    /// entry asked last.
    fn at(&mut self, index: usize, count: u64) -> u64 {
        debug_assert!(index >= self.counted_to);
        for skipped in self.counted_to..index {
            self.next += seq_count(&self.entries[skipped].kind);
        }
        let seq = if count > 0 { self.next } else { 0 };
        self.next += count;
        self.counted_to = index + 1;
        seq
    }
}

/// The projection of one session's active branch.
#[derive(Debug)]
pub struct Projection {
    pub session_id: String,
    pub highest_seq: u64,
    pub windows: Vec<Window>,
    /// All events of the branch, ascending by seq (window order = seq order).
    pub(super) events: Store<Event>,
    /// Consumed result seq → the call seq it is shown at, ascending by result seq. Every seq
    /// of an on-branch counted entry or call is an event's or one of these.
    pub(super) paired: Store<(u64, u64)>,
    /// The session lines events are built from (`Source` indexes into it).
    pub(super) lines: Store<Line>,
    /// Distinct tool names (`Event::tool_name` indexes into it).
    pub tool_names: Vec<String>,
    /// The flat encoding the `Store::Flat` arrays are read from (see `super::flat`).
    pub(super) flat: Bytes,
    /// Records appended to the flat encoding's arrays (a delta since it was stored).
    pub(super) more: Vec<u8>,
    /// Whether each line is named by one run of events ([`LineRuns`]); found while a stored
    /// projection's events are checked, else on first use.
    pub(super) line_runs: std::sync::OnceLock<bool>,
}

/// Checks, over the events in order, that each session line is named by one run of
/// consecutive events: an event names its entry line (the events of one entry form a run) and
/// a call its result line, and every run's entry line and every result line is greater than
/// each line named before. The builder numbers lines in the order events first name them, so
/// this holds for every branch seen; it is checked rather than assumed because
/// [`Projection::events_naming`] finds a line's events by binary search on it.
pub(super) struct LineRuns {
    /// The entry line of the last event (`u64::MAX` before the first).
    run_entry: u64,
    /// One past the highest line named so far (0 before any).
    next_new: u64,
    broken: bool,
}

impl Default for LineRuns {
    fn default() -> Self {
        LineRuns {
            run_entry: u64::MAX,
            next_new: 0,
            broken: false,
        }
    }
}

impl LineRuns {
    pub(super) fn see(&mut self, source: Source) {
        let result = match source {
            Source::Call {
                result: Some(result),
                ..
            } => Some(result as u64),
            _ => None,
        };
        self.see_lines(source.entry() as u64, result.unwrap_or(0), result.is_some());
    }

    /// [`LineRuns::see`] of an event naming line `entry`, and line `result` when
    /// `has_result`: written without a branch, as it runs for every event each time a stored
    /// projection is read (`flat::EventCheck`). An entry line is named anew when it starts a
    /// run, a result line always; a line named anew must be past every line named before.
    #[inline]
    pub(super) fn see_lines(&mut self, entry: u64, result: u64, has_result: bool) {
        let fresh = entry != self.run_entry;
        self.run_entry = entry;
        self.broken |= fresh & (entry < self.next_new);
        self.next_new = self.next_new.max(if fresh { entry + 1 } else { 0 });
        self.broken |= has_result & (result < self.next_new);
        self.next_new = self.next_new.max(if has_result { result + 1 } else { 0 });
    }

    pub(super) fn hold(&self) -> bool {
        !self.broken
    }
}

/// The bytes of a flat encoding: owned, or mapped from the index file where the page cache
/// holds them.
#[derive(Debug)]
pub(super) enum Bytes {
    Owned(Vec<u8>),
    Mapped(crate::session::mapped::Mapped),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

impl Bytes {
    /// The bytes, writable (a mapping privately: the file is not changed); `None` when a
    /// mapping cannot be made writable.
    pub(super) fn writable(&mut self) -> Option<&mut [u8]> {
        match self {
            Bytes::Owned(v) => Some(v),
            Bytes::Mapped(m) => m.writable(),
        }
    }
}

/// An array of a projection: built in memory, or read in place from its flat encoding (so a
/// call on an unchanged session copies no record it does not look at).
#[derive(Debug, Clone)]
pub(super) enum Store<T> {
    Owned(Vec<T>),
    /// Records built in memory in their flat encoding (`T::BYTES` bytes each), so the array
    /// takes the bytes the index stores it in, and storing it copies them as they are.
    Packed(Vec<u8>),
    /// `len` records of `T::BYTES` bytes at `at` in `Projection::flat`, then `more_len` at
    /// `more_at` in `Projection::more`.
    Flat {
        at: usize,
        len: usize,
        more_at: usize,
        more_len: usize,
    },
}

/// A fixed-width record of a flat array.
pub(super) trait Record: Copy {
    const BYTES: usize;
    /// Decode a record (its bytes were checked when the encoding was read, or written by
    /// [`Record::write`]).
    fn read(bytes: &[u8]) -> Self;
    /// Append the record's encoding; `None` (having appended nothing) when a field does not
    /// fit its width.
    fn write(&self, out: &mut Vec<u8>) -> Option<()>;
}

/// The records of an array being built: in their flat encoding while each of them fits it,
/// else (from the first that does not) as values.
pub(super) struct Records<T> {
    packed: Vec<u8>,
    owned: Option<Vec<T>>,
}

impl<T: Record> Records<T> {
    pub(super) fn with_capacity(records: usize) -> Records<T> {
        Records {
            packed: Vec::with_capacity(records.saturating_mul(T::BYTES)),
            owned: None,
        }
    }

    pub(super) fn len(&self) -> usize {
        match &self.owned {
            Some(owned) => owned.len(),
            None => self.packed.len() / T::BYTES,
        }
    }

    pub(super) fn push(&mut self, record: T) {
        if let Some(owned) = &mut self.owned {
            owned.push(record);
            return;
        }
        if record.write(&mut self.packed).is_none() {
            let mut owned: Vec<T> = self.packed.chunks_exact(T::BYTES).map(T::read).collect();
            owned.push(record);
            self.packed = Vec::new();
            self.owned = Some(owned);
        }
    }

    pub(super) fn into_store(self) -> Store<T> {
        match self.owned {
            Some(owned) => Store::Owned(owned),
            None => Store::Packed(self.packed),
        }
    }
}

/// [`Store::iter`].
pub(super) enum StoreIter<'b, T> {
    Owned(std::slice::Iter<'b, T>),
    Bytes(std::iter::Chain<std::slice::ChunksExact<'b, u8>, std::slice::ChunksExact<'b, u8>>),
}

impl<T: Record> Iterator for StoreIter<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        match self {
            StoreIter::Owned(it) => it.next().copied(),
            StoreIter::Bytes(it) => it.next().map(T::read),
        }
    }
}

impl<T: Record> Store<T> {
    pub(super) fn len(&self) -> usize {
        match self {
            Store::Owned(v) => v.len(),
            Store::Packed(v) => v.len() / T::BYTES,
            Store::Flat { len, more_len, .. } => len + more_len,
        }
    }

    /// Every record in order: one pass over the bytes, without [`Store::get`]'s choice of
    /// part for each.
    pub(super) fn iter<'b>(&'b self, flat: &'b [u8], more: &'b [u8]) -> StoreIter<'b, T> {
        match self.runs(flat, more) {
            Err(owned) => StoreIter::Owned(owned.iter()),
            Ok([first, second]) => StoreIter::Bytes(
                first
                    .chunks_exact(T::BYTES)
                    .chain(second.chunks_exact(T::BYTES)),
            ),
        }
    }

    /// The records' encodings where they lie, in two runs (in order), or the records
    /// themselves when they are kept decoded.
    fn runs<'b>(&'b self, flat: &'b [u8], more: &'b [u8]) -> Result<[&'b [u8]; 2], &'b [T]> {
        match self {
            Store::Owned(v) => Err(v),
            Store::Packed(v) => Ok([v, &[]]),
            Store::Flat {
                at,
                len,
                more_at,
                more_len,
            } => Ok([
                &flat[*at..at + len * T::BYTES],
                &more[*more_at..more_at + more_len * T::BYTES],
            ]),
        }
    }

    pub(super) fn get(&self, flat: &[u8], more: &[u8], i: usize) -> T {
        match self {
            Store::Owned(v) => v[i],
            Store::Packed(v) => T::read(&v[i * T::BYTES..(i + 1) * T::BYTES]),
            Store::Flat { at, len, .. } if i < *len => {
                let from = at + i * T::BYTES;
                T::read(&flat[from..from + T::BYTES])
            }
            Store::Flat { len, more_at, .. } => {
                let from = more_at + (i - len) * T::BYTES;
                T::read(&more[from..from + T::BYTES])
            }
        }
    }
}

/// How many seqs an entry consumes (docs/spec/history.md §2).
pub fn seq_count(kind: &EntryKind) -> u64 {
    match kind {
        EntryKind::Compaction | EntryKind::BranchSummary | EntryKind::CustomMessage { .. } => 1,
        EntryKind::Message(m) => match m.role {
            Role::User
            | Role::ToolResult
            | Role::BashExecution
            | Role::Custom
            | Role::CompactionSummary
            | Role::BranchSummary => 1,
            Role::Assistant => 1 + m.tool_calls.len() as u64,
            Role::System | Role::Other => 0,
        },
        _ => 0,
    }
}

/// The window a valid reset marker opens, if `kind` is one.
pub fn marker_window(kind: &EntryKind) -> Option<&str> {
    match kind {
        EntryKind::Custom(custom) => match (&custom.custom_type, &custom.window_id) {
            (Some(t), Some(id)) if MARKER_TYPES.contains(&t.as_str()) && !id.is_empty() => Some(id),
            _ => None,
        },
        _ => None,
    }
}

/// The distinct tool names of a projection as its events number them (`Event::tool_name`;
/// a missing name counts as `unknown`), for building one and for extending it in place.
pub(super) struct ToolNames {
    names: Vec<String>,
    numbers: FxHashMap<String, u32>,
}

impl ToolNames {
    /// Numbering that goes on after `names` (numbered in order).
    pub(super) fn numbering(names: Vec<String>) -> ToolNames {
        let numbers = names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.clone(), i as u32))
            .collect();
        ToolNames { names, numbers }
    }

    /// The number of `name`, numbering it when new.
    pub(super) fn number(&mut self, name: Option<&str>) -> u32 {
        let name = name.unwrap_or("unknown");
        if let Some(&number) = self.numbers.get(name) {
            return number;
        }
        let number = self.names.len() as u32;
        self.names.push(name.to_string());
        self.numbers.insert(name.to_string(), number);
        number
    }

    pub(super) fn into_names(self) -> Vec<String> {
        self.names
    }
}

/// What an entry with a seq shows as on the branch, an assistant's calls aside (they follow
/// its text event; docs/spec/history.md §5.2). The one table of which entry kinds and roles
/// are which event, for the projection built from entries and for its extension in place
/// (`flat::extend`).
pub(super) enum Shown<'a> {
    Text {
        role: EventRole,
        has_text: bool,
    },
    /// A tool result: an event of its own unless it is shown at its call.
    Result(&'a MessageMeta),
    Bash,
    Nothing,
}

pub(super) fn shown(kind: &EntryKind) -> Shown<'_> {
    let context = Shown::Text {
        role: EventRole::Context,
        has_text: true,
    };
    match kind {
        EntryKind::Compaction | EntryKind::BranchSummary | EntryKind::CustomMessage { .. } => {
            context
        }
        EntryKind::Message(m) => match m.role {
            Role::User => Shown::Text {
                role: EventRole::User,
                has_text: m.has_text,
            },
            Role::Assistant => Shown::Text {
                role: EventRole::Assistant,
                has_text: m.has_text,
            },
            Role::Custom | Role::CompactionSummary | Role::BranchSummary => context,
            Role::ToolResult => Shown::Result(m),
            Role::BashExecution => Shown::Bash,
            Role::System | Role::Other => Shown::Nothing,
        },
        _ => Shown::Nothing,
    }
}

impl Projection {
    /// Project `session` along `branch` (entry indexes root→leaf, from
    /// `Session::active_branch`).
    #[allow(clippy::expect_used, reason = "the root window exists")]
    pub fn build(session: &Session, branch: Branch<'_>) -> Projection {
        Self::build_with_entries(session, branch).projection
    }

    /// [`Projection::build`], also giving the session entry of every line of `lines` and
    /// the branch's tool results and open calls.
    #[allow(clippy::expect_used, reason = "the root window exists")]
    pub fn build_with_entries<'s>(session: &'s Session, branch: Branch<'_>) -> Built<'s> {
        // docs/spec/history.md §2: seqs over all entries in file order; §5.1: toolCallId →
        // the first toolResult on the branch with that id (known before the events, which
        // pair calls with later results). Not reserved for the branch: results are a
        // fraction of it, and a sparse table is probed with a cache miss per call.
        // A branch in file order (parents before children, as Pi writes them) is met in the
        // same pass over the entries (tens of megabytes of memory to stream through on a large
        // session, each pass), and the event loop counts its seqs again as it goes; any other
        // branch reads them from a seq kept per entry (1.8 MB on 225 k entries, which a cold
        // call's peak then held).
        let sorted = branch.is_sorted();
        let mut first_seq = Vec::with_capacity(if sorted { 0 } else { session.entries.len() });
        // Each with its id's hash: the side data keeps it, and reading it there from the id
        // would be a cache miss per result.
        let mut branch_results: Vec<ResultOf> = Vec::new();
        let mut event_estimate = 0usize;
        // Every call of the branch that has an id, in branch order, looked up once the results
        // are known.
        let mut calls: Vec<CallKey> = Vec::new();
        let mut on_branch = |entry: &'s Entry, index: usize, seq: u64, count: u64| {
            event_estimate += count as usize;
            let EntryKind::Message(m) = &entry.kind else {
                return;
            };
            if m.role == Role::ToolResult
                && let Some(id) = m.tool_call_id().filter(|id| !id.is_empty())
            {
                branch_results.push(ResultOf {
                    hash: id_hash(id),
                    seq,
                    entry: index as u32,
                    at: m.tool_call_id_at(),
                });
            } else if m.role == Role::Assistant {
                for (block, call) in m.tool_calls.iter().enumerate() {
                    if let Some(id) = call.id.as_deref().filter(|id| !id.is_empty()) {
                        calls.push(CallKey {
                            hash: id_hash(id),
                            found_seq: 0,
                            entry: index as u32,
                            block: block as u32,
                            found_entry: 0,
                        });
                    }
                }
            }
        };
        let mut every_seq = RunningSeq::new(&session.entries);
        let mut branch_ahead = sorted.then(|| branch.iter().peekable());
        for (index, entry) in session.entries.iter().enumerate() {
            let count = seq_count(&entry.kind);
            let seq = every_seq.at(index, count);
            if !sorted {
                first_seq.push(seq);
            }
            if let Some(ahead) = &mut branch_ahead
                && ahead.next_if_eq(&index).is_some()
            {
                on_branch(entry, index, seq, count);
            }
        }
        let highest_seq = every_seq.next - 1;
        if branch_ahead.is_none() {
            for index in branch.iter() {
                let entry = &session.entries[index];
                on_branch(entry, index, first_seq[index], seq_count(&entry.kind));
            }
        }
        // The first result of each id, inserted in a loop of nothing but independent inserts
        // into a table sized for them all (as the lookups below).
        let mut results: HashTable<u32> = HashTable::with_capacity(branch_results.len());
        let result_of = |i: &u32| &branch_results[*i as usize];
        for (i, result) in branch_results.iter().enumerate() {
            // The ids are read only to confirm a slot whose hash bits match (rare for ids
            // that are unique): reading this result's id up front cost a cache miss per
            // result (≈ 10 % of the build on a session of 225 k short lines).
            if let hashbrown::hash_table::Entry::Vacant(vacant) = results.entry(
                result.hash,
                |j| {
                    let other = result_of(j);
                    other.hash == result.hash
                        && result_id(session, other.entry) == result_id(session, result.entry)
                },
                |j| result_of(j).hash,
            ) {
                vacant.insert(i as u32);
            }
        }
        // The calls' results (the result's seq and entry), looked up in a loop of nothing but
        // independent lookups, so the processor overlaps their cache misses. Looked up one by
        // one in the event loop below, each stalled it: ≈ 40 % of the build's time on the
        // default bench session.
        // The first result with an id: its seq and entry.
        let result_for = |hash: u64, id: &str| {
            results
                .find(hash, |j| result_id(session, result_of(j).entry) == id)
                .map(|j| (result_of(j).seq, result_of(j).entry as usize))
        };
        for call in &mut calls {
            if let Some((seq, entry)) =
                result_for(call.hash, call_id(session, call.entry, call.block))
            {
                call.found_seq = seq;
                call.found_entry = entry as u32;
            }
        }
        let mut found = calls.into_iter().peekable();

        // Session entries → `lines`, in the order events first name them.
        let mut line_of = vec![u32::MAX; session.entries.len()];
        let mut lines: Records<Line> = Records::with_capacity(branch.len());
        let mut line = |entry: usize| -> usize {
            if line_of[entry] == u32::MAX {
                let e = &session.entries[entry];
                line_of[entry] = lines.len() as u32;
                lines.push(Line {
                    offset: e.offset,
                    len: e.line_len(),
                    escapes: e.escapes(),
                    nested_calls: e.has_nested_calls(),
                });
            }
            line_of[entry] as usize
        };
        // Calls no result of the branch names, the first of each id.
        let mut open: Vec<(usize, &'s str)> = Vec::new();
        let mut open_ids: FxHashSet<&'s str> = FxHashSet::default();
        let mut tools = ToolNames::numbering(Vec::new());
        let mut tool = |name: Option<&str>| tools.number(name);

        // docs/spec/history.md §3 and §5.2: windows along the branch (a reset marker opens
        // the next one) and their events, in one pass.
        // Results shown at their call: the pairs, and a bit per seq (a few KB for the whole
        // session, where a hash set of them was probed with a cache miss per event).
        let mut paired_results: Vec<(u64, u64)> = Vec::new();
        let mut paired = vec![0u64; (highest_seq as usize + 1).div_ceil(64)];
        let is_paired =
            |paired: &[u64], seq: u64| paired[(seq / 64) as usize] >> (seq % 64) & 1 == 1;
        let mut events: Records<Event> = Records::with_capacity(event_estimate);
        let mut seq_of = RunningSeq::new(&session.entries);
        let mut out_windows = Vec::new();
        let mut window = Window {
            window_id: root_window_id(&session.header.id),
            created_at: None,
            events: 0..0,
        };
        for index in branch.iter() {
            let entry = &session.entries[index];
            if let Some(id) = marker_window(&entry.kind) {
                window.events.end = events.len();
                let next = Window {
                    window_id: id.to_string(),
                    created_at: entry.timestamp().map(str::to_string),
                    events: events.len()..events.len(),
                };
                out_windows.push(std::mem::replace(&mut window, next));
                continue;
            }
            let seq = if sorted {
                seq_of.at(index, seq_count(&entry.kind))
            } else {
                first_seq[index]
            };
            if seq == 0 {
                continue;
            }
            let window_index = out_windows.len();
            let text = |role, has_text, line: &mut dyn FnMut(usize) -> usize| Event {
                seq,
                window: window_index,
                role,
                source: Source::Text { entry: line(index) },
                has_text,
                tool_name: NO_TOOL,
            };
            match shown(&entry.kind) {
                Shown::Text { role, has_text } => events.push(text(role, has_text, &mut line)),
                Shown::Result(m) => {
                    if !is_paired(&paired, seq) {
                        events.push(Event {
                            seq,
                            window: window_index,
                            role: EventRole::Tool,
                            source: Source::Result { entry: line(index) },
                            has_text: true,
                            tool_name: tool(m.tool_name()),
                        });
                    }
                }
                Shown::Bash => events.push(Event {
                    seq,
                    window: window_index,
                    role: EventRole::Tool,
                    source: Source::Bash { entry: line(index) },
                    has_text: true,
                    tool_name: tool(Some("bash")),
                }),
                Shown::Nothing => {}
            }
            if let EntryKind::Message(m) = &entry.kind
                && m.role == Role::Assistant
            {
                for (block, call) in m.tool_calls.iter().enumerate() {
                    let call_seq = seq + 1 + block as u64;
                    let mut result = None;
                    if let Some(id) = call.id.as_deref().filter(|id| !id.is_empty()) {
                        // The lookup made above for this call (the same calls in the same
                        // order; looked up here should they ever not be).
                        let looked_up = found
                            .next_if(|call| {
                                call.entry as usize == index && call.block as usize == block
                            })
                            .map(|call| call.found())
                            .unwrap_or_else(|| result_for(id_hash(id), id));
                        match looked_up {
                            Some((result_seq, result_entry))
                                if result_seq > call_seq && !is_paired(&paired, result_seq) =>
                            {
                                paired[(result_seq / 64) as usize] |= 1 << (result_seq % 64);
                                paired_results.push((result_seq, call_seq));
                                result = Some(result_entry);
                            }
                            Some(_) => {}
                            None => {
                                if open_ids.insert(id) {
                                    open.push((events.len(), id));
                                }
                            }
                        }
                    }
                    let entry = line(index);
                    events.push(Event {
                        seq: call_seq,
                        window: window_index,
                        role: EventRole::Tool,
                        source: Source::Call {
                            entry,
                            block,
                            result: result.map(&mut line),
                        },
                        has_text: true,
                        tool_name: tool(call.name.as_deref()),
                    });
                }
            }
        }
        window.events.end = events.len();
        out_windows.push(window);
        paired_results.sort_unstable();
        let projection = Projection {
            session_id: session.header.id.clone(),
            highest_seq,
            windows: out_windows,
            events: events.into_store(),
            paired: Store::Owned(paired_results),
            lines: lines.into_store(),
            tool_names: tools.into_names(),
            flat: Bytes::Owned(Vec::new()),
            more: Vec::new(),
            line_runs: std::sync::OnceLock::new(),
        };
        Built {
            projection,
            open,
            branch_results,
            results,
            line_of,
        }
    }

    /// How many events the branch has.
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// The `i`-th event (ascending by seq).
    pub fn event(&self, i: usize) -> Event {
        self.events.get(&self.flat, &self.more, i)
    }

    /// Every event, ascending by seq.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        self.events.iter(&self.flat, &self.more)
    }

    /// Whether each line is named by one run of events ([`LineRuns`]).
    pub fn lines_in_runs(&self) -> bool {
        *self.line_runs.get_or_init(|| {
            let mut runs = LineRuns::default();
            self.events().for_each(|e| runs.see(e.source));
            runs.hold()
        })
    }

    /// Add to `out` the index of every event naming session line `line` (its entry line, or a
    /// call's result line), found by binary search. Only when [`Projection::lines_in_runs`].
    pub fn events_naming(&self, line: usize, out: &mut Vec<usize>) {
        let n = self.event_count();
        let entry = |k: usize| self.event(k).source.entry();
        // The first event whose entry line is `line` or after it.
        let first = self.first_event_not(|e| e.source.entry() < line);
        let mut k = first;
        while k < n && entry(k) == line {
            out.push(k);
            k += 1;
        }
        // A result line is named by a call of the run just before it.
        if let Some(before) = first.checked_sub(1) {
            let run = entry(before);
            let mut k = first;
            while k > 0 && entry(k - 1) == run {
                k -= 1;
                if let Source::Call {
                    result: Some(result),
                    ..
                } = self.event(k).source
                    && result == line
                {
                    out.push(k);
                }
            }
        }
    }

    /// The `i`-th session line of `Source` indexes.
    pub fn line(&self, i: usize) -> Line {
        self.lines.get(&self.flat, &self.more, i)
    }

    /// Every line of [`Projection::line`], in order (one pass over the records).
    pub fn lines(&self) -> impl Iterator<Item = Line> + '_ {
        self.lines.iter(&self.flat, &self.more)
    }

    /// Each line of [`Projection::line`] with its index, in order: one loop over each run of
    /// encoded records. Through [`Projection::lines`] a pass over 225 k lines took ≈ 1 ms (a
    /// choice of part and of run per record); searches make two such passes.
    #[inline]
    fn for_each_line(&self, mut f: impl FnMut(usize, Line)) {
        match self.lines.runs(&self.flat, &self.more) {
            Err(owned) => owned.iter().enumerate().for_each(|(i, &line)| f(i, line)),
            Ok(runs) => {
                let mut i = 0;
                for run in runs {
                    for record in run.chunks_exact(Line::BYTES) {
                        f(i, Line::read(record));
                        i += 1;
                    }
                }
            }
        }
    }

    /// Whether [`Projection::line`]'s offsets ascend (file order, the usual case).
    pub fn lines_in_file_order(&self) -> bool {
        let (mut previous, mut ascending) = (0, true);
        self.for_each_line(|_, line| {
            ascending &= line.offset >= previous;
            previous = line.offset;
        });
        ascending
    }

    /// The lines holding an escape JavaScript would not write, and with `nested` those
    /// holding nested tool calls too, ascending.
    pub fn flagged_lines(&self, nested: bool) -> Vec<usize> {
        let mut flagged = Vec::new();
        self.for_each_line(|i, line| {
            if line.escapes || (nested && line.nested_calls) {
                flagged.push(i);
            }
        });
        flagged
    }

    /// How many session lines events are built from.
    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    /// Consumed tool results as (result seq, call seq), ascending.
    pub fn paired_results(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.paired.iter(&self.flat, &self.more)
    }

    /// The index of the event at `seq` in [`Projection::event`] order.
    fn event_index(&self, seq: u64) -> Option<usize> {
        let i = self.first_event_not(|e| e.seq < seq);
        (i < self.events.len() && self.event(i).seq == seq).then_some(i)
    }

    /// The index of the first event for which `before` is false, by binary search: `before`
    /// must hold for a prefix of the events and for none after it.
    fn first_event_not(&self, before: impl Fn(&Event) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.events.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(&self.event(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The indexes (in [`Projection::event`] order) of the events whose seq lies strictly
    /// between `lo` and `hi`.
    pub fn events_between(&self, lo: u64, hi: u64) -> std::ops::Range<usize> {
        let start = self.first_event_not(|e| e.seq <= lo);
        let end = self.first_event_not(|e| e.seq < hi);
        start..end.max(start)
    }

    /// The event at `seq`, if there is one on the branch.
    pub fn event_at(&self, seq: u64) -> Option<Event> {
        self.event_index(seq).map(|i| self.event(i))
    }

    /// Whether `seq` belongs to an on-branch entry or call.
    pub fn on_branch(&self, seq: u64) -> bool {
        self.event_at(seq).is_some() || self.paired_call(seq).is_some()
    }

    /// The call seq a consumed tool result `seq` is shown at.
    pub fn paired_call(&self, seq: u64) -> Option<u64> {
        let (mut lo, mut hi) = (0, self.paired.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (result, call) = self.paired.get(&self.flat, &self.more, mid);
            match result.cmp(&seq) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(call),
            }
        }
        None
    }

    /// A tool event's name as folds count it.
    pub fn tool_name(&self, event: &Event) -> Option<&str> {
        self.tool_names
            .get(event.tool_name as usize)
            .map(String::as_str)
    }

    /// The window id of an event.
    pub fn window_id(&self, event: &Event) -> &str {
        &self.windows[event.window].window_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn projection_of(lines: &[&str]) -> Projection {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        for line in lines {
            writeln!(file, "{line}").unwrap();
        }
        let session = Session::open(file.path()).unwrap();
        let branch = session.active_branch(session.leaf(None).unwrap());
        Projection::build(&session, Branch::Walked(&branch))
    }

    /// (seq, role, what it shows) of every event.
    fn events_of(projection: &Projection) -> Vec<(u64, EventRole, &'static str)> {
        projection
            .events()
            .map(|e| {
                let what = match e.source {
                    Source::Text { .. } => "text",
                    Source::Call {
                        result: Some(_), ..
                    } => "call+result",
                    Source::Call { result: None, .. } => "call",
                    Source::Result { .. } => "result",
                    Source::Bash { .. } => "bash",
                };
                (e.seq, e.role, what)
            })
            .collect()
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;
    const USER: &str = r#"{"type":"message","id":"u","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"go"}}"#;
    const CALL: &str = r#"{"type":"message","id":"a","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{}}]}}"#;
    const RESULT: &str = r#"{"type":"message","id":"r","parentId":"a","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":"ok"}}"#;

    /// The branch's tool results are found in the pass that counts seqs when the branch is in
    /// file order, and in a pass of their own when it is not (a parent written after its
    /// child): both pair the call with its result.
    #[test]
    fn a_branch_out_of_file_order_still_pairs_its_calls() {
        use EventRole::{Assistant, Tool, User};
        // (the lines, the events, the seq of the call the result's seq 4 is shown at)
        let cases = [
            (
                [HEADER, USER, CALL, RESULT],
                [
                    (1, User, "text"),
                    (2, Assistant, "text"),
                    (3, Tool, "call+result"),
                ],
                3,
            ),
            // The call's line comes first, then the user's it continues, then the result.
            (
                [HEADER, CALL, USER, RESULT],
                [
                    (3, User, "text"),
                    (1, Assistant, "text"),
                    (2, Tool, "call+result"),
                ],
                2,
            ),
        ];
        for (lines, events, call) in cases {
            let projection = projection_of(&lines);
            assert_eq!(events_of(&projection), events, "{lines:?}");
            assert_eq!(projection.paired_call(4), Some(call), "{lines:?}");
        }
    }

    /// A cold read builds the projection from the chain the entries form while it looks for
    /// ids that name two entries; when one does, the branch is walked instead, as for an
    /// explicit leaf.
    #[test]
    fn a_chain_with_a_repeated_id_is_walked_not_taken_whole() {
        use crate::session::IndexMode;
        let user = |id: &str, parent: Option<&str>, text: &str| {
            let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
            format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}"}}}}"#
            )
        };
        // Each entry names the one before it as its parent. With `x` twice, the last entry's
        // parent is the later `x`, whose walk goes back to `y` and stops at the later `x`
        // again: the first entry is not on the branch.
        let repeated = [
            user("x", None, "zero"),
            user("y", Some("x"), "one"),
            user("x", Some("y"), "two"),
            user("z", Some("x"), "three"),
        ];
        let distinct = [
            user("w", None, "zero"),
            user("y", Some("w"), "one"),
            user("x", Some("y"), "two"),
            user("z", Some("x"), "three"),
        ];
        let cache = tempfile::tempdir().unwrap();
        let modes = [
            IndexMode::Off,
            IndexMode::In {
                dir: cache.path(),
                now: std::time::SystemTime::UNIX_EPOCH,
            },
        ];
        for (entries, on_branch) in [(&repeated, 3), (&distinct, 4)] {
            let mut file = tempfile::NamedTempFile::new().unwrap();
            writeln!(file, "{HEADER}").unwrap();
            for line in entries {
                writeln!(file, "{line}").unwrap();
            }
            for mode in &modes {
                let open = |leaf| crate::history::open_with(file.path(), leaf, mode).unwrap();
                let by_default = open(None).projection;
                let by_leaf = open(Some("z")).projection;
                assert_eq!(by_default.event_count(), on_branch, "{entries:?}");
                assert_eq!(events_of(&by_default), events_of(&by_leaf), "{entries:?}");
                let offsets = |p: &Projection| -> Vec<usize> {
                    p.lines().map(|l| l.offset as usize).collect()
                };
                assert_eq!(offsets(&by_default), offsets(&by_leaf), "{entries:?}");
            }
        }
    }

    /// The lines searches must always test (an escape JavaScript would not write; nested
    /// tool calls when the query needs them), and whether the lines are in file order, read
    /// the same from a built projection, a stored one and one extended in place.
    #[test]
    fn flagged_lines_and_file_order_read_the_same_from_every_store() {
        const ESCAPED: &str = r#"{"type":"message","id":"e","parentId":"r","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"caf\u00e9"}}"#;
        const NESTED: &str = r#"{"type":"message","id":"n","parentId":"e","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"toolResult","toolCallId":"c2","toolName":"read","content":"ok","nestedCalls":{"complete":true,"calls":[]}}}"#;
        const LAST: &str = r#"{"type":"message","id":"z","parentId":"n","timestamp":"2026-01-01T00:00:06.000Z","message":{"role":"user","content":"plain"}}"#;
        use crate::session::IndexMode;
        let cache = tempfile::tempdir().unwrap();
        let indexed = IndexMode::In {
            dir: cache.path(),
            now: std::time::SystemTime::UNIX_EPOCH,
        };
        // Padded so the index stays within its share of the file and keeps the projection.
        let padded = |line: &str| {
            let pad = format!(r#""pad":"{}","timestamp":"#, "p".repeat(1200));
            line.replacen(r#""timestamp":"#, &pad, 1)
        };
        let mut file = tempfile::NamedTempFile::new().unwrap();
        for line in [HEADER, USER, CALL, RESULT, ESCAPED] {
            writeln!(file, "{}", padded(line)).unwrap();
        }
        let path = file.path().to_path_buf();
        let open = |mode: &IndexMode<'_>| crate::history::open_with(&path, None, mode).unwrap();
        // Built, then built and stored, then read from the store.
        use crate::history::IndexUse::{Built, Bypassed, Reused};
        for (mode, used) in [
            (&IndexMode::Off, Bypassed),
            (&indexed, Built),
            (&indexed, Reused),
        ] {
            let opened = open(mode);
            assert_eq!(opened.index, used);
            let p = opened.projection;
            assert_eq!(p.line_count(), 4);
            assert_eq!(p.flagged_lines(false), [3]);
            assert_eq!(p.flagged_lines(true), [3]);
            assert!(p.lines_in_file_order());
        }
        let mut appending = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        for line in [NESTED, LAST] {
            writeln!(appending, "{}", padded(line)).unwrap();
        }
        let opened = open(&indexed);
        assert_eq!(opened.index, crate::history::IndexUse::Extended);
        for p in [&opened.projection, &open(&IndexMode::Off).projection] {
            assert_eq!(p.line_count(), 6);
            assert_eq!(p.flagged_lines(false), [3]);
            assert_eq!(p.flagged_lines(true), [3, 4]);
            assert!(p.lines_in_file_order());
        }
    }
}
