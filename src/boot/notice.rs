//! The one-line notice a host shows beside the boot block when the snapshot is not the whole
//! story: homes that could not be opened, and sync conflict notes waiting to be merged. Pure:
//! built from the snapshot the boot was rendered from, so text and `data` never disagree.

use crate::protocol::ToolNames;
use crate::words::plural;

use super::load::LOAD_ORDER;
use super::render::Snapshot;

/// How many conflict addresses the notice names before it says "and N more".
const CONFLICTS_NAMED: usize = 3;

/// The notice for `snapshot`, or `None` when every home opened and no conflict waits.
pub fn notice(snapshot: &Snapshot, tools: &ToolNames) -> Option<String> {
    let incomplete = incomplete(snapshot, tools);
    let conflicts = conflicts(&sync_conflicts(snapshot));
    match (incomplete, conflicts) {
        (Some(a), Some(b)) => Some(format!("{a} {b}")),
        (a, b) => a.or(b),
    }
}

/// Every home's live sync conflict addresses, homes in load order.
pub fn sync_conflicts(snapshot: &Snapshot) -> Vec<&String> {
    LOAD_ORDER
        .into_iter()
        .flat_map(|kind| snapshot.home(kind).sync_conflicts.iter())
        .collect()
}

fn incomplete(snapshot: &Snapshot, tools: &ToolNames) -> Option<String> {
    let labels: Vec<&str> = LOAD_ORDER
        .into_iter()
        .filter(|kind| snapshot.home(*kind).unavailable.is_some())
        .map(|kind| kind.label())
        .collect();
    (!labels.is_empty()).then(|| {
        format!(
            "pi-context: notes index incomplete: could not open {}; {} can retry after recovery.",
            labels.join(", "),
            tools.notes_list
        )
    })
}

fn conflicts(addresses: &[&String]) -> Option<String> {
    (!addresses.is_empty()).then(|| {
        let named: Vec<&str> = addresses
            .iter()
            .take(CONFLICTS_NAMED)
            .map(|s| s.as_str())
            .collect();
        let more = addresses.len() - named.len();
        format!(
            "pi-context: {} to resolve: {}{}; merge each into the note it names, then crumple it.",
            plural(addresses.len(), "sync conflict note", "sync conflict notes"),
            named.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boot::HomeKind;

    fn tools() -> ToolNames {
        ToolNames::default()
    }

    #[test]
    fn no_notice_when_every_home_opened_and_no_conflict_waits() {
        assert_eq!(notice(&Snapshot::empty(0), &tools()), None);
    }

    #[test]
    fn unopened_homes_then_conflicts_in_one_line() {
        let mut snapshot = Snapshot::empty(0);
        snapshot.home_mut(HomeKind::Project).unavailable = Some("denied".into());
        snapshot.home_mut(HomeKind::Human).sync_conflicts = (1..=5)
            .map(|k| format!("@human/n{k}.conflict-h-1"))
            .collect();
        let text = notice(&snapshot, &tools()).unwrap();
        assert!(text.starts_with("pi-context: notes index incomplete: could not open "));
        assert!(text.contains(&HomeKind::Project.label().to_string()));
        assert!(text.contains("pi-context: 5 sync conflict notes to resolve: @human/n1.conflict-h-1, @human/n2.conflict-h-1, @human/n3.conflict-h-1 and 2 more;"));
    }

    #[test]
    fn one_conflict_is_singular() {
        let mut snapshot = Snapshot::empty(0);
        snapshot.home_mut(HomeKind::Agent).sync_conflicts = vec!["@agent/a.conflict-h-1".into()];
        assert_eq!(
            notice(&snapshot, &tools()).unwrap(),
            "pi-context: 1 sync conflict note to resolve: @agent/a.conflict-h-1; merge each into the note it names, then crumple it."
        );
    }
}
