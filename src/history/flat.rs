//! The projection of a session's default branch as flat, fixed-width arrays: the extra data
//! history stores in the session index (`crate::session::index`), so a call on an unchanged
//! session reads it back with one pass over a few arrays — no per-entry decode, hashing or
//! string allocation — and decodes only the lines of the events it shows.
//!
//! Layout (little-endian): a tag and version, `highest_seq` (u64), then counted arrays:
//! lines (offset u64, then len u32 whose top bit is `escapes`), events (20 bytes:
//! seq u32, entry u32, block u16, window u16, result u32, tool name u16, then one byte of
//! role (bits 0–1), source kind (bits 2–3) and has_text (bit 4), one zero byte), windows
//! (id, created_at, first and end event), paired results (result seq, call seq: u32 each),
//! tool names. Strings are a u32 length and UTF-8 bytes. A projection with a value that does
//! not fit these widths is not stored. Decoding checks every length and cross-reference, so a
//! damaged blob (which the index checksum already rejects) can only read as `None`.

use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;

use super::projection::{
    Built, Bytes, Event, EventRole, Line, LineRuns, NO_TOOL, Projection, Record, Shown, Source,
    Store, ToolNames, Window, marker_window, seq_count, shown,
};

use crate::session::{Branch, Entry, EntryKind, Header, Role, Session, id_hash};

const TAG: &[u8; 4] = b"PJ\x04\x00";
/// A line record. It was 16 bytes (with a line number, used only in an error message).
const LINE_BYTES: usize = 12;
/// An event record. It was 28 bytes (every field a u32): with short session lines (≈ 450
/// bytes, one event each) the projection then passed the index's 10 % share and was not
/// kept, so every call rebuilt it from the skeleton.
const EVENT_BYTES: usize = 20;
/// Where an event record's `result` lies: patched in place when a later result pairs a
/// stored call.
const RESULT_AT: usize = 12;
const NONE: u32 = u32::MAX;
/// "No tool" in an event record's u16 tool name.
const NO_TOOL16: u16 = u16::MAX;

fn u16_of(v: usize) -> Option<u16> {
    u16::try_from(v).ok().filter(|&v| v != u16::MAX)
}

fn u32_of(v: u64) -> Option<u32> {
    u32::try_from(v).ok().filter(|&v| v != NONE)
}

fn usize32(v: usize) -> Option<u32> {
    u32::try_from(v).ok().filter(|&v| v != NONE)
}

fn put(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) -> Option<()> {
    put(out, usize32(s.len())?);
    out.extend_from_slice(s.as_bytes());
    Some(())
}

fn put_line(out: &mut Vec<u8>, line: &Line) -> Option<()> {
    out.extend_from_slice(&line.offset.to_le_bytes());
    // The top bit of the length holds `escapes`, the next one `nested_calls`.
    let len = u32_of(line.len).filter(|&n| n < 1 << 30)?;
    put(
        out,
        len | u32::from(line.escapes) << 31 | u32::from(line.nested_calls) << 30,
    );
    Some(())
}

fn put_event(out: &mut Vec<u8>, event: &Event) -> Option<()> {
    let (kind, entry, block, result) = match event.source {
        Source::Text { entry } => (0u8, entry, 0, None),
        Source::Call {
            entry,
            block,
            result,
        } => (1, entry, block, result),
        Source::Result { entry } => (2, entry, 0, None),
        Source::Bash { entry } => (3, entry, 0, None),
    };
    let tool = if event.tool_name == NO_TOOL {
        NO_TOOL16
    } else {
        u16_of(event.tool_name as usize)?
    };
    put(out, u32_of(event.seq)?);
    put(out, usize32(entry)?);
    out.extend_from_slice(&u16_of(block)?.to_le_bytes());
    out.extend_from_slice(&u16_of(event.window)?.to_le_bytes());
    put(out, result.map_or(Some(NONE), usize32)?);
    out.extend_from_slice(&tool.to_le_bytes());
    let role = match event.role {
        EventRole::User => 0u8,
        EventRole::Assistant => 1,
        EventRole::Tool => 2,
        EventRole::Context => 3,
    };
    out.extend_from_slice(&[role | kind << 2 | u8::from(event.has_text) << 4, 0]);
    Some(())
}

/// What follows the event records: windows, paired results (in pieces), tool names.
fn put_tail(
    out: &mut Vec<u8>,
    windows: &[Window],
    paired: [&[u8]; 2],
    tool_names: &[String],
) -> Option<()> {
    put_windows(out, windows)?;
    put(out, usize32((paired[0].len() + paired[1].len()) / 8)?);
    paired.iter().for_each(|p| out.extend_from_slice(p));
    put(out, usize32(tool_names.len())?);
    for name in tool_names {
        put_str(out, name)?;
    }
    Some(())
}

/// A projection's encoding in pieces, in order (their concatenation is the encoding): the
/// line and event records are borrowed from the projection as it was built, so the index is
/// written from them as they are. Assembling a copy of them was ≈ 3 ms and 7 MB of fresh
/// pages (1.7 k page faults) on a session of 110 k entries, a seventh of a cold call's memory.
pub struct Encoded<'a> {
    head: Vec<u8>,
    lines: Cow<'a, [u8]>,
    event_count: [u8; 4],
    events: Cow<'a, [u8]>,
    tail: Vec<u8>,
}

impl Encoded<'_> {
    /// The pieces, in order.
    pub fn pieces(&self) -> [&[u8]; 5] {
        [
            &self.head,
            &self.lines,
            &self.event_count,
            &self.events,
            &self.tail,
        ]
    }
}

/// Encode `projection`; `None` when a value does not fit the format's widths.
pub fn encode(projection: &Projection) -> Option<Encoded<'_>> {
    let lines = records_of(&projection.lines, projection)?;
    let events = records_of(&projection.events, projection)?;
    let paired = records_of(&projection.paired, projection)?;
    let mut head = Vec::with_capacity(TAG.len() + 12);
    head.extend_from_slice(TAG);
    head.extend_from_slice(&projection.highest_seq.to_le_bytes());
    put(&mut head, usize32(lines.len() / LINE_BYTES)?);
    let event_count = usize32(events.len() / EVENT_BYTES)?.to_le_bytes();
    let mut tail = Vec::with_capacity(
        16 + paired.len() + projection.windows.len() * 32 + projection.tool_names.len() * 16,
    );
    put_tail(
        &mut tail,
        &projection.windows,
        [&paired, &[]],
        &projection.tool_names,
    )?;
    Some(Encoded {
        head,
        lines,
        event_count,
        events,
        tail,
    })
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.buf.get(self.at..end)?;
        self.at = end;
        Some(out)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn count(&mut self, each: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        // Every item takes at least `each` bytes.
        (n.checked_mul(each)? <= self.buf.len() - self.at).then_some(n)
    }
    fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        Some(std::str::from_utf8(self.take(n)?).ok()?.to_string())
    }
}

#[inline]
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline]
fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

#[inline]
fn le64(b: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(word)
}

impl Record for Line {
    const BYTES: usize = LINE_BYTES;
    fn read(b: &[u8]) -> Line {
        Line {
            offset: le64(b, 0),
            len: u64::from(le32(b, 8) & !(3 << 30)),
            escapes: le32(b, 8) >> 31 == 1,
            nested_calls: le32(b, 8) >> 30 & 1 == 1,
        }
    }
    fn write(&self, out: &mut Vec<u8>) -> Option<()> {
        whole_or_nothing(out, |out| put_line(out, self))
    }
}

impl Record for (u64, u64) {
    const BYTES: usize = 8;
    fn read(b: &[u8]) -> (u64, u64) {
        (u64::from(le32(b, 0)), u64::from(le32(b, 4)))
    }
    fn write(&self, out: &mut Vec<u8>) -> Option<()> {
        let (result, call) = (u32_of(self.0)?, u32_of(self.1)?);
        put(out, result);
        put(out, call);
        Some(())
    }
}

/// `put` a record into `out`, or nothing when it fails part-way.
fn whole_or_nothing(out: &mut Vec<u8>, put: impl FnOnce(&mut Vec<u8>) -> Option<()>) -> Option<()> {
    let before = out.len();
    let done = put(out);
    if done.is_none() {
        out.truncate(before);
    }
    done
}

/// The flat encoding of a projection's array: its bytes when it is kept in that encoding
/// already, else each record encoded.
fn records_of<'a, T: Record>(
    store: &'a Store<T>,
    projection: &Projection,
) -> Option<Cow<'a, [u8]>> {
    if let Store::Packed(packed) = store {
        return Some(Cow::Borrowed(packed));
    }
    let len = store.len();
    let mut out = Vec::with_capacity(len * T::BYTES);
    for i in 0..len {
        store
            .get(&projection.flat, &projection.more, i)
            .write(&mut out)?;
    }
    Some(Cow::Owned(out))
}

/// Whether an event record holds a byte out of range: a flag bit or the zero byte set, or
/// the block that stands for none. One rule for [`event_of`] and [`EventCheck`].
#[inline]
fn refused(b: &[u8]) -> bool {
    (b[18] >> 5 != 0) | (b[19] != 0) | (le16(b, 8) == u16::MAX)
}

/// An event record's fields, or `None` when a byte is out of range.
fn event_of(b: &[u8]) -> Option<Event> {
    let (entry, block) = (le32(b, 4) as usize, le16(b, 8) as usize);
    let result = le32(b, RESULT_AT);
    let flags = b[18];
    let role = match flags & 3 {
        0 => EventRole::User,
        1 => EventRole::Assistant,
        2 => EventRole::Tool,
        _ => EventRole::Context,
    };
    let source = match flags >> 2 & 3 {
        0 => Source::Text { entry },
        1 => Source::Call {
            entry,
            block,
            result: (result != NONE).then_some(result as usize),
        },
        2 => Source::Result { entry },
        _ => Source::Bash { entry },
    };
    if refused(b) {
        return None;
    }
    let tool = le16(b, 16);
    Some(Event {
        seq: u64::from(le32(b, 0)),
        window: usize::from(le16(b, 10)),
        role,
        source,
        has_text: flags >> 4 & 1 == 1,
        tool_name: if tool == NO_TOOL16 {
            NO_TOOL
        } else {
            u32::from(tool)
        },
    })
}

impl Record for Event {
    const BYTES: usize = EVENT_BYTES;
    #[allow(
        clippy::expect_used,
        reason = "records are checked when the encoding is read"
    )]
    fn read(b: &[u8]) -> Event {
        event_of(b).expect("records are checked when the encoding is read")
    }
    fn write(&self, out: &mut Vec<u8>) -> Option<()> {
        whole_or_nothing(out, |out| put_event(out, self))
    }
}

/// The sections of an encoded projection, located and parsed but not cross-checked.
struct Sections<'a> {
    highest_seq: u64,
    n_lines: usize,
    /// Offset of the line records in the encoding.
    lines_at: usize,
    n_events: usize,
    events_at: usize,
    windows: Vec<Window>,
    n_paired: usize,
    paired_at: usize,
    tool_names: Vec<String>,
    bytes: &'a [u8],
}

impl Sections<'_> {
    fn line(&self, i: usize) -> Option<Line> {
        let at = self.lines_at + i * LINE_BYTES;
        (i < self.n_lines).then(|| Line::read(&self.bytes[at..at + LINE_BYTES]))
    }
    fn events(&self) -> &[u8] {
        &self.bytes[self.events_at..self.events_at + self.n_events * EVENT_BYTES]
    }
    fn paired(&self) -> &[u8] {
        &self.bytes[self.paired_at..self.paired_at + self.n_paired * 8]
    }
}

fn sections(bytes: &[u8]) -> Option<Sections<'_>> {
    let mut r = Reader { buf: bytes, at: 0 };
    if r.take(TAG.len())? != TAG {
        return None;
    }
    let highest_seq = r.u64()?;
    let n_lines = r.count(LINE_BYTES)?;
    let lines_at = r.at;
    r.take(n_lines * LINE_BYTES)?;
    let n_events = r.count(EVENT_BYTES)?;
    let events_at = r.at;
    r.take(n_events * EVENT_BYTES)?;
    let n_windows = r.count(9)?;
    let mut windows = Vec::with_capacity(n_windows);
    for _ in 0..n_windows {
        let window_id = r.string()?;
        let created_at = match r.take(1)?[0] {
            0 => None,
            1 => Some(r.string()?),
            _ => return None,
        };
        let (start, end) = (r.u32()? as usize, r.u32()? as usize);
        if start > end || end > n_events {
            return None;
        }
        windows.push(Window {
            window_id,
            created_at,
            events: start..end,
        });
    }
    let n_paired = r.count(8)?;
    let paired_at = r.at;
    r.take(n_paired * 8)?;
    let n_tools = r.count(4)?;
    let mut tool_names = Vec::with_capacity(n_tools);
    for _ in 0..n_tools {
        tool_names.push(r.string()?);
    }
    if r.at != bytes.len() || windows.is_empty() {
        return None;
    }
    Some(Sections {
        highest_seq,
        n_lines,
        lines_at,
        n_events,
        events_at,
        windows,
        n_paired,
        paired_at,
        tool_names,
        bytes,
    })
}

/// Decode the projection encoded in `buf[at..]` of the session `session_id`, keeping `buf`:
/// its arrays are read in place. `None` for anything but a whole, self-consistent encoding.
/// With `delta` (entries appended since the encoding was stored) applied: its
/// line, event and paired records follow the stored ones (in [`Projection::more`]; nothing
/// stored is moved or copied), the stored calls it pairs are patched where they lie (a
/// mapped encoding is private: the file is not written), its windows and tool names replace
/// the stored ones. `None` when the delta does not belong to this encoding or the result is
/// not self-consistent.
pub fn decode_with(
    mut buf: Bytes,
    at: usize,
    delta: Option<&Delta>,
    session_id: &str,
) -> Option<Projection> {
    let bytes = buf.get(at..)?;
    let Sections {
        highest_seq,
        n_lines,
        lines_at,
        n_events,
        events_at,
        windows,
        n_paired,
        paired_at,
        tool_names,
        ..
    } = sections(bytes)?;
    if delta.is_some_and(|d| {
        d.base_events != n_events || d.base_lines != n_lines || d.base_paired != n_paired
    }) {
        return None;
    }
    let (highest_seq, windows, tool_names, more, more_lines, more_events, more_paired) = match delta
    {
        None => (highest_seq, windows, tool_names, Vec::new(), 0, 0, 0),
        Some(d) => {
            let mut more = Vec::with_capacity(d.lines.len() + d.events.len() + d.paired.len());
            more.extend_from_slice(&d.lines);
            more.extend_from_slice(&d.events);
            more.extend_from_slice(&d.paired);
            (
                d.highest_seq,
                d.windows.clone(),
                d.tool_names.clone(),
                more,
                d.lines.len() / LINE_BYTES,
                d.events.len() / EVENT_BYTES,
                d.paired.len() / 8,
            )
        }
    };
    if let Some(d) = delta.filter(|d| !d.patches.is_empty()) {
        let bytes = buf.writable()?;
        for &(event, line) in &d.patches {
            let event = event as usize;
            if event >= n_events {
                return None;
            }
            let from = at + events_at + event * EVENT_BYTES + RESULT_AT;
            bytes
                .get_mut(from..from + 4)?
                .copy_from_slice(&line.to_le_bytes());
        }
    }
    let bytes = buf.get(at..)?;
    let (total_lines, total_events) = (n_lines + more_lines, n_events + more_events);
    if windows.is_empty() || windows.iter().any(|w| w.events.end > total_events) {
        return None;
    }
    let more_paired_at = more_lines * LINE_BYTES + more_events * EVENT_BYTES;
    let raw_paired = bytes[paired_at..paired_at + n_paired * 8]
        .chunks_exact(8)
        .chain(more[more_paired_at..].chunks_exact(8));
    // Every record must read back and refer to what exists, in ascending order.
    let mut check = EventCheck::new(total_lines, windows.len(), tool_names.len());
    check.records(&bytes[events_at..events_at + n_events * EVENT_BYTES]);
    check.records(&more[more_lines * LINE_BYTES..][..more_events * EVENT_BYTES]);
    let lines_in_runs = check.lines_in_runs()?;
    let mut previous = 0u64;
    for b in raw_paired {
        let (result, _) = <(u64, u64)>::read(b);
        if result <= previous {
            return None;
        }
        previous = result;
    }
    Some(Projection {
        session_id: session_id.to_string(),
        highest_seq,
        windows,
        events: Store::Flat {
            at: at + events_at,
            len: n_events,
            more_at: more_lines * LINE_BYTES,
            more_len: more_events,
        },
        paired: Store::Flat {
            at: at + paired_at,
            len: n_paired,
            more_at: more_paired_at,
            more_len: more_paired,
        },
        lines: Store::Flat {
            at: at + lines_at,
            len: n_lines,
            more_at: 0,
            more_len: more_lines,
        },
        tool_names,
        flat: buf,
        more,
        line_runs: lines_in_runs.into(),
    })
}

/// The check of a stored projection's event records, made each time one is read (every
/// warm call): what [`event_of`] refuses, the lines, window and tool name each refers to,
/// ascending seqs, and whether the lines come in runs ([`LineRuns`]). Written without a
/// branch per record: through `event_of` it took ≈ 2.5 ms of a warm call on a session of
/// 225 k short lines, most of it mispredicted matches on the records' kinds.
struct EventCheck {
    lines: u64,
    windows: u64,
    tools: u64,
    bad: bool,
    previous_seq: u32,
    runs: LineRuns,
}

impl EventCheck {
    fn new(lines: usize, windows: usize, tools: usize) -> EventCheck {
        EventCheck {
            lines: lines as u64,
            windows: windows as u64,
            tools: tools as u64,
            bad: false,
            previous_seq: 0,
            runs: LineRuns::default(),
        }
    }

    fn records(&mut self, bytes: &[u8]) {
        for b in bytes.chunks_exact(EVENT_BYTES) {
            let seq = le32(b, 0);
            let entry = u64::from(le32(b, 4));
            let window = u64::from(le16(b, 10));
            let result = le32(b, RESULT_AT);
            let tool = le16(b, 16);
            let flags = b[18];
            let has_result = (flags >> 2 & 3 == 1) & (result != NONE);
            let result = u64::from(result);
            self.bad |= refused(b)
                | (entry >= self.lines)
                | (has_result & (result >= self.lines))
                | (window >= self.windows)
                | ((tool != NO_TOOL16) & (u64::from(tool) >= self.tools))
                | (seq <= self.previous_seq);
            self.previous_seq = seq;
            self.runs.see_lines(entry, result, has_result);
        }
    }

    /// `None` when a record is refused, else whether the lines come in runs.
    fn lines_in_runs(&self) -> Option<bool> {
        (!self.bad).then_some(self.runs.hold())
    }
}

// ------------------------------------------------------------------ extension in place

/// Tag of the side data.
const SIDE_TAG: &[u8; 4] = b"PS\x05\x00";

/// What extending a stored projection by appended entries needs besides it (stored as the
/// index's side data, read only when lines were appended):
///
/// - the default leaf's id: an appended entry continues the branch when its parent is it;
/// - the hashes of the branch's entry ids (sorted, [`side_hash`]): an appended id equal to
///   one of them would change what the parent walk finds, so an appended id whose hash is
///   among them is not extended in place (with a million entries on the branch, one append
///   in ≈ 4,000 rebuilds for a mere collision);
/// - the tool results of the branch, each as its `toolCallId`'s hash, its line and where the
///   id lies in that line (sorted by hash): a call whose id already has a result stays
///   unpaired, so for an appended call whose id's hash is among them the stored id is
///   compared with it — by reading the id's few bytes where it lies, or the whole line when
///   that place is unknown (the ids themselves are not kept: they were ≈ 35 bytes of every
///   tool result, which pushed sessions of short lines past the index's 10 % share);
/// - the open calls: for every call id with no result on the branch, its first call event,
///   which the first result with that id will be paired with.
///
/// Layout: tag, `highest_seq` (u64), event and line counts (u32), the leaf id, the branch
/// id hashes (count, u32 each, [`side_hash`]), the results (count, u32 id hash, u32 line and
/// u32 offset of the id in the line, [`UNKNOWN_AT`] when not known, each), the open calls
/// (count, event index u32 and id each). The arrays are searched where they lie (no per-id
/// decode), and an extension copies them in runs around the few new values.
struct Side<'a> {
    highest_seq: u64,
    events: usize,
    lines: usize,
    leaf: String,
    branch: &'a [u8],
    results: &'a [u8],
    open: Vec<(u32, String)>,
}

/// The 32-bit hash of an id kept in the side data (branch ids, tool-result ids). A hit is
/// only ever a "maybe": a branch-id hit stops the extension in place (the call rebuilds), a
/// tool-result hit has the result's line read back, so a collision costs time, never an
/// answer; 32 bits instead of 64 save 4 bytes of every entry, which decide whether sessions
/// of short lines keep their projection within the index's share.
pub(super) fn side_hash(id: &str) -> u32 {
    side_hash_of(id_hash(id))
}

/// [`side_hash`] of an id whose `id_hash` is `hash`.
pub(super) fn side_hash_of(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// Width of a branch id record (its hash).
const BRANCH_BYTES: usize = 4;
/// Width of a tool-result record: its id's hash, its line (a projection line index), then
/// where the id's characters start in that line.
const RESULT_BYTES: usize = 12;

/// A tool-result record's offset when the id's place in its line is not known (the line
/// was decoded fully, not lightly): the whole line is read back to compare ids.
const UNKNOWN_AT: u32 = u32::MAX;

/// A tool result as the side data keeps it: its id's hash, its line, and where the id
/// lies in that line ([`UNKNOWN_AT`] when not known).
type ResultRecord = (u32, u32, u32);

fn result_record_bytes(&(hash, line, at): &ResultRecord) -> [u8; RESULT_BYTES] {
    let mut record = [0; RESULT_BYTES];
    record[..4].copy_from_slice(&hash.to_le_bytes());
    record[4..8].copy_from_slice(&line.to_le_bytes());
    record[8..].copy_from_slice(&at.to_le_bytes());
    record
}

#[inline]
fn hash_at(b: &[u8], i: usize, width: usize) -> u32 {
    le32(b, i * width)
}

/// The first index of `width`-byte records `b`, sorted by their leading u32 hash, whose hash
/// is not below `v`.
fn lower_bound(b: &[u8], v: u32, width: usize) -> usize {
    let (mut lo, mut hi) = (0, b.len() / width);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if hash_at(b, mid, width) < v {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl Side<'_> {
    fn on_branch(&self, hash: u32) -> bool {
        let i = lower_bound(self.branch, hash, BRANCH_BYTES);
        i < self.branch.len() / BRANCH_BYTES && hash_at(self.branch, i, BRANCH_BYTES) == hash
    }

    /// The lines of the stored tool results whose id hashes to `hash`, each with where the
    /// id lies in it (the ids are not kept: each is a "maybe", to be read from its line).
    fn result_lines(&self, hash: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let records = self.results;
        (lower_bound(records, hash, RESULT_BYTES)..records.len() / RESULT_BYTES)
            .take_while(move |&i| hash_at(records, i, RESULT_BYTES) == hash)
            .map(move |i| {
                let at = i * RESULT_BYTES;
                (le32(records, at + 4), le32(records, at + 8))
            })
    }
}

/// Side data as pieces to be written one after the other: runs of a stored side and the
/// few new values between them (see `Grow::write`: the side is written from its pieces,
/// never assembled in memory).
#[derive(Default)]
pub struct SideOut<'a> {
    parts: Vec<Piece<'a>>,
}

enum Piece<'a> {
    Old(&'a [u8]),
    New(Vec<u8>),
}

impl<'a> SideOut<'a> {
    fn old(&mut self, bytes: &'a [u8]) {
        if !bytes.is_empty() {
            self.parts.push(Piece::Old(bytes));
        }
    }

    fn new_bytes(&mut self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.parts.push(Piece::New(bytes));
        }
    }

    fn u32(&mut self, v: u32) {
        self.new_bytes(v.to_le_bytes().to_vec());
    }

    fn append(&mut self, other: SideOut<'a>) {
        self.parts.extend(other.parts);
    }

    /// The pieces, in order.
    pub fn slices(&self) -> Vec<&[u8]> {
        self.parts
            .iter()
            .map(|p| match p {
                Piece::Old(b) => *b,
                Piece::New(v) => v.as_slice(),
            })
            .collect()
    }
}

/// `width`-byte records `old` sorted by their leading u32 hash, with the records `add`
/// (sorted the same way) inserted (runs of `old` between them).
fn merge_in<'a>(old: &'a [u8], add: &[Vec<u8>], width: usize) -> SideOut<'a> {
    let mut out = SideOut::default();
    let mut from = 0;
    for record in add {
        let at = from + lower_bound(&old[from * width..], le32(record, 0), width);
        out.old(&old[from * width..at * width]);
        out.new_bytes(record.clone());
        from = at;
    }
    out.old(&old[from * width..]);
    out
}

/// Encode side data from its parts (the branch hashes and the result records given as
/// pieces, sorted by hash, with their record counts).
fn encode_side<'a>(
    head: (u64, usize, usize, &str),
    branch: (SideOut<'a>, usize),
    results: (SideOut<'a>, usize),
    open: &[(u32, String)],
) -> Option<SideOut<'a>> {
    let (highest_seq, events, lines, leaf) = head;
    let mut out = SideOut::default();
    let mut start = Vec::with_capacity(64 + leaf.len());
    start.extend_from_slice(SIDE_TAG);
    start.extend_from_slice(&highest_seq.to_le_bytes());
    put(&mut start, usize32(events)?);
    put(&mut start, usize32(lines)?);
    put_str(&mut start, leaf)?;
    put(&mut start, usize32(branch.1)?);
    out.new_bytes(start);
    out.append(branch.0);
    out.u32(usize32(results.1)?);
    out.append(results.0);
    let mut end = Vec::with_capacity(8 + 32 * open.len());
    put(&mut end, usize32(open.len())?);
    for (event, id) in open {
        put(&mut end, *event);
        put_str(&mut end, id)?;
    }
    out.new_bytes(end);
    Some(out)
}

/// The default leaf's id (the file's last entry) as the side data `side` stored beside
/// `projection` has it: `None` when the side is not valid or not that projection's.
pub fn stored_leaf(side: &[u8], projection: &Projection) -> Option<String> {
    let side = decode_side(side)?;
    (side.highest_seq == projection.highest_seq
        && side.events == projection.event_count()
        && side.lines == projection.line_count())
    .then_some(side.leaf)
}

fn decode_side(bytes: &[u8]) -> Option<Side<'_>> {
    let mut r = Reader { buf: bytes, at: 0 };
    if r.take(SIDE_TAG.len())? != SIDE_TAG {
        return None;
    }
    let highest_seq = r.u64()?;
    let events = r.u32()? as usize;
    let lines = r.u32()? as usize;
    let leaf = r.string()?;
    let n = r.count(BRANCH_BYTES)?;
    let branch = r.take(n * BRANCH_BYTES)?;
    let m = r.count(RESULT_BYTES)?;
    let results = r.take(m * RESULT_BYTES)?;
    let k = r.count(8)?;
    let mut open = Vec::with_capacity(k);
    for _ in 0..k {
        let event = r.u32()?;
        open.push((event, r.string()?));
    }
    // Both hash arrays are searched by bisection.
    let sorted = |b: &[u8], width: usize| {
        let mut previous = 0u32;
        b.chunks_exact(width).all(|w| {
            let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let ok = v >= previous;
            previous = v;
            ok
        })
    };
    if r.at != bytes.len() || !sorted(branch, BRANCH_BYTES) || !sorted(results, RESULT_BYTES) {
        return None;
    }
    Some(Side {
        highest_seq,
        events,
        lines,
        leaf,
        branch,
        results,
        open,
    })
}

/// The part of the side data ([`side_with`]) that needs only the session and the branch
/// (so it is computed beside the projection): the leaf's id and the sorted hashes of the
/// branch's entry ids.
pub struct SideIds<'s> {
    leaf: &'s str,
    branch_ids: Vec<u32>,
}

/// [`SideIds`] of `branch` (root→leaf) of `session`. `None` when the branch cannot be
/// extended in place: a file older than version 3 (its entries are migrated in memory), no
/// entries, a branch that does not end at the last entry, or a leaf without an id.
pub fn side_ids<'s>(session: &'s Session, branch: Branch<'_>) -> Option<SideIds<'s>> {
    if session.header.version < 3 {
        return None;
    }
    let leaf = branch.last()?;
    if leaf + 1 != session.entries.len() {
        return None;
    }
    let leaf = session.entries[leaf].id()?;
    let mut branch_ids: Vec<u32> = branch
        .iter()
        .filter_map(|i| session.entries[i].id().map(side_hash))
        .collect();
    branch_ids.sort_unstable();
    branch_ids.dedup();
    Some(SideIds { leaf, branch_ids })
}

/// The side data of a projection of the default branch whose [`SideIds`] are `ids`, from
/// what its build learnt of the branch's tool results and open calls. `None` when a value
/// is too wide for the format.
pub fn side_with(built: &Built<'_>, ids: SideIds<'_>) -> Option<SideOut<'static>> {
    let SideIds { leaf, branch_ids } = ids;
    let projection = &built.projection;
    // Every tool result of the branch is a line of the projection (an event, or the result
    // shown at its call): its record is its id's hash, that line and the id's place in it.
    let mut results: Vec<ResultRecord> = built
        .tool_results()
        .map(|r| (side_hash_of(r.hash), r.line, r.at.unwrap_or(UNKNOWN_AT)))
        .collect();
    if results.iter().any(|&(_, line, _)| line == NONE) {
        return None;
    }
    results.sort_unstable();
    let hashes: Vec<u8> = results.iter().flat_map(result_record_bytes).collect();
    let count = results.len();
    // Each array is freed once it is bytes: this runs at a cold call's peak (the build's
    // tables and the projection alive), and the copies took 1.5 MB of it on 225 k entries.
    drop(results);
    let open = built
        .open
        .iter()
        .map(|&(index, id)| Some((usize32(index)?, id.to_string())))
        .collect::<Option<Vec<_>>>()?;
    let branch_bytes: Vec<u8> = branch_ids.iter().flat_map(|h| h.to_le_bytes()).collect();
    let branch_count = branch_ids.len();
    drop(branch_ids);
    let (mut branch_out, mut hashes_out) = (SideOut::default(), SideOut::default());
    // The pieces are written to the index as they are (not joined first: another copy at
    // the peak).
    branch_out.new_bytes(branch_bytes);
    hashes_out.new_bytes(hashes);
    encode_side(
        (
            projection.highest_seq,
            projection.event_count(),
            projection.line_count(),
            leaf,
        ),
        (branch_out, branch_count),
        (hashes_out, count),
        &open,
    )
}

/// Tag of a delta.
const DELTA_TAG: &[u8; 4] = b"PD\x04\x00";

/// What the entries appended since an index file was written add to its stored projection
/// and side data (kept in the index's growth file, so an extension rewrites only this, not
/// the index file): new line and event records, patches of stored call events paired since
/// (event index, result line), new paired results, the windows and tool names as they are
/// now (few), the leaf, the hashes of the new branch ids and the new result ids (sorted),
/// and the open calls as they are now. [`apply`] gives the projection of the grown file,
/// [`merged_side`] its side data.
///
/// Layout: tag, the stored projection's event, line and paired counts (u32; the delta
/// applies to exactly that projection), `highest_seq` (u64), then counted arrays: line
/// records, event records, patches (u32 pairs), paired records, windows (as in the
/// projection), tool names, the leaf id, branch hashes (u32), results (u32 id hash, u32 line,
/// u32 id offset), open calls (u32 event and string).
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    base_events: usize,
    base_lines: usize,
    base_paired: usize,
    highest_seq: u64,
    lines: Vec<u8>,
    events: Vec<u8>,
    patches: Vec<(u32, u32)>,
    paired: Vec<u8>,
    windows: Vec<Window>,
    tool_names: Vec<String>,
    leaf: String,
    branch: Vec<u32>,
    /// Tool results appended since: their id's hash, their line and the id's place in it,
    /// sorted.
    results: Vec<ResultRecord>,
    open: Vec<(u32, String)>,
}

fn put_windows(out: &mut Vec<u8>, windows: &[Window]) -> Option<()> {
    put(out, usize32(windows.len())?);
    for window in windows {
        put_str(out, &window.window_id)?;
        match &window.created_at {
            None => out.push(0),
            Some(created) => {
                out.push(1);
                put_str(out, created)?;
            }
        }
        put(out, usize32(window.events.start)?);
        put(out, usize32(window.events.end)?);
    }
    Some(())
}

fn read_windows(r: &mut Reader<'_>) -> Option<Vec<Window>> {
    let n = r.count(9)?;
    let mut windows = Vec::with_capacity(n);
    for _ in 0..n {
        let window_id = r.string()?;
        let created_at = match r.take(1)?[0] {
            0 => None,
            1 => Some(r.string()?),
            _ => return None,
        };
        let (start, end) = (r.u32()? as usize, r.u32()? as usize);
        if start > end {
            return None;
        }
        windows.push(Window {
            window_id,
            created_at,
            events: start..end,
        });
    }
    Some(windows)
}

impl Delta {
    /// The default leaf's id once the delta's lines are added: the file's last entry.
    pub fn leaf(&self) -> &str {
        &self.leaf
    }

    /// The encoding (see the type docs); `None` when a value does not fit its width.
    pub fn encode(&self) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(
            64 + self.lines.len()
                + self.events.len()
                + self.paired.len()
                + self.patches.len() * 8
                + self.branch.len() * 8
                + (self.results.len() + self.open.len()) * 48
                + self.windows.len() * 64
                + self.tool_names.len() * 16,
        );
        out.extend_from_slice(DELTA_TAG);
        put(&mut out, usize32(self.base_events)?);
        put(&mut out, usize32(self.base_lines)?);
        put(&mut out, usize32(self.base_paired)?);
        out.extend_from_slice(&self.highest_seq.to_le_bytes());
        for (records, width) in [(&self.lines, LINE_BYTES), (&self.events, EVENT_BYTES)] {
            put(&mut out, usize32(records.len() / width)?);
            out.extend_from_slice(records);
        }
        put(&mut out, usize32(self.patches.len())?);
        for &(event, line) in &self.patches {
            put(&mut out, event);
            put(&mut out, line);
        }
        put(&mut out, usize32(self.paired.len() / 8)?);
        out.extend_from_slice(&self.paired);
        put_windows(&mut out, &self.windows)?;
        put(&mut out, usize32(self.tool_names.len())?);
        for name in &self.tool_names {
            put_str(&mut out, name)?;
        }
        put_str(&mut out, &self.leaf)?;
        put(&mut out, usize32(self.branch.len())?);
        for hash in &self.branch {
            out.extend_from_slice(&hash.to_le_bytes());
        }
        put(&mut out, usize32(self.results.len())?);
        for record in &self.results {
            out.extend_from_slice(&result_record_bytes(record));
        }
        put(&mut out, usize32(self.open.len())?);
        for (event, id) in &self.open {
            put(&mut out, *event);
            put_str(&mut out, id)?;
        }
        Some(out)
    }

    /// Decode an encoding; `None` for anything but a whole one (sorted hashes included).
    pub fn decode(bytes: &[u8]) -> Option<Delta> {
        let mut r = Reader { buf: bytes, at: 0 };
        if r.take(DELTA_TAG.len())? != DELTA_TAG {
            return None;
        }
        let base_events = r.u32()? as usize;
        let base_lines = r.u32()? as usize;
        let base_paired = r.u32()? as usize;
        let highest_seq = r.u64()?;
        let n = r.count(LINE_BYTES)?;
        let lines = r.take(n * LINE_BYTES)?.to_vec();
        let n = r.count(EVENT_BYTES)?;
        let events = r.take(n * EVENT_BYTES)?.to_vec();
        let n = r.count(8)?;
        let mut patches = Vec::with_capacity(n);
        for _ in 0..n {
            patches.push((r.u32()?, r.u32()?));
        }
        let n = r.count(8)?;
        let paired = r.take(n * 8)?.to_vec();
        let windows = read_windows(&mut r)?;
        let n = r.count(4)?;
        let mut tool_names = Vec::with_capacity(n);
        for _ in 0..n {
            tool_names.push(r.string()?);
        }
        let leaf = r.string()?;
        let n = r.count(BRANCH_BYTES)?;
        let mut branch = Vec::with_capacity(n);
        for _ in 0..n {
            branch.push(r.u32()?);
        }
        let n = r.count(RESULT_BYTES)?;
        let mut results = Vec::with_capacity(n);
        for _ in 0..n {
            results.push((r.u32()?, r.u32()?, r.u32()?));
        }
        let n = r.count(8)?;
        let mut open = Vec::with_capacity(n);
        for _ in 0..n {
            let event = r.u32()?;
            open.push((event, r.string()?));
        }
        let sorted =
            branch.windows(2).all(|w| w[0] < w[1]) && results.windows(2).all(|w| w[0] < w[1]);
        (r.at == bytes.len() && sorted && !windows.is_empty()).then_some(Delta {
            base_events,
            base_lines,
            base_paired,
            highest_seq,
            lines,
            events,
            patches,
            paired,
            windows,
            tool_names,
            leaf,
            branch,
            results,
            open,
        })
    }

    /// Whether this delta applies to the stored projection `sections`.
    fn fits(&self, sections: &Sections<'_>) -> bool {
        self.base_events == sections.n_events
            && self.base_lines == sections.n_lines
            && self.base_paired == sections.n_paired
    }
}

/// Whether the `toolCallId` of a stored tool result (its line, where its id's characters start
/// in it when known) is the id given; `None` when that cannot be read (see [`extend`]).
pub type ResultIdIs<'a> = dyn FnMut(Line, Option<u32>, &str) -> Option<bool> + 'a;

/// Extend the stored projection in `buf[at..]` (with its `side` data, and `prev`, the
/// encoded delta of the entries appended before, if any) of a session with header `header`
/// by `entries`, appended to the file since: the delta of every entry appended since the
/// stored projection, or `None` when the entries do not simply continue the default branch
/// — then the caller rebuilds the projection from the whole skeleton. Applied ([`apply`]),
/// it gives what [`Projection::build`] gives for the grown file (up to the order of
/// `lines`, which only `Source` indexes refer to): seqs continue over the new entries in
/// file order, a reset marker opens a window, events join the last window, a new tool
/// result is paired with the first open call of its id (its event record is patched) or
/// is an event of its own. `result_id_is` tells whether the `toolCallId` of the tool
/// result whose line is the one given, with the id's characters starting at the offset
/// given in it (`None` when not known), is the id given (asked of a stored result
/// whose id's hash an appended call's id shares; `None` gives up the extension).
pub fn extend(
    buf: &[u8],
    at: usize,
    side: &[u8],
    header: &Header,
    prev: Option<&[u8]>,
    entries: &[Entry],
    result_id_is: &mut ResultIdIs<'_>,
) -> Option<Delta> {
    if header.version < 3 {
        return None;
    }
    let sections = sections(buf.get(at..)?)?;
    let side = decode_side(side)?;
    if side.highest_seq != sections.highest_seq
        || side.events != sections.n_events
        || side.lines != sections.n_lines
    {
        return None;
    }
    let prev = match prev {
        Some(bytes) => Delta::decode(bytes)?,
        None => Delta {
            base_events: sections.n_events,
            base_lines: sections.n_lines,
            base_paired: sections.n_paired,
            highest_seq: sections.highest_seq,
            lines: Vec::new(),
            events: Vec::new(),
            patches: Vec::new(),
            paired: Vec::new(),
            windows: sections.windows.clone(),
            tool_names: sections.tool_names.clone(),
            leaf: side.leaf.clone(),
            branch: Vec::new(),
            results: Vec::new(),
            open: side.open.clone(),
        },
    };
    if !prev.fits(&sections) {
        return None;
    }
    let Delta {
        base_events: n_old,
        base_lines,
        base_paired,
        mut highest_seq,
        mut lines,
        mut events,
        mut patches,
        mut paired,
        mut windows,
        tool_names,
        mut leaf,
        mut branch,
        results,
        open,
    } = prev;
    let old_events = sections.events();
    let mut tools = ToolNames::numbering(tool_names);
    let mut tool = |name: Option<&str>| tools.number(name);
    let mut open: FxHashMap<String, u32> =
        open.into_iter().map(|(event, id)| (id, event)).collect();
    let mut new_ids: FxHashSet<u32> = FxHashSet::default();
    let mut new_result_ids: FxHashSet<String> = FxHashSet::default();
    let mut new_results: Vec<ResultRecord> = Vec::new();
    let mut line_count = base_lines + lines.len() / LINE_BYTES;
    lines.reserve(entries.len() * LINE_BYTES);
    events.reserve(entries.len() * 64);
    // The first appended entry was decoded without the one before it (in the index), so its
    // parent is its own.
    let mut before = None;
    for entry in entries {
        // Only a chain that continues the default branch is extended in place.
        let id = entry.id()?;
        if entry.parent_id(before) != Some(leaf.as_str()) {
            return None;
        }
        before = Some(entry);
        let hash = side_hash(id);
        if side.on_branch(hash) || branch.binary_search(&hash).is_ok() || !new_ids.insert(hash) {
            return None;
        }
        leaf = id.to_string();
        let seq = highest_seq + 1;
        highest_seq += seq_count(&entry.kind);
        let window = windows.len() - 1;
        if let Some(window_id) = marker_window(&entry.kind) {
            let at = n_old + events.len() / EVENT_BYTES;
            windows.push(Window {
                window_id: window_id.to_string(),
                created_at: entry.timestamp().map(str::to_string),
                events: at..at,
            });
            continue;
        }
        if seq_count(&entry.kind) == 0 {
            continue;
        }
        let line = line_count;
        line_count += 1;
        put_line(
            &mut lines,
            &Line {
                offset: entry.offset,
                len: entry.line_len(),
                escapes: entry.escapes(),
                nested_calls: entry.has_nested_calls(),
            },
        )?;
        let text = |role, has_text| Event {
            seq,
            window,
            role,
            source: Source::Text { entry: line },
            has_text,
            tool_name: NO_TOOL,
        };
        match shown(&entry.kind) {
            Shown::Text { role, has_text } => put_event(&mut events, &text(role, has_text))?,
            Shown::Result(m) => {
                let id = m.tool_call_id().filter(|id| !id.is_empty());
                match id.and_then(|id| open.remove(id)) {
                    Some(call) => {
                        // The first result of an open call's id: shown at the call.
                        let line = usize32(line)?;
                        let call = call as usize;
                        let call_seq = if call < n_old {
                            patches.push((usize32(call)?, line));
                            le32(old_events.get(call * EVENT_BYTES..)?, 0)
                        } else {
                            let at = (call - n_old) * EVENT_BYTES;
                            let record = events.get_mut(at..at + EVENT_BYTES)?;
                            record[RESULT_AT..RESULT_AT + 4].copy_from_slice(&line.to_le_bytes());
                            le32(record, 0)
                        };
                        let call_seq = u64::from(call_seq);
                        put(&mut paired, u32_of(seq)?);
                        put(&mut paired, u32_of(call_seq)?);
                    }
                    None => put_event(
                        &mut events,
                        &Event {
                            seq,
                            window,
                            role: EventRole::Tool,
                            source: Source::Result { entry: line },
                            has_text: true,
                            tool_name: tool(m.tool_name()),
                        },
                    )?,
                }
                if let Some(id) = id
                    && new_result_ids.insert(id.to_string())
                {
                    new_results.push((
                        side_hash(id),
                        usize32(line)?,
                        m.tool_call_id_at().unwrap_or(UNKNOWN_AT),
                    ));
                }
            }
            Shown::Bash => put_event(
                &mut events,
                &Event {
                    seq,
                    window,
                    role: EventRole::Tool,
                    source: Source::Bash { entry: line },
                    has_text: true,
                    tool_name: tool(Some("bash")),
                },
            )?,
            Shown::Nothing => {}
        }
        if let EntryKind::Message(m) = &entry.kind
            && m.role == Role::Assistant
        {
            for (block, call) in m.tool_calls.iter().enumerate() {
                let index = usize32(n_old + events.len() / EVENT_BYTES)?;
                if let Some(id) = call.id.as_deref().filter(|id| !id.is_empty()) {
                    // A call whose id already has a result stays unpaired. Earlier
                    // results are known by hash, line and the id's place in it: a
                    // hit is compared with the id read back from there (a line that
                    // cannot be read rebuilds).
                    let hash = side_hash(id);
                    let mut known = new_result_ids.contains(id);
                    let earlier = side.result_lines(hash).chain(
                        results
                            .iter()
                            .skip(results.partition_point(|r| r.0 < hash))
                            .take_while(|r| r.0 == hash)
                            .map(|r| (r.1, r.2)),
                    );
                    for (line, id_at) in earlier {
                        if known {
                            break;
                        }
                        let line = line as usize;
                        let at = if line < base_lines {
                            sections.line(line)?
                        } else {
                            let at = (line - base_lines) * LINE_BYTES;
                            Line::read(lines.get(at..at + LINE_BYTES)?)
                        };
                        let id_at = (id_at != UNKNOWN_AT).then_some(id_at);
                        known = result_id_is(at, id_at, id)?;
                    }
                    if !known {
                        open.entry(id.to_string()).or_insert(index);
                    }
                }
                put_event(
                    &mut events,
                    &Event {
                        seq: seq + 1 + block as u64,
                        window,
                        role: EventRole::Tool,
                        source: Source::Call {
                            entry: line,
                            block,
                            result: None,
                        },
                        has_text: true,
                        tool_name: tool(call.name.as_deref()),
                    },
                )?;
            }
        }
        let count = n_old + events.len() / EVENT_BYTES;
        windows.last_mut()?.events.end = count;
    }
    let mut open: Vec<(u32, String)> = open.into_iter().map(|(id, e)| (e, id)).collect();
    open.sort_unstable();
    branch.extend(new_ids);
    branch.sort_unstable();
    // A result whose id had a result before gets a record too (lookups read every line
    // with the hash): rare, and deciding it would mean reading those lines.
    let mut results = results;
    results.extend(new_results);
    results.sort_unstable();
    Some(Delta {
        base_events: n_old,
        base_lines,
        base_paired,
        highest_seq,
        lines,
        events,
        patches,
        paired,
        windows,
        tool_names: tools.into_names(),
        leaf,
        branch,
        results,
        open,
    })
}

/// The stored projection in `buf[at..]` with `delta` applied: the encoding of the grown
/// file's projection, extended in its own buffer (new pages only for what grows): the
/// stored events move up to make room for the new lines, the new events follow them,
/// patched calls get their result line, then windows, paired results and tool names are
/// written anew. `None` when the delta does not belong to this projection.
pub fn apply(mut buf: Vec<u8>, at: usize, delta: &Delta) -> Option<Vec<u8>> {
    let sections = sections(buf.get(at..)?)?;
    if !delta.fits(&sections) {
        return None;
    }
    let mut tail = Vec::with_capacity(sections.paired().len() + delta.paired.len() + 4096);
    put_tail(
        &mut tail,
        &delta.windows,
        [sections.paired(), &delta.paired],
        &delta.tool_names,
    )?;
    let lines_end = at + sections.lines_at + sections.n_lines * LINE_BYTES;
    let events_end = at + sections.events_at + sections.n_events * EVENT_BYTES;
    let n_old = sections.n_events;
    let line_count = sections.n_lines + delta.lines.len() / LINE_BYTES;
    let event_count = n_old + delta.events.len() / EVENT_BYTES;
    let grow = delta.lines.len();
    buf.truncate(events_end);
    buf.reserve(grow + delta.events.len() + tail.len());
    buf.resize(events_end + grow, 0);
    buf.copy_within(lines_end..events_end, lines_end + grow);
    buf[lines_end..lines_end + grow].copy_from_slice(&delta.lines);
    buf[at + 4..at + 12].copy_from_slice(&delta.highest_seq.to_le_bytes());
    buf[at + 12..at + 16].copy_from_slice(&usize32(line_count)?.to_le_bytes());
    let events_at = lines_end + grow + 4;
    buf[events_at - 4..events_at].copy_from_slice(&usize32(event_count)?.to_le_bytes());
    buf.extend_from_slice(&delta.events);
    buf.extend_from_slice(&tail);
    for &(event, line) in &delta.patches {
        let event = event as usize;
        if event >= n_old {
            return None;
        }
        let at = events_at + event * EVENT_BYTES + 12;
        buf.get_mut(at..at + 4)?
            .copy_from_slice(&line.to_le_bytes());
    }
    Some(buf)
}

/// The side data of the stored projection's `side` with `delta` applied (in pieces: runs of
/// the stored side and the few new values between them).
pub fn merged_side<'s>(side: &'s [u8], delta: &Delta) -> Option<SideOut<'s>> {
    let side = decode_side(side)?;
    let event_count = delta.base_events + delta.events.len() / EVENT_BYTES;
    let line_count = delta.base_lines + delta.lines.len() / LINE_BYTES;
    let branch_count = side.branch.len() / BRANCH_BYTES + delta.branch.len();
    let added: Vec<Vec<u8>> = delta
        .branch
        .iter()
        .map(|h| h.to_le_bytes().to_vec())
        .collect();
    let branch = merge_in(side.branch, &added, BRANCH_BYTES);
    let results_count = side.results.len() / RESULT_BYTES + delta.results.len();
    let added: Vec<Vec<u8>> = delta
        .results
        .iter()
        .map(|record| result_record_bytes(record).to_vec())
        .collect();
    let result_records = merge_in(side.results, &added, RESULT_BYTES);
    encode_side(
        (delta.highest_seq, event_count, line_count, &delta.leaf),
        (branch, branch_count),
        (result_records, results_count),
        &delta.open,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::projection::Records;

    fn event(seq: u64, window: usize, role: EventRole, source: Source, tool: u32) -> Event {
        Event {
            seq,
            window,
            role,
            source,
            has_text: seq.is_multiple_of(2),
            tool_name: tool,
        }
    }

    #[test]
    fn an_event_record_reads_back_every_field_at_its_widths_limits() {
        let roles = [
            EventRole::User,
            EventRole::Assistant,
            EventRole::Tool,
            EventRole::Context,
        ];
        let sources = [
            Source::Text { entry: 7 },
            Source::Call {
                entry: u32::MAX as usize - 1,
                block: 65_534,
                result: Some(u32::MAX as usize - 1),
            },
            Source::Call {
                entry: 0,
                block: 0,
                result: None,
            },
            Source::Result { entry: 1 },
            Source::Bash { entry: 2 },
        ];
        let mut seq = 1;
        for role in roles {
            for source in sources {
                for (window, tool) in [(0, NO_TOOL), (65_534, 65_534), (3, 0)] {
                    seq += 1;
                    let e = event(seq, window, role, source, tool);
                    let mut out = Vec::new();
                    put_event(&mut out, &e).unwrap();
                    assert_eq!(out.len(), EVENT_BYTES);
                    assert_eq!(event_of(&out), Some(e));
                    // The in-place patch of a paired call writes here.
                    if let Source::Call {
                        result: Some(r), ..
                    } = source
                    {
                        assert_eq!(le32(&out, RESULT_AT) as usize, r);
                    }
                }
            }
        }
    }

    #[test]
    fn a_value_past_an_event_records_widths_is_refused_not_truncated() {
        let text = Source::Text { entry: 0 };
        let call = |block| Source::Call {
            entry: 0,
            block,
            result: None,
        };
        for e in [
            event(1, 65_535, EventRole::User, text, NO_TOOL),
            event(1, 0, EventRole::Tool, text, 65_535),
            event(1, 0, EventRole::Tool, call(65_535), 0),
            event(u64::from(u32::MAX), 0, EventRole::User, text, NO_TOOL),
        ] {
            assert_eq!(put_event(&mut Vec::new(), &e), None, "{e:?}");
        }
        // A record with a flag bit or the zero byte set is not an event.
        let mut out = Vec::new();
        put_event(&mut out, &event(2, 0, EventRole::User, text, NO_TOOL)).unwrap();
        for (at, bit) in [(18, 0x20), (19, 1)] {
            let mut bad = out.clone();
            bad[at] |= bit;
            assert_eq!(event_of(&bad), None);
        }
        // Nor is one whose block is the value that stands for none.
        let mut bad = out.clone();
        bad[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
        assert_eq!(event_of(&bad), None);
    }

    /// The record check a stored projection gets (`EventCheck`, written without branches)
    /// refuses and accepts what a check through `event_of` refuses and accepts, and finds the
    /// same line runs as the rule written out plainly: records drawn around every bound.
    #[test]
    fn the_event_check_agrees_with_reading_each_event() {
        use proptest::prelude::*;
        fn plainly(
            records: &[[u8; EVENT_BYTES]],
            lines: usize,
            windows: usize,
            tools: usize,
        ) -> Option<bool> {
            let (mut previous, mut run_entry, mut highest, mut broken) = (0u64, None, None, false);
            let mut new_line = |line: usize, highest: &mut Option<usize>| {
                broken |= highest.is_some_and(|h| line <= h);
                *highest = Some(highest.map_or(line, |h: usize| h.max(line)));
            };
            for b in records {
                let e = event_of(b)?;
                let result = match e.source {
                    Source::Call { result, .. } => result,
                    _ => None,
                };
                if e.source.entry() >= lines
                    || result.is_some_and(|r| r >= lines)
                    || e.window >= windows
                    || (e.tool_name != NO_TOOL && e.tool_name as usize >= tools)
                    || e.seq <= previous
                {
                    return None;
                }
                previous = e.seq;
                if run_entry != Some(e.source.entry()) {
                    run_entry = Some(e.source.entry());
                    new_line(e.source.entry(), &mut highest);
                }
                if let Some(r) = result {
                    new_line(r, &mut highest);
                }
            }
            Some(!broken)
        }
        // Mostly valid records (each field rarely past its bound), so that most draws get
        // as far as the line runs.
        let record = (
            prop_oneof![9 => 1u32..3, 1 => Just(0u32)],
            prop_oneof![20 => 0u32..5, 1 => Just(5u32), 1 => Just(u32::MAX)],
            prop_oneof![20 => 0u16..2, 1 => Just(u16::MAX - 1), 1 => Just(u16::MAX)],
            prop_oneof![20 => 0u16..3, 1 => Just(3u16)],
            prop_oneof![5 => Just(NONE), 10 => 0u32..5, 1 => Just(5u32)],
            prop_oneof![5 => Just(NO_TOOL16), 10 => 0u16..2, 1 => Just(2u16)],
            prop_oneof![20 => 0u8..32, 1 => 32u8..=255],
            prop_oneof![20 => Just(0u8), 1 => Just(1u8)],
        );
        let mut runner =
            proptest::test_runner::TestRunner::new(proptest::test_runner::Config::with_cases(2048));
        runner
            .run(&proptest::collection::vec(record, 0..8), |drawn| {
                let mut seq = 0u32;
                let records: Vec<[u8; EVENT_BYTES]> = drawn
                    .iter()
                    .map(|&(step, entry, block, window, result, tool, flags, pad)| {
                        seq = seq.wrapping_add(step);
                        let mut b = [0u8; EVENT_BYTES];
                        b[0..4].copy_from_slice(&seq.to_le_bytes());
                        b[4..8].copy_from_slice(&entry.to_le_bytes());
                        b[8..10].copy_from_slice(&block.to_le_bytes());
                        b[10..12].copy_from_slice(&window.to_le_bytes());
                        b[RESULT_AT..RESULT_AT + 4].copy_from_slice(&result.to_le_bytes());
                        b[16..18].copy_from_slice(&tool.to_le_bytes());
                        b[18] = flags;
                        b[19] = pad;
                        b
                    })
                    .collect();
                let (lines, windows, tools) = (5, 3, 2);
                // Checked in two parts, as a stored projection and its delta are.
                let cut = records.len() / 2;
                let mut check = EventCheck::new(lines, windows, tools);
                check.records(records[..cut].as_flattened());
                check.records(records[cut..].as_flattened());
                prop_assert_eq!(
                    check.lines_in_runs(),
                    plainly(&records, lines, windows, tools)
                );
                // `LineRuns::see`, which a built projection uses, finds the same runs.
                if plainly(&records, lines, windows, tools).is_some() {
                    let mut runs = LineRuns::default();
                    records
                        .iter()
                        .for_each(|b| runs.see(event_of(b).unwrap().source));
                    prop_assert_eq!(Some(runs.hold()), plainly(&records, lines, windows, tools));
                }
                Ok(())
            })
            .unwrap();
    }

    /// A projection's array is built in its flat encoding until a record does not fit it;
    /// from there it is kept as values, the records before it included, and reads back the
    /// same either way.
    #[test]
    fn records_built_packed_turn_to_values_at_the_first_that_does_not_fit() {
        let text = Source::Text { entry: 3 };
        let fitting: Vec<Event> = (1..=5)
            .map(|seq| event(seq, 1, EventRole::User, text, NO_TOOL))
            .collect();
        let past = event(6, 65_535, EventRole::Assistant, text, NO_TOOL);
        let after = event(7, 2, EventRole::Tool, Source::Bash { entry: 9 }, 4);

        let mut packed = Records::with_capacity(2);
        fitting.iter().for_each(|&e| packed.push(e));
        assert_eq!(packed.len(), 5);
        let store = packed.into_store();
        assert!(matches!(&store, Store::Packed(bytes) if bytes.len() == 5 * EVENT_BYTES));
        let read: Vec<Event> = (0..5).map(|i| store.get(&[], &[], i)).collect();
        assert_eq!(read, fitting);

        let mut turned = Records::with_capacity(8);
        fitting.iter().for_each(|&e| turned.push(e));
        turned.push(past);
        turned.push(after);
        assert_eq!(turned.len(), 7);
        let store = turned.into_store();
        let Store::Owned(values) = &store else {
            panic!("a record past the widths keeps the array as values");
        };
        let mut expected = fitting.clone();
        expected.extend([past, after]);
        assert_eq!(values, &expected);

        // A line too long for its record turns the lines to values too.
        let mut lines = Records::with_capacity(1);
        let short = Line {
            offset: 1 << 40,
            len: (1 << 30) - 1,
            escapes: true,
            nested_calls: true,
        };
        let long = Line {
            offset: 0,
            len: 1 << 30,
            escapes: false,
            nested_calls: false,
        };
        lines.push(short);
        // The longest line a record holds reads back with both its bits.
        let Store::Packed(bytes) = lines.into_store() else {
            panic!("a line that fits is packed")
        };
        assert_eq!(Line::read(&bytes), short);
        let mut lines = Records::with_capacity(1);
        lines.push(short);
        lines.push(long);
        let store = lines.into_store();
        assert!(matches!(&store, Store::Owned(v) if v == &[short, long]));
    }
}
