//! The doctor's result as it goes on the wire: the bounded selection of issues and the text
//! rendered from that same selection. It owns the wire shape of `data` and the text form; it
//! must not decide exit codes or print.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Counts, Issue, Report};
use crate::envelope::{fits, largest_fitting};
use crate::words::plural;

/// `data` of a doctor result. `issues` is a prefix of the report's issues (all of them unless
/// the output budget cut it; `omitted_issues` counts the rest). `counts` and `issues_by_kind`
/// always cover every issue found.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Bounded<'a> {
    pub home: String,
    pub clean: bool,
    pub counts: &'a Counts,
    pub issues_by_kind: BTreeMap<&'static str, usize>,
    pub issues: &'a [Issue],
    pub omitted_issues: usize,
    /// The sync state, when the home was ever synced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<&'a crate::sync::state::SyncState>,
}

/// The result data and its text. With `within_budget`, as many issues (in report order) as
/// fit the output budget both as JSON and as text; without, every issue.
pub fn bound(report: &Report, within_budget: bool) -> (Bounded<'_>, String) {
    let at = |shown: usize| {
        let data = Bounded {
            home: report.home.display().to_string(),
            clean: report.clean(),
            counts: &report.counts,
            issues_by_kind: report.issues_by_kind(),
            issues: &report.issues[..shown],
            omitted_issues: report.issues.len() - shown,
            sync: report.sync.as_ref(),
        };
        let text = render_text(&data);
        (data, text)
    };
    let total = report.issues.len();
    let shown = if within_budget {
        largest_fitting(total, |n| {
            let (data, text) = at(n);
            fits(&data, &text)
        })
        .unwrap_or(0)
    } else {
        total
    };
    at(shown)
}

/// The readable form: one `<path>: <message>` line per listed issue, then one summary line
/// (`doctor: OK (<home>) …` when clean), then a line about omitted issues when some were cut.
pub fn render_text(data: &Bounded<'_>) -> String {
    let mut text = String::new();
    for issue in data.issues {
        text.push_str(&issue.path);
        text.push_str(": ");
        text.push_str(&issue.message);
        text.push('\n');
    }
    let counts = data.counts;
    let covered = format!(
        "{} ({}), {} checked, {} skipped (@self/, @model/)",
        plural(counts.notes, "note", "notes"),
        plural(counts.maps, "map", "maps"),
        plural(counts.addresses_checked, "address", "addresses"),
        counts.addresses_skipped,
    );
    if data.clean {
        text.push_str(&format!("doctor: OK ({}): {covered}", data.home));
    } else {
        text.push_str(&format!(
            "doctor: {} ({}): {covered}",
            plural(counts.issues, "issue", "issues"),
            data.home
        ));
    }
    if let Some(sync) = data.sync {
        for remote in &sync.remotes {
            text.push_str(&format!(
                "\nsync: {} not yet pushed to {} (remote {}); last synced {}",
                plural(remote.unpushed_commits, "commit", "commits"),
                remote.branch,
                remote.key,
                &remote.last_synced[..12.min(remote.last_synced.len())]
            ));
        }
        if sync.interrupted {
            text.push_str(
                "\nsync: an interrupted sync left a merge half applied; the next sync finishes it",
            );
        }
    }
    if data.omitted_issues > 0 {
        text.push_str(&format!(
            "\n{} not listed (output budget); request {{\"all_issues\":true}} to list every issue",
            plural(data.omitted_issues, "more issue", "more issues"),
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::doctor::IssueKind;
    use crate::envelope::OUTPUT_BUDGET_BYTES;

    fn report(issues: usize) -> Report {
        let issues: Vec<Issue> = (0..issues)
            .map(|i| {
                Issue::new(
                    format!("human/note-{i:05}.md"),
                    IssueKind::FrontmatterMissing,
                    "missing or unclosed frontmatter; add a valid metadata block",
                )
            })
            .collect();
        Report {
            home: PathBuf::from("/h"),
            counts: Counts {
                notes: issues.len(),
                issues: issues.len(),
                ..Counts::default()
            },
            issues,
            sync: None,
        }
    }

    #[test]
    fn many_issues_are_cut_to_the_budget_and_counted() {
        let report = report(2000);
        let (data, text) = bound(&report, true);
        assert!(data.omitted_issues > 0);
        assert_eq!(data.issues.len() + data.omitted_issues, 2000);
        assert!(fits(&data, &text));
        assert!(text.len() <= OUTPUT_BUDGET_BYTES);
        assert!(text.contains(&format!("{} more issues not listed", data.omitted_issues)));
        assert_eq!(data.issues_by_kind["frontmatter_missing"], 2000);
        // One more issue would not fit: the cut is the largest fitting prefix.
        let grown = Bounded {
            issues: &report.issues[..data.issues.len() + 1],
            omitted_issues: data.omitted_issues - 1,
            ..data.clone()
        };
        assert!(!fits(&grown, &render_text(&grown)));
    }

    #[test]
    fn unbounded_lists_everything() {
        let report = report(2000);
        let (data, text) = bound(&report, false);
        assert_eq!(data.issues.len(), 2000);
        assert_eq!(data.omitted_issues, 0);
        assert_eq!(text.lines().count(), 2001);
    }
}
