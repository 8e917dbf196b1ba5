//! What several domains share with the host about the protocol: the logical tool-name bindings
//! that model-facing texts (boot block, budget reminder and warning) refer to, the context
//! window ids, and the `{oldText, newText}` edit of `notes-update` and `dream-fs edit`. Hosts other than Pi pass their own tool names; nothing in pi-context's texts
//! hard-codes a tool name.

use serde::{Deserialize, Serialize};

/// Tool names by role. Every field defaults to the Pi extension's name, so a request may
/// override only some of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ToolNames {
    /// The notes tool family as a whole (Pi: `notes_*`).
    pub notes: String,
    /// Lists notes; used to retry an unavailable home (Pi: `notes_list`).
    pub notes_list: String,
    /// The history tool family as a whole (Pi: `history_*`).
    pub history: String,
    /// Lists the reset windows (Pi: `history_windows`).
    pub history_windows: String,
    /// Pages through events (Pi: `history_list`).
    pub history_list: String,
    /// Searches events (Pi: `history_search`).
    pub history_search: String,
    /// Reads one event whole (Pi: `history_read`).
    pub history_read: String,
    /// Reports the room left (Pi: `get_context_remaining`).
    pub remaining: String,
    /// Ends the window voluntarily (Pi: `wipe_memory`).
    pub wipe: String,
}

impl Default for ToolNames {
    fn default() -> Self {
        ToolNames {
            notes: "notes_*".into(),
            notes_list: "notes_list".into(),
            history: "history_*".into(),
            history_windows: "history_windows".into(),
            history_list: "history_list".into(),
            history_search: "history_search".into(),
            history_read: "history_read".into(),
            remaining: "get_context_remaining".into(),
            wipe: "wipe_memory".into(),
        }
    }
}

/// One exact-text replacement `{"oldText", "newText"}`, the shape of Pi's own `edit` tool, as
/// `notes-update` and `dream-fs edit` take it (each applies its own matching rules).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// Exact text to find in the body.
    #[serde(rename = "oldText")]
    pub old_text: String,
    /// Its replacement.
    #[serde(rename = "newText")]
    pub new_text: String,
}

/// The root window id of a session: `pcw:<first 8 code points of the session id>:root` (code
/// points, not bytes or UTF-16 units; the extension's `rootWindowId` counts the same way).
pub fn root_window_id(session_id: &str) -> String {
    let prefix: String = session_id.chars().take(8).collect();
    format!("pcw:{prefix}:root")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_window_id_takes_eight_code_points() {
        assert_eq!(root_window_id("0123456789abcdef"), "pcw:01234567:root");
        assert_eq!(root_window_id("short"), "pcw:short:root");
        assert_eq!(root_window_id("é1234567890"), "pcw:é1234567:root");
        assert_eq!(root_window_id("😀1234567890"), "pcw:😀1234567:root");
    }
}
