//! `dream`: locked, gated, jailed consolidation of the notes store by a dreamer model, audited
//! in Git. The domain owns the whole run ([`run()`]: gates, lock, baseline, dreamer, journal,
//! report, final commit, release), the lock ([`lock`]), the gates ([`gates`]), the jail
//! ([`jail`]), the journal of attempted changes ([`journal`]), the Git audit ([`audit`]), the
//! report ([`report`]), the dreamer's task text ([`playbook`]) and the names of what it leaves
//! in a notes home ([`artifacts`]). It never starts processes, reads the environment or the
//! clock, or prints: the CLI layer (`cli::dream`) implements [`Dreamer`] with the dreamer
//! process, signals and timeouts, and prints the [`DreamOutcome`].

pub mod artifacts;
pub mod audit;
pub mod gates;
pub mod jail;
pub mod journal;
pub mod lock;
pub mod playbook;
pub mod report;
pub mod run;

pub use run::{DreamOutcome, Dreamer, Options, run};

/// The report's and commits' stamp for a run starting at `now`: UTC, `:` and `.` replaced by
/// `-` so it is a portable file name (`2026-11-30T12-00-00-000Z`).
pub fn stamp(now: chrono::DateTime<chrono::FixedOffset>) -> String {
    now.with_timezone(&chrono::Utc)
        .format("%Y-%m-%dT%H-%M-%S-%3fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn stamp_is_utc_and_file_safe() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-30T13:04:05.678+01:00").unwrap();
        assert_eq!(super::stamp(now), "2026-11-30T12-04-05-678Z");
    }
}
