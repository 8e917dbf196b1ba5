//! The two scheduling gates of a dream run: time since the last run (the sidecar's mtime)
//! and material (session homes with files newer than the last run). Pure decisions over
//! explicit inputs plus one directory scan; no clock, no printing.

use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;

/// The time gate's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TimeGate {
    pub ok: bool,
    /// `no prior dream`, `stale` or `last dream is too recent`.
    pub reason: String,
    /// Hours since the last run (absent when there was none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hours_since_last_run: Option<f64>,
    pub min_hours: f64,
}

/// The material gate's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MaterialGate {
    pub ok: bool,
    /// `<n> changed sessions` or `only <n> changed sessions`.
    pub reason: String,
    pub changed_sessions: u64,
    pub min_sessions: u64,
}

/// Time gate: open when there is no prior run, or when at least `min_hours` have passed since
/// it. A last run in the future (clock skew) counts as zero hours ago.
pub fn time_gate(last_run: Option<SystemTime>, min_hours: f64, now: SystemTime) -> TimeGate {
    match last_run {
        None => TimeGate {
            ok: true,
            reason: "no prior dream".into(),
            hours_since_last_run: None,
            min_hours,
        },
        Some(last) => {
            let elapsed = now.duration_since(last).unwrap_or(Duration::ZERO);
            let hours = elapsed.as_secs_f64() / 3600.0;
            let ok = hours >= min_hours;
            TimeGate {
                ok,
                reason: if ok {
                    "stale"
                } else {
                    "last dream is too recent"
                }
                .into(),
                hours_since_last_run: Some((hours * 1000.0).round() / 1000.0),
                min_hours,
            }
        }
    }
}

/// Count session homes (`<home>/pi/session/<id>/`, real directories only) holding at least one
/// direct regular file whose mtime is strictly after `since` (`None`: every file counts).
/// A missing `pi/session/` counts zero.
pub fn changed_sessions(home: &Path, since: Option<SystemTime>) -> io::Result<u64> {
    use crate::confine::{Dir, EntryKind, Kind};
    // Reached from the home's handle without following a symlink: a symlinked `pi/` or
    // `pi/session/` is never read through (an error whose text starts `home_is_symlink`), and
    // symlinked session directories are skipped like any non-directory.
    let opened = Dir::open_root(home).and_then(|root| match root {
        Some(root) => root.walk(&["pi", "session"]),
        None => Ok(None),
    });
    let sessions = match opened {
        Ok(Some(dir)) => dir,
        Ok(None) => return Ok(0),
        Err(e) if e.kind == Kind::Symlink => {
            return Err(io::Error::other(format!("home_is_symlink: {e}")));
        }
        Err(e) => return Err(e.into()),
    };
    let mut changed = 0;
    for (name, kind) in sessions.entries()? {
        if kind != EntryKind::Dir {
            continue;
        }
        let session = match sessions.child(&name) {
            Ok(Some(dir)) => dir,
            Ok(None) => continue,
            Err(e) if e.kind == Kind::Symlink => continue,
            Err(e) => return Err(e.into()),
        };
        for (file, kind) in session.entries()? {
            if kind != EntryKind::File {
                continue;
            }
            let newer = match since {
                None => true,
                Some(since) => session.modified(&file)?.is_some_and(|t| t > since),
            };
            if newer {
                changed += 1;
                break;
            }
        }
    }
    Ok(changed)
}

/// Material gate over a counted number of changed session homes.
pub fn material_gate(changed: u64, min_sessions: u64) -> MaterialGate {
    let ok = changed >= min_sessions;
    MaterialGate {
        ok,
        reason: {
            let count = crate::words::plural(
                usize::try_from(changed).unwrap_or(usize::MAX),
                "changed session",
                "changed sessions",
            );
            if ok { count } else { format!("only {count}") }
        },
        changed_sessions: changed,
        min_sessions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn time_gate_table() {
        assert!(time_gate(None, 24.0, at(0)).ok);
        assert_eq!(time_gate(None, 24.0, at(0)).reason, "no prior dream");
        let day = 24 * 3600;
        assert!(
            time_gate(Some(at(0)), 24.0, at(day)).ok,
            "exactly min_hours"
        );
        assert_eq!(time_gate(Some(at(0)), 24.0, at(day)).reason, "stale");
        let early = time_gate(Some(at(1)), 24.0, at(day));
        assert!(!early.ok);
        assert_eq!(early.reason, "last dream is too recent");
        assert!(!time_gate(Some(at(day * 2)), 1.0, at(day)).ok, "future");
        assert!(time_gate(Some(at(day)), 0.0, at(day)).ok);
    }

    #[test]
    fn material_counts_direct_files_newer_than_since() {
        let home = tempfile::tempdir().unwrap();
        let s = home.path().join("pi/session");
        for (id, secs) in [("a", 100), ("b", 200), ("c", 300)] {
            fs::create_dir_all(s.join(id)).unwrap();
            let f = fs::File::create(s.join(id).join("n.md")).unwrap();
            f.set_modified(at(secs)).unwrap();
        }
        // Nested files do not count, and neither do plain files at the session level.
        fs::create_dir_all(s.join("d/deep")).unwrap();
        fs::File::create(s.join("d/deep/n.md"))
            .unwrap()
            .set_modified(at(999))
            .unwrap();
        fs::write(s.join("stray.md"), "x").unwrap();
        assert_eq!(changed_sessions(home.path(), None).unwrap(), 3);
        assert_eq!(changed_sessions(home.path(), Some(at(100))).unwrap(), 2);
        assert_eq!(changed_sessions(home.path(), Some(at(300))).unwrap(), 0);
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(changed_sessions(empty.path(), None).unwrap(), 0);
        assert_eq!(material_gate(2, 3).reason, "only 2 changed sessions");
        assert_eq!(material_gate(1, 3).reason, "only 1 changed session");
        assert!(material_gate(3, 3).ok);
    }
}
