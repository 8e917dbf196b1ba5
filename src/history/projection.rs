//! The history projection (docs/spec/history.md §2–§5): seqs allocated over every entry in file
//! order, the active branch decoded into raw items, reset windows from markers, and call/result
//! pairing into public events. Built from the session skeleton only — no message text — so it
//! is cheap even for a very large file; documents are built per event on demand
//! (`super::document`). It must not decide paging or rendering.

use rustc_hash::FxHashMap;
use std::ops::Range;

use crate::protocol::root_window_id;
use crate::session::{EntryKind, Role, Session};

/// The reset-marker custom types: pi-context's, and the same marker after the 0.38 rename.
pub const MARKER_TYPES: &[&str] = &["pi-context/reset-marker", "notesoup/reset-marker"];

/// A public event role.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EventRole {
    User,
    Assistant,
    Tool,
    Context,
}

impl EventRole {
    pub fn as_str(self) -> &'static str {
        match self {
            EventRole::User => "user",
            EventRole::Assistant => "assistant",
            EventRole::Tool => "tool",
            EventRole::Context => "context",
        }
    }
}

/// Where an event's facts come from (entry indexes into `Session::entries`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A user, assistant or context event: one entry's text.
    Text { entry: usize },
    /// A tool call (the `block`-th toolCall of an assistant entry), with its paired result.
    Call {
        entry: usize,
        block: usize,
        result: Option<usize>,
    },
    /// A toolResult no call claimed.
    Result { entry: usize },
    /// A `bashExecution` message.
    Bash { entry: usize },
}

impl Source {
    /// The entry whose timestamp is the event's `created_at`.
    pub fn entry(self) -> usize {
        match self {
            Source::Text { entry }
            | Source::Call { entry, .. }
            | Source::Result { entry }
            | Source::Bash { entry } => entry,
        }
    }
}

/// One public event, without its document.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub seq: u64,
    /// Index into `Projection::windows`.
    pub window: usize,
    pub role: EventRole,
    pub source: Source,
    /// For user/assistant events: whether the document is non-empty (the conversation view
    /// hides empty ones). Always true for other roles.
    pub has_text: bool,
    /// Tool events: the tool name as folds count it (`unknown` when missing).
    pub tool_name: Option<String>,
}

/// One window of the active branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub window_id: String,
    /// The opening marker's entry timestamp (`None` for the root window).
    pub created_at: Option<String>,
    /// Its events, as a range of `Projection::events`.
    pub events: Range<usize>,
}

/// The projection of one session's active branch.
#[derive(Debug, Clone)]
pub struct Projection {
    pub session_id: String,
    pub highest_seq: u64,
    pub windows: Vec<Window>,
    /// All events of the branch, ascending by seq (window order = seq order).
    pub events: Vec<Event>,
    /// Every seq of an on-branch counted entry or call, ascending (consumed result slots too).
    pub branch_seqs: Vec<u64>,
    /// Consumed result seq → the call seq it is shown at.
    pub paired_results: FxHashMap<u64, u64>,
}

/// How many seqs an entry consumes (docs/spec/history.md §2).
pub fn seq_count(kind: &EntryKind) -> u64 {
    match kind {
        EntryKind::Compaction | EntryKind::BranchSummary | EntryKind::CustomMessage { .. } => 1,
        EntryKind::Message(m) => match m.role {
            Role::User
            | Role::ToolResult
            | Role::BashExecution
            | Role::Custom
            | Role::CompactionSummary
            | Role::BranchSummary => 1,
            Role::Assistant => 1 + m.tool_calls.len() as u64,
            Role::System | Role::Other(_) => 0,
        },
        _ => 0,
    }
}

/// The window a valid reset marker opens, if `kind` is one.
pub fn marker_window(kind: &EntryKind) -> Option<&str> {
    match kind {
        EntryKind::Custom {
            custom_type: Some(t),
            window_id: Some(id),
        } if MARKER_TYPES.contains(&t.as_str()) && !id.is_empty() => Some(id),
        _ => None,
    }
}

enum Raw {
    Text {
        seq: u64,
        entry: usize,
        role: EventRole,
        has_text: bool,
    },
    Call {
        seq: u64,
        entry: usize,
        block: usize,
    },
    ToolResult {
        seq: u64,
        entry: usize,
    },
    Bash {
        seq: u64,
        entry: usize,
    },
}

impl Projection {
    /// Project `session` along `branch` (entry indexes root→leaf, from
    /// `Session::active_branch`).
    #[allow(clippy::expect_used, reason = "the root window exists")]
    pub fn build(session: &Session, branch: &[usize]) -> Projection {
        // docs/spec/history.md §2: seqs over all entries in file order.
        let mut first_seq = Vec::with_capacity(session.entries.len());
        let mut next = 1u64;
        for entry in &session.entries {
            let count = seq_count(&entry.kind);
            first_seq.push(if count > 0 { next } else { 0 });
            next += count;
        }
        let highest_seq = next - 1;

        // docs/spec/history.md §3: raw items per window along the branch.
        let mut windows: Vec<(String, Option<String>, Vec<Raw>)> =
            vec![(root_window_id(&session.header.id), None, Vec::new())];
        let mut branch_seqs = Vec::with_capacity(branch.len());
        for &index in branch {
            let entry = &session.entries[index];
            if let Some(id) = marker_window(&entry.kind) {
                windows.push((id.to_string(), entry.timestamp.clone(), Vec::new()));
                continue;
            }
            let seq = first_seq[index];
            if seq == 0 {
                continue;
            }
            branch_seqs.push(seq);
            let items = &mut windows.last_mut().expect("the root window exists").2;
            let text = |role, has_text| Raw::Text {
                seq,
                entry: index,
                role,
                has_text,
            };
            match &entry.kind {
                EntryKind::Compaction
                | EntryKind::BranchSummary
                | EntryKind::CustomMessage { .. } => items.push(text(EventRole::Context, true)),
                EntryKind::Message(m) => {
                    match m.role {
                        Role::User => items.push(text(EventRole::User, m.has_text)),
                        Role::Assistant => items.push(text(EventRole::Assistant, m.has_text)),
                        Role::Custom | Role::CompactionSummary | Role::BranchSummary => {
                            items.push(text(EventRole::Context, true))
                        }
                        Role::ToolResult => items.push(Raw::ToolResult { seq, entry: index }),
                        Role::BashExecution => items.push(Raw::Bash { seq, entry: index }),
                        Role::System | Role::Other(_) => {}
                    }
                    if m.role == Role::Assistant {
                        for block in 0..m.tool_calls.len() {
                            let call_seq = seq + 1 + block as u64;
                            branch_seqs.push(call_seq);
                            items.push(Raw::Call {
                                seq: call_seq,
                                entry: index,
                                block,
                            });
                        }
                    }
                }
                _ => {}
            }
        }

        // docs/spec/history.md §5.1: toolCallId → the first toolResult item with that id.
        let mut results: FxHashMap<&str, (u64, usize)> = FxHashMap::default();
        results.reserve(branch.len() / 2);
        for (_, _, items) in &windows {
            for item in items {
                if let Raw::ToolResult { seq, entry } = item
                    && let EntryKind::Message(m) = &session.entries[*entry].kind
                    && let Some(id) = m.tool_call_id.as_deref().filter(|id| !id.is_empty())
                {
                    results.entry(id).or_insert((*seq, *entry));
                }
            }
        }

        // docs/spec/history.md §5.2: events.
        let mut paired_results = FxHashMap::default();
        paired_results.reserve(branch.len() / 2);
        let mut events = Vec::with_capacity(branch_seqs.len());
        let mut out_windows = Vec::with_capacity(windows.len());
        for (window_index, (window_id, created_at, items)) in windows.iter().enumerate() {
            let start = events.len();
            for item in items {
                let event = match *item {
                    Raw::Text {
                        seq,
                        entry,
                        role,
                        has_text,
                    } => Event {
                        seq,
                        window: window_index,
                        role,
                        source: Source::Text { entry },
                        has_text,
                        tool_name: None,
                    },
                    Raw::Call { seq, entry, block } => {
                        let EntryKind::Message(m) = &session.entries[entry].kind else {
                            unreachable!("calls come from message entries")
                        };
                        let call = &m.tool_calls[block];
                        let mut result = None;
                        if let Some(id) = call.id.as_deref().filter(|id| !id.is_empty())
                            && let Some(&(result_seq, result_entry)) = results.get(id)
                            && result_seq > seq
                            && !paired_results.contains_key(&result_seq)
                        {
                            paired_results.insert(result_seq, seq);
                            result = Some(result_entry);
                        }
                        Event {
                            seq,
                            window: window_index,
                            role: EventRole::Tool,
                            source: Source::Call {
                                entry,
                                block,
                                result,
                            },
                            has_text: true,
                            tool_name: Some(call.name.clone().unwrap_or_else(|| "unknown".into())),
                        }
                    }
                    Raw::ToolResult { seq, entry } => {
                        if paired_results.contains_key(&seq) {
                            continue;
                        }
                        let EntryKind::Message(m) = &session.entries[entry].kind else {
                            unreachable!("results come from message entries")
                        };
                        Event {
                            seq,
                            window: window_index,
                            role: EventRole::Tool,
                            source: Source::Result { entry },
                            has_text: true,
                            tool_name: Some(
                                m.tool_name.clone().unwrap_or_else(|| "unknown".into()),
                            ),
                        }
                    }
                    Raw::Bash { seq, entry } => Event {
                        seq,
                        window: window_index,
                        role: EventRole::Tool,
                        source: Source::Bash { entry },
                        has_text: true,
                        tool_name: Some("bash".into()),
                    },
                };
                events.push(event);
            }
            out_windows.push(Window {
                window_id: window_id.clone(),
                created_at: created_at.clone(),
                events: start..events.len(),
            });
        }
        branch_seqs.sort_unstable();
        Projection {
            session_id: session.header.id.clone(),
            highest_seq,
            windows: out_windows,
            events,
            branch_seqs,
            paired_results,
        }
    }

    /// The event at `seq`, if there is one on the branch.
    pub fn event_at(&self, seq: u64) -> Option<&Event> {
        self.events
            .binary_search_by_key(&seq, |e| e.seq)
            .ok()
            .map(|i| &self.events[i])
    }

    /// Whether `seq` belongs to an on-branch entry or call.
    pub fn on_branch(&self, seq: u64) -> bool {
        self.branch_seqs.binary_search(&seq).is_ok()
    }

    /// The window id of an event.
    pub fn window_id(&self, event: &Event) -> &str {
        &self.windows[event.window].window_id
    }
}
