//! Schema-only response types: the JSON Schema shapes of the `data` objects that a command
//! builds field by field (`serde_json::Value`) rather than by serialising one typed struct. They
//! are never constructed or serialised; their field order, names and optionality follow the
//! code that builds each object (`notes::wire`, the `cli` handlers), and every CLI test checks
//! the real output against the schema made from them. Typed results (history, boot homes,
//! budget, doctor, dream, sync) derive `JsonSchema` where they are defined instead.

#![allow(dead_code)]

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde_json::Value;

use crate::budget::decision::{Check, Thresholds};
use crate::cli::boot_render::{HomeReport, Unavailable};
use crate::cli::budget_check::SettingsView;
use crate::dream::jail;
use crate::notes::Origin;
use crate::notes::store::{ChangeKind, WriteOutcome};
use crate::window::LimitedBy;

// ----- notes -----

/// `notes-write` data.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesWrite {
    /// The note's address as shown (`@project/…`, `@agents/<slug>/…`, or a bare session path).
    address: String,
    /// The project key, for `@project/` notes only.
    #[serde(skip_serializing_if = "Option::is_none")]
    project_key: Option<String>,
    outcome: WriteOutcome,
}

/// Extras too large to show in a read's metadata.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OmittedExtra {
    keys: u64,
    bytes: u64,
}

/// The metadata of a read note.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadMetadata {
    origin: Origin,
    created_at: String,
    updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    crumpled_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    project: Option<String>,
    /// Every other metadata key of the note file, as JSON values.
    extra: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    omitted_extra: Option<OmittedExtra>,
}

/// `notes-read` data: one window of the body, in code points.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesRead {
    address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    project_key: Option<String>,
    metadata: ReadMetadata,
    /// The window's text.
    text: String,
    offset_chars: u64,
    total_chars: u64,
    /// Where the next read starts; null when the window reached the end.
    next_offset_chars: Option<u64>,
    /// Why the window stopped before the end: the request's limit or the output budget.
    limited_by: Option<LimitedBy>,
}

/// The receipt of an edit, crumple, smooth or re-origin.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Updated {
    address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    project_key: Option<String>,
    /// Edits applied.
    applied: u64,
    change_kind: ChangeKind,
    /// A numbered line diff of what changed.
    diff: String,
    /// Present (true) when the diff was cut to fit the output budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    diff_truncated: Option<bool>,
}

/// The receipt of a rename.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Renamed {
    /// The new address.
    address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    project_key: Option<String>,
    /// The old address.
    rename_from: String,
    #[schemars(range(max = 0))]
    applied: u64,
    #[schemars(extend("const" = "file"))]
    change_kind: ChangeKind,
    /// `rename <from> -> <to>`.
    diff: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff_truncated: Option<bool>,
    /// The target was a crumpled note, now replaced.
    replaced_crumpled_target: bool,
}

/// `notes-update` data: an update receipt, or a rename receipt.
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum NotesUpdate {
    Updated(Updated),
    Renamed(Renamed),
}

/// One listed note.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRow {
    address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    project_key: Option<String>,
    updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    crumpled_at: Option<String>,
}

/// `notes-list` data.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesList {
    /// Most recently updated first.
    files: Vec<ListRow>,
    /// Matching notes not delivered (limit and output budget).
    more: u64,
    /// Crumpled notes in the homes looked at (live listings only count them).
    crumpled_excluded: u64,
    /// Labels of homes that could not be read.
    homes_unavailable: Vec<String>,
    /// Present only when some home is a symlink: the labels of those homes.
    #[serde(skip_serializing_if = "Option::is_none")]
    homes_symlinked: Option<Vec<String>>,
}

/// One matching line.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// 1-based line number in the body.
    line: u64,
    /// The whole line (cut when `truncated`).
    text: String,
    truncated: bool,
    /// Code points from the start of the body to the earliest match on the line.
    offset_chars: u64,
}

/// One note with matches.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRow {
    address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    project_key: Option<String>,
    updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    crumpled_at: Option<String>,
    matches_total: u64,
    matches: Vec<Match>,
}

/// `notes-search` data.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesSearch {
    files: Vec<SearchRow>,
    more: u64,
    crumpled_excluded: u64,
    homes_unavailable: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    homes_symlinked: Option<Vec<String>>,
}

// ----- project-key -----

/// `project-key` data.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectKey {
    /// `<basename>-<8 hex>`.
    project_key: String,
    /// The absolute repository root (or the directory itself outside a repository).
    root: String,
}

// ----- boot-render -----

/// The identity a boot was rendered for (slugs as used).
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BootIdentity {
    session_id: String,
    project_key: String,
    agent: String,
    model: String,
}

/// What `--max-chars` did.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BootBudget {
    max_chars: u64,
    fits: bool,
    trimmed: bool,
    /// The length every MAP body was cut to; null when untrimmed.
    map_chars: Option<u64>,
    /// Recent rows per home; null when rows were not trimmed.
    rows_per_home: Option<u64>,
}

/// `boot-render` data.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BootRender {
    window_id: String,
    first_window_id: String,
    previous_window_id: Option<String>,
    /// RFC 3339 with milliseconds.
    opened_at: String,
    identity: BootIdentity,
    /// The five homes in render order.
    homes: Vec<HomeReport>,
    /// In load order.
    unavailable: Vec<Unavailable>,
    /// The one UI warning for the human, or null.
    notice: Option<String>,
    /// Addresses of the live sync conflict notes.
    sync_conflicts: Vec<String>,
    /// Code points of the text.
    text_chars: u64,
    /// The reset continuation the host appends after the boot of a reset window.
    continuation: String,
    /// Only with `--max-chars`.
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: Option<BootBudget>,
}

// ----- budget-check -----

/// `budget-check` data: the decision, the model, the resolved settings and the warnings.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetDecision {
    #[serde(flatten)]
    check: Check,
    /// The model id used.
    model: Option<String>,
    settings: SettingsView<'static>,
    /// Settings warnings, file warnings first.
    warnings: Vec<String>,
}

/// `budget-check --settings-only` data.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetSettings {
    settings: SettingsView<'static>,
    model: Option<String>,
    thresholds: Thresholds,
    automatic: bool,
    warnings: Vec<String>,
}

/// `budget-check` data: a decision, or with `--settings-only` the resolved settings.
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum BudgetCheck {
    Decision(BudgetDecision),
    SettingsOnly(BudgetSettings),
}

// ----- dream -----

/// `dream` data: a skipped run, or a completed one.
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum Dream {
    Skipped(crate::dream::run::Skipped),
    Dreamed(Box<crate::dream::run::Record>),
}

/// `dream-fs` operations.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DreamFsOp {
    Write,
    Edit,
    Delete,
}

/// `dream-fs` data.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DreamFs {
    op: DreamFsOp,
    /// The path as given.
    path: String,
    outcome: jail::Outcome,
    /// The target relative to the notes home.
    target: String,
    /// The file's size afterwards (0 after a delete).
    bytes: u64,
}

// ----- sync -----

/// `sync` data: the outcome and the settings warnings.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sync {
    #[serde(flatten)]
    outcome: crate::sync::Outcome,
    warnings: Vec<String>,
}
