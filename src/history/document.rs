//! Event documents (docs/spec/history.md §6): the one deterministic text per event that search matches,
//! previews show and read windows slice, plus the tool facts (name, status, arguments, bash
//! truncation, nested calls) rows and reads report. Built on demand from fully decoded
//! entries; code-point helpers live here too. Must not page, filter or render.

use std::rc::Rc;

use serde_json::Value;

use super::jsjson;
use super::projection::{Event, Projection, Source};
use crate::session::{SessionError, SessionFile};

/// Decodes event lines for documents, keeping the last one: an assistant entry is shared by
/// its text event and its calls, which are built one after another.
pub struct Loader<'s> {
    pub file: &'s SessionFile,
    pub projection: &'s Projection,
    last: Option<(usize, Rc<Value>)>,
}

impl<'s> Loader<'s> {
    pub fn new(file: &'s SessionFile, projection: &'s Projection) -> Self {
        Loader {
            file,
            projection,
            last: None,
        }
    }

    /// The decoded entry of line `entry` (see [`Projection::line`]).
    pub fn load(&mut self, entry: usize) -> Result<Rc<Value>, SessionError> {
        if let Some((index, value)) = &self.last
            && *index == entry
        {
            return Ok(Rc::clone(value));
        }
        let line = self.projection.line(entry);
        let value = Rc::new(self.file.load_at(line.offset, line.len)?);
        self.last = Some((entry, Rc::clone(&value)));
        Ok(value)
    }
}

/// A tool event's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    Ok,
    Error,
    Unfinished,
}

impl ToolStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Ok => "ok",
            ToolStatus::Error => "error",
            ToolStatus::Unfinished => "unfinished",
        }
    }
}

/// Recorded nested calls of a tool result.
#[derive(Debug, Clone, PartialEq)]
pub struct NestedCalls {
    /// The records as stored.
    pub calls: Vec<Value>,
    /// The host's own `complete` flag.
    pub complete: bool,
}

/// What a tool event knows besides its document.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFacts {
    pub name: String,
    pub status: ToolStatus,
    /// The recorded arguments (absent when never recorded).
    pub arguments: Option<Value>,
    /// Bash runs whose output was truncated.
    pub output_truncated: bool,
    /// With `output_truncated`: where the full output is, when known.
    pub full_output_path: Option<String>,
    pub nested: Option<NestedCalls>,
}

/// An event's document and, for tool events, its facts.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub text: String,
    pub tool: Option<ToolFacts>,
    /// The `timestamp` (when a string) of the event's entry (a call's assistant entry).
    pub created_at: Option<String>,
}

/// `contentText(content)`: a string as is; the `text` of every text block joined with `\n`;
/// anything else empty.
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            texts.join("\n")
        }
        _ => String::new(),
    }
}

fn str_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Build the document of one event.
pub fn build(loader: &mut Loader, event: &Event) -> Result<Document, SessionError> {
    let created_at = loader
        .load(event.source.entry())?
        .get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut doc = build_text(loader, event)?;
    doc.created_at = created_at;
    Ok(doc)
}

fn build_text(loader: &mut Loader, event: &Event) -> Result<Document, SessionError> {
    match event.source {
        Source::Text { entry } => {
            let value = loader.load(entry)?;
            let text = match value.get("type").and_then(Value::as_str) {
                Some("compaction") | Some("branch_summary") => {
                    str_field(&value, "summary").unwrap_or_default()
                }
                Some("custom_message") => content_text(value.get("content")),
                _ => {
                    let message = value.get("message").unwrap_or(&Value::Null);
                    match message.get("role").and_then(Value::as_str) {
                        Some("compactionSummary") | Some("branchSummary") => {
                            str_field(message, "summary").unwrap_or_default()
                        }
                        _ => content_text(message.get("content")),
                    }
                }
            };
            Ok(Document {
                text,
                tool: None,
                created_at: None,
            })
        }
        Source::Call {
            entry,
            block,
            result,
        } => {
            let value = loader.load(entry)?;
            let call = value
                .pointer("/message/content")
                .and_then(Value::as_array)
                .and_then(|blocks| {
                    blocks
                        .iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
                        .nth(block)
                })
                .cloned()
                .unwrap_or(Value::Null);
            let name = str_field(&call, "name").unwrap_or_else(|| "unknown".into());
            let arguments = call.get("arguments").cloned();
            let (status, output, nested) = match result {
                Some(result) => {
                    let value = loader.load(result)?;
                    result_facts(value.get("message").unwrap_or(&Value::Null))
                }
                None => (ToolStatus::Unfinished, String::new(), None),
            };
            Ok(tool_document(
                ToolFacts {
                    name,
                    status,
                    arguments,
                    output_truncated: false,
                    full_output_path: None,
                    nested,
                },
                &output,
            ))
        }
        Source::Result { entry } => {
            let value = loader.load(entry)?;
            let message = value.get("message").unwrap_or(&Value::Null);
            let name = str_field(message, "toolName").unwrap_or_else(|| "unknown".into());
            let (status, output, nested) = result_facts(message);
            Ok(tool_document(
                ToolFacts {
                    name,
                    status,
                    arguments: None,
                    output_truncated: false,
                    full_output_path: None,
                    nested,
                },
                &output,
            ))
        }
        Source::Bash { entry } => {
            let value = loader.load(entry)?;
            let message = value.get("message").unwrap_or(&Value::Null);
            let mut arguments = serde_json::Map::new();
            if let Some(command) = message.get("command") {
                arguments.insert("command".into(), command.clone());
            }
            let status = if message.get("cancelled") == Some(&Value::Bool(true)) {
                ToolStatus::Error
            } else {
                match message.get("exitCode").and_then(Value::as_f64) {
                    Some(0.0) => ToolStatus::Ok,
                    Some(_) => ToolStatus::Error,
                    None => ToolStatus::Unfinished,
                }
            };
            let truncated = message.get("truncated") == Some(&Value::Bool(true));
            let output = str_field(message, "output").unwrap_or_default();
            Ok(tool_document(
                ToolFacts {
                    name: "bash".into(),
                    status,
                    arguments: Some(Value::Object(arguments)),
                    output_truncated: truncated,
                    full_output_path: if truncated {
                        str_field(message, "fullOutputPath").filter(|p| !p.is_empty())
                    } else {
                        None
                    },
                    nested: None,
                },
                &output,
            ))
        }
    }
}

fn result_facts(message: &Value) -> (ToolStatus, String, Option<NestedCalls>) {
    let status = if message.get("isError") == Some(&Value::Bool(true)) {
        ToolStatus::Error
    } else {
        ToolStatus::Ok
    };
    let output = content_text(message.get("content"));
    let nested = message
        .get("nestedCalls")
        .filter(|n| n.is_object())
        .map(|n| NestedCalls {
            calls: n
                .get("calls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            complete: n.get("complete") == Some(&Value::Bool(true)),
        });
    (status, output, nested)
}

/// `${value}` of a JavaScript template literal, for the parts of nested-call lines.
fn js_display(value: Option<&Value>) -> String {
    match value {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => jsjson::number(n),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Null) => "null".into(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::Null => String::new(),
                other => js_display(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".into(),
    }
}

/// One nested-call record line of a document (without the id, as in 0.35).
pub fn nested_line(record: &Value) -> String {
    let mut parts = vec![format!(
        "{} [{}]",
        js_display(record.get("name")),
        js_display(record.get("status"))
    )];
    if let Some(duration) = record.get("durationMs").filter(|d| d.is_number()) {
        parts.push(format!("{}ms", js_display(Some(duration))));
    }
    if let Some(error) = record.get("error").filter(|e| is_truthy(e)) {
        parts.push(format!("error: {}", js_display(Some(error))));
    }
    if let Some(arguments) = record.get("arguments") {
        parts.push(jsjson::to_string(arguments));
    } else if let Some(bytes) = record.get("argumentsBytes").filter(|b| b.is_number()) {
        parts.push(format!(
            "(arguments omitted: {} bytes)",
            js_display(Some(bytes))
        ));
    } else {
        parts.push("(arguments not recorded)".into());
    }
    format!("- {}", parts.join(" "))
}

fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

fn tool_document(facts: ToolFacts, output: &str) -> Document {
    let mut text = facts.name.clone();
    text.push(' ');
    match &facts.arguments {
        Some(arguments) => text.push_str(&jsjson::to_string(arguments)),
        None => text.push_str("(arguments not recorded)"),
    }
    if !output.is_empty() {
        text.push_str("\n--- output ---\n");
        text.push_str(output);
    }
    if let Some(nested) = &facts.nested {
        text.push_str(&format!(
            "\n--- nested calls ({}, {} recorded) ---\n",
            if nested.complete {
                "complete"
            } else {
                "incomplete"
            },
            nested.calls.len()
        ));
        let lines: Vec<String> = nested.calls.iter().map(nested_line).collect();
        text.push_str(&lines.join("\n"));
    }
    Document {
        text,
        tool: Some(facts),
        created_at: None,
    }
}

/// Number of code points in `s`.
pub fn char_len(s: &str) -> usize {
    // Count non-continuation bytes: cheaper than decoding.
    s.bytes().filter(|b| (b & 0xC0) != 0x80).count()
}

/// Byte index of the `n`-th code point of `s` (`s.len()` when `n` is at or past the end).
pub fn byte_at_char(s: &str, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// The code points `[start, start + len)` of `s`.
pub fn char_slice(s: &str, start: usize, len: usize) -> &str {
    let from = byte_at_char(s, start);
    let rest = &s[from..];
    &rest[..byte_at_char(rest, len)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_documents_match_the_spec_examples() {
        let facts = |name: &str, arguments: Option<Value>, nested| ToolFacts {
            name: name.into(),
            status: ToolStatus::Ok,
            arguments,
            output_truncated: false,
            full_output_path: None,
            nested,
        };
        assert_eq!(
            tool_document(facts("edit", Some(json!({"path": "a.md"})), None), "edited").text,
            "edit {\"path\":\"a.md\"}\n--- output ---\nedited"
        );
        assert_eq!(
            tool_document(facts("edit", Some(json!({"path": "pending.md"})), None), "").text,
            "edit {\"path\":\"pending.md\"}"
        );
        let nested = NestedCalls {
            calls: vec![
                json!({"id": "n1", "name": "read", "arguments": {"path": "orphan-nested.md"}, "status": "ok"}),
            ],
            complete: true,
        };
        assert_eq!(
            tool_document(facts("edit", None, Some(nested)), "orphan output").text,
            "edit (arguments not recorded)\n--- output ---\norphan output\n--- nested calls (complete, 1 recorded) ---\n- read [ok] {\"path\":\"orphan-nested.md\"}"
        );
        let doc = tool_document(
            facts("bash", Some(json!({"command": "echo needle"})), None),
            "needle output",
        );
        assert_eq!(char_len(&doc.text), 59);
    }

    #[test]
    fn nested_lines_carry_duration_error_and_omitted_arguments() {
        let record = json!({"id": "x", "name": "grep", "status": "error", "durationMs": 12, "error": "boom", "argumentsBytes": 9000});
        assert_eq!(
            nested_line(&record),
            "- grep [error] 12ms error: boom (arguments omitted: 9000 bytes)"
        );
        let empty = NestedCalls {
            calls: vec![],
            complete: false,
        };
        let facts = ToolFacts {
            name: "code".into(),
            status: ToolStatus::Ok,
            arguments: Some(json!({})),
            output_truncated: false,
            full_output_path: None,
            nested: Some(empty),
        };
        assert_eq!(
            tool_document(facts, "").text,
            "code {}\n--- nested calls (incomplete, 0 recorded) ---\n"
        );
    }

    #[test]
    fn content_text_joins_text_blocks_only() {
        let content = json!([{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "x"}, {"type": "image", "data": ""}, {"type": "text", "text": "b"}]);
        assert_eq!(content_text(Some(&content)), "a\nb");
        assert_eq!(content_text(Some(&json!(5))), "");
    }

    #[test]
    fn code_point_helpers() {
        let s = "aİ😀b";
        assert_eq!(char_len(s), 4);
        assert_eq!(char_slice(s, 1, 2), "İ😀");
        assert_eq!(char_slice(s, 3, 10), "b");
        assert_eq!(char_slice(s, 9, 10), "");
    }
}
