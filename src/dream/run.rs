//! One dream run as a transaction: gates, lock, baseline commit, the dreamer, the journal, the
//! report, the final commit and the release, in that order, with every outcome typed.
//!
//! [`run`] is the whole sequence; the caller supplies what is not the domain's business through
//! [`Options`] (thresholds, the chosen model, the lock owner's pid and token) and a [`Dreamer`]
//! (the thing that actually consolidates: a process for the CLI, a stub in tests). It never
//! prints: progress and problems go to [`Dreamer::notice`], the result is a [`DreamOutcome`].

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, FixedOffset};
use serde::Serialize;

use super::gates::{self, MaterialGate, TimeGate};
use super::lock::{self, LockError};
use super::{artifacts, audit, journal, playbook, report};
use crate::envelope::{DomainError, ErrorClass, Refusal};

/// What the caller decides for a run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Run even when a gate is closed (never bypasses the lock).
    pub force: bool,
    /// Material gate threshold: changed session homes since the last run.
    pub min_sessions: u64,
    /// Time gate threshold in hours.
    pub min_hours: f64,
    /// The dreamer's model and where that choice came from.
    pub dreamer: DreamerChoice,
    /// Settings warnings, reported once the lock is taken and echoed in the result.
    pub warnings: Vec<String>,
    /// The directory the run was started from (decides the scope of the dream).
    pub invocation_dir: PathBuf,
    /// This process's id, written into the lock with the token.
    pub pid: u32,
    /// A unique token (a v4 UUID) proving the lock is this run's.
    pub token: String,
    /// The shared cache directory, whose access journal is folded into the notes before the
    /// baseline (`None`: nothing to fold).
    pub cache_dir: Option<PathBuf>,
}

/// Which model the dreamer uses, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DreamerChoice {
    /// A Pi model pattern, or `None` for Pi's automatic choice.
    pub model: Option<String>,
    pub source: ModelSource,
}

/// Where the dreamer's model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModelSource {
    /// `--dreamer`.
    Flag,
    /// `pi-context.dreamer` in Pi's settings.
    Settings,
    /// Neither: Pi picks.
    Automatic,
}

/// What the dreamer is given.
#[derive(Debug, Clone)]
pub struct Task<'a> {
    /// The one user message: the run facts, then the playbook.
    pub text: &'a str,
    /// The model pattern, `None` for Pi's automatic model.
    pub model: Option<&'a str>,
    pub notes_home: &'a Path,
}

/// The side of the run that is not the domain's: starting, supervising and ending the dreamer,
/// and showing progress.
pub trait Dreamer {
    /// Called once the gates let the run go ahead and before the lock is taken: whether the
    /// dreamer can start at all, so a misconfigured run changes nothing. From here on an
    /// interruption (a signal) is held for [`Dreamer::interrupted`] and [`Dreamer::dream`].
    fn prepare(&mut self) -> Result<(), Unavailable>;
    /// What interrupted the run before the dreamer started (e.g. `SIGTERM`), if anything did.
    fn interrupted(&mut self) -> Option<String>;
    /// Run the dreamer on `task` until it ends (completed, failed, timed out or interrupted).
    /// `Err` is a failure of the host itself (its scratch directory cannot be created): the
    /// run then stops where it is, without report or final commit, and the lock is released
    /// as failed.
    fn dream(&mut self, task: &Task) -> io::Result<DreamerEnd>;
    /// A progress note or a problem worth telling the human about.
    fn notice(&mut self, notice: Notice);
}

/// The dreamer cannot be started at all (checked before the lock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    pub message: String,
    /// The program that was looked for.
    pub program: PathBuf,
}

/// What the run tells its host while it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A step done (worth showing on a terminal only).
    Step(String),
    /// A settings warning (always shown, as is).
    Warning(String),
    /// Something went wrong (always shown).
    Problem(String),
}

/// How the dreamer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DreamerEnd {
    /// `None` when the dreamer completed.
    pub failure: Option<Failure>,
    /// Its final text (what `pi -p` printed).
    pub final_text: String,
    /// The journal its tools appended to; `None` when it never started (nothing attempted).
    pub journal: Option<PathBuf>,
}

impl DreamerEnd {
    /// A dreamer that never started.
    pub fn not_started(code: FailureCode, message: String) -> Self {
        DreamerEnd {
            failure: Some(Failure { code, message }),
            final_text: String::new(),
            journal: None,
        }
    }
}

/// Why a run that took the lock failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: FailureCode,
    pub message: String,
}

/// The stable codes of a failed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureCode {
    /// The baseline commit failed; the dreamer never started.
    BaselineFailed,
    /// The dreamer could not be started.
    DreamerUnavailable,
    /// The dreamer exited unsuccessfully.
    DreamerFailed,
    /// The dreamer ran out of time and was ended.
    Timeout,
    /// A signal ended the run.
    Interrupted,
    /// The journal of attempted changes could not be read: what the dreamer did is unknown.
    JournalUnreadable,
    /// The report could not be written.
    ReportFailed,
    /// The final commit failed.
    AuditFailed,
}

impl FailureCode {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::BaselineFailed => "baseline_failed",
            FailureCode::DreamerUnavailable => "dreamer_unavailable",
            FailureCode::DreamerFailed => "dreamer_failed",
            FailureCode::Timeout => "timeout",
            FailureCode::Interrupted => "interrupted",
            FailureCode::JournalUnreadable => "journal_unreadable",
            FailureCode::ReportFailed => "report_failed",
            FailureCode::AuditFailed => "audit_failed",
        }
    }

    /// A failed run is a refusal (exit 1) whatever failed: the lock was released and the
    /// failure is recorded in the report.
    pub fn class(self) -> ErrorClass {
        ErrorClass::Refused
    }
}

/// Both gates' verdicts and whether `--force` was given.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Gates {
    pub time: TimeGate,
    pub material: MaterialGate,
    pub forced: bool,
}

impl Gates {
    pub fn open(&self) -> bool {
        self.time.ok && self.material.ok
    }

    /// `time gate: <reason>` and `material gate: <reason>`.
    pub fn lines(&self) -> Vec<String> {
        vec![
            format!("time gate: {}", self.time.reason),
            format!("material gate: {}", self.material.reason),
        ]
    }
}

/// The end of a run.
#[derive(Debug)]
pub enum DreamOutcome {
    /// A gate is closed and the run was not forced: nothing was touched but the home's creation.
    Skipped(Skipped),
    /// Refused before the lock was taken: nothing was locked, committed or started.
    Refused(Refused),
    /// The run took the lock: it dreamed, or failed with its failure recorded.
    Ran(Box<Record>),
}

/// A skipped run's result.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    pub outcome: Outcome,
    pub notes_home: PathBuf,
    pub gates: Gates,
}

impl Skipped {
    pub fn text(&self) -> String {
        format!(
            "{}\nskipped: a gate is closed",
            self.gates.lines().join("\n")
        )
    }
}

/// Why a run was refused before the lock.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The home could not be created or scanned.
    #[error("{0}")]
    Io(String),
    /// The dreamer cannot start.
    #[error("{}", unavailable.message)]
    DreamerUnavailable {
        unavailable: Unavailable,
        gates: Gates,
    },
    /// The lock could not be taken (held by another run, or not creatable).
    #[error("{error}")]
    Lock {
        #[source]
        error: LockError,
        gates: Gates,
    },
}

/// The `details` of a refusal before the lock.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum RefusedDetails<'a> {
    DreamerUnavailable {
        pi_bin: &'a Path,
        gates: &'a Gates,
    },
    Lock {
        lock_path: &'a Path,
        gates: &'a Gates,
    },
}

impl Refused {
    pub fn code(&self) -> &'static str {
        match self {
            Refused::Io(_) => "io_error",
            Refused::DreamerUnavailable { .. } => "dreamer_unavailable",
            Refused::Lock { error, .. } => error.code(),
        }
    }

    /// A failed create or scan is ours; a lock held by another run is busy.
    pub fn class(&self) -> ErrorClass {
        match self {
            Refused::Io(_) => ErrorClass::Internal,
            Refused::DreamerUnavailable { .. } => ErrorClass::Refused,
            Refused::Lock { error, .. } => error.class(),
        }
    }

    pub fn details(&self) -> Option<RefusedDetails<'_>> {
        match self {
            Refused::Io(_) => None,
            Refused::DreamerUnavailable { unavailable, gates } => {
                Some(RefusedDetails::DreamerUnavailable {
                    pi_bin: &unavailable.program,
                    gates,
                })
            }
            Refused::Lock { error, gates } => Some(RefusedDetails::Lock {
                lock_path: error.path(),
                gates,
            }),
        }
    }
}

impl DomainError for Refused {
    fn code(&self) -> &'static str {
        Refused::code(self)
    }

    fn class(&self) -> ErrorClass {
        Refused::class(self)
    }

    fn to_refusal(&self) -> Refusal {
        let details = self
            .details()
            .and_then(|details| serde_json::to_value(details).ok());
        Refusal::new(self.code(), self.to_string(), details)
    }
}

/// `skipped`, `dreamed` or `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Skipped,
    Dreamed,
    Failed,
}

/// A run that took the lock: the result object of a completed run, and the `details` of a
/// failed one.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Record {
    pub outcome: Outcome,
    pub stamp: String,
    pub notes_home: PathBuf,
    pub gates: Gates,
    pub dreamer: DreamerChoice,
    /// The report, once written.
    pub report_path: Option<PathBuf>,
    /// The baseline commit, once made.
    pub baseline_commit: Option<String>,
    /// The final commit, once made.
    pub final_commit: Option<String>,
    /// Counts of the journal; `None` when the run never got that far or the journal could not
    /// be read.
    pub changes: Option<Changes>,
    pub warnings: Vec<String>,
    /// The first failure (`None` for a completed run).
    #[serde(skip)]
    pub failure: Option<Failure>,
}

impl Record {
    /// The text of a completed run: the gate lines, the counts, the commits and the report.
    pub fn text(&self) -> String {
        let mut lines = self.gates.lines();
        let changes = self.changes.clone().unwrap_or_default();
        lines.push(format!(
            "dreamed: {} applied ({} written, {} edited, {} deleted), {} refused",
            crate::words::plural(changes.applied, "change", "changes"),
            changes.written,
            changes.edited,
            changes.deleted,
            changes.refused
        ));
        lines.push(format!(
            "commits: baseline {} · dream {}",
            self.baseline_commit.as_deref().unwrap_or("-"),
            self.final_commit.as_deref().unwrap_or("-")
        ));
        lines.push(format!(
            "report: {}",
            self.report_path
                .as_deref()
                .map_or("-".into(), |p| p.display().to_string())
        ));
        lines.join("\n")
    }
}

/// What the journal says was attempted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Changes {
    pub attempted: usize,
    pub applied: usize,
    pub refused: usize,
    pub written: usize,
    pub edited: usize,
    pub deleted: usize,
}

impl Changes {
    pub fn count(entries: &[journal::Entry]) -> Changes {
        let applied = |op: &str| entries.iter().filter(|e| e.ok && e.op == op).count();
        Changes {
            attempted: entries.len(),
            applied: entries.iter().filter(|e| e.ok).count(),
            refused: entries.iter().filter(|e| !e.ok).count(),
            written: applied("write"),
            edited: applied("edit"),
            deleted: applied("delete"),
        }
    }
}

/// One whole run of the dream in `home` (created when missing), starting at `now`. `Err` only
/// when the dreamer's host failed (see [`Dreamer::dream`]).
pub fn run(
    home: &Path,
    options: Options,
    dreamer: &mut dyn Dreamer,
    now: DateTime<FixedOffset>,
) -> io::Result<DreamOutcome> {
    if let Err(e) = std::fs::create_dir_all(home) {
        return Ok(DreamOutcome::Refused(Refused::Io(format!(
            "cannot create the notes home {}: {e}",
            home.display()
        ))));
    }
    let gates = match evaluate_gates(home, &options, system_time(now)) {
        Ok(gates) => gates,
        Err(message) => return Ok(DreamOutcome::Refused(Refused::Io(message))),
    };
    if !gates.open() && !options.force {
        return Ok(DreamOutcome::Skipped(Skipped {
            outcome: Outcome::Skipped,
            notes_home: home.to_path_buf(),
            gates,
        }));
    }
    if let Err(unavailable) = dreamer.prepare() {
        return Ok(DreamOutcome::Refused(Refused::DreamerUnavailable {
            unavailable,
            gates,
        }));
    }
    let now_text = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
    let held = match lock::acquire(
        home,
        options.pid,
        &options.token,
        system_time(now),
        &now_text,
    ) {
        Ok(held) => held,
        Err(error) => return Ok(DreamOutcome::Refused(Refused::Lock { error, gates })),
    };
    dreamer.notice(Notice::Step(format!(
        "{}; lock taken",
        gates.lines().join("; ")
    )));
    for warning in &options.warnings {
        dreamer.notice(Notice::Warning(warning.clone()));
    }
    let mut run = Locked {
        home,
        now,
        now_text,
        stamp: unique_stamp(home, &super::stamp(now)),
        options: &options,
        dreamer,
    };
    // A host failure drops `held`, which releases the lock as failed.
    let record = run.record(gates)?;
    let failed = record.failure.is_some();
    let release = if failed {
        held.fail_release()
    } else {
        held.release()
    };
    if let Err(e) = release {
        run.dreamer
            .notice(Notice::Problem(format!("could not release the lock: {e}")));
    }
    Ok(DreamOutcome::Ran(Box::new(record)))
}

/// The journal's entries, or why it could not be read.
type JournalRead = Result<Vec<journal::Entry>, String>;

/// A run holding the lock: everything it does is recorded, success or failure.
struct Locked<'a, 'd> {
    home: &'a Path,
    now: DateTime<FixedOffset>,
    now_text: String,
    stamp: String,
    options: &'a Options,
    dreamer: &'d mut dyn Dreamer,
}

impl Locked<'_, '_> {
    /// Baseline, dreamer, journal, report and final commit; the first failure is kept.
    fn record(&mut self, gates: Gates) -> io::Result<Record> {
        let mut record = Record {
            outcome: Outcome::Failed,
            stamp: self.stamp.clone(),
            notes_home: self.home.to_path_buf(),
            gates,
            dreamer: self.options.dreamer.clone(),
            report_path: None,
            baseline_commit: None,
            final_commit: None,
            changes: None,
            warnings: self.options.warnings.clone(),
            failure: None,
        };
        // Reads defer their access bumps to the access journal; the baseline (and the dreamer,
        // which reads note files directly) must see them in the files.
        if let Some(cache_dir) = &self.options.cache_dir
            && let Err(e) = crate::notes::store::fold_pending_access(self.home, cache_dir)
        {
            record.warnings.push(format!(
                "could not fold pending access metadata into the notes: {e}"
            ));
        }
        let baseline =
            match audit::snapshot(self.home, &format!("baseline {}", self.stamp), self.now) {
                Ok(snapshot) => snapshot,
                Err(e) => {
                    self.fail(
                        &mut record,
                        FailureCode::BaselineFailed,
                        format!("baseline audit failed: {e}"),
                    );
                    return Ok(record);
                }
            };
        record.baseline_commit = Some(baseline.commit.clone());
        self.dreamer.notice(Notice::Step(format!(
            "baseline {} ({})",
            baseline.commit,
            if baseline.created {
                "committed"
            } else {
                "unchanged"
            }
        )));
        let (end, entries) = self.dream(&mut record)?;
        let report_path = self.report(&mut record, &end, &entries);
        self.commit(&mut record, report_path.as_deref());
        record.changes = entries.ok().map(|entries| Changes::count(&entries));
        record.outcome = if record.failure.is_some() {
            Outcome::Failed
        } else {
            Outcome::Dreamed
        };
        Ok(record)
    }

    /// Tell the human and keep the failure when it is the first.
    fn fail(&mut self, record: &mut Record, code: FailureCode, message: String) {
        self.dreamer.notice(Notice::Problem(message.clone()));
        record.failure.get_or_insert(Failure { code, message });
    }

    /// Run the dreamer (unless interrupted already) and read back its journal.
    fn dream(&mut self, record: &mut Record) -> io::Result<(DreamerEnd, JournalRead)> {
        let end = match self.dreamer.interrupted() {
            Some(cause) => DreamerEnd::not_started(
                FailureCode::Interrupted,
                format!("interrupted by {cause} before the dreamer started"),
            ),
            None => {
                self.dreamer.notice(Notice::Step("dreamer running".into()));
                let text = task_text(self.home, &self.options.invocation_dir, &self.now_text);
                self.dreamer.dream(&Task {
                    text: &text,
                    model: self.options.dreamer.model.as_deref(),
                    notes_home: self.home,
                })?
            }
        };
        if let Some(failure) = &end.failure {
            self.fail(record, failure.code, failure.message.clone());
        }
        let entries = match &end.journal {
            None => Ok(Vec::new()),
            Some(path) => journal::read(path).map_err(|e| {
                format!(
                    "cannot read the dream journal {}: {e}; the changes the dreamer attempted \
                     are unknown (see `git -C {} show`)",
                    path.display(),
                    self.home.display()
                )
            }),
        };
        if let Err(message) = &entries {
            self.fail(record, FailureCode::JournalUnreadable, message.clone());
        }
        Ok((end, entries))
    }

    /// Write the report; its path when written.
    fn report(
        &mut self,
        record: &mut Record,
        end: &DreamerEnd,
        entries: &JournalRead,
    ) -> Option<PathBuf> {
        let path = self.home.join(artifacts::report_rel(&self.stamp));
        let failure = record.failure.as_ref();
        let text = report::render(&report::ReportInput {
            stamp: &self.stamp,
            failure: failure.map(|f| f.code.as_str()),
            failure_message: failure.map(|f| f.message.as_str()),
            final_text: &end.final_text,
            model: self.options.dreamer.model.as_deref(),
            baseline_commit: record.baseline_commit.as_deref().unwrap_or_default(),
            gate_lines: &record.gates.lines(),
            forced: self.options.force && !record.gates.open(),
            entries: entries.as_deref().unwrap_or_default(),
            journal_error: entries.as_ref().err().map(String::as_str),
        });
        match crate::fsio::write_atomic(&path, text.as_bytes()) {
            Ok(()) => {
                record.report_path = Some(path.clone());
                Some(path)
            }
            Err(e) => {
                let message = format!("could not write report at {}: {e}", path.display());
                self.fail(record, FailureCode::ReportFailed, message);
                None
            }
        }
    }

    /// The final commit, `dream <stamp>[ (failed)]`; a failure is appended to the report.
    fn commit(&mut self, record: &mut Record, report_path: Option<&Path>) {
        let message = if record.failure.is_some() {
            format!("dream {} (failed)", self.stamp)
        } else {
            format!("dream {}", self.stamp)
        };
        match audit::snapshot(self.home, &message, self.now) {
            Ok(snapshot) => {
                self.dreamer.notice(Notice::Step(format!(
                    "committed \"{message}\" {}",
                    snapshot.commit
                )));
                record.final_commit = Some(snapshot.commit);
            }
            Err(e) => {
                if let Some(path) = report_path {
                    append_to_report(path, &format!("\n## Final audit failed\n\n{e}\n"));
                }
                self.fail(
                    record,
                    FailureCode::AuditFailed,
                    format!("final audit failed: {e}"),
                );
            }
        }
    }
}

fn evaluate_gates(home: &Path, options: &Options, now: SystemTime) -> Result<Gates, String> {
    let last_run =
        lock::last_run(home).map_err(|e| format!("cannot read the last-run sidecar: {e}"))?;
    let changed = gates::changed_sessions(home, last_run)
        .map_err(|e| format!("cannot scan pi/session/: {e}"))?;
    Ok(Gates {
        time: gates::time_gate(last_run, options.min_hours, now),
        material: gates::material_gate(changed, options.min_sessions),
        forced: options.force,
    })
}

/// The dreamer's task: store-wide when the invocation directory is inside the home, else a
/// project dream for the invocation directory's project key.
fn task_text(home: &Path, invocation_dir: &Path, now_text: &str) -> String {
    let store_wide = invocation_dir.starts_with(home)
        || std::fs::canonicalize(invocation_dir)
            .ok()
            .zip(std::fs::canonicalize(home).ok())
            .is_some_and(|(cwd, home)| cwd.starts_with(home));
    let project_key = (!store_wide).then(|| crate::notes::project_key(invocation_dir));
    playbook::task(&playbook::RunFacts {
        notes_home: home,
        invocation_dir,
        project_key: project_key.as_deref(),
        store_wide,
        now: now_text,
    })
}

fn append_to_report(path: &Path, text: &str) {
    use std::io::Write;
    let _ = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
}

/// The stamp, suffixed `-2`, `-3`, … when a report of that name exists (two runs within one
/// millisecond, or a fixed test clock).
fn unique_stamp(home: &Path, base: &str) -> String {
    let taken = |s: &str| home.join(artifacts::report_rel(s)).exists();
    if !taken(base) {
        return base.to_string();
    }
    let mut n = 2u64;
    loop {
        let stamp = format!("{base}-{n}");
        if !taken(&stamp) {
            return stamp;
        }
        n += 1;
    }
}

/// `now` as a file time (the sidecar's mtime and the gates' reference).
fn system_time(now: DateTime<FixedOffset>) -> SystemTime {
    let millis = now.timestamp_millis();
    if millis >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_millis(millis as u64)
    } else {
        SystemTime::UNIX_EPOCH - Duration::from_millis(millis.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dreamer that journals scripted entries (or leaves an unreadable journal) and records
    /// what it was told.
    struct Stub {
        journal_dir: tempfile::TempDir,
        entries: Vec<journal::Entry>,
        unreadable_journal: bool,
        unavailable: bool,
        host_fails: bool,
        interrupted: Option<String>,
        failure: Option<Failure>,
        notices: Vec<Notice>,
        tasks: Vec<(String, Option<String>)>,
    }

    impl Stub {
        fn new() -> Stub {
            Stub {
                journal_dir: tempfile::tempdir().unwrap(),
                entries: Vec::new(),
                unreadable_journal: false,
                unavailable: false,
                host_fails: false,
                interrupted: None,
                failure: None,
                notices: Vec::new(),
                tasks: Vec::new(),
            }
        }
    }

    impl Dreamer for Stub {
        fn prepare(&mut self) -> Result<(), Unavailable> {
            if self.unavailable {
                return Err(Unavailable {
                    message: "no pi".into(),
                    program: PathBuf::from("/nowhere/pi"),
                });
            }
            Ok(())
        }
        fn interrupted(&mut self) -> Option<String> {
            self.interrupted.clone()
        }
        fn dream(&mut self, task: &Task) -> io::Result<DreamerEnd> {
            self.tasks
                .push((task.text.to_string(), task.model.map(str::to_string)));
            if self.host_fails {
                return Err(io::Error::other("no scratch directory"));
            }
            let journal = self.journal_dir.path().join("journal.jsonl");
            if self.unreadable_journal {
                std::fs::create_dir(&journal).unwrap();
            }
            for entry in &self.entries {
                journal::append(&journal, entry).unwrap();
            }
            Ok(DreamerEnd {
                failure: self.failure.clone(),
                final_text: "done".into(),
                journal: Some(journal),
            })
        }
        fn notice(&mut self, notice: Notice) {
            self.notices.push(notice);
        }
    }

    fn options(force: bool) -> Options {
        Options {
            force,
            min_sessions: 3,
            min_hours: 24.0,
            dreamer: DreamerChoice {
                model: Some("p/m".into()),
                source: ModelSource::Flag,
            },
            warnings: vec!["pi-context: a warning".into()],
            invocation_dir: PathBuf::from("/somewhere/else"),
            pid: 7,
            cache_dir: None,
            token: "tok".into(),
        }
    }

    fn now() -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339("2026-11-30T12:00:00.000+00:00").unwrap()
    }

    fn written(path: &str) -> journal::Entry {
        journal::Entry {
            op: "write".into(),
            path: Some(path.into()),
            ok: true,
            outcome: Some("created".into()),
            target: Some(path.into()),
            code: None,
            message: None,
        }
    }

    #[test]
    fn closed_gates_skip_without_asking_the_dreamer() {
        let home = tempfile::tempdir().unwrap();
        let mut stub = Stub::new();
        stub.unavailable = true;
        let outcome = run(home.path(), options(false), &mut stub, now()).unwrap();
        let DreamOutcome::Skipped(skipped) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(skipped.gates.material.reason, "only 0 changed sessions");
        assert!(skipped.text().ends_with("\nskipped: a gate is closed"));
        assert!(stub.notices.is_empty() && stub.tasks.is_empty());
        assert!(!home.path().join(".git").exists());
    }

    #[test]
    fn an_unavailable_dreamer_is_refused_before_the_lock() {
        let home = tempfile::tempdir().unwrap();
        let mut stub = Stub::new();
        stub.unavailable = true;
        let outcome = run(home.path(), options(true), &mut stub, now()).unwrap();
        let DreamOutcome::Refused(refused) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(refused.code(), "dreamer_unavailable");
        let details = serde_json::to_value(refused.details()).unwrap();
        assert_eq!(details["pi_bin"], "/nowhere/pi");
        assert_eq!(details["gates"]["forced"], true);
        assert!(!home.path().join(artifacts::LOCK_FILE).exists());
    }

    #[test]
    fn pending_access_bumps_are_folded_into_the_notes_before_the_baseline() {
        use crate::notes::{Identity, Store};
        let home = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let store = Store::new(Identity::new(home.path(), None, "k-1", "ann", "m").unwrap())
            .with_cache_dir(Some(cache.path()));
        store.write("@human/n", "body", None, now()).unwrap();
        store.read("@human/n", now()).unwrap();
        let note = home.path().join("human/n.md");
        assert!(
            std::fs::read_to_string(&note)
                .unwrap()
                .contains("accessCount: 0")
        );
        let mut stub = Stub::new();
        let mut with_cache = options(true);
        with_cache.cache_dir = Some(cache.path().to_path_buf());
        let outcome = run(home.path(), with_cache, &mut stub, now()).unwrap();
        assert!(matches!(outcome, DreamOutcome::Ran(_)), "{outcome:?}");
        let text = std::fs::read_to_string(&note).unwrap();
        assert!(text.contains("accessCount: 1"), "{text}");
    }

    #[test]
    fn a_completed_run_counts_the_journal_commits_and_releases() {
        let home = tempfile::tempdir().unwrap();
        let mut stub = Stub::new();
        stub.entries = vec![written("human/a.md"), written("human/b.md")];
        let outcome = run(home.path(), options(true), &mut stub, now()).unwrap();
        let DreamOutcome::Ran(record) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(record.outcome, Outcome::Dreamed, "{record:?}");
        assert_eq!(record.failure, None);
        let changes = record.changes.clone().unwrap();
        assert_eq!((changes.attempted, changes.written), (2, 2));
        assert!(record.final_commit.is_some() && record.baseline_commit.is_some());
        assert!(
            record
                .text()
                .contains("dreamed: 2 changes applied (2 written")
        );
        assert_eq!(stub.tasks[0].1.as_deref(), Some("p/m"));
        assert!(
            stub.tasks[0]
                .0
                .contains("Scope: project dream for project key")
        );
        assert_eq!(
            stub.notices[1],
            Notice::Warning("pi-context: a warning".into())
        );
        assert!(!home.path().join(artifacts::LOCK_FILE).exists());
        let report = std::fs::read_to_string(record.report_path.unwrap()).unwrap();
        assert!(
            report.contains("- write `human/b.md` → created\n"),
            "{report}"
        );
    }

    #[test]
    fn an_unreadable_journal_fails_the_run_instead_of_reporting_no_changes() {
        let home = tempfile::tempdir().unwrap();
        let mut stub = Stub::new();
        stub.unreadable_journal = true;
        let outcome = run(home.path(), options(true), &mut stub, now()).unwrap();
        let DreamOutcome::Ran(record) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(record.outcome, Outcome::Failed);
        let failure = record.failure.clone().unwrap();
        assert_eq!(failure.code, FailureCode::JournalUnreadable);
        assert!(failure.message.contains("cannot read the dream journal"));
        assert_eq!(record.changes, None, "unknown, not zero");
        assert!(
            record.final_commit.is_some(),
            "the failed run is still committed"
        );
        let report = std::fs::read_to_string(record.report_path.unwrap()).unwrap();
        assert!(report.contains("- outcome: failed (journal_unreadable)\n"));
        assert!(!report.contains("- none\n"), "{report}");
        assert!(
            stub.notices
                .iter()
                .any(|n| matches!(n, Notice::Problem(m) if m.contains("dream journal")))
        );
    }

    #[test]
    fn a_dreamer_failure_stays_the_first_failure() {
        let home = tempfile::tempdir().unwrap();
        let mut stub = Stub::new();
        stub.unreadable_journal = true;
        stub.failure = Some(Failure {
            code: FailureCode::Timeout,
            message: "too slow".into(),
        });
        let DreamOutcome::Ran(record) = run(home.path(), options(true), &mut stub, now()).unwrap()
        else {
            panic!("not a run")
        };
        assert_eq!(record.failure.unwrap().code, FailureCode::Timeout);
        assert_eq!(record.changes, None);
    }

    #[test]
    fn an_interruption_before_the_start_never_runs_the_dreamer() {
        let home = tempfile::tempdir().unwrap();
        let mut stub = Stub::new();
        stub.interrupted = Some("SIGINT".into());
        let DreamOutcome::Ran(record) = run(home.path(), options(true), &mut stub, now()).unwrap()
        else {
            panic!("not a run")
        };
        let failure = record.failure.unwrap();
        assert_eq!(failure.code, FailureCode::Interrupted);
        assert_eq!(
            failure.message,
            "interrupted by SIGINT before the dreamer started"
        );
        assert!(stub.tasks.is_empty());
        assert_eq!(
            record.changes,
            Some(Changes::default()),
            "nothing attempted"
        );
    }

    #[test]
    fn a_host_failure_stops_the_run_and_releases_the_lock_as_failed() {
        let home = tempfile::tempdir().unwrap();
        let mut stub = Stub::new();
        stub.host_fails = true;
        let err = run(home.path(), options(true), &mut stub, now()).unwrap_err();
        assert_eq!(err.to_string(), "no scratch directory");
        assert!(!home.path().join(artifacts::LOCK_FILE).exists());
        assert!(!home.path().join(artifacts::LAST_RUN_FILE).exists());
        assert!(
            !home.path().join(artifacts::REPORTS_DIR).exists(),
            "no report"
        );
    }

    #[test]
    fn a_held_lock_is_refused_and_left_alone() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(artifacts::LOCK_FILE), "1 other").unwrap();
        let mut stub = Stub::new();
        let DreamOutcome::Refused(refused) =
            run(home.path(), options(true), &mut stub, now()).unwrap()
        else {
            panic!("not refused")
        };
        assert_eq!(refused.code(), "lock_held");
        assert!(stub.tasks.is_empty());
        assert_eq!(
            std::fs::read(home.path().join(artifacts::LOCK_FILE)).unwrap(),
            b"1 other"
        );
    }
}
