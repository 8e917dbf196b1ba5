//! `history-read` (docs/spec/history.md §15): the address checks in the spec's order, the bounded
//! execution metadata of tool events, and the largest document window that fits the budget,
//! with its continuation footer outside the window text. Decodes only the lines of the one
//! event read.

use serde::Serialize;
use serde_json::{Map, Value};

use super::document::{self, Document, Loader, char_len, char_slice};
use super::jsjson;
use super::page::push_skipped_note;
use super::projection::EventRole;
use super::{HistoryError, Opened, Rendered};
use crate::envelope::{fits_js, largest_fitting};
use crate::window::{Cut, LimitedBy, Window, continuation};

/// Default `limit_chars`.
pub const DEFAULT_LIMIT_CHARS: usize = 12_000;
/// Largest accepted `limit_chars`.
pub const MAX_LIMIT_CHARS: usize = 50_000;
/// Arguments and nested-call records kept in the execution metadata, in compact JSON bytes.
const EXECUTION_JSON_MAX_BYTES: usize = 8192;

/// What to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    pub seq: u64,
    /// Code points; negative counts back from the end.
    pub offset_chars: i64,
    /// 1..=50,000 code points.
    pub limit_chars: usize,
}

impl ReadOptions {
    pub fn new(seq: u64) -> Self {
        ReadOptions {
            seq,
            offset_chars: 0,
            limit_chars: DEFAULT_LIMIT_CHARS,
        }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct NestedCopy {
    calls: Vec<Value>,
    complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    trimmed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    omitted_calls: Option<usize>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Execution {
    name: String,
    #[schemars(with = "super::ToolStatus")]
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_truncated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    full_output_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nested_calls: Option<NestedCopy>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ReadWindow<'a> {
    text: &'a str,
    offset_chars: usize,
    total_chars: usize,
    next_offset_chars: Option<usize>,
    limited_by: Option<LimitedBy>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ReadData<'a> {
    seq: u64,
    window_id: &'a str,
    role: EventRole,
    created_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<&'a Execution>,
    window: ReadWindow<'a>,
    skipped_lines: u64,
    #[schemars(with = "crate::session::IndexUse")]
    index: &'static str,
}

/// A nested-call record with the wire's snake_case keys, its values as JavaScript holds them.
fn snake_record(record: &Value) -> Value {
    match record {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let key = match key.as_str() {
                    "argumentsBytes" => "arguments_bytes",
                    "durationMs" => "duration_ms",
                    other => other,
                };
                // Converting a `Value` cannot fail (its keys are strings).
                let js = serde_json::to_value(jsjson::Js(value)).unwrap_or(Value::Null);
                out.insert(key.to_string(), js);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn execution_of(doc: &Document) -> Option<Execution> {
    let tool = doc.tool.as_ref()?;
    let (arguments, arguments_bytes) = match &tool.arguments {
        Some(arguments) => {
            let bytes = jsjson::to_string(arguments).len();
            if bytes <= EXECUTION_JSON_MAX_BYTES {
                // JavaScript's key order and numbers, printed as such by the wire writer.
                // Converting a `Value` cannot fail (its keys are strings).
                let js = serde_json::to_value(jsjson::Js(arguments)).unwrap_or(Value::Null);
                (Some(js), None)
            } else {
                (None, Some(bytes))
            }
        }
        None => (None, None),
    };
    let nested_calls = tool.nested.as_ref().map(|nested| {
        let mut kept = Vec::new();
        let mut used = 0usize;
        let mut omitted = 0usize;
        for record in &nested.calls {
            let record = snake_record(record);
            let bytes = jsjson::to_wire_string(&record).map_or(usize::MAX, |v| v.len());
            if used + bytes > EXECUTION_JSON_MAX_BYTES {
                omitted += 1;
                continue;
            }
            used += bytes;
            kept.push(record);
        }
        NestedCopy {
            calls: kept,
            complete: nested.complete,
            trimmed: (omitted > 0).then_some(true),
            omitted_calls: (omitted > 0).then_some(omitted),
        }
    });
    Some(Execution {
        name: tool.name.clone(),
        status: tool.status.as_str(),
        arguments,
        arguments_bytes,
        output_truncated: tool.output_truncated.then_some(true),
        full_output_path: if tool.output_truncated {
            tool.full_output_path.clone()
        } else {
            None
        },
        nested_calls,
    })
}

fn display(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => jsjson::number(n),
        Some(other) => other.to_string(),
        None => "undefined".into(),
    }
}

fn render(data: &ReadData) -> String {
    let mut text = format!(
        "seq {} | window {} | {}",
        data.seq,
        data.window_id,
        data.role.as_str()
    );
    if let Some(execution) = data.execution {
        text.push_str(&format!(
            "\ntool {} | status {}",
            execution.name, execution.status
        ));
        if let Some(bytes) = execution.arguments_bytes {
            text.push_str(&format!(
                "\narguments omitted: {bytes} bytes; read the window for them"
            ));
        }
        if execution.output_truncated == Some(true) {
            text.push_str("\noutput truncated");
            if let Some(path) = &execution.full_output_path {
                text.push_str(&format!(", full text at {path}"));
            }
        }
        if let Some(nested) = &execution.nested_calls {
            text.push_str(&format!(
                "\nnested calls {} recorded, {}",
                nested.calls.len(),
                if nested.complete {
                    "complete"
                } else {
                    "incomplete"
                }
            ));
            if let Some(m) = nested.omitted_calls {
                text.push_str(&format!(", {m} more omitted"));
            }
            for record in &nested.calls {
                let mut line = format!(
                    "\n  {} {} [{}]",
                    display(record.get("id")),
                    display(record.get("name")),
                    display(record.get("status"))
                );
                if let Some(d) = record.get("duration_ms").filter(|d| d.is_number()) {
                    line.push_str(&format!(" {}ms", display(Some(d))));
                }
                if let Some(b) = record.get("arguments_bytes").filter(|b| b.is_number()) {
                    line.push_str(&format!(" arguments omitted: {} bytes", display(Some(b))));
                }
                if let Some(e) = record
                    .get("error")
                    .filter(|e| !e.is_null() && *e != &Value::String(String::new()))
                {
                    line.push_str(&format!(" error: {}", display(Some(e))));
                }
                text.push_str(&line);
            }
        }
    }
    push_skipped_note(&mut text, data.skipped_lines);
    text.push_str("\n\n");
    text.push_str(data.window.text);
    let w = &data.window;
    text.push_str(&continuation(
        w.offset_chars,
        w.total_chars,
        w.next_offset_chars,
        w.limited_by,
    ));
    text
}

/// Read one event over an opened session.
#[allow(clippy::expect_used, reason = "read data serialises")]
pub fn read_in(opened: &Opened, options: &ReadOptions) -> Result<Rendered, HistoryError> {
    let projection = &opened.projection;
    let seq = options.seq;
    let event = projection.event_at(seq);
    if event.is_none() && seq > projection.highest_seq {
        return Err(HistoryError::UnknownSeq {
            seq,
            highest_seq: projection.highest_seq,
        });
    }
    if !projection.on_branch(seq) {
        return Err(HistoryError::NotOnBranch { seq });
    }
    let Some(event) = event else {
        return Err(match projection.paired_call(seq) {
            Some(call) => HistoryError::NotAnEvent {
                seq,
                read_seq: call,
            },
            None => HistoryError::NoEvent { seq },
        });
    };
    let mut loader = Loader::new(&opened.file, &opened.projection);
    let doc = document::build(&mut loader, &event)?;
    let total = char_len(&doc.text);
    let window_id = projection.window_id(&event);
    let cuts =
        Window::resolve(options.offset_chars, options.limit_chars, total).map_err(|past| {
            HistoryError::InvalidOffset {
                seq,
                window_id: window_id.to_string(),
                past,
            }
        })?;
    let Window { start, range, .. } = cuts;
    let execution = execution_of(&doc);
    let created_at = doc.created_at.as_deref();
    // The tail of the document from `start`, so each trial slices from its beginning.
    let tail = &doc.text[document::byte_at_char(&doc.text, start)..];
    let build = |d: usize| -> ReadData<'_> {
        let Cut { next, limited_by } = cuts.cut(d);
        ReadData {
            seq,
            window_id,
            role: event.role,
            created_at,
            execution: execution.as_ref(),
            window: ReadWindow {
                text: char_slice(tail, 0, d),
                offset_chars: start,
                total_chars: total,
                next_offset_chars: next,
                limited_by,
            },
            skipped_lines: opened.file.skipped_lines,
            index: opened.index.as_str(),
        }
    };
    let trial = |d: usize| {
        let data = build(d);
        fits_js(&data, &render(&data))
    };
    // First the whole range (its footer may vanish at the end), then the largest fitting size.
    let delivered = largest_fitting(range, trial).filter(|&d| d >= 1 || range == 0);
    let Some(d) = delivered else {
        return Err(HistoryError::ReadTooLarge {
            total_chars: total,
            offset_chars: start,
        });
    };
    let data = build(d);
    let text = render(&data);
    Ok(Rendered {
        data: serde_json::to_value(&data).expect("read data serialises"),
        text,
    })
}
