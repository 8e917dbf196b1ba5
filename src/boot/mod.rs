//! The boot block rendered once at the head of every context window, from a five-home
//! snapshot of the notes store. Rendering is pure: same inputs, byte-identical text.

pub mod tools;

pub use tools::ToolNames;
