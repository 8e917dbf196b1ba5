//! The MCP tool table: one entry per CLI command the server exposes. Each tool's input schema
//! is its command's request schema (derived from the request struct the command itself
//! deserialises), and each call is turned into that command's `Args`.

use std::sync::Arc;

use rmcp::handler::server::common::{schema_for_empty_input, schema_for_input};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;

use crate::cli::Command;
use crate::cli::common::{CacheArgs, IdentityArgs, NotesArgs};
use crate::cli::history::{self, SessionArgs};
use crate::cli::notes;

/// Which flags locate a tool's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// The notes identity (`--notes-home`, `--session-id`, …).
    Notes,
    /// The Pi session file (`--session`, `--leaf`).
    History,
}

/// One exposed command.
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub family: Family,
    pub read_only: bool,
    schema: fn() -> Result<Arc<JsonObject>, String>,
}

impl ToolSpec {
    /// The MCP tool definition.
    pub fn tool(&self) -> Tool {
        // Derived from our own request types: the unit test below proves every one is valid, so
        // the fallback (an object schema without properties) is never what a host sees.
        let schema = (self.schema)().unwrap_or_else(|_| schema_for_empty_input());
        let annotations = ToolAnnotations::new()
            .read_only(self.read_only)
            .destructive(false)
            .open_world(false);
        let mut tool = Tool::new(self.name, self.description, schema).annotate(annotations);
        tool.title = Some(self.title.to_string());
        tool
    }

    /// The command that answers this tool, with the server's identity or session flags; `None`
    /// for a history tool without a session file.
    pub fn command(
        &self,
        identity: &IdentityArgs,
        cache: CacheArgs,
        session: Option<&SessionArgs>,
    ) -> Option<Command> {
        let identity = identity.clone();
        let source = || session.cloned();
        Some(match self.name {
            "notes_write" => Command::NotesWrite(notes::write::Args { identity }),
            "notes_read" => Command::NotesRead(notes::read::Args {
                notes: NotesArgs { identity, cache },
            }),
            "notes_update" => Command::NotesUpdate(notes::update::Args { identity }),
            "notes_list" => Command::NotesList(notes::list::Args {
                notes: NotesArgs { identity, cache },
            }),
            "notes_search" => Command::NotesSearch(notes::search::Args { identity }),
            "history_windows" => {
                Command::HistoryWindows(history::windows::Args { source: source()? })
            }
            "history_list" => Command::HistoryList(history::list::Args { source: source()? }),
            "history_read" => Command::HistoryRead(history::read::Args { source: source()? }),
            "history_search" => Command::HistorySearch(history::search::Args { source: source()? }),
            _ => return None,
        })
    }
}

fn schema<T: JsonSchema + 'static>() -> Result<Arc<JsonObject>, String> {
    schema_for_input::<T>()
}

/// Every tool, in listing order (history tools last; they are listed only with `--session`).
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "notes_write",
        title: "Notes write",
        description: "Create a note, or replace a note's whole body. Notes outlive the context window and are shared by every agent using the same notes home: write down what a future you needs (goal, decisions, state, next step, where to look). Returns whether the note was created, overwritten, or taken back out of the wastebasket. To change part of a note use notes_update.",
        family: Family::Notes,
        read_only: false,
        schema: schema::<notes::write::Request>,
    },
    ToolSpec {
        name: "notes_read",
        title: "Notes read",
        description: "Read a note's body from offset_chars (default 0; negative counts back from the end), up to limit_chars characters (default 12000), with its metadata. When more remains the result says which offset_chars continues the read.",
        family: Family::Notes,
        read_only: false,
        schema: schema::<notes::read::Request>,
    },
    ToolSpec {
        name: "notes_update",
        title: "Notes update",
        description: "Change an existing note. `edits` replace exact text (each oldText must match once unless replace_all; all edits apply together or none does). `crumpled: true` moves an obsolete note to the wastebasket, `false` takes it out. `rename_to` moves the note and must be used alone. The receipt shows a diff.",
        family: Family::Notes,
        read_only: false,
        schema: schema::<notes::update::Request>,
    },
    ToolSpec {
        name: "notes_list",
        title: "Notes list",
        description: "List notes across all homes (this session, @project, @human, @self, @model), most recently updated first. Narrow with pattern or scope; see crumpled notes with wastebasket.",
        family: Family::Notes,
        read_only: true,
        schema: schema::<notes::list::Request>,
    },
    ToolSpec {
        name: "notes_search",
        title: "Notes search",
        description: "Search note bodies for one literal or several (any of them), case-insensitively. Hits give the line and offset_chars to pass to notes_read. Most recently updated notes first.",
        family: Family::Notes,
        read_only: true,
        schema: schema::<notes::search::Request>,
    },
    ToolSpec {
        name: "history_windows",
        title: "History list windows",
        description: "List the context windows of the Pi session this server reads, oldest first, with their seq ranges and event counts. Use a window_id to scope history_list and history_search.",
        family: Family::History,
        read_only: true,
        schema: schema::<history::windows::Request>,
    },
    ToolSpec {
        name: "history_list",
        title: "History list items",
        description: "Page through the Pi session's history, including everything before earlier memory resets. Shows the newest page by default, oldest first within the page; without roles, tool and context runs are folded into summary rows. Page back with before=older_before, forward with after=newer_after. Read a whole event with history_read.",
        family: Family::History,
        read_only: true,
        schema: schema::<history::FilterFields>,
    },
    ToolSpec {
        name: "history_read",
        title: "History read item",
        description: "Read one history event by seq: from offset_chars (default 0; negative counts from the end), up to limit_chars characters (default 12000). Continue with next_offset_chars when more remains.",
        family: Family::History,
        read_only: true,
        schema: schema::<history::read::Request>,
    },
    ToolSpec {
        name: "history_search",
        title: "History search",
        description: "Search the Pi session's whole history (all windows, all roles: messages, tool names, arguments, output, nested calls) for one literal or several, case-insensitively. Each hit has a seq and the offset_chars of the match, to pass to history_read.",
        family: Family::History,
        read_only: true,
        schema: schema::<history::search::Request>,
    },
];

/// The tool spec called `name`, if the server exposes it.
pub fn find(name: &str, with_history: bool) -> Option<&'static ToolSpec> {
    TOOLS
        .iter()
        .find(|t| t.name == name && (with_history || t.family == Family::Notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_derived_object_schema_without_extra_fields() {
        for spec in TOOLS {
            let schema = (spec.schema)().unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            assert_eq!(schema["type"], "object", "{}", spec.name);
            assert_eq!(schema["additionalProperties"], false, "{}", spec.name);
        }
    }

    #[test]
    fn every_tool_maps_to_a_command() {
        let session = SessionArgs {
            session: "/s.jsonl".into(),
            leaf: None,
            no_index: false,
        };
        for spec in TOOLS {
            let with = spec.command(
                &IdentityArgs::default(),
                CacheArgs::default(),
                Some(&session),
            );
            assert!(with.is_some(), "{}", spec.name);
            let without = spec.command(&IdentityArgs::default(), CacheArgs::default(), None);
            assert_eq!(
                without.is_some(),
                spec.family == Family::Notes,
                "{}",
                spec.name
            );
        }
    }
}
