//! The context-budget policy: resolved Pi settings, thresholds, the `get_context_remaining`
//! countdown and the reminder / warning / hard-reset decision. Pure functions of explicit
//! inputs: this module never reads files, the environment or the clock (the settings loader
//! takes explicit paths from the CLI layer) and never prints.

pub mod settings;

pub use settings::{Settings, SettingsPaths};
pub mod decision;

pub use decision::{Check, Decision, Policy, Thresholds, Usage, WindowFacts, decide};
