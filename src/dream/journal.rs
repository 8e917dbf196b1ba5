//! The per-run journal of jailed operations: one JSON object per line, appended by every
//! `dream-fs` call (applied or refused) and read back by `dream` for the report.
//!
//! The journal lives in a temporary directory `dream` creates outside the notes home, so it
//! is never committed; `dream` names it to the dreamer through `PI_CONTEXT_DREAM_JOURNAL`
//! and the dreamer's tools pass it on with `dream-fs --journal`. Appends hold the journal's
//! cross-process lock, so parallel tool calls never interleave lines.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fsio;

/// One attempted operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// `write`, `edit` or `delete`.
    pub op: String,
    /// The path exactly as the dreamer passed it (absent when the request had none).
    pub path: Option<String>,
    /// Whether the operation was applied.
    pub ok: bool,
    /// On success: `created`, `overwritten`, `edited` or `deleted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// On success: the target relative to the notes home.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// On refusal: the stable code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// On refusal: the message the dreamer saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Append one entry as one line.
pub fn append(journal: &Path, entry: &Entry) -> io::Result<()> {
    let mut line = serde_json::to_string(entry).map_err(io::Error::other)?;
    line.push('\n');
    let _guard = fsio::lock_path(journal)?;
    let mut file = OpenOptions::new().create(true).append(true).open(journal)?;
    file.write_all(line.as_bytes())?;
    file.sync_all()
}

/// Every entry in order. A missing journal is empty (the dreamer changed nothing); a line
/// that does not parse (a torn write from a killed process) is skipped.
pub fn read(journal: &Path) -> io::Result<Vec<Entry>> {
    let text = match fs::read_to_string(journal) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_round_trip_and_torn_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("journal.jsonl");
        assert!(read(&j).unwrap().is_empty());
        let a = Entry {
            op: "write".into(),
            path: Some("human/a.md".into()),
            ok: true,
            outcome: Some("created".into()),
            target: Some("human/a.md".into()),
            code: None,
            message: None,
        };
        append(&j, &a).unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(&j)
            .unwrap()
            .write_all(b"{\"op\":\"edi")
            .unwrap();
        assert_eq!(read(&j).unwrap(), vec![a]);
    }
}
