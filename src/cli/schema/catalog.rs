//! The JSON Schemas of every command's request and response, generated from the Rust types
//! the commands deserialise and serialise (or, for data built field by field, from the
//! schema-only types of [`super::data`]). They are checked in under `docs/schema/`: a test
//! regenerates them and fails on drift (`PI_CONTEXT_BLESS=1 cargo test --test cli schemas`
//! rewrites them), and every CLI test checks the envelopes it reads against them.

use std::borrow::Cow;

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::Value;

use super::data;
use crate::cli::{boot_render, budget_check, doctor, dream_fs, history, notes, sync};

/// Whether a schema describes what a command reads or what it prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Response,
}

/// One checked-in schema.
pub struct SchemaFile {
    /// The command (`dream-fs write`: `dream-fs-write`, requests only).
    pub command: &'static str,
    pub kind: Kind,
    make: fn() -> Schema,
}

impl SchemaFile {
    /// The file name under `docs/schema/`: `<command>.request.json` / `<command>.response.json`.
    pub fn file_name(&self) -> String {
        let kind = match self.kind {
            Kind::Request => "request",
            Kind::Response => "response",
        };
        format!("{}.{kind}.json", self.command)
    }

    /// The schema.
    pub fn schema(&self) -> Schema {
        let mut schema = (self.make)();
        let what = match self.kind {
            Kind::Request => "the JSON request read on stdin",
            Kind::Response => "the JSON envelope printed on stdout",
        };
        let object = schema.ensure_object();
        object.insert(
            "title".into(),
            format!(
                "pi-context {}: {what}",
                self.command.replacen("dream-fs-", "dream-fs ", 1)
            )
            .into(),
        );
        schema
    }

    /// The file's text: pretty JSON and a final newline.
    #[allow(clippy::expect_used, reason = "a schema is a JSON value")]
    pub fn text(&self) -> String {
        let mut text =
            serde_json::to_string_pretty(&self.schema()).expect("a schema is a JSON value");
        text.push('\n');
        text
    }
}

/// A request schema: what the command deserialises (unknown fields refused).
fn request<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// A response schema: the whole envelope, success with `T` as `data` or a refusal. Objects
/// list every field the code writes; a field it may leave out is not required.
fn response<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(ClosedObjects)
        .with_transform(AbsentNotNull)
        .into_generator()
        .into_root_schema_for::<Envelope<T>>()
}

/// Every object schema with listed properties admits no others (the response shapes are
/// exact; a new field shows up as a schema change).
#[derive(Clone)]
struct ClosedObjects;

impl Transform for ClosedObjects {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(object) = schema.as_object_mut()
            && object.contains_key("properties")
            && !object.contains_key("additionalProperties")
        {
            object.insert("additionalProperties".into(), Value::Bool(false));
        }
        transform_subschemas(self, schema);
    }
}

/// A property a command may leave out is left out, never written as `null` (every optional
/// field skips `None`), so its schema does not admit `null`.
#[derive(Clone)]
struct AbsentNotNull;

impl Transform for AbsentNotNull {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(object) = schema.as_object_mut() {
            let required: Vec<String> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = object.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    if !required.contains(name) {
                        drop_null(property);
                    }
                }
            }
        }
        transform_subschemas(self, schema);
    }
}

/// `{"type": [T, "null"]}` → `{"type": T}`; `{"anyOf": [S, {"type": "null"}]}` → `S`.
fn drop_null(property: &mut Value) {
    let Some(object) = property.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(any_of)) = object.get("anyOf") {
        let kept: Vec<Value> = any_of
            .iter()
            .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
            .cloned()
            .collect();
        if kept.len() == 1 && any_of.len() == 2 {
            object.remove("anyOf");
            if let Value::Object(inner) = &kept[0] {
                for (k, v) in inner {
                    object.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
    }
}

/// The result envelope around a command's `data`.
struct Envelope<T>(std::marker::PhantomData<T>);

/// A refusal: `{"code", "message", "details"?}`.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct Refusal {
    /// The stable machine code (`invalid_request`, `not_found`, …).
    code: String,
    /// The human message (at most 2,000 code points, then `…[truncated <k> chars]`).
    message: String,
    /// Structured facts about the refusal, per code.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, Value>")]
    details: Option<serde_json::Map<String, Value>>,
}

impl<T: JsonSchema> JsonSchema for Envelope<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("Envelope_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let data = generator.subschema_for::<T>();
        let error = generator.subschema_for::<Refusal>();
        let text = json_schema!({
            "description": "With --format both: the model-facing text of the same result.",
            "type": "string"
        });
        json_schema!({
            "description": "One JSON result: {\"ok\":true,\"data\":…} or {\"ok\":false,\"error\":{\"code\",\"message\",\"details\"?}}.",
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"ok": {"const": true}, "data": data, "text": text},
                    "required": ["ok", "data"]
                },
                {
                    "type": "object",
                    "properties": {"ok": {"const": false}, "error": error, "text": text},
                    "required": ["ok", "error"]
                }
            ]
        })
    }
}

macro_rules! file {
    ($command:literal, Request, $t:ty) => {
        SchemaFile {
            command: $command,
            kind: Kind::Request,
            make: request::<$t>,
        }
    };
    ($command:literal, Response, $t:ty) => {
        SchemaFile {
            command: $command,
            kind: Kind::Response,
            make: response::<$t>,
        }
    };
}

/// Every checked-in schema, by command. Commands that read no request (`project-key`,
/// `dream`) have a response schema only; `mcp`, `claude-hook` and `completions` speak other
/// formats (JSON-RPC, Claude Code's hook output, shell scripts) and have none.
pub fn files() -> Vec<SchemaFile> {
    vec![
        file!("notes-write", Request, notes::write::Request),
        file!("notes-write", Response, data::NotesWrite),
        file!("notes-read", Request, notes::read::Request),
        file!("notes-read", Response, data::NotesRead),
        file!("notes-update", Request, notes::update::Request),
        file!("notes-update", Response, data::NotesUpdate),
        file!("notes-list", Request, notes::list::Request),
        file!("notes-list", Response, data::NotesList),
        file!("notes-search", Request, notes::search::Request),
        file!("notes-search", Response, data::NotesSearch),
        file!("project-key", Response, data::ProjectKey),
        file!("history-windows", Request, history::windows::Request),
        file!(
            "history-windows",
            Response,
            crate::history::WindowsData<'static>
        ),
        file!("history-list", Request, history::FilterFields),
        file!("history-list", Response, crate::history::page::Page),
        file!("history-read", Request, history::read::Request),
        file!(
            "history-read",
            Response,
            crate::history::read::ReadData<'static>
        ),
        file!("history-search", Request, history::search::Request),
        file!("history-search", Response, crate::history::page::Page),
        file!("boot-render", Request, boot_render::Request),
        file!("boot-render", Response, data::BootRender),
        file!("budget-check", Request, budget_check::Request),
        file!("budget-check", Response, data::BudgetCheck),
        file!("doctor", Request, doctor::Request),
        file!("doctor", Response, crate::doctor::render::Bounded<'static>),
        file!("dream", Response, data::Dream),
        file!("dream-fs-write", Request, dream_fs::WriteRequest),
        file!("dream-fs-edit", Request, dream_fs::EditRequest),
        file!("dream-fs-delete", Request, dream_fs::DeleteRequest),
        file!("dream-fs", Response, data::DreamFs),
        file!("sync", Request, sync::Request),
        file!("sync", Response, data::Sync),
    ]
}
