//! The boot block rendered once at the head of every context window, from a five-home
//! snapshot of the notes store. Rendering ([`render`]) is pure: same inputs, byte-identical
//! text; only the loader touches the filesystem, and it never writes.

pub mod load;
pub mod notice;
pub mod render;

// Defined once in `crate::protocol` (shared with budget and history); re-exported for callers
// that know them as boot's.

pub use load::{Layout, load_snapshot};
pub use render::{
    BootIdentity, HomeKind, HomeSnapshot, MapNote, NoteRow, Snapshot, Windows, continuation, render,
};
