//! Loading the five-home snapshot a boot is rendered from: each home read once, in the order
//! session, project, human, agent, model; only live notes; newest first.
//!
//! Read-only: it never writes, never bumps access metadata, never creates a directory. A home
//! directory that does not exist is empty; any other I/O failure while reading a home marks
//! that home unavailable (its rows dropped, the error kept for `data`) and the other homes
//! still load. Cost: one directory walk and one read per note file; only the newest `cap` rows
//! of each home are kept.

use std::cmp::Ordering;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::render::{HomeKind, HomeSnapshot, MapNote, NoteRow, Snapshot};
use crate::notes::frontmatter;
use crate::notes::note::NoteMeta;
use crate::notes::query::address_order;

/// Where the five homes are and how their addresses are displayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The notes root (absolute).
    pub root: PathBuf,
    pub session_id: String,
    pub project_key: String,
    /// Agent slug.
    pub agent: String,
    /// Model slug.
    pub model: String,
}

/// The order homes are loaded in (each exactly once).
pub const LOAD_ORDER: [HomeKind; 5] = [
    HomeKind::Session,
    HomeKind::Project,
    HomeKind::Human,
    HomeKind::Agent,
    HomeKind::Model,
];

impl Layout {
    /// The home's directory on disk.
    pub fn home_dir(&self, kind: HomeKind) -> PathBuf {
        let root = &self.root;
        match kind {
            HomeKind::Session => root.join("pi").join("session").join(&self.session_id),
            HomeKind::Project => root.join("project").join(&self.project_key),
            HomeKind::Human => root.join("human"),
            HomeKind::Agent => root.join("agents").join(&self.agent),
            HomeKind::Model => root.join("models").join(&self.model),
        }
    }

    /// The displayed address prefix (concrete homes: `@agents/<slug>/`, `@models/<slug>/`).
    pub fn prefix(&self, kind: HomeKind) -> String {
        match kind {
            HomeKind::Session => String::new(),
            HomeKind::Project => "@project/".to_string(),
            HomeKind::Human => "@human/".to_string(),
            HomeKind::Agent => format!("@agents/{}/", self.agent),
            HomeKind::Model => format!("@models/{}/", self.model),
        }
    }
}

/// Load all five homes. `opened_at_ms` also stands in for a note's missing or unreadable
/// `updatedAt` (as the store does with "now").
pub fn load_snapshot(layout: &Layout, opened_at_ms: i64) -> Snapshot {
    let mut snapshot = Snapshot::empty(opened_at_ms);
    for kind in LOAD_ORDER {
        let dir = layout.home_dir(kind);
        *snapshot.home_mut(kind) =
            match load_home(&dir, &layout.prefix(kind), kind.cap(), opened_at_ms) {
                Ok(home) => home,
                Err(e) => HomeSnapshot {
                    unavailable: Some(e.to_string()),
                    ..HomeSnapshot::default()
                },
            };
    }
    snapshot
}

/// One live note found while walking.
struct Found {
    updated_at_ms: i64,
    address: String,
    chars: usize,
}

/// Recency order: newest first; ties by address compared case-insensitively, then bytewise.
fn recency(a: &Found, b: &Found) -> Ordering {
    b.updated_at_ms
        .cmp(&a.updated_at_ms)
        .then_with(|| address_order(&a.address, &b.address))
}

/// Load one home directory. `Ok(empty)` when it does not exist.
pub fn load_home(dir: &Path, prefix: &str, cap: usize, now_ms: i64) -> io::Result<HomeSnapshot> {
    let mut home = HomeSnapshot::default();
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(home),
        Err(e) => return Err(e),
        Ok(meta) if !meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        Ok(_) => {}
    }
    let mut kept: Vec<Found> = Vec::with_capacity(cap + 1);
    let mut stack: Vec<(PathBuf, String)> = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, vdir)) = stack.pop() {
        for entry in std::fs::read_dir(&path)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue; // not addressable, as in the store's listing
            };
            let vpath = if vdir.is_empty() {
                name.clone()
            } else {
                format!("{vdir}/{name}")
            };
            let file_type = entry.file_type()?;
            // As the store's listing: real directories and regular files only (a symlink is
            // neither, so no loop can trap the walk).
            if file_type.is_dir() {
                stack.push((entry.path(), vpath));
                continue;
            }
            if !file_type.is_file() || !name.ends_with(".md") {
                continue;
            }
            let raw = match std::fs::read(entry.path()) {
                Ok(raw) => raw,
                // Deleted between listing and reading: it is simply not there.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) if e.kind() == io::ErrorKind::IsADirectory => continue,
                Err(e) => return Err(e),
            };
            let raw = String::from_utf8_lossy(&raw);
            let (fields, body) = split_note(&raw);
            if fields.contains_key("crumpledAt") {
                continue;
            }
            if vpath == "MAP.md" {
                home.map = Some(MapNote {
                    address: format!("{prefix}{vpath}"),
                    body: body.to_string(),
                });
                continue;
            }
            home.live_notes += 1;
            let found = Found {
                updated_at_ms: updated_at_ms(&fields, now_ms),
                address: format!("{prefix}{vpath}"),
                chars: body.chars().count(),
            };
            // Keep only the newest `cap`: a sorted insert into a tiny vector.
            let at = kept
                .binary_search_by(|probe| recency(probe, &found))
                .unwrap_or_else(|i| i);
            if at < cap {
                kept.insert(at, found);
                kept.truncate(cap);
            }
        }
    }
    home.recent = kept
        .into_iter()
        .map(|f| NoteRow {
            address: f.address,
            chars: f.chars,
            updated_at_ms: f.updated_at_ms,
        })
        .collect();
    Ok(home)
}

/// Frontmatter fields and body of one note file, as the notes store parses them.
fn split_note(raw: &str) -> (Map<String, Value>, std::borrow::Cow<'_, str>) {
    let parsed = frontmatter::parse(raw);
    (parsed.fields, parsed.body)
}

fn updated_at_ms(fields: &Map<String, Value>, now_ms: i64) -> i64 {
    let now = chrono::DateTime::from_timestamp_millis(now_ms)
        .unwrap_or_default()
        .fixed_offset();
    NoteMeta::from_fields(fields, now)
        .updated_at
        .timestamp_millis()
}
