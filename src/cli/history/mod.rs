//! The `history-*` family: one module per verb over `crate::history`.

pub mod list;
pub mod read;
pub mod search;
pub mod windows;
