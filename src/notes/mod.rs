//! The notes store: five homes of markdown notes under one notes root (identity, addresses,
//! paths, frontmatter, store operations, search), plus the bounded tool results built from
//! them. Pure library: no printing, no env reads, no clock reads; the caller passes the
//! identity, the root and the current time.
//!
//! ```
//! use pi_context::notes::{Identity, Query, Store};
//! let dir = tempfile::tempdir()?;
//! let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00.000+00:00")?;
//! let store = Store::new(Identity::new(dir.path(), Some("s1"), "demo-1a2b3c4d", "anonymous", "default")?);
//! store.write("@project/plan", "step one", None, now)?;
//! let rows = store.list(&Query::default())?;
//! assert_eq!(rows[0].display, "@project/plan.md");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod access;
pub mod address;
pub mod cache;
#[cfg(test)]
mod cache_equivalence;
pub mod date;
mod digest;
pub mod error;
pub mod frontmatter;
pub mod identity;
pub mod note;
pub mod query;
pub mod store;
pub mod wire;

pub use address::{Address, Home, MAX_NOTE_PATH_BYTES, MAX_SEGMENT_BYTES, Scope, with_md};
pub use error::{ErrorKind, NoteError};
pub use identity::{
    Identity, IdentityError, is_slug, model_slug, project_key, project_root, slugify,
};
pub use note::{MAX_NOTE_BYTES, NoteMeta, Origin, format_stamp, parse_note, serialize_note};
pub use query::{Query, address_order, recency_order};
pub use store::{
    Change, ChangeKind, Edit, LinesKept, NoteList, NoteRow, ReadNote, RenameReceipt, SearchRow,
    Status, Store, UpdateOptions, UpdateReceipt, WithStatus, WriteOutcome, WriteReceipt,
};

/// Whether a note file's text is crumpled (its frontmatter has a `crumpledAt` key).
///
/// ```
/// assert!(pi_context::notes::is_crumpled("---\ncrumpledAt: 2026-01-01T00:00:00.000+00:00\n---\n\nx"));
/// assert!(!pi_context::notes::is_crumpled("crumpledAt: no block"));
/// ```
pub fn is_crumpled(raw: &str) -> bool {
    frontmatter::parse_fields_only(raw).is_some_and(|f| f.contains_key("crumpledAt"))
}
