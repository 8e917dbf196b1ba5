//! The tool results of the notes commands: the wire data (snake_case, concrete addresses) and
//! the model-facing text, both rendered from one bounded selection so they always agree.
//! Every result fits [`crate::envelope::OUTPUT_BUDGET_BYTES`] as compact JSON envelope and as
//! text; what was withheld is visible in the data (`more`, `next_offset_chars`, `limited_by`,
//! `truncated`, `diff_truncated`, `omitted_extra`). Pure functions: no I/O.

use serde_json::{Map, Value, json};

use super::address::{Address, Scope};
use super::error::{ErrorKind, NoteError, err};
use super::identity::Identity;
use super::note::{NoteMeta, format_stamp};
use super::query::LineMatch;
use super::store::{
    ChangeKind, LinesKept, NoteList, NoteRow, ReadNote, RenameReceipt, SearchRow, Status,
    UpdateReceipt, WithStatus, WriteReceipt,
};
use crate::envelope::{OUTPUT_BUDGET_BYTES, fits, largest_fitting, ok_envelope_bytes};
use crate::window::{Cut, Reading, Window, continuation};
use crate::words::plural;

/// Default read window, in code points.
pub const DEFAULT_READ_WINDOW_CHARS: usize = 12_000;
/// Largest read window a request may ask for.
pub const MAX_READ_WINDOW_CHARS: usize = 50_000;
const EXTRA_ENTRY_MAX_BYTES: usize = 1024;
const EXTRAS_MAX_BYTES: usize = 2048;
const LINE_NUMBER_FACTS: usize = 20;

/// One rendered result: the `data` of the envelope and the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub data: Value,
    pub text: String,
}

fn json_len(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX / 4, |v| v.len())
}

/// The identity fragment: `<address>` or `<address> (project <key>)`.
fn fragment(display: &str, address: &Address, identity: &Identity) -> String {
    if address.home.scope == Scope::Project {
        format!("{display} (project {})", identity.project_key)
    } else {
        display.to_owned()
    }
}

/// `address` plus `project_key` for `@project/` notes.
fn address_fields(display: &str, address: &Address, identity: &Identity) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("address".into(), display.into());
    if address.home.scope == Scope::Project {
        map.insert("project_key".into(), identity.project_key.clone().into());
    }
    map
}

/// The refusal form of a library error: code, message, and `details` (`line_numbers` capped at
/// 20 with `line_numbers_total`, `edit_index`, or the error's own details).
pub fn refusal_parts(error: &NoteError) -> (String, String, Option<Value>) {
    let mut message = error.message.clone();
    let mut details = Map::new();
    if !error.line_numbers.is_empty() {
        let total = error.line_numbers.len();
        let shown: Vec<usize> = error
            .line_numbers
            .iter()
            .take(LINE_NUMBER_FACTS)
            .copied()
            .collect();
        details.insert("line_numbers".into(), json!(shown));
        if total > LINE_NUMBER_FACTS {
            details.insert("line_numbers_total".into(), json!(total));
            message.push_str(&format!(
                " (this refusal names {LINE_NUMBER_FACTS} of {total} match lines; the note is unchanged)"
            ));
        }
    }
    if let Some(index) = error.edit_index {
        details.insert("edit_index".into(), json!(index));
    }
    if let Some(extra) = &error.details
        && let Value::Object(map) = extra.as_ref()
    {
        for (k, v) in map {
            details.insert(k.clone(), v.clone());
        }
    }
    let details = (!details.is_empty()).then_some(Value::Object(details));
    (error.code().to_owned(), message, details)
}

/// `notes-write`: `{address, project_key?, outcome}`; text `<outcome> I`.
pub fn write_result(receipt: &WriteReceipt, identity: &Identity) -> Rendered {
    let display = receipt.address.display();
    let mut data = address_fields(&display, &receipt.address, identity);
    data.insert("outcome".into(), receipt.outcome.as_str().into());
    let text = format!(
        "{} {}",
        receipt.outcome.as_str(),
        fragment(&display, &receipt.address, identity)
    );
    Rendered {
        data: Value::Object(data),
        text,
    }
}

/// The `metadata` object of a read: origin, timestamps, `crumpled_at`/`project` when they are
/// strings, and the bounded extras.
pub fn read_metadata(meta: &NoteMeta) -> Value {
    let mut out = Map::new();
    out.insert("origin".into(), meta.origin.as_str().into());
    out.insert("created_at".into(), format_stamp(meta.created_at).into());
    out.insert("updated_at".into(), format_stamp(meta.updated_at).into());
    if let Some(Value::String(c)) = &meta.crumpled_at {
        out.insert("crumpled_at".into(), c.clone().into());
    }
    if let Some(Value::String(p)) = meta.project() {
        out.insert("project".into(), p.clone().into());
    }
    let mut extra = Map::new();
    let (mut included, mut omitted_keys, mut omitted_bytes) = (0usize, 0usize, 0usize);
    for (key, value) in meta.extras() {
        let size = json_len(key) + 1 + json_len(value);
        if size > EXTRA_ENTRY_MAX_BYTES || included + size > EXTRAS_MAX_BYTES {
            omitted_keys += 1;
            omitted_bytes += size;
        } else {
            included += size;
            extra.insert(key.clone(), value.clone());
        }
    }
    out.insert("extra".into(), Value::Object(extra));
    if omitted_keys > 0 {
        out.insert(
            "omitted_extra".into(),
            json!({"keys": omitted_keys, "bytes": omitted_bytes}),
        );
    }
    Value::Object(out)
}

fn metadata_line(metadata: &Value) -> String {
    let get = |k: &str| metadata.get(k).and_then(Value::as_str).unwrap_or("");
    let mut parts = vec![
        format!("origin {}", get("origin")),
        format!("created {}", get("created_at")),
        format!("updated {}", get("updated_at")),
    ];
    if metadata.get("crumpled_at").is_some() {
        parts.push(format!("crumpled {}", get("crumpled_at")));
    }
    if metadata.get("project").is_some() {
        parts.push(format!("project {}", get("project")));
    }
    if let Some(extra) = metadata
        .get("extra")
        .filter(|e| e.as_object().is_some_and(|m| !m.is_empty()))
    {
        parts.push(format!("extra {extra}"));
    }
    if let Some(omitted) = metadata.get("omitted_extra") {
        let count = |key: &str| omitted[key].as_u64().unwrap_or(0) as usize;
        parts.push(format!(
            "{} ({}) {} in the note file but too large to show",
            plural(count("keys"), "more metadata value", "more metadata values"),
            plural(count("bytes"), "byte", "bytes"),
            if count("keys") == 1 { "is" } else { "are" }
        ));
    }
    parts.join(" | ")
}

/// `notes-read`: a window of the body (code points) with metadata; the largest window that
/// fits the budget, continuation facts in the data and a notice after the window in the text.
pub fn read_result(
    note: &ReadNote,
    offset_chars: i64,
    limit_chars: usize,
    identity: &Identity,
) -> Result<Rendered, NoteError> {
    let body = note.body.as_str();
    let total = body.chars().count();
    let cuts = Window::resolve(offset_chars, limit_chars, total)
        .map_err(|past| err(ErrorKind::InvalidOffset, past.message(Reading::NoteBody)))?;
    let Window { start, range, .. } = cuts;
    // Byte offsets of the window's code points (range + 1 entries, the last one the end).
    let start_byte = body
        .char_indices()
        .nth(start)
        .map_or(body.len(), |(i, _)| i);
    let window = &body[start_byte..];
    let mut bounds: Vec<usize> = window
        .char_indices()
        .take(range + 1)
        .map(|(i, _)| i)
        .collect();
    if bounds.len() <= range {
        bounds.push(window.len());
    }
    let display = note.address.display();
    let head = fragment(&display, &note.address, identity);
    let metadata = read_metadata(&note.meta);
    let meta_line = metadata_line(&metadata);
    let build = |d: usize| -> Rendered {
        let text_part = &window[..bounds[d]];
        let Cut { next, limited_by } = cuts.cut(d);
        let mut data = address_fields(&display, &note.address, identity);
        data.insert("metadata".into(), metadata.clone());
        data.insert("text".into(), text_part.into());
        data.insert("offset_chars".into(), json!(start));
        data.insert("total_chars".into(), json!(total));
        data.insert("next_offset_chars".into(), json!(next));
        data.insert("limited_by".into(), json!(limited_by));
        let text = format!(
            "{head}\n{meta_line}\n\n{text_part}{}",
            continuation(start, total, next, limited_by)
        );
        Rendered {
            data: Value::Object(data),
            text,
        }
    };
    let full = build(range);
    if fits(&full.data, &full.text) {
        return Ok(full);
    }
    match largest_fitting(range, |d| {
        let r = build(d);
        fits(&r.data, &r.text)
    }) {
        Some(d) if d > 0 => Ok(build(d)),
        _ => Err(err(
            ErrorKind::OutputTooLarge,
            "The response metadata leaves no room for a progressing read window.",
        )
        .with_details(json!({
            "total_chars": total,
            "offset_chars": start,
            "budget_bytes": OUTPUT_BUDGET_BYTES
        }))),
    }
}

/// Pi's display diff of two texts: changed lines as `+<n> ` / `-<n> `, up to four context
/// lines as ` <n> `, skipped runs as ` <pad> ...`.
pub fn display_diff(before: &str, after: &str) -> String {
    use similar::{ChangeTag, TextDiff};
    let diff = TextDiff::from_lines(before, after);
    let width = before
        .lines()
        .count()
        .max(after.lines().count())
        .max(1)
        .to_string()
        .len();
    let gap = format!(" {} ...", " ".repeat(width));
    let mut lines: Vec<String> = Vec::new();
    let groups = diff.grouped_ops(4);
    let old_total = before.lines().count();
    let mut last_old_end = 0usize;
    for group in &groups {
        let first_old = group.first().map_or(0, |op| op.old_range().start);
        if first_old > last_old_end {
            lines.push(gap.clone());
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let text = change.value().strip_suffix('\n').unwrap_or(change.value());
                let text = text.strip_suffix('\r').unwrap_or(text);
                let line = match change.tag() {
                    ChangeTag::Insert => format!(
                        "+{:>width$} {text}",
                        change.new_index().map_or(0, |i| i + 1)
                    ),
                    ChangeTag::Delete => format!(
                        "-{:>width$} {text}",
                        change.old_index().map_or(0, |i| i + 1)
                    ),
                    ChangeTag::Equal => format!(
                        " {:>width$} {text}",
                        change.old_index().map_or(0, |i| i + 1)
                    ),
                };
                lines.push(line);
            }
        }
        last_old_end = group.last().map_or(0, |op| op.old_range().end);
    }
    if !groups.is_empty() && last_old_end < old_total {
        lines.push(gap);
    }
    lines.join("\n")
}

fn receipt_text(first: String, diff: &str, truncated: bool) -> String {
    let mut text = first;
    if truncated {
        text.push_str("\ndiff (this receipt's diff was shortened to fit the output budget; the update itself was applied):\n");
        text.push_str(diff);
    } else if !diff.is_empty() {
        text.push_str("\ndiff:\n");
        text.push_str(diff);
    }
    text
}

/// Cut `diff` to the longest fitting code-point prefix when the receipt does not fit.
fn bounded_receipt(
    build: impl Fn(&str, bool) -> Rendered,
    diff: &str,
    too_large: &str,
) -> Result<Rendered, NoteError> {
    let full = build(diff, false);
    if fits(&full.data, &full.text) {
        return Ok(full);
    }
    let bounds: Vec<usize> = diff
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(diff.len()))
        .collect();
    let chars = bounds.len() - 1;
    let fitting = largest_fitting(chars, |n| {
        let r = build(&diff[..bounds[n]], true);
        fits(&r.data, &r.text)
    });
    match fitting {
        Some(n) => Ok(build(&diff[..bounds[n]], true)),
        None => Err(err(ErrorKind::OutputTooLarge, too_large)),
    }
}

/// `notes-update` (edits, origin, crumple): `{address, project_key?, applied, change_kind,
/// diff, diff_truncated?}`.
pub fn update_result(receipt: &UpdateReceipt, identity: &Identity) -> Result<Rendered, NoteError> {
    let display = receipt.address.display();
    let head = fragment(&display, &receipt.address, identity);
    let kind = receipt.change.kind;
    let diff = if kind == ChangeKind::None {
        String::new()
    } else {
        display_diff(&receipt.change.before, &receipt.change.after)
    };
    let first = if kind == ChangeKind::None {
        format!("unchanged {head}: 0 edits")
    } else {
        format!(
            "updated {head}: {}",
            plural(receipt.applied, "edit", "edits")
        )
    };
    bounded_receipt(
        |diff, truncated| {
            let mut data = address_fields(&display, &receipt.address, identity);
            data.insert("applied".into(), json!(receipt.applied));
            data.insert("change_kind".into(), kind.as_str().into());
            data.insert("diff".into(), diff.into());
            if truncated {
                data.insert("diff_truncated".into(), true.into());
            }
            Rendered {
                data: Value::Object(data),
                text: receipt_text(first.clone(), diff, truncated),
            }
        },
        &diff,
        "The update was applied, but its receipt metadata exceeds the response budget.",
    )
}

/// `notes-update` with `rename_to`.
pub fn rename_result(receipt: &RenameReceipt, identity: &Identity) -> Result<Rendered, NoteError> {
    let to = receipt.to.display();
    let from = receipt.from.display();
    let diff = format!("rename {from} -> {to}");
    let mut first = format!("moved {from} -> {}", fragment(&to, &receipt.to, identity));
    if receipt.replaced_crumpled_target {
        first.push_str(" (replaced a crumpled note)");
    }
    bounded_receipt(
        |diff, truncated| {
            let mut data = address_fields(&to, &receipt.to, identity);
            data.insert("rename_from".into(), from.clone().into());
            data.insert("applied".into(), json!(0));
            data.insert("change_kind".into(), "file".into());
            data.insert("diff".into(), diff.into());
            if truncated {
                data.insert("diff_truncated".into(), true.into());
            }
            data.insert(
                "replaced_crumpled_target".into(),
                receipt.replaced_crumpled_target.into(),
            );
            Rendered {
                data: Value::Object(data),
                text: receipt_text(first.clone(), diff, truncated),
            }
        },
        &diff,
        "The update was applied, but its receipt metadata exceeds the response budget.",
    )
}

fn row_object(
    display: &str,
    address: &Address,
    meta: &NoteMeta,
    identity: &Identity,
) -> Map<String, Value> {
    let mut row = address_fields(display, address, identity);
    row.insert("updated_at".into(), format_stamp(meta.updated_at).into());
    if let Some(c) = &meta.crumpled_at {
        row.insert("crumpled_at".into(), c.clone());
    }
    row
}

fn row_line(display: &str, address: &Address, meta: &NoteMeta, identity: &Identity) -> String {
    let mut line = format!(
        "- {} | updated {}",
        fragment(display, address, identity),
        format_stamp(meta.updated_at)
    );
    if let Some(c) = &meta.crumpled_at {
        line.push_str(" | crumpled ");
        match c {
            Value::String(s) => line.push_str(s),
            other => line.push_str(&other.to_string()),
        }
    }
    line
}

fn footers(status: &Status, more: usize, words: &SnapshotWords) -> Vec<String> {
    let mut out = Vec::new();
    if more > 0 {
        out.push(format!(
            "{} omitted; narrow with pattern",
            plural(more, words.more_one, words.more_many)
        ));
    }
    // The count is of every crumpled note in the homes looked at, not of matching ones (a
    // search does not read them), so the footer says what was skipped, not what matched.
    let crumpled = status.crumpled_excluded;
    if crumpled > 0 {
        out.push(format!(
            "{} {}; pass wastebasket to {} {}",
            plural(crumpled, "crumpled note", "crumpled notes"),
            words.skipped,
            words.verb,
            if crumpled == 1 { "it" } else { "them" }
        ));
    }
    for home in &status.homes_unavailable {
        if status.homes_symlinked.contains(home) {
            out.push(format!(
                "{home} could not be read (home_is_symlink: its directory is a symlink, which is never followed)"
            ));
        } else {
            out.push(format!("{home} could not be read"));
        }
    }
    out
}

fn snapshot_data(files: Vec<Value>, more: usize, status: &Status) -> Value {
    let mut data = json!({
        "files": files,
        "more": more,
        "crumpled_excluded": status.crumpled_excluded,
        "homes_unavailable": status.homes_unavailable,
    });
    // Present only when some home is a symlink: which unavailable homes have the stable code
    // `home_is_symlink`.
    if !status.homes_symlinked.is_empty() {
        data["homes_symlinked"] = json!(status.homes_symlinked);
    }
    data
}

/// How a snapshot counts its rows: `1 note` / `2 notes` and "pass wastebasket to list them",
/// or `1 file` / `2 files` and "… to search them".
struct SnapshotWords {
    one: &'static str,
    many: &'static str,
    /// The rows left out for the budget or the limit: `1 more matching note`.
    more_one: &'static str,
    more_many: &'static str,
    /// What happened to the crumpled notes the scan skipped.
    skipped: &'static str,
    verb: &'static str,
}

const LIST_WORDS: SnapshotWords = SnapshotWords {
    one: "note",
    many: "notes",
    more_one: "more matching note",
    more_many: "more matching notes",
    skipped: "hidden",
    verb: "list",
};
const SEARCH_WORDS: SnapshotWords = SnapshotWords {
    one: "file",
    many: "files",
    more_one: "more matching file",
    more_many: "more matching files",
    skipped: "not searched",
    verb: "search",
};

/// One snapshot (list or search) of the given rows: the data and its text from the same rows.
fn render_snapshot(
    rows: &[(Value, String)],
    more: usize,
    status: &Status,
    words: &SnapshotWords,
) -> Rendered {
    let mut lines = vec![plural(rows.len(), words.one, words.many)];
    lines.extend(rows.iter().map(|(_, t)| t.clone()));
    lines.extend(footers(status, more, words));
    Rendered {
        data: snapshot_data(rows.iter().map(|(v, _)| v.clone()).collect(), more, status),
        text: lines.join("\n"),
    }
}

/// Each item as (JSON value, text block), stopping once the text blocks so far exceed
/// `stop_after` bytes: rows beyond it are never rendered.
fn prepare_rows<T>(
    items: impl IntoIterator<Item = T>,
    stop_after: usize,
    mut prepare: impl FnMut(&T) -> (Value, String),
) -> Vec<(Value, String)> {
    let mut rows = Vec::with_capacity(512);
    let mut size = 0usize;
    for item in items {
        if size > stop_after {
            break;
        }
        let row = prepare(&item);
        size += row.1.len();
        rows.push(row);
    }
    rows
}

/// A rendered snapshot, refused when even its fixed parts exceed the budget.
fn fitting_snapshot(result: Rendered) -> Result<Rendered, NoteError> {
    if fits(&result.data, &result.text) {
        Ok(result)
    } else {
        Err(err(
            ErrorKind::OutputTooLarge,
            "The notes snapshot metadata exceeds the response budget.",
        ))
    }
}

/// The longest prefix of rows (each given as its JSON value and text block) that fits with
/// the fixed parts; computed from sizes, so it is linear in the rows it considers.
fn fitting_prefix(
    rows: &[(Value, String)],
    total: usize,
    render: &impl Fn(&[(Value, String)], usize) -> Rendered,
) -> usize {
    let mut json_sum = 0usize;
    let mut text_sum = 0usize;
    let mut k = 0usize;
    // The fixed parts' sizes depend on `more` only through its digits and whether it is 0 or
    // 1 (the footer's presence and plural): rendered once per such shape, not once per row.
    let mut fixed_sizes: Option<((usize, usize), (usize, usize))> = None;
    let shape = |more: usize| {
        (
            more.checked_ilog10().map_or(0, |d| d as usize + 1),
            more.min(2),
        )
    };
    while k < rows.len() {
        let (row, text) = &rows[k];
        let next_json = json_sum + json_len(row) + usize::from(k > 0);
        let next_text = text_sum + text.len() + 1;
        let more = total - (k + 1);
        let (fixed_json, fixed_text) = match fixed_sizes {
            Some((key, sizes)) if key == shape(more) => sizes,
            _ => {
                let fixed = render(&[], more);
                let sizes = (ok_envelope_bytes(&fixed.data), fixed.text.len());
                fixed_sizes = Some((shape(more), sizes));
                sizes
            }
        };
        let json_total = fixed_json + next_json;
        let text_total = fixed_text + next_text + 12;
        if json_total > OUTPUT_BUDGET_BYTES || text_total > OUTPUT_BUDGET_BYTES {
            break;
        }
        json_sum = next_json;
        text_sum = next_text;
        k += 1;
    }
    // The estimate is exact for JSON and slightly conservative for text (the header's digits):
    // settle the boundary on the real rendering.
    while k > 0 {
        let r = render(&rows[..k], total - k);
        if fits(&r.data, &r.text) {
            break;
        }
        k -= 1;
    }
    while k < rows.len() {
        let r = render(&rows[..k + 1], total - (k + 1));
        if !fits(&r.data, &r.text) {
            break;
        }
        k += 1;
    }
    k
}

/// `notes-list`: `{files, more, crumpled_excluded, homes_unavailable}`, recent first, as many
/// rows as `limit` and the budget allow.
pub fn list_result(
    listing: &NoteList,
    limit: Option<usize>,
    identity: &Identity,
) -> Result<Rendered, NoteError> {
    let total = listing.len();
    let status = &listing.status;
    let take = limit.unwrap_or(usize::MAX).min(total);
    // Rows are built only as taken, and none past the budget: a row's JSON is longer than its
    // text line (`{"address":…,"updated_at":…}` and `"project_key"`/`"crumpled_at"` against
    // `- … | updated …` and ` (project …)`/` | crumpled …`), so once the text lines exceed the
    // budget no further row can fit.
    let rows = prepare_rows(
        listing.rows().take(take),
        OUTPUT_BUDGET_BYTES,
        |r: &NoteRow| {
            (
                Value::Object(row_object(&r.display, &r.address, &r.meta, identity)),
                row_line(&r.display, &r.address, &r.meta, identity),
            )
        },
    );
    let render =
        |rows: &[(Value, String)], more: usize| render_snapshot(rows, more, status, &LIST_WORDS);
    let k = fitting_prefix(&rows, total, &render);
    fitting_snapshot(render(&rows[..k], total - k))
}

fn match_value(m: &LineMatch, text: &str, truncated: bool) -> Value {
    json!({"line": m.line, "text": text, "truncated": truncated, "offset_chars": m.offset_chars})
}

fn search_row(
    row: &SearchRow,
    matches: &[(Value, String)],
    identity: &Identity,
) -> (Value, String) {
    let mut obj = row_object(&row.display, &row.address, &row.meta, identity);
    obj.insert("matches_total".into(), json!(row.matches_total));
    obj.insert(
        "matches".into(),
        Value::Array(matches.iter().map(|(v, _)| v.clone()).collect()),
    );
    let mut text = format!(
        "{} | {}",
        row_line(&row.display, &row.address, &row.meta, identity),
        plural(row.matches_total, "match", "matches")
    );
    if matches.len() < row.matches_total {
        text.push_str(&format!(" ({} shown)", matches.len()));
    }
    for (_, line) in matches {
        text.push('\n');
        text.push_str(line);
    }
    (Value::Object(obj), text)
}

fn match_parts(m: &LineMatch, text: &str, truncated: bool) -> (Value, String) {
    let mut line = format!(
        "  line {} at offset_chars {}: {text}",
        m.line, m.offset_chars
    );
    if truncated {
        line.push_str(" [line shortened]");
    }
    (match_value(m, text, truncated), line)
}

/// How many bytes of row text a search response prepares before it stops looking at further
/// rows (it then keeps the longest prefix that fits the budget).
const SEARCH_PREPARED_BYTES: usize = 2 * OUTPUT_BUDGET_BYTES;

/// Which rows [`search_result`] can show lines of, given the request's `limit`: the search
/// need keep no others' lines (each row's prepared text holds its lines, so lines past
/// [`SEARCH_PREPARED_BYTES`] are past every row it prepares).
pub fn search_lines_kept(limit: Option<usize>) -> LinesKept {
    LinesKept {
        rows: limit.unwrap_or(usize::MAX),
        text_bytes: SEARCH_PREPARED_BYTES,
    }
}

/// `notes-search`: files with their matching lines, recent first; the first file alone may be
/// shrunk (fewer matches, then a shortened first line) so that something is always returned.
/// `listing` must keep lines in at least the rows [`search_lines_kept`] names for `limit`.
pub fn search_result(
    listing: &WithStatus<SearchRow>,
    limit: Option<usize>,
    identity: &Identity,
) -> Result<Rendered, NoteError> {
    let total = listing.rows.len();
    let status = &listing.status;
    let take = limit.unwrap_or(usize::MAX).min(total);
    let render =
        |rows: &[(Value, String)], more: usize| render_snapshot(rows, more, status, &SEARCH_WORDS);
    let rows = prepare_rows(
        &listing.rows[..take],
        SEARCH_PREPARED_BYTES,
        |row: &&SearchRow| {
            debug_assert!(
                row.matches_total == 0 || !row.matches.is_empty(),
                "a prepared row kept its lines"
            );
            let parts: Vec<(Value, String)> = row
                .matches
                .iter()
                .map(|m| match_parts(m, &m.text, false))
                .collect();
            search_row(row, &parts, identity)
        },
    );
    let k = fitting_prefix(&rows, total, &render);
    if k > 0 || rows.is_empty() {
        return fitting_snapshot(render(&rows[..k], total - k));
    }
    // The first file alone does not fit: keep as many whole matches as fit, else its first
    // match with the line cut to the longest fitting prefix.
    let first = &listing.rows[0];
    let all: Vec<(Value, String)> = first
        .matches
        .iter()
        .map(|m| match_parts(m, &m.text, false))
        .collect();
    let with = |parts: &[(Value, String)]| render(&[search_row(first, parts, identity)], total - 1);
    if let Some(n) = largest_fitting(all.len(), |n| {
        let r = with(&all[..n]);
        fits(&r.data, &r.text)
    })
    .filter(|n| *n >= 1)
    {
        return Ok(with(&all[..n]));
    }
    let m = &first.matches[0];
    let bounds: Vec<usize> = m
        .text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(m.text.len()))
        .collect();
    let cut = |n: usize| with(&[match_parts(m, &m.text[..bounds[n]], true)]);
    match largest_fitting(bounds.len() - 1, |n| {
        let r = cut(n);
        fits(&r.data, &r.text)
    }) {
        Some(n) => Ok(cut(n)),
        None => Err(err(
            ErrorKind::OutputTooLarge,
            "The first matching note cannot fit in a response without losing its identity.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_numbered_changes_with_context_and_gaps() {
        let before: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let after = before.replace("l10\n", "ten\n");
        let diff = display_diff(&before, &after);
        let lines: Vec<&str> = diff.lines().collect();
        assert_eq!(lines[0], "    ...");
        assert!(lines.contains(&"-10 l10"));
        assert!(lines.contains(&"+10 ten"));
        assert!(lines.contains(&"  6 l6"));
        assert!(!lines.contains(&"  5 l5"));
        assert_eq!(*lines.last().unwrap(), "    ...");
    }

    #[test]
    fn refusal_details_cap_line_numbers_at_twenty() {
        let mut e = err(ErrorKind::AmbiguousEdit, "m").with_edit(0);
        e.line_numbers = (1..=25).collect();
        let (code, message, details) = refusal_parts(&e);
        assert_eq!(code, "ambiguous_edit");
        assert!(
            message.ends_with("(this refusal names 20 of 25 match lines; the note is unchanged)")
        );
        let details = details.unwrap();
        assert_eq!(details["line_numbers"].as_array().unwrap().len(), 20);
        assert_eq!(details["line_numbers_total"], 25);
        assert_eq!(details["edit_index"], 0);
    }
}
