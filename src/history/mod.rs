//! The history projection of a Pi session and the four history operations — windows, list,
//! search, read — with their bounded results and model-facing texts (`docs/spec/history.md`,
//! pi-context 0.35.0, snake_case wire fields). Each operation reads the session once through
//! `crate::session`, projects the active branch from the light skeleton, and decodes full
//! entries only for the events it shows (list, read) or that may match (search). It never
//! writes, prints, reads the environment or the clock; the CLI layer turns a [`Rendered`] or a
//! [`HistoryError`] into the envelope.
//!
//! ```no_run
//! use pi_context::history::{self, ListOptions};
//! let page = history::list(
//!     "session.jsonl".as_ref(),
//!     None,
//!     &ListOptions::default(),
//!     &history::IndexMode::Off,
//! )
//! .expect("a readable session");
//! println!("{}", page.text);
//! ```

pub mod document;
mod flat;
pub mod jsjson;
mod literal;
pub mod matcher;
pub mod page;
pub mod projection;
pub mod read;
mod scan;

use crate::window::{PastEnd, Reading};
use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

pub use document::{Document, Loader, ToolFacts, ToolStatus};
use projection::Bytes;
pub use projection::{Event, EventRole, Projection, Window};
pub use read::ReadOptions;

use crate::envelope::{
    DomainError, ErrorClass, OUTPUT_BUDGET_BYTES, Refusal, fits, largest_fitting_from,
};
use crate::session::{Branch, Reopened, Session, SessionError, SessionFile};
pub use crate::session::{IndexMode, IndexUse};
use crate::words::{plural, seq_range};
use matcher::DocKind;
use page::{PageSpec, RowSource, Visible};

/// Default `limit` of list and search pages.
pub const DEFAULT_LIMIT: usize = 20;
/// Default `max_chars_per_item`.
pub const DEFAULT_MAX_CHARS_PER_ITEM: usize = 1200;
/// Window ids reported with `unknown_window_id`.
const KNOWN_WINDOWS_REPORTED: usize = 25;

/// A successful, bounded result: the `data` of the envelope and the text rendered from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub data: Value,
    pub text: String,
}

/// Why a history operation refused. Each variant has a stable code and class
/// ([`DomainError`]); its message is the refusal's.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("unknown window_id {}", serde_json::to_string(window_id).unwrap_or_default())]
    UnknownWindowId {
        window_id: String,
        known: Vec<String>,
    },
    #[error("{0}")]
    InvalidQuery(String),
    #[error(
        "{rows} history rows and their fold summary do not fit one response even at their smallest; narrow the range with before/after or read one seq"
    )]
    PageTooLarge { rows: usize },
    #[error("The session identity does not fit one history_windows response.")]
    WindowsTooLarge,
    #[error("The response metadata leaves no room for a progressing read window.")]
    ReadTooLarge {
        total_chars: usize,
        offset_chars: usize,
    },
    /// Past the highest seq.
    #[error("unknown seq {seq}: this session's items run 1..{highest_seq}")]
    UnknownSeq { seq: u64, highest_seq: u64 },
    /// On the branch but no readable event.
    #[error("seq {seq} is on this branch but carries no readable event")]
    NoEvent { seq: u64 },
    #[error("seq {seq} is on another branch and is not readable here")]
    NotOnBranch { seq: u64 },
    #[error(
        "seq {seq} is a tool result already shown inside the call at seq {read_seq}; read that seq instead"
    )]
    NotAnEvent { seq: u64, read_seq: u64 },
    #[error("{}", past.message(Reading::HistoryItem))]
    InvalidOffset {
        seq: u64,
        window_id: String,
        past: PastEnd,
    },
}

impl HistoryError {
    /// The stable refusal code.
    pub fn code(&self) -> &'static str {
        match self {
            HistoryError::Session(e) => e.code(),
            HistoryError::UnknownWindowId { .. } => "unknown_window_id",
            HistoryError::InvalidQuery(_) => "invalid_query",
            HistoryError::PageTooLarge { .. } => "page_too_large",
            HistoryError::WindowsTooLarge | HistoryError::ReadTooLarge { .. } => "output_too_large",
            HistoryError::UnknownSeq { .. } | HistoryError::NoEvent { .. } => "unknown_seq",
            HistoryError::NotOnBranch { .. } => "not_on_branch",
            HistoryError::NotAnEvent { .. } => "not_an_event",
            HistoryError::InvalidOffset { .. } => "invalid_offset",
        }
    }

    /// The bounded refusal for the envelope.
    pub fn to_refusal(&self) -> Refusal {
        Refusal::new(self.code(), self.to_string(), self.details())
    }

    /// The structured facts of the refusal.
    fn details(&self) -> Option<Value> {
        match self {
            HistoryError::Session(SessionError::UnknownLeaf { leaf }) => {
                Some(json!({ "leaf": leaf }))
            }
            HistoryError::Session(_)
            | HistoryError::InvalidQuery(_)
            | HistoryError::WindowsTooLarge => None,
            HistoryError::UnknownWindowId { window_id, known } => {
                let mut details = json!({
                    "window_id": window_id,
                    "known_windows": known.iter().take(KNOWN_WINDOWS_REPORTED).collect::<Vec<_>>(),
                });
                if known.len() > KNOWN_WINDOWS_REPORTED {
                    details["known_windows_omitted"] = json!(known.len() - KNOWN_WINDOWS_REPORTED);
                }
                Some(details)
            }
            HistoryError::PageTooLarge { rows } => Some(json!({ "rows": rows })),
            HistoryError::ReadTooLarge {
                total_chars,
                offset_chars,
            } => Some(json!({
                "total_chars": total_chars,
                "offset_chars": offset_chars,
                "budget_bytes": crate::envelope::OUTPUT_BUDGET_BYTES,
            })),
            HistoryError::UnknownSeq { seq, highest_seq } => {
                Some(json!({ "seq": seq, "highest_seq": highest_seq }))
            }
            HistoryError::NoEvent { seq } | HistoryError::NotOnBranch { seq } => {
                Some(json!({ "seq": seq }))
            }
            HistoryError::NotAnEvent { seq, read_seq } => {
                Some(json!({ "seq": seq, "read_seq": read_seq }))
            }
            HistoryError::InvalidOffset {
                seq,
                window_id,
                past,
            } => Some(json!({
                "seq": seq,
                "window_id": window_id,
                "offset_chars": past.offset_chars,
                "total_chars": past.total,
            })),
        }
    }
}

impl DomainError for HistoryError {
    fn code(&self) -> &'static str {
        HistoryError::code(self)
    }

    fn class(&self) -> ErrorClass {
        match self {
            HistoryError::Session(e) => e.class(),
            _ => ErrorClass::Refused,
        }
    }

    fn to_refusal(&self) -> Refusal {
        HistoryError::to_refusal(self)
    }
}

/// The shared filters of list and search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOptions {
    /// Max event rows (≥ 1).
    pub limit: usize,
    /// `None`: list shows the conversation view (non-empty user/assistant events, the rest
    /// folded); search searches every role.
    pub roles: Option<Vec<EventRole>>,
    /// Exclusive upper seq bound.
    pub before: Option<u64>,
    /// Exclusive lower seq bound.
    pub after: Option<u64>,
    pub window_id: Option<String>,
    /// Preview length in code points (≥ 1).
    pub max_chars_per_item: usize,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions {
            limit: DEFAULT_LIMIT,
            roles: None,
            before: None,
            after: None,
            window_id: None,
            max_chars_per_item: DEFAULT_MAX_CHARS_PER_ITEM,
        }
    }
}

/// An opened session with its active-branch projection.
pub struct Opened {
    /// The session file (for decoding the lines of shown events) and its header.
    pub file: SessionFile,
    pub projection: Projection,
    /// How the session index was used; reported as `data.index`.
    pub index: IndexUse,
}

/// Read `path` without an index and project the branch ending at `leaf` (default: the last
/// entry).
pub fn open(path: &Path, leaf: Option<&str>) -> Result<Opened, HistoryError> {
    open_with(path, leaf, &IndexMode::Off)
}

/// [`open`] through the session index as `index` allows.
pub fn open_with(
    path: &Path,
    leaf: Option<&str>,
    index: &IndexMode<'_>,
) -> Result<Opened, HistoryError> {
    Ok(open_testing_lines(path, leaf, None, index)?.0)
}

/// Open through an index that stores the default branch's projection (see `flat`): no
/// skeleton is decoded. When complete lines were appended since, they alone are decoded and
/// the stored projection is extended by them (`flat::extend`, a delta since the index file,
/// applied in place by `flat::apply`) and the delta written back (or, once it is large, the
/// whole index). An explicit `leaf` is answered so only when it is the default one, the
/// file's last entry ([`project_reopened`]).
/// `None` when that is not possible (the caller then builds the projection from the
/// skeleton).
fn open_reused(
    path: &Path,
    leaf: Option<&str>,
    index: &IndexMode<'_>,
) -> Result<Option<Opened>, HistoryError> {
    match reopen(path, index)? {
        Some(reopened) => project_reopened(reopened, leaf),
        None => Ok(None),
    }
}

/// [`open_reused`]'s first step: the session file through its index, the appended lines
/// decoded (`None` as there).
fn reopen(path: &Path, index: &IndexMode<'_>) -> Result<Option<Reopened>, HistoryError> {
    let IndexMode::In { dir, now } = index else {
        return Ok(None);
    };
    Ok(SessionFile::open_reused(path, dir, *now)?)
}

/// [`open_reused`]'s second step: the stored projection, extended by the appended lines.
///
/// With an explicit `leaf`, `None` (nothing written) unless it names the file's last entry:
/// its branch is then the default one, whose projection is stored. The extension names the
/// leaf on every call, and it is nearly always the last entry; before, such a call decoded
/// the index's skeleton and rebuilt the projection (30–40 ms on a 100 MiB session, where
/// the stored one takes 2–3) and never stored one. The last entry's id is the delta's leaf
/// once lines were appended, else the side data's.
///
/// A named leaf that is not the default one is answered from the leaf file when it holds
/// that leaf's projection for exactly this index state (written by the call that built it,
/// see [`open_testing_lines`]); else `None` as before.
fn project_reopened(
    reopened: Reopened,
    leaf: Option<&str>,
) -> Result<Option<Opened>, HistoryError> {
    if let Some(leaf) = leaf
        && let Some((buf, at)) = reopened.leaf_projection(leaf)
        && let Some(projection) =
            flat::decode_with(Bytes::Mapped(buf), at, None, &reopened.file.header.id)
    {
        return Ok(Some(Opened {
            file: reopened.file,
            projection,
            index: IndexUse::Reused,
        }));
    }
    let unchanged_side = match (leaf, &reopened.appended, &reopened.delta) {
        (Some(_), None, None) => match reopened.side() {
            Some(side) => Some(side),
            None => return Ok(None),
        },
        _ => None,
    };
    let names_leaf = |last: &str| leaf.is_none_or(|leaf| leaf == last);
    let Reopened {
        file,
        extra,
        delta,
        appended,
        ..
    } = reopened;
    let (buf, at) = extra.into_parts();
    let (buf, delta, index) = match appended {
        None => match delta {
            None => (Bytes::Mapped(buf), None, IndexUse::Reused),
            Some(delta) => {
                let Some(delta) = flat::Delta::decode(&delta).filter(|d| names_leaf(d.leaf()))
                else {
                    return Ok(None);
                };
                (Bytes::Mapped(buf), Some(delta), IndexUse::Reused)
            }
        },
        Some(appended) => {
            let Some(side) = appended.side() else {
                return Ok(None);
            };
            let Some(grown) = flat::extend(
                &buf,
                at,
                &side,
                &file.header,
                delta.as_deref(),
                appended.entries(),
                &mut |line, id_at, id| file.tool_result_id_is(line.offset, line.len, id_at, id),
            )
            .filter(|grown| names_leaf(grown.leaf())) else {
                return Ok(None);
            };
            // Only the growth file is rewritten while it stays small beside the index file;
            // then everything is folded into a new index file.
            let payload = grown
                .encode()
                .filter(|payload| appended.delta_fits(payload.len()));
            if let Some(payload) = payload
                && appended.write_delta(&file, &payload)
            {
                (Bytes::Mapped(buf), Some(grown), IndexUse::Extended)
            } else {
                let Some(front) = flat::apply(buf.to_vec(), at, &grown) else {
                    return Ok(None);
                };
                let written = flat::merged_side(&side, &grown)
                    .is_some_and(|merged| appended.write(&file, &front[at..], &merged.slices()));
                let index = if written {
                    IndexUse::Extended
                } else {
                    IndexUse::Unavailable
                };
                (Bytes::Owned(front), None, index)
            }
        }
    };
    let Some(projection) = flat::decode_with(buf, at, delta.as_ref(), &file.header.id) else {
        return Ok(None);
    };
    if let Some(side) = unchanged_side
        && !flat::stored_leaf(&side, &projection).is_some_and(|last| names_leaf(&last))
    {
        return Ok(None);
    }
    Ok(Some(Opened {
        file,
        projection,
        index,
    }))
}

/// Open and project; with `line_test`, also the test's mask of every line of
/// `projection.lines`.
fn open_testing_lines(
    path: &Path,
    leaf: Option<&str>,
    line_test: Option<&crate::session::LineTest<'_>>,
    index: &IndexMode<'_>,
) -> Result<(Opened, TestedLines), HistoryError> {
    if line_test.is_none()
        && let Some(opened) = open_reused(path, leaf, index)?
    {
        return Ok((opened, TestedLines::Untested));
    }
    let crate::session::Deferred {
        session,
        flags,
        used,
        pending,
        leaf_slot,
    } = Session::open_deferred(path, line_test, index)?;
    let leaf_entry = session.leaf(leaf)?;
    // A leaf named explicitly that is the file's last entry is the default one: the same
    // branch, so the same projection, built, stored and extended as the default's.
    let leaf = leaf.filter(|_| leaf_entry != session.entries.len().checked_sub(1));
    // The stored projection must be the default branch of exactly the indexed lines. With
    // another leaf named, the default branch's projection is built as well when the index is
    // written, so the index keeps one (before, such a call wrote the index without it, and
    // every call naming that leaf rewrote it so until a call on the default leaf); the named
    // leaf's goes to the leaf file written beside it.
    // An index kept without its skeleton is left as it is then (it already stores the
    // default branch's projection).
    let storable = pending.as_ref().is_some_and(|p| {
        session.entries.len() == p.entries() && (leaf.is_none() || !p.keeps_existing())
    });
    // What extending the stored projection needs: its session-only part (hashing and
    // sorting the branch's ids) on a second core while this one builds the projection,
    // after the id index when `check` asks for it (whether an id names two entries: see the
    // chain below). One helper thread does both in turn: two, beside the build, took turns
    // with it on a two-core machine (the build's first pass 7.3–9.5 ms instead of ≈ 5 on a
    // session of 110 k entries).
    let build = |branch: Branch<'_>, check: bool, store: bool| {
        std::thread::scope(|scope| {
            let helper = (check || store).then(|| {
                scope.spawn(|| {
                    let unique = !check || session.ids_are_unique();
                    (
                        unique,
                        store.then(|| flat::side_ids(&session, branch)).flatten(),
                    )
                })
            });
            let built = Projection::build_with_entries(&session, branch);
            let (unique, ids) = helper.map_or((true, None), |helper| {
                helper
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (unique, (built, ids))
        })
    };
    // With the default leaf, entries that form one chain from the first (Pi's usual file) are
    // the branch unless an id names two entries: the projection is built from the chain while
    // another core builds the id index that tells (before, the index was built first: ≈ 2 ms
    // on the default bench session, ≈ 8 ms on one of 225 k short lines).
    let build_default =
        |last: Option<usize>, store: bool| match last.and_then(|last| session.chain_branch(last)) {
            Some(chain) => {
                let (unique, built) = build(chain, true, store);
                if unique {
                    built
                } else {
                    let walked = session.active_branch(last);
                    if walked.iter().copied().eq(chain.iter()) {
                        built
                    } else {
                        build(Branch::Walked(&walked), false, store).1
                    }
                }
            }
            None => build(Branch::Walked(&session.active_branch(last)), false, store).1,
        };
    let mut pending = pending;
    let mut index = used;
    // Where the named leaf's projection may be kept beside the index written for it.
    let mut written_slot = None;
    if leaf.is_some() {
        // The default branch's projection first: built, stored with the index and freed
        // before the named leaf's is built (built beside it, such a call peaked at 55 MB
        // on a 100 MiB session of 225 k short lines; 52 MB so, and 49 MB on the default
        // leaf).
        if storable && let Some(mut pending) = pending.take() {
            let (built, ids) = build_default(session.entries.len().checked_sub(1), true);
            let side = ids.and_then(|ids| flat::side_with(&built, ids));
            let (stored, line_of) = built.into_projection();
            drop(line_of);
            pending.encode(&session.entries);
            let extra = flat::encode(&stored);
            let pieces = extra.as_ref().map(flat::Encoded::pieces);
            let side = side.as_ref().map(flat::SideOut::slices);
            (index, written_slot) =
                pending.write_keeping(pieces.as_ref().map(|p| &p[..]), side.as_deref(), used);
        }
        // An index kept without its skeleton is left as it is: nothing to encode for it.
        if let Some(kept) = pending.take_if(|p| p.keeps_existing()) {
            index = kept.write(None, None, used);
        }
    }
    let (built, ids) = match leaf {
        None => build_default(leaf_entry, storable),
        Some(_) => {
            build(
                Branch::Walked(&session.active_branch(leaf_entry)),
                false,
                false,
            )
            .1
        }
    };
    let side = ids.and_then(|ids| flat::side_with(&built, ids));
    let (projection, line_of) = built.into_projection();
    // The line test's flags by projection line, and what they were made from freed before
    // the skeleton is encoded (a cold call's peak).
    let line_flags = line_test.map_or(TestedLines::Untested, |_| {
        TestedLines::of(&flags, &line_of, projection.line_count())
    });
    drop((flags, line_of));
    // The index's skeleton is encoded only now, once the build's own tables are freed, and
    // never beside the build: its buffers then lived through it (encoded by the decode
    // threads, ≈ 5 MB of the peak RSS of a cold call on a 100 MiB session of 225 k short
    // lines; encoded beside the build on another core, the bench session's 48 → 57 MB). It
    // is encoded (a chunk per part) beside the stored projection's encoding, which this core
    // does meanwhile. The entries are then freed on another core, or left to the exit when
    // the process ends with this call (a free per heap string: ≈ 2 ms on 63 k entries).
    let (file, entries) = session.into_parts();
    std::thread::scope(|scope| {
        let encoding = scope.spawn(move || {
            let pending = pending.map(|mut pending| {
                pending.encode(&entries);
                pending
            });
            (pending, entries)
        });
        let extra = (storable && leaf.is_none())
            .then(|| flat::encode(&projection))
            .flatten();
        let pieces = extra.as_ref().map(flat::Encoded::pieces);
        // Another leaf's projection, for its leaf file beside the index written or reused:
        // the next call naming it reads it (the Pi extension names the leaf a `/tree` moved
        // to on every call until an entry is appended).
        let slot = leaf.zip(written_slot.or(leaf_slot));
        let leaf_extra = slot.as_ref().and_then(|_| flat::encode(&projection));
        let leaf_pieces = leaf_extra.as_ref().map(flat::Encoded::pieces);
        let (pending, entries) = encoding
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        crate::memory::release(scope, entries);
        if let Some(pending) = pending {
            let side = side.as_ref().map(flat::SideOut::slices);
            index = pending.write(pieces.as_ref().map(|p| &p[..]), side.as_deref(), used);
        }
        if let (Some((leaf, slot)), Some(pieces)) = (slot, &leaf_pieces) {
            slot.write(leaf, pieces);
        }
    });
    Ok((
        Opened {
            file,
            projection,
            index,
        },
        line_flags,
    ))
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct WindowRow<'a> {
    window_id: &'a str,
    created_at: Option<&'a str>,
    first_seq: Option<u64>,
    last_seq: Option<u64>,
    item_count: usize,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct WindowsData<'a> {
    session_id: &'a str,
    windows: Vec<WindowRow<'a>>,
    more: usize,
    skipped_lines: u64,
    #[schemars(with = "crate::session::IndexUse")]
    index: &'static str,
}

/// `history-windows`: the windows of the active branch, oldest first (docs/spec/history.md §9).
pub fn windows(
    path: &Path,
    leaf: Option<&str>,
    index: &IndexMode<'_>,
) -> Result<Rendered, HistoryError> {
    let opened = open_with(path, leaf, index)?;
    windows_in(&opened)
}

fn window_row<'a>(projection: &'a Projection, w: &'a Window) -> WindowRow<'a> {
    let events = w.events.clone();
    WindowRow {
        window_id: &w.window_id,
        created_at: w.created_at.as_deref(),
        first_seq: (!events.is_empty()).then(|| projection.event(events.start).seq),
        last_seq: (!events.is_empty()).then(|| projection.event(events.end - 1).seq),
        item_count: events.len(),
    }
}

fn windows_of_data<'a>(opened: &'a Opened, shown: usize) -> WindowsData<'a> {
    let projection = &opened.projection;
    let rows = projection.windows[..shown]
        .iter()
        .map(|w| window_row(projection, w))
        .collect();
    WindowsData {
        session_id: &projection.session_id,
        windows: rows,
        more: projection.windows.len() - shown,
        skipped_lines: opened.file.skipped_lines,
        index: opened.index.as_str(),
    }
}

fn window_line(w: &WindowRow) -> String {
    let seq = |s: Option<u64>| s.map_or("-".to_string(), |s| s.to_string());
    format!(
        "window {} | {} | {}",
        w.window_id,
        seq_range(&seq(w.first_seq), &seq(w.last_seq)),
        plural(w.item_count, "event", "events")
    )
}

fn render_windows(data: &WindowsData) -> String {
    let mut lines = vec![format!("session {}", data.session_id)];
    lines.extend(data.windows.iter().map(window_line));
    if data.more > 0 {
        lines.push(format!(
            "{} not shown; history_list also reports window ids on events",
            plural(data.more, "more window", "more windows")
        ));
    }
    let mut text = lines.join("\n");
    page::push_skipped_note(&mut text, data.skipped_lines);
    text
}

/// [`windows`] over an already opened session.
#[allow(clippy::expect_used, reason = "window rows serialise")]
pub fn windows_in(opened: &Opened) -> Result<Rendered, HistoryError> {
    // Oldest first, stopping at the first row that does not fit. The data and the text grow
    // with every row shown, except that showing the very last row drops the "more windows"
    // line: so the first `total` counts are searched by bisection, and the last one is tried
    // only when all of them fit.
    let total = opened.projection.windows.len();
    let fits_with = |shown: usize| {
        let data = windows_of_data(opened, shown);
        let text = render_windows(&data);
        fits(&data, &text)
    };
    // Where the search starts: how many rows fit by their own sizes (each row's JSON and
    // text line), which is the answer but for the few bytes around them. Trying every row
    // first cost ≈ 6 ms of a 10 ms call on a session of 4,213 windows, of which 256 fit.
    let guess = {
        let (mut json, mut text) = (0usize, 0usize);
        let projection = &opened.projection;
        projection
            .windows
            .iter()
            .take_while(|w| {
                let row = window_row(projection, w);
                json += serde_json::to_vec(&row).map_or(usize::MAX / 2, |v| v.len()) + 1;
                text += window_line(&row).len() + 1;
                json <= OUTPUT_BUDGET_BYTES && text <= OUTPUT_BUDGET_BYTES
            })
            .count()
    };
    let shown = match total.checked_sub(1) {
        None => fits_with(0).then_some(0),
        Some(below) => match largest_fitting_from(below, guess, fits_with) {
            Some(n) if n == below && fits_with(total) => Some(total),
            found => found,
        },
    };
    let shown = shown.ok_or(HistoryError::WindowsTooLarge)?;
    let data = windows_of_data(opened, shown);
    let text = render_windows(&data);
    Ok(Rendered {
        data: serde_json::to_value(&data).expect("window rows serialise"),
        text,
    })
}

fn check_window(projection: &Projection, window_id: Option<&str>) -> Result<(), HistoryError> {
    if let Some(id) = window_id
        && !projection.windows.iter().any(|w| w.window_id == id)
    {
        return Err(HistoryError::UnknownWindowId {
            window_id: id.to_string(),
            known: projection
                .windows
                .iter()
                .map(|w| w.window_id.clone())
                .collect(),
        });
    }
    Ok(())
}

/// Whether event `e` passes the window and role filters (and, for `conversation`, the
/// non-empty user/assistant rule).
fn passes(projection: &Projection, options: &ListOptions, conversation: bool, e: &Event) -> bool {
    in_window(projection, options.window_id.as_deref(), e)
        && match &options.roles {
            Some(roles) => roles.contains(&e.role),
            None if conversation => {
                matches!(e.role, EventRole::User | EventRole::Assistant) && e.has_text
            }
            None => true,
        }
}

/// Whether `e` lies in the window named `window` (any window when `None`).
fn in_window(projection: &Projection, window: Option<&str>, e: &Event) -> bool {
    window.is_none_or(|id| projection.windows[e.window].window_id == id)
}

/// The raw-line test's mask of each event line: tested while the file was read, or found by
/// the block scan of a warm index.
enum Masks {
    Tested(TestedLines),
    Scanned(scan::LineMasks),
}

/// The raw-line test's masks of a projection's lines, as a cold call found them.
enum TestedLines {
    /// No test ran: every line is a "maybe".
    Untested,
    /// The lines whose mask is not 0, ascending by line: a search's usual few (a vector of
    /// every line's mask was 1.8 MB on a session of 225 k lines, held while the index's
    /// skeleton was encoded).
    Sparse(Vec<(usize, u64)>),
    /// Every line's mask, when more than half the lines have one (it then takes less room
    /// than the pairs). A sparse lookup is a bisection, which matters only when every event
    /// is tried, and a search tries events only until its page is full.
    Dense(Vec<u64>),
}

impl TestedLines {
    /// From the masks by session entry and the projection line of each entry (`u32::MAX`:
    /// none), for a projection of `lines` lines. An entry past the tested ones is a "maybe".
    fn of(flags: &crate::session::EntryFlags, line_of: &[u32], lines: usize) -> TestedLines {
        let line = |entry: usize| {
            line_of
                .get(entry)
                .filter(|&&line| line != u32::MAX)
                .map(|&line| line as usize)
        };
        let mut set: Vec<(usize, u64)> = flags
            .set()
            .iter()
            .filter_map(|&(entry, mask)| Some((line(entry)?, mask)))
            .collect();
        set.extend((flags.tested()..line_of.len()).filter_map(|e| Some((line(e)?, u64::MAX))));
        if set.len() > lines / 2 {
            let mut dense = vec![0u64; lines];
            for (line, mask) in set {
                dense[line] = mask;
            }
            return TestedLines::Dense(dense);
        }
        set.sort_unstable_by_key(|&(line, _)| line);
        TestedLines::Sparse(set)
    }

    /// The lines of a projection of `all` lines whose mask is not 0, ascending.
    fn lines_with_bits(&self, all: usize) -> Box<dyn Iterator<Item = usize> + '_> {
        match self {
            TestedLines::Untested => Box::new(0..all),
            TestedLines::Sparse(set) => Box::new(set.iter().map(|&(line, _)| line)),
            // Every line has its mask here ("maybe" for an untested entry's, from `of`).
            TestedLines::Dense(masks) => Box::new(
                masks
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| **m != 0)
                    .map(|(line, _)| line),
            ),
        }
    }

    fn get(&self, line: usize) -> u64 {
        match self {
            TestedLines::Untested => u64::MAX,
            TestedLines::Sparse(set) => crate::session::mask_of(set, line),
            TestedLines::Dense(masks) => masks.get(line).copied().unwrap_or(u64::MAX),
        }
    }
}

impl Masks {
    /// Line `line`'s mask; every bit ("maybe") for a line without one.
    fn get(&self, projection: &Projection, line: usize) -> u64 {
        match self {
            Masks::Tested(tested) => tested.get(line),
            Masks::Scanned(masks) => masks.get(projection, line),
        }
    }

    /// The lines of `projection` whose mask is not 0, ascending; `None` when there are more
    /// than `most`.
    fn lines_with_bits(&self, projection: &Projection, most: usize) -> Option<Vec<usize>> {
        let all = projection.line_count();
        let mut lines = Vec::new();
        let mut add = |line: usize| {
            lines.push(line);
            lines.len() <= most
        };
        match self {
            Masks::Tested(tested) => {
                for line in tested.lines_with_bits(all) {
                    if !add(line) {
                        return None;
                    }
                }
            }
            Masks::Scanned(masks) => {
                for line in masks.lines_with_bits(projection) {
                    if !add(line) {
                        return None;
                    }
                }
                lines.sort_unstable();
                lines.dedup();
            }
        }
        Some(lines)
    }
}

/// `history-list`: one page of events (docs/spec/history.md §13).
pub fn list(
    path: &Path,
    leaf: Option<&str>,
    options: &ListOptions,
    index: &IndexMode<'_>,
) -> Result<Rendered, HistoryError> {
    let opened = open_with(path, leaf, index)?;
    list_in(&opened, options)
}

/// [`list`] over an already opened session.
pub fn list_in(opened: &Opened, options: &ListOptions) -> Result<Rendered, HistoryError> {
    let projection = &opened.projection;
    check_window(projection, options.window_id.as_deref())?;
    let fold = options.roles.is_none();
    // The page shows the `limit` visible events nearest its anchor (the newest before
    // `before`, or the oldest after `after`) and says whether one more exists beyond them;
    // nothing else depends on the other visible events (as for a search's matches), so
    // only those `limit + 1` are found, from that end. Reading every event instead (and
    // keeping the visible and foldable ones: ≈ 4 MB on a session of 225 k events) was a
    // third to a half of a warm list there.
    let range = projection.events_between(
        options.after.unwrap_or(0),
        options.before.unwrap_or(u64::MAX),
    );
    let enough = options.limit.saturating_add(1);
    let visible = |event: usize| {
        let e = projection.event(event);
        passes(projection, options, true, &e).then_some(Visible {
            event,
            seq: e.seq,
            offset: None,
        })
    };
    let vis: Vec<Visible> = if options.after.is_some() {
        range.filter_map(visible).take(enough).collect()
    } else {
        let mut newest: Vec<Visible> = range.rev().filter_map(visible).take(enough).collect();
        newest.reverse();
        newest
    };
    // The folds, for the conversation view (`select` asks only then): the tool and
    // context events of the window between two seqs, found when a fold is drawn.
    let foldable = |lo: u64, hi: u64| -> Vec<usize> {
        projection
            .events_between(lo, hi)
            .filter(|&event| {
                let e = projection.event(event);
                matches!(e.role, EventRole::Tool | EventRole::Context)
                    && in_window(projection, options.window_id.as_deref(), &e)
            })
            .collect()
    };
    let mut loader = Loader::new(&opened.file, &opened.projection);
    render_page(opened, &mut loader, &vis, &foldable, options, fold)
}

/// The page of `vis` that `options` selects and the budget allows, with its text: the one
/// rendering step `history-list` and `history-search` share.
#[allow(clippy::expect_used, reason = "pages serialise")]
fn render_page(
    opened: &Opened,
    loader: &mut Loader,
    vis: &[Visible],
    foldable: &dyn Fn(u64, u64) -> Vec<usize>,
    options: &ListOptions,
    fold: bool,
) -> Result<Rendered, HistoryError> {
    let projection = &opened.projection;
    let mut rows = RowSource::new(projection, |event: usize| {
        Ok(document::build(loader, &projection.event(event))?)
    });
    let spec = PageSpec {
        limit: options.limit,
        before: options.before,
        after: options.after,
        max_chars_per_item: options.max_chars_per_item,
        fold,
    };
    let (page, text) = page::select(
        vis,
        foldable,
        &spec,
        &mut rows,
        opened.file.skipped_lines,
        opened.index.as_str(),
    )?;
    Ok(Rendered {
        data: serde_json::to_value(&page).expect("pages serialise"),
        text,
    })
}

/// `history-search`: events whose document contains any of `queries`, case-insensitively
/// (docs/spec/history.md §14). Lines are tested cheaply while the file streams, and only lines that may match are
/// decoded.
pub fn search(
    path: &Path,
    leaf: Option<&str>,
    queries: &[String],
    options: &ListOptions,
    index: &IndexMode<'_>,
) -> Result<Rendered, HistoryError> {
    search_with(path, leaf, queries, options, true, index)
}

/// [`search`], with the raw-line prefilter and the early stop switched off when `prefilter` is
/// false (every event decoded and matched): the reference both are tested against.
pub(crate) fn search_with(
    path: &Path,
    leaf: Option<&str>,
    queries: &[String],
    options: &ListOptions,
    use_prefilter: bool,
    index: &IndexMode<'_>,
) -> Result<Rendered, HistoryError> {
    let valid = !queries.is_empty() && queries.iter().all(|q| !q.is_empty());
    let matcher = if valid {
        Some(matcher::Matcher::new(queries))
    } else {
        None
    };
    let prefilter = matcher
        .as_ref()
        .and_then(|m| m.as_ref().ok())
        .and_then(|m| m.prefilter())
        .filter(|_| use_prefilter);
    let test = |line: &crate::session::TestedLine<'_>, memo: &mut crate::session::LineMemo| {
        prefilter.map_or(0, |p| p.line_mask(line, memo))
    };
    // Through a stored projection, the prefilter is one scan of the event lines' bytes. It
    // needs only the file and the memo, so when the session has an index it starts before
    // the index is even read, and runs beside the index's checks and the extension of the
    // stored projection by appended lines (single-threaded, ≈ 5 + 5 ms after a 1 MiB append
    // on a session of 225 k lines), on the cores that would otherwise wait.
    let reused = match (prefilter, index) {
        (Some(p), IndexMode::In { dir, .. }) => {
            let early_file = std::fs::File::open(path).ok();
            let early_memo = early_file
                .as_ref()
                .and_then(|file| scan::Memo::of_file(dir, path, file))
                .filter(scan::Memo::beside_an_index);
            // Set when the early scan's answer will not be used: it stops at its next block.
            let unwanted = std::sync::atomic::AtomicBool::new(false);
            let mut other_memo = None;
            std::thread::scope(|scope| {
                let early = match (&early_file, &early_memo) {
                    (Some(file), Some(memo)) => file.metadata().ok().map(|meta| {
                        let unwanted = &unwanted;
                        scope.spawn(move || scan::early_hits(file, p, memo, meta.len(), unwanted))
                    }),
                    _ => None,
                };
                let give_up = || unwanted.store(true, std::sync::atomic::Ordering::Relaxed);
                let reopened = match reopen(path, index) {
                    Ok(Some(reopened)) => reopened,
                    other => {
                        give_up();
                        return other.map(|_| None);
                    }
                };
                // The early scan read the file that was reopened only if it is the same.
                let same = early_memo
                    .as_ref()
                    .is_some_and(|memo| memo.is_for(&reopened.file));
                if !same {
                    give_up();
                    other_memo = scan::Memo::new(dir, path, &reopened.file);
                }
                let covered = reopened.complete;
                let opened = project_reopened(reopened, leaf);
                let opened = match opened {
                    Ok(Some(opened)) => opened,
                    other => {
                        give_up();
                        return other.map(|_| None);
                    }
                };
                // A failed early scan is left to the scan after it, which meets the
                // failure again or does not.
                let early = early
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .and_then(Result::ok)
                    .filter(|_| same);
                let memo = if same {
                    early_memo.as_ref()
                } else {
                    other_memo.as_ref()
                };
                let masks = scan::line_masks_memo(
                    &opened.file,
                    &opened.projection,
                    p,
                    memo,
                    early,
                    covered,
                )?;
                Ok(Some((opened, Masks::Scanned(masks))))
            })?
        }
        _ => None,
    };
    let (opened, masks) = match reused {
        Some(found) => found,
        None => {
            let (opened, tested) = open_testing_lines(
                path,
                leaf,
                prefilter
                    .is_some()
                    .then_some(&test as &crate::session::LineTest<'_>),
                index,
            )?;
            (opened, Masks::Tested(tested))
        }
    };
    let projection = &opened.projection;
    check_window(projection, options.window_id.as_deref())?;
    let matcher = match &matcher {
        None if queries.is_empty() => {
            return Err(HistoryError::InvalidQuery(
                "query must be a string or a non-empty array of strings".into(),
            ));
        }
        None => {
            return Err(HistoryError::InvalidQuery(
                "query strings must be non-empty: an empty query matches everything".into(),
            ));
        }
        Some(Err(e)) => {
            return Err(HistoryError::InvalidQuery(format!(
                "query does not compile to a literal matcher: {e}"
            )));
        }
        Some(Ok(m)) => m,
    };
    let lower = options.after.unwrap_or(0);
    let upper = options.before.unwrap_or(u64::MAX);
    let mask = |line: usize| masks.get(projection, line);
    let may_match = |kind: DocKind, lines: u64| prefilter.is_none_or(|p| p.candidate(kind, lines));
    // The page shows the `limit` matches nearest its anchor (the newest, or the oldest after
    // `after`) and says whether one more exists beyond them (`older_before` / `newer_after`);
    // nothing else depends on the other matches (docs/protocol.md), so the events are tried
    // from that end and the search stops at `limit + 1` matches.
    let from_oldest = options.after.is_some();
    let enough = if use_prefilter {
        options.limit.saturating_add(1)
    } else {
        usize::MAX
    };
    let count = projection.event_count();
    // When every query needs a literal in every kind of document, only an event naming a line
    // with some bit (a hit, or a "maybe") can be a candidate: those events are found from the
    // lines (few, for a rare literal) instead of reading every event. With many such lines the
    // events are read one by one as before (a short session always takes the lines' way, so
    // the property tests compare it with the reference).
    let naming = if prefilter.is_some()
        && !may_match(DocKind::Text, 0)
        && !may_match(DocKind::Tool, 0)
        && projection.lines_in_runs()
    {
        masks
            .lines_with_bits(projection, (count / 16).max(64))
            .map(|lines| {
                let mut events = Vec::with_capacity(lines.len());
                for line in lines {
                    projection.events_naming(line, &mut events);
                }
                events.sort_unstable();
                events.dedup();
                events
            })
    } else {
        None
    };
    let ordered: Box<dyn Iterator<Item = usize>> = match (naming, from_oldest) {
        (Some(events), true) => Box::new(events.into_iter()),
        (Some(events), false) => Box::new(events.into_iter().rev()),
        (None, true) => Box::new(0..count),
        (None, false) => Box::new((0..count).rev()),
    };
    let mut loader = Loader::new(&opened.file, &opened.projection);
    let mut vis = Vec::new();
    for event in ordered {
        let e = &projection.event(event);
        if e.seq <= lower || e.seq >= upper || !passes(projection, options, false, e) {
            continue;
        }
        // A call's document spans its line and its result's line.
        let (kind, lines) = match e.source {
            projection::Source::Text { entry } => (DocKind::Text, [Some(entry), None]),
            projection::Source::Call { entry, result, .. } => {
                (DocKind::Tool, [Some(entry), result])
            }
            projection::Source::Result { entry } | projection::Source::Bash { entry } => {
                (DocKind::Tool, [Some(entry), None])
            }
        };
        let lines = lines.iter().flatten().copied();
        let lines_mask = lines.clone().fold(0, |m, line| m | mask(line));
        if !may_match(kind, lines_mask) {
            continue;
        }
        // A phrase of the nested rule that no scan looked for is looked for in the event's
        // lines now, which costs less than building the document.
        if let Some(p) = prefilter
            && p.rests_on_lines(kind, lines_mask)
            && lines.clone().all(|line| !projection.line(line).escapes)
        {
            let raw = lines
                .map(|line| {
                    let line = projection.line(line);
                    opened.file.raw_at(line.offset, line.len)
                })
                .collect::<Result<Vec<_>, _>>()?;
            if !p.candidate_in_lines(kind, lines_mask, &raw) {
                continue;
            }
        }
        let doc = document::build(&mut loader, e)?;
        if let Some(byte) = matcher.find(&doc.text) {
            vis.push(Visible {
                event,
                seq: e.seq,
                offset: Some(document::char_len(&doc.text[..byte])),
            });
            if vis.len() >= enough {
                break;
            }
        }
    }
    if !from_oldest {
        vis.reverse();
    }
    render_page(
        &opened,
        &mut loader,
        &vis,
        &|_, _| Vec::new(),
        options,
        false,
    )
}

/// `history-read`: one event's document window (docs/spec/history.md §15).
pub fn read(
    path: &Path,
    leaf: Option<&str>,
    options: &ReadOptions,
    index: &IndexMode<'_>,
) -> Result<Rendered, HistoryError> {
    let opened = open_with(path, leaf, index)?;
    read::read_in(&opened, options)
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::EntryFlags;

    /// A line's mask is its entry's, whether few lines have one (kept sparse) or many
    /// (kept dense); an entry past the tested ones is a "maybe".
    #[test]
    fn tested_lines_take_each_lines_mask_from_its_entry() {
        let lines = 40;
        // Entry e is line 7e mod 40 (a permutation); entries 40.. are on no line.
        let line_of: Vec<u32> = (0..50u32)
            .map(|e| if e < 40 { e * 7 % 40 } else { u32::MAX })
            .collect();
        for (masked, tested) in [
            (vec![3usize, 41], 50),
            (vec![2], 39),
            (vec![2], 37),
            ((0..20).collect(), 50),
            ((0..30).collect(), 50),
        ] {
            let mut flags = EntryFlags::default();
            for e in 0..tested {
                flags.push(if masked.contains(&e) {
                    1 << (e % 64)
                } else {
                    0
                });
            }
            let found = TestedLines::of(&flags, &line_of, lines);
            let with_masks = (0..40).filter(|&e| flags.get(e) != 0).count();
            let sparse = matches!(found, TestedLines::Sparse(_));
            assert_eq!(sparse, with_masks <= lines / 2, "{masked:?} of {tested}");
            for (e, &line) in line_of.iter().enumerate().take(40) {
                let line = line as usize;
                assert_eq!(found.get(line), flags.get(e), "entry {e}, line {line}");
            }
            let mut with_bits: Vec<usize> = (0..40)
                .filter(|&e| flags.get(e) != 0)
                .map(|e| line_of[e] as usize)
                .collect();
            with_bits.sort_unstable();
            assert_eq!(found.lines_with_bits(lines).collect::<Vec<_>>(), with_bits);
        }
    }
}
