//! Rendering the boot block from a closed snapshot: identity, the recovery protocol, and the
//! recent-notes index (MAP.md bodies plus the newest notes of each home, capped 5/5/3/5/5).
//!
//! Pure: the output is a function of its arguments only (no clock, filesystem or environment),
//! so the same inputs give byte-identical text and the provider's prompt prefix stays
//! cache-stable. It must not name the notes root on disk, nor any tool except through the
//! [`ToolNames`] bindings.

use serde::Serialize;

use crate::protocol::ToolNames;

/// A MAP.md body longer than this many code points is cut in the boot.
pub const MAP_BOOT_MAX_CHARS: usize = 4096;

/// The five homes, in the order the index renders them (durable → current).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum HomeKind {
    Human,
    Agent,
    Model,
    Project,
    Session,
}

impl HomeKind {
    /// Render order.
    pub const ORDER: [HomeKind; 5] = [
        HomeKind::Human,
        HomeKind::Agent,
        HomeKind::Model,
        HomeKind::Project,
        HomeKind::Session,
    ];

    /// How many recent notes the index shows for this home.
    pub fn cap(self) -> usize {
        match self {
            HomeKind::Model => 3,
            _ => 5,
        }
    }

    /// The label used in the "notes index incomplete" notice.
    pub fn label(self) -> &'static str {
        match self {
            HomeKind::Human => "@human",
            HomeKind::Agent => "@self",
            HomeKind::Model => "@model",
            HomeKind::Project => "@project",
            HomeKind::Session => "this session",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            HomeKind::Human => "human",
            HomeKind::Agent => "agent",
            HomeKind::Model => "model",
            HomeKind::Project => "project",
            HomeKind::Session => "session",
        }
    }

    fn heading(self, identity: &BootIdentity) -> String {
        match self {
            HomeKind::Human => "## The human | @human".to_string(),
            HomeKind::Agent => format!("## You | @self \u{2192} @agents/{}", identity.agent),
            HomeKind::Model => {
                format!("## Your model | @model \u{2192} @models/{}", identity.model)
            }
            HomeKind::Project => "## This project | @project".to_string(),
            HomeKind::Session => "## This session".to_string(),
        }
    }
}

/// One live note as the index shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteRow {
    /// Displayed address (`notes/a.md`, `@project/x.md`, `@agents/<slug>/x.md`, …).
    pub address: String,
    /// Code points of the body.
    pub chars: usize,
    /// Last update, epoch milliseconds.
    pub updated_at_ms: i64,
}

/// A home's top-level MAP.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapNote {
    /// Displayed address, e.g. `@project/MAP.md`.
    pub address: String,
    pub body: String,
}

/// One home as loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HomeSnapshot {
    /// Live notes other than the top-level MAP.md, newest first (ties by address). May hold
    /// more than the cap: the renderer cuts.
    pub recent: Vec<NoteRow>,
    /// Note files other than the top-level MAP (crumpled ones included: the loader stops
    /// reading once the newest rows are certain, so it cannot count live notes).
    pub note_files: usize,
    /// The live top-level MAP.md, if any.
    pub map: Option<MapNote>,
    /// Why the home could not be read (OS error text for `data`, never shown in the boot).
    pub unavailable: Option<String>,
    /// Addresses of live sync conflict notes (`*.conflict-*.md` naming their note), sorted:
    /// the host shows a notice until each is crumpled.
    pub sync_conflicts: Vec<String>,
}

/// The closed five-home snapshot one boot is rendered from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// When boot construction began (epoch ms): every relative age is against it.
    pub opened_at_ms: i64,
    pub human: HomeSnapshot,
    pub agent: HomeSnapshot,
    pub model: HomeSnapshot,
    pub project: HomeSnapshot,
    pub session: HomeSnapshot,
}

impl Snapshot {
    pub fn empty(opened_at_ms: i64) -> Snapshot {
        Snapshot {
            opened_at_ms,
            human: HomeSnapshot::default(),
            agent: HomeSnapshot::default(),
            model: HomeSnapshot::default(),
            project: HomeSnapshot::default(),
            session: HomeSnapshot::default(),
        }
    }

    pub fn home(&self, kind: HomeKind) -> &HomeSnapshot {
        match kind {
            HomeKind::Human => &self.human,
            HomeKind::Agent => &self.agent,
            HomeKind::Model => &self.model,
            HomeKind::Project => &self.project,
            HomeKind::Session => &self.session,
        }
    }

    pub fn home_mut(&mut self, kind: HomeKind) -> &mut HomeSnapshot {
        match kind {
            HomeKind::Human => &mut self.human,
            HomeKind::Agent => &mut self.agent,
            HomeKind::Model => &mut self.model,
            HomeKind::Project => &mut self.project,
            HomeKind::Session => &mut self.session,
        }
    }
}

/// Who is waking up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootIdentity {
    /// Agent slug.
    pub agent: String,
    /// Model slug.
    pub model: String,
}

/// Which window this boot opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Windows {
    /// The session's root window id (`pcw:<first 8 chars of the session id>:root`).
    pub first: String,
    /// The window this boot opens.
    pub current: String,
    /// The window before it (none for the root boot).
    pub previous: Option<String>,
}

/// The boot block: identity, protocol and notes index joined by one blank line.
pub fn render(
    identity: &BootIdentity,
    windows: &Windows,
    snapshot: &Snapshot,
    tools: &ToolNames,
) -> String {
    render_trimmed(identity, windows, snapshot, tools, Trim::NONE)
}

/// How far the notes index is trimmed to fit a character budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Trim {
    /// Code points of each MAP body kept (below [`MAP_BOOT_MAX_CHARS`] the MAP tail is
    /// replaced by a notice naming the MAP).
    pub map_chars: usize,
    /// Recent-note rows shown per home (below the home's cap the rest is counted in a
    /// "… N more" row pointing at the listing tool).
    pub rows_per_home: usize,
}

impl Trim {
    /// No trimming: the caps of the plain boot.
    pub const NONE: Trim = Trim {
        map_chars: MAP_BOOT_MAX_CHARS,
        rows_per_home: usize::MAX,
    };
}

/// A boot rendered within a character budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budgeted {
    pub text: String,
    /// The trim applied (`Trim::NONE` when the plain boot fits).
    pub trim: Trim,
    /// Whether the text fits the budget (false only when identity, protocol and the index
    /// skeleton alone exceed it: those are never cut).
    pub fits: bool,
}

/// The boot block within `max_chars` code points: the plain boot when it fits; else MAP tails
/// are trimmed first (every MAP to the same length, the longest that fits), then recent-note
/// rows (every home to the same count). Identity and protocol are never cut.
pub fn render_within(
    identity: &BootIdentity,
    windows: &Windows,
    snapshot: &Snapshot,
    tools: &ToolNames,
    max_chars: usize,
) -> Budgeted {
    let attempt = |trim: Trim| render_trimmed(identity, windows, snapshot, tools, trim);
    let fits = |text: &String| text.chars().count() <= max_chars;
    let plain = attempt(Trim::NONE);
    if fits(&plain) {
        return Budgeted {
            text: plain,
            trim: Trim::NONE,
            fits: true,
        };
    }
    // The largest value in 0..below for which `make` fits (text length grows with it).
    let largest = |below: usize, make: &dyn Fn(usize) -> Trim| -> Option<(usize, String)> {
        let first = attempt(make(0));
        if !fits(&first) {
            return None;
        }
        let (mut lo, mut hi, mut best) = (0, below, first);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let text = attempt(make(mid));
            if fits(&text) {
                (lo, best) = (mid, text);
            } else {
                hi = mid;
            }
        }
        Some((lo, best))
    };
    let by_map = |map_chars| Trim {
        map_chars,
        rows_per_home: usize::MAX,
    };
    if let Some((map_chars, text)) = largest(MAP_BOOT_MAX_CHARS, &by_map) {
        return Budgeted {
            text,
            trim: by_map(map_chars),
            fits: true,
        };
    }
    let max_cap = HomeKind::ORDER.iter().map(|k| k.cap()).max().unwrap_or(0);
    let by_rows = |rows_per_home| Trim {
        map_chars: 0,
        rows_per_home,
    };
    if let Some((rows, text)) = largest(max_cap, &by_rows) {
        return Budgeted {
            text,
            trim: by_rows(rows),
            fits: true,
        };
    }
    let trim = by_rows(0);
    Budgeted {
        text: attempt(trim),
        trim,
        fits: false,
    }
}

fn render_trimmed(
    identity: &BootIdentity,
    windows: &Windows,
    snapshot: &Snapshot,
    tools: &ToolNames,
    trim: Trim,
) -> String {
    [
        identity_part(identity, windows),
        protocol(tools),
        notes_index(identity, snapshot, tools, trim),
    ]
    .join("\n\n")
}

fn identity_part(identity: &BootIdentity, windows: &Windows) -> String {
    let mut lines = vec![
        "<context_window>".to_string(),
        format!("Agent name: {} (brain: {})", identity.agent, identity.model),
        format!("First context window id: {}", windows.first),
        format!("Current context window id: {}", windows.current),
    ];
    if let Some(previous) = windows.previous.as_deref().filter(|p| !p.is_empty()) {
        lines.push(format!("Previous context window id: {previous}"));
    }
    lines.push("</context_window>".to_string());
    lines.join("\n")
}

/// The recovery protocol: what survives a reset and how to get back to work. A binding left
/// empty drops what it would name: hosts without the history tools (empty `history`) or without
/// pi-context's reset tools (empty `remaining` / `wipe`) get no sentence about them.
pub fn protocol(tools: &ToolNames) -> String {
    let ToolNames {
        notes,
        history,
        history_windows,
        history_list,
        history_search,
        history_read,
        remaining,
        wipe,
        ..
    } = tools;
    let with_history = !history.is_empty();
    let mut lines = vec![
        "<context_window_protocol>".to_string(),
        "Your memory is wiped when this context window ends: nothing you only hold in your head survives.".to_string(),
        format!("Notes persist. Manage them with {notes}; keep them current as you work and crumple the ones that stop being true."),
    ];
    if with_history {
        lines.push(format!("History persists too, and you dig it up with {history}: {history_windows} lists the context windows and its window_id scopes {history_list} and {history_search}; both return seqs, and {history_read} with {{\"seq\": n}} returns one item whole. Write down the seqs worth revisiting."));
        lines.push("After a reset, start from your notes (the index below, then the notes it points to) and use the history tools for anything from before the reset that the notes do not hold.".to_string());
    } else {
        lines.push(
            "After a reset, start from your notes (the index below, then the notes it points to)."
                .to_string(),
        );
    }
    let pointers = if with_history {
        "pointers to seqs and notes"
    } else {
        "pointers to notes"
    };
    lines.push(format!("A good checkpoint note holds the goal, the decisions taken, the current state and blockers, the next step, the method, the skills you still need, and {pointers}. Name notes after their subject, never generically (current.md, notes.md)."));
    match (remaining.is_empty(), wipe.is_empty()) {
        (false, false) => lines.push(format!("{remaining} reports the room left in this window; check it before big work. When it reaches zero your memory is reset at once. Call {wipe} to end the window yourself once your notes are saved.")),
        (false, true) => lines.push(format!("{remaining} reports the room left in this window; check it before big work. When it reaches zero your memory is reset at once.")),
        (true, false) => lines.push(format!("Call {wipe} to end the window yourself once your notes are saved.")),
        (true, true) => {}
    }
    lines.push("Note addresses and who owns each home:\n\
- bare <vpath>: this session; dies with the session.\n\
- @project/<vpath>: durable decisions about this project, not a diary.\n\
- @human/<vpath>: durable guidance about the human you work with.\n\
- @self/<vpath>: private to you; follows you from project to project.\n\
- @model/<vpath>: the notebook of your current model; it swaps when the model does.\n\
Any other @ address is invalid. @ addresses name notes, never files: do not pass them to general file tools.\n\
@project/MAP.md, @human/MAP.md, @self/MAP.md and @model/MAP.md are shown at every wake: keep each one a map of its home's durable notes, one line per note (address and gist).\n\
</context_window_protocol>".to_string());
    lines.join("\n")
}

/// The continuation a host appends right after the boot of a reset window
/// (docs/spec/reset-lifecycle.md §8, entry 4): the single piece of reset prose. Never part of a boot, so a root boot (no
/// reset happened) never tells the model it woke up.
pub fn continuation(tools: &ToolNames) -> String {
    let ToolNames {
        notes,
        history_search,
        history_list,
        history_read,
        ..
    } = tools;
    format!(
        "<context_window_continuation>\n\
You just woke up in a fresh context window: whatever you held only in your head before the reset is gone.\n\
Nothing durable was lost. Your notes are intact (the boot block above indexes them; read them with {notes}) and the whole earlier conversation is still readable with {history_search}, {history_list} and {history_read}.\n\
Read the notes that matter for your current task first, then carry on where you left off. Before redoing any work, check your notes and history: it may already be done.\n\
</context_window_continuation>"
    )
}

fn notes_index(
    identity: &BootIdentity,
    snapshot: &Snapshot,
    tools: &ToolNames,
    trim: Trim,
) -> String {
    let sections: Vec<String> = HomeKind::ORDER
        .into_iter()
        .filter_map(|kind| home_section(kind, identity, snapshot, tools, trim))
        .collect();
    let body = if sections.is_empty() {
        format!(
            "None yet. Start a note with {} as soon as something is worth keeping.",
            tools.notes
        )
    } else {
        sections.join("\n\n")
    };
    format!("# Your notes\n\n{body}")
}

fn home_section(
    kind: HomeKind,
    identity: &BootIdentity,
    snapshot: &Snapshot,
    tools: &ToolNames,
    trim: Trim,
) -> Option<String> {
    let home = snapshot.home(kind);
    let heading = kind.heading(identity);
    if home.unavailable.is_some() {
        return Some(format!(
            "{heading}\nThis home could not be opened just now; {} can retry it later.",
            tools.notes_list
        ));
    }
    let map = home.map.as_ref().filter(|m| !m.body.is_empty());
    let recent = &home.recent[..home.recent.len().min(kind.cap())];
    if map.is_none() && recent.is_empty() {
        return None;
    }
    let mut parts = vec![heading];
    if let Some(map) = map {
        let body = if trim.map_chars < MAP_BOOT_MAX_CHARS {
            trimmed_map(map, trim.map_chars)
        } else {
            capped_map(map)
        };
        parts.push(format!("\u{25cf}  MAP.md\n{body}"));
    }
    if !recent.is_empty() {
        let shown = recent.len().min(trim.rows_per_home);
        let mut rows: Vec<String> = recent[..shown]
            .iter()
            .map(|row| {
                format!(
                    "- {} | {} | {}",
                    row.address,
                    crate::words::plural(row.chars, "char", "chars"),
                    relative_time(row.updated_at_ms, snapshot.opened_at_ms)
                )
            })
            .collect();
        if shown < recent.len() {
            rows.push(format!(
                "- \u{2026} {} more: {}",
                recent.len() - shown,
                tools.notes_list
            ));
        }
        parts.push(format!("\u{25cf}  Recent notes\n{}", rows.join("\n")));
    }
    Some(parts.join("\n\n"))
}

/// The MAP body, cut at [`MAP_BOOT_MAX_CHARS`] code points with a notice naming the full note.
fn capped_map(map: &MapNote) -> String {
    match map.body.char_indices().nth(MAP_BOOT_MAX_CHARS) {
        None => map.body.clone(),
        Some((cut, _)) => format!(
            "{}\n[MAP cut at {MAP_BOOT_MAX_CHARS} chars: slim it down; the rest is in {}]",
            &map.body[..cut],
            map.address
        ),
    }
}

/// The MAP body trimmed to at most `keep` code points, back to the last whole line, with a
/// notice counting what was left out and naming the full note.
fn trimmed_map(map: &MapNote, keep: usize) -> String {
    let Some((cut, _)) = map.body.char_indices().nth(keep) else {
        return map.body.clone();
    };
    let kept = match map.body[..cut].rfind('\n') {
        Some(line_end) => &map.body[..line_end],
        None => "",
    };
    let left = map.body[kept.len()..]
        .trim_start_matches('\n')
        .chars()
        .count();
    let notice = format!(
        "[\u{2026} {left} more chars of this MAP, trimmed to fit: {}]",
        map.address
    );
    if kept.is_empty() {
        notice
    } else {
        format!("{kept}\n{notice}")
    }
}

/// Whether a MAP body exceeds the boot cap.
pub fn map_is_cut(body: &str) -> bool {
    body.char_indices().nth(MAP_BOOT_MAX_CHARS).is_some()
}

/// `just now`, `59s ago`, `1m ago`, `2h ago`, `3d ago`, `in 1s`: whole units, truncated toward
/// zero, against `opened_at_ms`.
pub fn relative_time(updated_at_ms: i64, opened_at_ms: i64) -> String {
    let seconds = (updated_at_ms - opened_at_ms) / 1000;
    if seconds == 0 {
        return "just now".to_string();
    }
    let magnitude = seconds.unsigned_abs();
    let (size, unit) = [(86_400, "d"), (3_600, "h"), (60, "m")]
        .into_iter()
        .find(|(size, _)| *size <= magnitude)
        .unwrap_or((1, "s"));
    let amount = magnitude / size;
    if seconds < 0 {
        format!("{amount}{unit} ago")
    } else {
        format!("in {amount}{unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_match_the_spec_examples() {
        assert_eq!(relative_time(-60_000, 0), "1m ago");
        assert_eq!(relative_time(-59_999, 0), "59s ago");
        assert_eq!(relative_time(-500, 0), "just now");
        assert_eq!(relative_time(-7_200_000, 0), "2h ago");
        assert_eq!(relative_time(1_500, 0), "in 1s");
        assert_eq!(relative_time(-3 * 86_400_000 - 5, 0), "3d ago");
    }

    #[test]
    fn map_cap_counts_code_points() {
        let map = MapNote {
            address: "@human/MAP.md".into(),
            body: "é".repeat(MAP_BOOT_MAX_CHARS),
        };
        assert_eq!(capped_map(&map), map.body);
        let long = MapNote {
            body: format!("{}xyz", "é".repeat(MAP_BOOT_MAX_CHARS)),
            ..map
        };
        let capped = capped_map(&long);
        assert!(capped.starts_with(&"é".repeat(MAP_BOOT_MAX_CHARS)));
        assert!(!capped.contains("xyz"));
        assert!(
            capped.ends_with("[MAP cut at 4096 chars: slim it down; the rest is in @human/MAP.md]")
        );
    }

    #[test]
    fn custom_bindings_leave_no_default_name_behind() {
        let tools = ToolNames {
            notes: "mem_*".into(),
            notes_list: "mem_ls".into(),
            history: "past_*".into(),
            history_windows: "past_windows".into(),
            history_list: "past_ls".into(),
            history_search: "past_grep".into(),
            history_read: "past_cat".into(),
            remaining: "room".into(),
            wipe: "fresh".into(),
        };
        let mut snapshot = Snapshot::empty(0);
        snapshot.project.unavailable = Some("EIO".into());
        let text = render(
            &BootIdentity {
                agent: "a".into(),
                model: "m".into(),
            },
            &Windows {
                first: "pcw:x:root".into(),
                current: "pcw:x:root".into(),
                previous: None,
            },
            &snapshot,
            &tools,
        );
        for custom in [
            "mem_*",
            "mem_ls",
            "past_*",
            "past_windows",
            "past_ls",
            "past_grep",
            "past_cat",
            "room",
            "fresh",
        ] {
            assert!(text.contains(custom), "{custom} missing");
        }
        for default in [
            "notes_*",
            "notes_list",
            "history_*",
            "history_windows",
            "history_list",
            "history_search",
            "history_read",
            "get_context_remaining",
            "wipe_memory",
        ] {
            assert!(!text.contains(default), "{default} still present");
        }
    }
}
