//! The dreamer's task: the playbook (one file, `extension/dream/playbook.md`, shared with the
//! `dream` skill) preceded by the run facts the playbook refers to (notes home, invocation
//! directory, scope, now). Also the dreamer's tool extension source, embedded so an installed
//! binary needs no checkout.

use std::path::Path;

/// The playbook, verbatim.
pub const PLAYBOOK: &str = include_str!("../../extension/dream/playbook.md");

/// The dreamer's write/edit/delete tools (TypeScript, loaded by Pi with `-e`).
pub const TOOLS_EXTENSION: &str = include_str!("../../extension/dream/tools.ts");

/// What the run facts state.
#[derive(Debug, Clone)]
pub struct RunFacts<'a> {
    pub notes_home: &'a Path,
    pub invocation_dir: &'a Path,
    /// The invocation directory's project key (absent for a store-wide dream).
    pub project_key: Option<&'a str>,
    /// Whether the invocation directory is inside the notes home (a store-wide dream).
    pub store_wide: bool,
    /// "Now" as RFC 3339, for `crumpledAt` and the 7-day rule.
    pub now: &'a str,
}

/// The one user message sent to the dreamer.
pub fn task(facts: &RunFacts) -> String {
    let scope = if facts.store_wide {
        "store-wide dream (the invocation directory is inside the notes home)".to_string()
    } else {
        match facts.project_key {
            Some(key) => format!("project dream for project key `{key}` (home `project/{key}/`)"),
            None => "project dream (project key unknown: change nothing, report it)".to_string(),
        }
    };
    format!(
        "# Run facts\n\n\
         - Notes home: {}\n\
         - Invocation directory: {}\n\
         - Scope: {scope}\n\
         - Now: {}\n\n{}",
        facts.notes_home.display(),
        facts.invocation_dir.display(),
        facts.now,
        PLAYBOOK
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn playbook_states_the_rules_that_matter() {
        for needle in [
            "Crumple before delete",
            "never delete a live note",
            "Never write `pi/session/**`",
            "Write the MAP last",
            "`write`, `edit`, `delete`",
        ] {
            assert!(PLAYBOOK.contains(needle), "playbook lacks {needle:?}");
        }
        assert!(
            !PLAYBOOK.contains("notes_"),
            "the dreamer has no notes_* tools"
        );
        assert!(
            !PLAYBOOK.contains("scope:"),
            "no obsolete scope frontmatter"
        );
    }

    #[test]
    fn task_puts_run_facts_before_the_playbook() {
        let t = task(&RunFacts {
            notes_home: Path::new("/n"),
            invocation_dir: Path::new("/w/app"),
            project_key: Some("app-0123abcd"),
            store_wide: false,
            now: "2026-11-30T12:00:00.000+00:00",
        });
        assert!(t.starts_with("# Run facts\n"));
        assert!(t.contains("project key `app-0123abcd`"));
        assert!(t.ends_with(PLAYBOOK));
    }
}
