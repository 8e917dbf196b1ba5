//! The `notes-*` family: one module per verb over `crate::notes`.

pub mod list;
pub mod read;
pub mod search;
pub mod update;
pub mod write;
