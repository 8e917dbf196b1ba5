//! The boot block rendered once at the head of every context window, from a five-home
//! snapshot of the notes store. Rendering ([`render`]) is pure: same inputs, byte-identical
//! text; only the loader touches the filesystem, and it never writes.

pub mod load;
pub mod render;
pub mod tools;

pub use load::{Layout, load_snapshot};
pub use render::{
    BootIdentity, HomeKind, HomeSnapshot, MapNote, NoteRow, Snapshot, Windows, continuation,
    render, root_window_id,
};
pub use tools::ToolNames;
