//! The names dream gives to what it leaves in a notes home besides notes: the audit repository,
//! the run lock and its last-run sidecar, and the reports. One list, so the lock, the audit's
//! exclude line, the jail's protected names and doctor's ignored entries cannot drift apart.

/// The audit repository (the notes home is its own Git repository).
pub const GIT_DIR: &str = ".git";
/// The run lock, `<pid> <uuid>`.
pub const LOCK_FILE: &str = ".dream.lock";
/// The last-run sidecar; its mtime is the start of the last run that took the lock.
pub const LAST_RUN_FILE: &str = ".dream.lock.last-run";
/// Sync's gate beside the run lock: held with a kernel lock (`flock`) for the whole sync and
/// holding the `<pid> <uuid>` that sync put in `.dream.lock`, so a later sync can tell a lock
/// left by a killed sync (gate free, same content) from a dream's lock and take it over.
pub const SYNC_GATE_FILE: &str = ".dream.lock.sync";
/// The Git exclude pattern covering the lock and its sidecars.
pub const LOCK_FILES_PATTERN: &str = ".dream.lock*";
/// The directory of the reports, one `<stamp>.md` per run.
pub const REPORTS_DIR: &str = "dreams";

/// The top-level names of a notes home that belong to dream's machinery: never notes, never
/// written by the dreamer.
pub const MACHINERY: &[&str] = &[
    GIT_DIR,
    REPORTS_DIR,
    LOCK_FILE,
    LAST_RUN_FILE,
    SYNC_GATE_FILE,
];

/// A run's report, relative to the notes home: `dreams/<stamp>.md`.
pub fn report_rel(stamp: &str) -> String {
    format!("{REPORTS_DIR}/{stamp}.md")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exclude_pattern_covers_both_lock_files() {
        let prefix = LOCK_FILES_PATTERN.trim_end_matches('*');
        assert!(
            [LOCK_FILE, LAST_RUN_FILE, SYNC_GATE_FILE]
                .iter()
                .all(|name| name.starts_with(prefix))
        );
        assert_eq!(report_rel("S"), "dreams/S.md");
    }
}
