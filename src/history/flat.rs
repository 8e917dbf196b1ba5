//! The projection of a session's default branch as flat, fixed-width arrays: the extra data
//! history stores in the session index (`crate::session::index`), so a call on an unchanged
//! session reads it back with one pass over a few arrays — no per-entry decode, hashing or
//! string allocation — and decodes only the lines of the events it shows.
//!
//! Layout (little-endian): a tag and version, `highest_seq` (u64), then counted arrays:
//! lines (offset u64, len u32, line_no u32 whose top bit is `escapes`), events (seq, window, entry, result, block, tool
//! name: u32 each, then role, source kind, has_text: one byte each, one zero byte), windows
//! (id, created_at, first and end event), paired results (result seq, call seq: u32 each),
//! tool names. Strings are a u32 length and UTF-8 bytes. A projection with a value that does
//! not fit these widths is not stored. Decoding checks every length and cross-reference, so a
//! damaged blob (which the index checksum already rejects) can only read as `None`.

use super::projection::{
    Event, EventRole, Line, NO_TOOL, Projection, Record, Source, Store, Window,
};

const TAG: &[u8; 4] = b"PJ\x01\x00";
const LINE_BYTES: usize = 16;
const EVENT_BYTES: usize = 28;
const NONE: u32 = u32::MAX;

/// Encode `projection`; `None` when a value does not fit the format's widths.
pub fn encode(projection: &Projection) -> Option<Vec<u8>> {
    let u32_of = |v: u64| u32::try_from(v).ok().filter(|&v| v != NONE);
    let usize32 = |v: usize| u32::try_from(v).ok().filter(|&v| v != NONE);
    let mut out = Vec::with_capacity(
        64 + projection.line_count() * LINE_BYTES + projection.event_count() * EVENT_BYTES,
    );
    let put = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
    let put_str = |out: &mut Vec<u8>, s: &str| -> Option<()> {
        out.extend_from_slice(&usize32(s.len())?.to_le_bytes());
        out.extend_from_slice(s.as_bytes());
        Some(())
    };
    out.extend_from_slice(TAG);
    out.extend_from_slice(&projection.highest_seq.to_le_bytes());
    put(&mut out, usize32(projection.line_count())?);
    for line in (0..projection.line_count()).map(|i| projection.line(i)) {
        out.extend_from_slice(&line.offset.to_le_bytes());
        put(&mut out, u32_of(line.len)?);
        // The top bit of the line number holds `escapes`.
        let line_no = u32_of(line.line_no).filter(|&n| n < 1 << 31)?;
        put(&mut out, line_no | u32::from(line.escapes) << 31);
    }
    put(&mut out, usize32(projection.event_count())?);
    for event in projection.events() {
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
        put(&mut out, u32_of(event.seq)?);
        put(&mut out, usize32(event.window)?);
        put(&mut out, usize32(entry)?);
        put(&mut out, result.map_or(Some(NONE), usize32)?);
        put(&mut out, usize32(block)?);
        put(&mut out, event.tool_name);
        let role = match event.role {
            EventRole::User => 0u8,
            EventRole::Assistant => 1,
            EventRole::Tool => 2,
            EventRole::Context => 3,
        };
        out.extend_from_slice(&[role, kind, u8::from(event.has_text), 0]);
    }
    put(&mut out, usize32(projection.windows.len())?);
    for window in &projection.windows {
        put_str(&mut out, &window.window_id)?;
        match &window.created_at {
            None => out.push(0),
            Some(created) => {
                out.push(1);
                put_str(&mut out, created)?;
            }
        }
        put(&mut out, usize32(window.events.start)?);
        put(&mut out, usize32(window.events.end)?);
    }
    let paired: Vec<(u64, u64)> = projection.paired_results().collect();
    put(&mut out, usize32(paired.len())?);
    for &(result, call) in &paired {
        put(&mut out, u32_of(result)?);
        put(&mut out, u32_of(call)?);
    }
    put(&mut out, usize32(projection.tool_names.len())?);
    for name in &projection.tool_names {
        put_str(&mut out, name)?;
    }
    Some(out)
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

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from(le32(b, at)) | u64::from(le32(b, at + 4)) << 32
}

impl Record for Line {
    const BYTES: usize = LINE_BYTES;
    fn read(b: &[u8]) -> Line {
        Line {
            offset: le64(b, 0),
            len: u64::from(le32(b, 8)),
            line_no: u64::from(le32(b, 12) & !(1 << 31)),
            escapes: le32(b, 12) >> 31 == 1,
        }
    }
}

impl Record for (u64, u64) {
    const BYTES: usize = 8;
    fn read(b: &[u8]) -> (u64, u64) {
        (u64::from(le32(b, 0)), u64::from(le32(b, 4)))
    }
}

/// An event record's fields, or `None` when a byte is out of range.
fn event_of(b: &[u8]) -> Option<Event> {
    let (entry, result, block) = (le32(b, 8) as usize, le32(b, 12), le32(b, 16) as usize);
    let role = match b[24] {
        0 => EventRole::User,
        1 => EventRole::Assistant,
        2 => EventRole::Tool,
        3 => EventRole::Context,
        _ => return None,
    };
    let source = match b[25] {
        0 => Source::Text { entry },
        1 => Source::Call {
            entry,
            block,
            result: (result != NONE).then_some(result as usize),
        },
        2 => Source::Result { entry },
        3 => Source::Bash { entry },
        _ => return None,
    };
    if b[26] > 1 || b[27] != 0 {
        return None;
    }
    Some(Event {
        seq: u64::from(le32(b, 0)),
        window: le32(b, 4) as usize,
        role,
        source,
        has_text: b[26] == 1,
        tool_name: le32(b, 20),
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
}

/// Decode the projection encoded in `buf[at..]` of the session `session_id`, keeping `buf`:
/// its arrays are read in place. `None` for anything but a whole, self-consistent encoding.
pub fn decode(buf: Vec<u8>, at: usize, session_id: &str) -> Option<Projection> {
    let bytes = buf.get(at..)?;
    let mut r = Reader { buf: bytes, at: 0 };
    if r.take(TAG.len())? != TAG {
        return None;
    }
    let highest_seq = r.u64()?;
    let n_lines = r.count(LINE_BYTES)?;
    let lines_at = at + r.at;
    r.take(n_lines * LINE_BYTES)?;
    let n_events = r.count(EVENT_BYTES)?;
    let events_at = at + r.at;
    let raw_events = r.take(n_events * EVENT_BYTES)?;
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
    let paired_at = at + r.at;
    let raw_paired = r.take(n_paired * 8)?;
    let n_tools = r.count(4)?;
    let mut tool_names = Vec::with_capacity(n_tools);
    for _ in 0..n_tools {
        tool_names.push(r.string()?);
    }
    if r.at != bytes.len() || windows.is_empty() {
        return None;
    }
    // Every record must read back and refer to what exists, in ascending order.
    let mut previous = 0u64;
    for b in raw_events.chunks_exact(EVENT_BYTES) {
        let e = event_of(b)?;
        let line_ok = |i: usize| i < n_lines;
        let lines_ok = match e.source {
            Source::Call { entry, result, .. } => line_ok(entry) && result.is_none_or(line_ok),
            other => line_ok(other.entry()),
        };
        if !lines_ok
            || e.window >= windows.len()
            || (e.tool_name != NO_TOOL && e.tool_name as usize >= tool_names.len())
            || e.seq <= previous
        {
            return None;
        }
        previous = e.seq;
    }
    let mut previous = 0u64;
    for b in raw_paired.chunks_exact(8) {
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
            at: events_at,
            len: n_events,
        },
        paired: Store::Flat {
            at: paired_at,
            len: n_paired,
        },
        lines: Store::Flat {
            at: lines_at,
            len: n_lines,
        },
        tool_names,
        flat: buf,
    })
}
