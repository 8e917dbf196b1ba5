//! Schema-only types: the JSON Schema shapes of request fields that the commands read as
//! free JSON (`serde_json::Value`) so they can name what is wrong themselves. They are never
//! deserialised; `#[schemars(with = …)]` on a request field points here. The request schemas
//! serve as the `pi-context mcp` tools' input schemas. [`catalog`] lists every command's request
//! and response schema as checked in under `docs/schema/`; [`data`] holds the schema-only
//! shapes of response data built field by field.

pub mod catalog;
mod data;

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use super::history::LooseInt;

/// A literal, or a non-empty list of literals (ORed).
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum OneOrMany {
    One(#[schemars(length(min = 1))] String),
    Many(#[schemars(length(min = 1), inner(length(min = 1)))] Vec<String>),
}

/// The event roles a history page can be narrowed to.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum Role {
    User,
    Assistant,
    Tool,
    Context,
}

/// A non-empty list of roles. A single role string is accepted too (Pi coerces it to a list),
/// but the schema advertises what a caller should send: a list.
#[derive(JsonSchema)]
#[serde(transparent)]
#[allow(dead_code)]
pub struct Roles(#[schemars(length(min = 1))] Vec<Role>);

/// History integers are coerced the way Pi coerces them (`"5"` reads as 5), but the schema
/// advertises what a caller should send: an integer.
impl JsonSchema for LooseInt {
    fn schema_name() -> Cow<'static, str> {
        "LooseInt".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer"})
    }
}
