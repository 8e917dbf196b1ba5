//! The `history-*` family: one module per verb over `crate::history`, plus what they share —
//! the session flags and the tolerant request fields. Requests follow Pi's own argument
//! handling (coercion before validation: `"5"` reads as 5, a single role string as a
//! one-element list, `null` as an omitted field); anything still malformed is
//! `invalid_request` (exit 2) before the session is read.

pub mod list;
pub mod read;
pub mod search;
pub mod windows;

use std::path::PathBuf;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::cli::common::{absolute_from, resolve_cache_dir};
use crate::cli::{CmdError, Ctx};
use crate::envelope::Reply;
use crate::history::{EventRole, HistoryError, IndexMode, ListOptions, Opened, Rendered};

/// Which session, and which branch of it.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionArgs {
    /// The Pi session file (JSONL) to read; it is never modified.
    #[arg(long, value_name = "FILE")]
    pub session: PathBuf,
    /// Entry id of the leaf whose root-to-leaf path is the active branch [default: the file's
    /// last entry, which is what Pi shows when it reopens the file].
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Read the whole file and leave the session index alone (`data.index` is then
    /// "bypassed"); by default the index in the cache directory is used and kept up to date.
    #[arg(long)]
    pub no_index: bool,
}

impl SessionArgs {
    pub fn path(&self, ctx: &Ctx) -> PathBuf {
        absolute_from(&ctx.cwd, &self.session)
    }

    /// Where the session index may live, as this call's flags and environment allow.
    pub fn index(&self, ctx: &Ctx) -> IndexChoice {
        IndexChoice {
            dir: if self.no_index {
                None
            } else {
                resolve_cache_dir(ctx)
            },
            off: self.no_index,
            now: std::time::SystemTime::from(ctx.now),
        }
    }
}

/// The resolved index choice of one call (owns the cache path an [`IndexMode`] borrows).
pub struct IndexChoice {
    dir: Option<PathBuf>,
    off: bool,
    now: std::time::SystemTime,
}

impl IndexChoice {
    pub fn mode(&self) -> IndexMode<'_> {
        match (&self.dir, self.off) {
            (_, true) => IndexMode::Off,
            (None, false) => IndexMode::Unavailable,
            (Some(dir), false) => IndexMode::In { dir, now: self.now },
        }
    }
}

/// Open the session once and answer from it.
pub fn answer_once(
    path: &std::path::Path,
    leaf: Option<&str>,
    index: &IndexMode<'_>,
    answer: impl FnOnce(&Opened) -> Result<Rendered, HistoryError>,
) -> Result<Rendered, HistoryError> {
    let opened = crate::history::open_with(path, leaf, index)?;
    answer(&opened)
}

impl SessionArgs {
    /// Open the session these flags name, once, and answer from it.
    pub fn answer(
        &self,
        ctx: &Ctx,
        answer: impl FnOnce(&Opened) -> Result<Rendered, HistoryError>,
    ) -> Result<Reply, CmdError> {
        let path = self.path(ctx);
        let index = self.index(ctx);
        let rendered = answer_once(&path, self.leaf.as_deref(), &index.mode(), answer)?;
        Ok(reply(rendered))
    }
}

/// The reply of a history result: tool arguments print as JavaScript prints them (history
/// results carry no other doubles).
pub fn reply(rendered: Rendered) -> Reply {
    Reply::ok(rendered.data, rendered.text).with_js_numbers()
}

/// An integer field as Pi coerces it: a JSON integer (or integral float) or a string holding
/// one. Anything else is kept as the raw value so validation can name it.
#[derive(Debug, Clone, PartialEq)]
pub enum LooseInt {
    Int(i64),
    Bad(Value),
}

impl<'de> Deserialize<'de> for LooseInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let int = match &value {
            Value::Number(n) => n.as_i64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            }),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        };
        Ok(int.map_or(LooseInt::Bad(value), LooseInt::Int))
    }
}

/// Validate an optional integer field: `Ok(None)` when absent.
pub fn int_field(
    name: &str,
    value: &Option<LooseInt>,
    min: i64,
    max: Option<i64>,
) -> Result<Option<i64>, String> {
    match value {
        None => Ok(None),
        Some(LooseInt::Bad(raw)) => Err(format!("{name} must be an integer, got {raw}")),
        Some(LooseInt::Int(n)) if *n < min => {
            Err(format!("{name} must be at least {min}, got {n}"))
        }
        Some(LooseInt::Int(n)) if max.is_some_and(|m| *n > m) => Err(format!(
            "{name} must be at most {}, got {n}",
            max.unwrap_or_default()
        )),
        Some(LooseInt::Int(n)) => Ok(Some(*n)),
    }
}

/// The filter fields list and search share, as sent.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilterFields {
    /// Maximum event rows on the page.
    #[schemars(range(min = 1), extend("default" = crate::history::DEFAULT_LIMIT))]
    #[serde(default)]
    pub limit: Option<LooseInt>,
    /// Only events of these roles (user, assistant, tool, context). Without it, history_list shows the conversation and folds tool and context runs.
    #[schemars(with = "Option<crate::cli::schema::Roles>")]
    #[serde(default)]
    pub roles: Option<Value>,
    /// Only events with a seq below this (pass older_before to page back).
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub before: Option<LooseInt>,
    /// Only events with a seq above this (pass newer_after to page forward).
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub after: Option<LooseInt>,
    /// Only events of this context window (ids from history_windows).
    #[schemars(length(min = 1))]
    #[serde(default)]
    pub window_id: Option<String>,
    /// Preview length per event, in characters.
    #[schemars(range(min = 1), extend("default" = crate::history::DEFAULT_MAX_CHARS_PER_ITEM))]
    #[serde(default)]
    pub max_chars_per_item: Option<LooseInt>,
}

impl FilterFields {
    /// Validate into domain options (the schema checks of docs/spec/history.md §17).
    pub fn options(&self) -> Result<ListOptions, String> {
        let defaults = ListOptions::default();
        let roles = match &self.roles {
            None | Some(Value::Null) => None,
            Some(value) => {
                let items: Vec<&Value> = match value {
                    Value::Array(items) => items.iter().collect(),
                    single => vec![single],
                };
                if items.is_empty() {
                    return Err("roles must list at least one role".into());
                }
                let roles = items
                    .into_iter()
                    .map(|item| match item.as_str() {
                        Some("user") => Ok(EventRole::User),
                        Some("assistant") => Ok(EventRole::Assistant),
                        Some("tool") => Ok(EventRole::Tool),
                        Some("context") => Ok(EventRole::Context),
                        _ => Err(format!(
                            "roles items must be one of user, assistant, tool, context; got {item}"
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some(roles)
            }
        };
        if self.window_id.as_deref() == Some("") {
            return Err("window_id must not be empty".into());
        }
        Ok(ListOptions {
            limit: int_field("limit", &self.limit, 1, None)?.map_or(defaults.limit, |n| n as usize),
            roles,
            before: int_field("before", &self.before, 1, None)?.map(|n| n as u64),
            after: int_field("after", &self.after, 1, None)?.map(|n| n as u64),
            window_id: self.window_id.clone(),
            max_chars_per_item: int_field("max_chars_per_item", &self.max_chars_per_item, 1, None)?
                .map_or(defaults.max_chars_per_item, |n| n as usize),
        })
    }
}
