//! Paging for `history-list` and `history-search` (docs/spec/history.md §11–§13): candidate order from
//! the `before`/`after` anchors, the greedy fit of whole pages against the one output budget,
//! anchors, fold rows of the conversation view, first-row shrinking, and the page text. The
//! JSON and the text of a page are rendered from the same rows, and every trial is judged by
//! `envelope::fits`. It must not read the session or decide which events are visible: callers
//! hand in the visible events and a document source.

use std::collections::HashMap;
use std::rc::Rc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::HistoryError;
use super::document::{Document, char_len, char_slice};
use super::jsjson::array_index;
use super::projection::{EventRole, Projection};
use crate::envelope::{fits, largest_fitting};
use crate::words::{plural, seq_range};

/// Tool names listed per fold row.
const FOLD_TOOL_NAMES: usize = 20;
/// Longest tool name listed in a fold row, in UTF-16 code units (JavaScript `length`).
const FOLD_TOOL_NAME_MAX_UTF16: usize = 120;

/// One visible event: an index into `Projection::events`, with its match offset (search).
#[derive(Debug, Clone, Copy)]
pub struct Visible {
    pub event: usize,
    pub seq: u64,
    pub offset: Option<usize>,
}

/// Paging parameters.
#[derive(Debug, Clone)]
pub struct PageSpec {
    pub limit: usize,
    pub before: Option<u64>,
    pub after: Option<u64>,
    pub max_chars_per_item: usize,
    /// Conversation view: fold the hidden tool/context events.
    pub fold: bool,
}

/// `nested_calls` of a row: counts only.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct NestedSummary {
    pub call_count: usize,
    pub complete: bool,
}

/// One event row (docs/spec/history.md §11.1), keys in wire order.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct EventRow {
    pub seq: u64,
    pub window_id: String,
    pub role: EventRole,
    pub created_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<super::ToolStatus>")]
    pub tool_status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_truncated: Option<bool>,
    /// Present with `output_truncated`: the path or null.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "PathOrNull")]
    pub full_output_path: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nested_calls: Option<NestedSummary>,
    pub truncated: bool,
    pub total_chars: usize,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_chars: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name_omitted: Option<bool>,
}

/// Schema of `full_output_path` when present: the path Pi recorded, or null.
struct PathOrNull;

impl schemars::JsonSchema for PathOrNull {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PathOrNull".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The path of the full output Pi saved, or null when it saved none.",
            "type": ["string", "null"]
        })
    }
}

/// A fold row (docs/spec/history.md §11.2).
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct FoldRow {
    pub folded: bool,
    pub first_seq: u64,
    pub last_seq: u64,
    pub count: usize,
    /// Tool name → how many of the folded events called it.
    #[schemars(with = "std::collections::BTreeMap<String, u64>")]
    pub tools: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted_tools: Option<usize>,
}

#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Row {
    Event(EventRow),
    Fold(FoldRow),
}

/// A page: the data of `history-list` / `history-search`.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Page {
    pub items: Vec<Row>,
    pub older_before: Option<u64>,
    pub newer_after: Option<u64>,
    pub skipped_lines: u64,
    /// How the session index was used (`built`, `extended`, `reused`, `bypassed`,
    /// `unavailable`).
    #[schemars(with = "crate::session::IndexUse")]
    pub index: &'static str,
}

impl Page {
    /// The page text (docs/spec/history.md §13).
    pub fn render(&self) -> String {
        if self.items.is_empty() {
            let mut text = "no events match this selection".to_string();
            push_skipped_note(&mut text, self.skipped_lines);
            return text;
        }
        let rows: Vec<String> = self.items.iter().map(render_row).collect();
        let mut text = rows.join("\n\n");
        let anchors: Vec<String> = [
            self.older_before.map(|n| format!("older_before {n}")),
            self.newer_after.map(|n| format!("newer_after {n}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !anchors.is_empty() {
            text.push_str("\n\n");
            text.push_str(&anchors.join(" | "));
        }
        push_skipped_note(&mut text, self.skipped_lines);
        text
    }
}

/// The one line that tells a reader malformed session lines were skipped.
pub fn push_skipped_note(text: &mut String, skipped: u64) {
    if skipped > 0 {
        text.push_str(&format!(
            "\n\n[{} skipped]",
            plural(
                usize::try_from(skipped).unwrap_or(usize::MAX),
                "malformed session line",
                "malformed session lines"
            )
        ));
    }
}

fn render_row(row: &Row) -> String {
    match row {
        Row::Event(r) => {
            let mut lines = vec![format!(
                "seq {} | window {} | {}",
                r.seq,
                r.window_id,
                r.role.as_str()
            )];
            if let Some(status) = r.tool_status {
                let mut line = match &r.tool {
                    Some(name) => format!("tool {name} | status {status}"),
                    None => format!("tool name omitted | status {status}"),
                };
                if r.output_truncated == Some(true) {
                    line.push_str(" | output truncated");
                    if let Some(Value::String(path)) = &r.full_output_path {
                        line.push_str(&format!(", full text at {path}"));
                    }
                }
                if let Some(nested) = &r.nested_calls {
                    line.push_str(&format!(
                        " | nested calls {} recorded, {}",
                        nested.call_count,
                        if nested.complete {
                            "complete"
                        } else {
                            "incomplete"
                        }
                    ));
                }
                lines.push(line);
            }
            if r.truncated {
                lines.push(format!(
                    "[preview of {} chars from offset {}; read this seq for the rest]",
                    r.total_chars,
                    r.offset_chars.unwrap_or(0)
                ));
            }
            lines.push(r.content.clone());
            lines.join("\n")
        }
        Row::Fold(f) => {
            let mut line = format!(
                "{} | folded {}",
                seq_range(&f.first_seq.to_string(), &f.last_seq.to_string()),
                plural(f.count, "event", "events")
            );
            if !f.tools.is_empty() {
                let names: Vec<String> = f
                    .tools
                    .iter()
                    .map(|(name, count)| format!("{name} {count}"))
                    .collect();
                line.push_str(" | ");
                line.push_str(&names.join(", "));
            }
            if let Some(m) = f.omitted_tools {
                line.push_str(&format!(
                    " | {} omitted",
                    plural(m, "distinct tool name", "distinct tool names")
                ));
            }
            line
        }
    }
}

/// Builds event rows from documents (built once per event).
pub struct RowSource<'p, F> {
    pub projection: &'p Projection,
    pub document: F,
    cache: HashMap<usize, Rc<Document>>,
}

impl<'p, F: FnMut(usize) -> Result<Document, HistoryError>> RowSource<'p, F> {
    pub fn new(projection: &'p Projection, document: F) -> Self {
        RowSource {
            projection,
            document,
            cache: HashMap::new(),
        }
    }

    fn doc(&mut self, event: usize) -> Result<Rc<Document>, HistoryError> {
        if let Some(doc) = self.cache.get(&event) {
            return Ok(Rc::clone(doc));
        }
        let doc = Rc::new((self.document)(event)?);
        self.cache.insert(event, Rc::clone(&doc));
        Ok(doc)
    }

    fn row(&mut self, v: Visible, max_chars: usize) -> Result<EventRow, HistoryError> {
        let doc = self.doc(v.event)?;
        let event = &self.projection.event(v.event);
        let total = char_len(&doc.text);
        let start = v.offset.unwrap_or(0);
        let truncated = start > 0 || start + max_chars < total;
        let content = if truncated {
            char_slice(&doc.text, start, max_chars).to_string()
        } else {
            doc.text.clone()
        };
        let tool = doc.tool.as_ref();
        Ok(EventRow {
            seq: event.seq,
            window_id: self.projection.window_id(event).to_string(),
            role: event.role,
            created_at: doc.created_at.clone(),
            tool: tool.map(|t| t.name.clone()),
            tool_status: tool.map(|t| t.status.as_str()),
            output_truncated: tool.filter(|t| t.output_truncated).map(|_| true),
            full_output_path: tool.filter(|t| t.output_truncated).map(|t| {
                t.full_output_path
                    .clone()
                    .map_or(Value::Null, Value::String)
            }),
            nested_calls: tool.and_then(|t| t.nested.as_ref()).map(|n| NestedSummary {
                call_count: n.calls.len(),
                complete: n.complete,
            }),
            truncated,
            total_chars: total,
            content,
            offset_chars: v.offset,
            tool_name_omitted: None,
        })
    }
}

/// The fold of `folded`, the foldable events (indexes, ascending) between two seqs.
fn fold_row(projection: &Projection, folded: &[usize]) -> Option<FoldRow> {
    let (&first, &last) = (folded.first()?, folded.last()?);
    let mut order: Vec<&str> = Vec::new();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for &e in folded {
        let event = &projection.event(e);
        if event.role == EventRole::Tool {
            let name = projection.tool_name(event).unwrap_or("unknown");
            let count = counts.entry(name).or_insert(0);
            if *count == 0 {
                order.push(name);
            }
            *count += 1;
        }
    }
    let listable: Vec<&str> = order
        .iter()
        .copied()
        .filter(|n| n.encode_utf16().count() <= FOLD_TOOL_NAME_MAX_UTF16)
        .collect();
    let listed: Vec<&str> = listable.iter().copied().take(FOLD_TOOL_NAMES).collect();
    let omitted = order.len() - listed.len();
    // JavaScript object order: array-index names first, ascending; then first appearance.
    let mut keyed: Vec<(usize, &str)> = listed.into_iter().enumerate().collect();
    keyed.sort_by_key(|(i, n)| array_index(n).map_or((1, *i as u64), |k| (0, k)));
    let mut tools = Map::new();
    for (_, name) in keyed {
        tools.insert(name.to_string(), Value::from(counts[name]));
    }
    Some(FoldRow {
        folded: true,
        first_seq: projection.event(first).seq,
        last_seq: projection.event(last).seq,
        count: folded.len(),
        tools,
        omitted_tools: (omitted > 0).then_some(omitted),
    })
}

/// Select one page (docs/spec/history.md §12). `vis` is ascending by seq, and holds at least
/// the `limit + 1` visible events nearest the page's anchor (the newest before `before`, or
/// the oldest after `after`), which are all the page and its anchors depend on;
/// `foldable(lo, hi)` gives the foldable events (indexes, ascending) strictly between two
/// seqs, and is asked only when `spec.fold`.
#[allow(clippy::expect_used, reason = "kept is non-empty here; just pushed")]
pub fn select<F: FnMut(usize) -> Result<Document, HistoryError>>(
    vis: &[Visible],
    foldable: &dyn Fn(u64, u64) -> Vec<usize>,
    spec: &PageSpec,
    rows: &mut RowSource<'_, F>,
    skipped_lines: u64,
    index: &'static str,
) -> Result<(Page, String), HistoryError> {
    let lower = spec.after.unwrap_or(0);
    let upper = spec.before.unwrap_or(u64::MAX);
    let in_range = |v: &&Visible| v.seq > lower && v.seq < upper;
    let candidates: Vec<Visible> = match (spec.after, spec.before) {
        (Some(_), _) => vis
            .iter()
            .filter(in_range)
            .take(spec.limit)
            .copied()
            .collect(),
        _ => vis
            .iter()
            .rev()
            .filter(in_range)
            .take(spec.limit)
            .copied()
            .collect(),
    };
    // `vis` ascends by seq: searched where it lies, not through a copy of its seqs.
    let any_between = |lo: u64, hi: u64| {
        let i = vis.partition_point(|v| v.seq <= lo);
        i < vis.len() && vis[i].seq < hi
    };
    let mut fold_memo: HashMap<(u64, u64), Option<FoldRow>> = HashMap::new();
    let projection = rows.projection;
    let mut fold = |lo: u64, hi: u64| -> Option<FoldRow> {
        fold_memo
            .entry((lo, hi))
            .or_insert_with(|| fold_row(projection, &foldable(lo, hi)))
            .clone()
    };
    let mut assemble = |kept: &[EventRow]| -> Page {
        let mut kept: Vec<&EventRow> = kept.iter().collect();
        kept.sort_by_key(|r| r.seq);
        let (older_before, newer_after) = match (kept.first(), kept.last()) {
            (Some(first), Some(last)) => (
                any_between(lower, first.seq.min(upper)).then_some(first.seq),
                any_between(last.seq.max(lower), upper).then_some(last.seq),
            ),
            _ => (None, None),
        };
        let mut items = Vec::new();
        if spec.fold {
            if kept.is_empty() {
                items.extend(fold(lower, upper).map(Row::Fold));
            } else {
                if older_before.is_none() {
                    items.extend(fold(lower, kept[0].seq).map(Row::Fold));
                }
                for (i, row) in kept.iter().enumerate() {
                    items.push(Row::Event((*row).clone()));
                    if let Some(next) = kept.get(i + 1) {
                        items.extend(fold(row.seq, next.seq).map(Row::Fold));
                    }
                }
                if newer_after.is_none() {
                    let last = kept.last().expect("kept is non-empty here").seq;
                    items.extend(fold(last, upper).map(Row::Fold));
                }
            }
        } else {
            items.extend(kept.into_iter().cloned().map(Row::Event));
        }
        Page {
            items,
            older_before,
            newer_after,
            skipped_lines,
            index,
        }
    };
    let page_fits = |page: &Page| -> (bool, String) {
        let text = page.render();
        (fits(page, &text), text)
    };

    let mut kept: Vec<EventRow> = Vec::new();
    for candidate in candidates {
        let row = rows.row(candidate, spec.max_chars_per_item)?;
        kept.push(row);
        let page = assemble(&kept);
        if page_fits(&page).0 {
            continue;
        }
        let row = kept.pop().expect("just pushed");
        if kept.is_empty() {
            kept.push(shrink(row, &mut assemble, &page_fits));
        }
        break;
    }
    let page = assemble(&kept);
    let (ok, text) = page_fits(&page);
    if !ok {
        return Err(HistoryError::PageTooLarge {
            rows: page.items.len(),
        });
    }
    Ok((page, text))
}

/// docs/spec/history.md §12.5: the longest content prefix that fits; failing that, drop the tool name.
fn shrink(
    row: EventRow,
    assemble: &mut impl FnMut(&[EventRow]) -> Page,
    page_fits: &impl Fn(&Page) -> (bool, String),
) -> EventRow {
    if let Some(shrunk) = longest_prefix(&row, assemble, page_fits) {
        return shrunk;
    }
    if row.tool.is_none() {
        return row;
    }
    // Only the name goes, with the full preview restored; `tool_status` stays and the text
    // says "tool name omitted".
    let mut nameless = row;
    nameless.tool = None;
    nameless.tool_name_omitted = Some(true);
    if page_fits(&assemble(std::slice::from_ref(&nameless))).0 {
        return nameless;
    }
    longest_prefix(&nameless, assemble, page_fits).unwrap_or(nameless)
}

fn longest_prefix(
    row: &EventRow,
    assemble: &mut impl FnMut(&[EventRow]) -> Page,
    page_fits: &impl Fn(&Page) -> (bool, String),
) -> Option<EventRow> {
    let with_prefix = |n: usize| {
        let mut r = row.clone();
        r.content = char_slice(&row.content, 0, n).to_string();
        r.truncated = true;
        r
    };
    let n = largest_fitting(char_len(&row.content), |n| {
        page_fits(&assemble(&[with_prefix(n)])).0
    })?;
    Some(with_prefix(n))
}
