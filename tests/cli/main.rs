//! The one integration-test binary: drives the real `pi-context` binary with `assert_cmd` in
//! `tempfile` homes with a scrubbed environment. One module per command family.

mod support;

mod arrays;
mod boot;
mod budget;
mod completions;
mod doctor;
mod dream;
mod first_hour;
mod fuzz;
mod history;
mod hostile;
mod mcp;
mod notes;
mod notes_cache;
mod notes_kill;
mod process;
mod schema;
mod sync;
