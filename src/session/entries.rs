//! The entries of a session in file order, kept in the parts they were decoded in (a few per
//! decode thread, or one per read of the index) instead of being moved into one vector: an
//! entry is ≈ 200 bytes, and appending the second thread's entries to the first's copied them
//! into freshly faulted pages on the main thread (≈ 5 ms on a 100 MiB session of 63 k entries,
//! ≈ 16 ms on one of 225 k short lines) before anything else could start.

use std::ops::Index;

use super::Entry;

/// Entries in file order, in parts. Parts are few (a few per core and read), so indexing
/// finds its part by a search over their starts. Consecutive parts may form one group (the
/// pieces of one decode thread's range), which the index encodes as one chunk.
#[derive(Debug, Default, Clone)]
pub struct Entries {
    parts: Vec<Vec<Entry>>,
    /// The index of each part's first entry (ascending; no part is empty).
    starts: Vec<usize>,
    /// Per part: whether it continues the group of the part before it.
    joins: Vec<bool>,
    len: usize,
}

impl Entries {
    pub fn new() -> Entries {
        Entries::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, index: usize) -> Option<&Entry> {
        if index >= self.len {
            return None;
        }
        // `starts[0]` is 0, so the part is the last one starting at or before `index`.
        let part = self.starts.partition_point(|&start| start <= index) - 1;
        self.parts[part].get(index - self.starts[part])
    }

    /// The parent id of the entry at `index`.
    pub fn parent_id(&self, index: usize) -> Option<&str> {
        let before = index.checked_sub(1).and_then(|before| self.get(before));
        self.get(index)?.parent_id(before)
    }

    pub fn last(&self) -> Option<&Entry> {
        self.parts.last().and_then(|part| part.last())
    }

    /// Every entry, in file order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Entry> + Clone {
        self.parts.iter().flatten()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.parts.iter_mut().flatten()
    }

    /// The parts, in file order.
    pub fn parts(&self) -> &[Vec<Entry>] {
        &self.parts
    }

    /// The first `n` entries, as slices of the parts.
    pub fn prefix(&self, mut n: usize) -> impl Iterator<Item = &[Entry]> {
        self.parts.iter().map_while(move |part| {
            if n == 0 {
                return None;
            }
            let take = n.min(part.len());
            n -= take;
            Some(&part[..take])
        })
    }

    /// The first `n` entries, as groups of slices of the parts (see [`Entries`]).
    pub fn prefix_groups(&self, n: usize) -> Vec<Vec<&[Entry]>> {
        let mut groups: Vec<Vec<&[Entry]>> = Vec::new();
        for (slice, &joins) in self.prefix(n).zip(&self.joins) {
            match groups.last_mut() {
                Some(group) if joins => group.push(slice),
                _ => groups.push(vec![slice]),
            }
        }
        groups
    }

    /// Add `part` after the entries so far, as a group of its own (nothing for an empty one).
    pub fn push_part(&mut self, part: Vec<Entry>) {
        self.push_part_in_group(part, false);
    }

    /// Add `part` after the entries so far, in the group of the last part when `joins` and
    /// there is one (nothing for an empty part).
    pub fn push_part_in_group(&mut self, part: Vec<Entry>, joins: bool) {
        if part.is_empty() {
            return;
        }
        self.joins.push(joins && !self.parts.is_empty());
        self.starts.push(self.len);
        self.len += part.len();
        self.parts.push(part);
    }

    /// All entries as one slice, moving them into one part first when there are several
    /// (for the few entries of an append; never on the full read's path).
    pub fn make_contiguous(&mut self) -> &[Entry] {
        if self.parts.len() > 1 {
            let mut all = Vec::with_capacity(self.len);
            for part in self.parts.drain(..) {
                all.extend(part);
            }
            self.parts.push(all);
            self.starts = vec![0];
            self.joins = vec![false];
        }
        self.parts.first().map_or(&[], Vec::as_slice)
    }

    /// All entries as one slice: `None` when they are in several parts.
    pub fn as_slice(&self) -> Option<&[Entry]> {
        match self.parts.as_slice() {
            [] => Some(&[]),
            [one] => Some(one),
            _ => None,
        }
    }
}

impl Index<usize> for Entries {
    type Output = Entry;

    #[inline]
    fn index(&self, index: usize) -> &Entry {
        match self.get(index) {
            Some(entry) => entry,
            None => panic!("entry {index} of {}", self.len),
        }
    }
}

impl<'a> IntoIterator for &'a Entries {
    type Item = &'a Entry;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<Entry>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.parts.iter().flatten()
    }
}

impl From<Vec<Entry>> for Entries {
    fn from(part: Vec<Entry>) -> Entries {
        let mut entries = Entries::new();
        entries.push_part(part);
        entries
    }
}

/// The same entries: the same facts in the same order, however they are split in parts and
/// however each keeps its parent id ([`super::Lineage`]).
impl PartialEq for Entries {
    fn eq(&self, other: &Entries) -> bool {
        fn facts(entries: &Entries) -> impl Iterator<Item = impl PartialEq + '_> {
            let mut before = None;
            entries.iter().map(move |e| {
                let parent = e.parent_id(before);
                before = Some(e);
                let line = (e.line_no, e.offset, e.line_len(), e.escapes());
                (line, e.id(), parent, &e.kind)
            })
        }
        self.len == other.len && facts(self).eq(facts(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{EntryKind, Lineage};

    fn entry(n: u64) -> Entry {
        let lineage = Lineage::new(Some(format!("e{n}").as_str()), None, None);
        Entry::new(n, n * 10, 9, false, lineage, EntryKind::Label)
    }

    #[test]
    fn parts_read_as_one_sequence() {
        let mut entries = Entries::new();
        entries.push_part((0..3).map(entry).collect());
        entries.push_part(Vec::new());
        entries.push_part((3..4).map(entry).collect());
        entries.push_part((4..8).map(entry).collect());
        assert_eq!(entries.len(), 8);
        for n in 0..8 {
            assert_eq!(entries[n].line_no, n as u64);
            assert_eq!(entries.get(n).map(|e| e.line_no), Some(n as u64));
        }
        assert!(entries.get(8).is_none());
        assert_eq!(entries.last().map(|e| e.line_no), Some(7));
        let lines: Vec<u64> = entries.iter().map(|e| e.line_no).collect();
        assert_eq!(lines, (0..8).collect::<Vec<_>>());
        let prefix: Vec<usize> = entries.prefix(5).map(<[Entry]>::len).collect();
        assert_eq!(prefix, vec![3, 1, 1]);
        assert_eq!(entries.prefix(0).count(), 0);
        let groups = |entries: &Entries, n| -> Vec<Vec<usize>> {
            let groups = entries.prefix_groups(n);
            groups
                .iter()
                .map(|g| g.iter().map(|s| s.len()).collect())
                .collect()
        };
        assert_eq!(groups(&entries, 8), vec![vec![3], vec![1], vec![4]]);
        let mut grouped = Entries::new();
        grouped.push_part_in_group((0..3).map(entry).collect(), true);
        grouped.push_part_in_group(Vec::new(), false);
        grouped.push_part_in_group((3..4).map(entry).collect(), true);
        grouped.push_part_in_group((4..6).map(entry).collect(), false);
        grouped.push_part_in_group((6..8).map(entry).collect(), true);
        assert_eq!(groups(&grouped, 8), vec![vec![3, 1], vec![2, 2]]);
        assert_eq!(groups(&grouped, 5), vec![vec![3, 1], vec![1]]);
        assert_eq!(grouped, entries);
        let one: Entries = (0..8).map(entry).collect::<Vec<_>>().into();
        assert_eq!(entries, one);
        assert!(entries.as_slice().is_none());
        assert_eq!(entries.make_contiguous().len(), 8);
        assert_eq!(entries.as_slice().map(<[Entry]>::len), Some(8));
        assert_eq!(entries, one);
        assert_eq!(entries[7].line_no, 7);
    }

    #[test]
    fn a_parent_kept_as_the_entry_before_reads_across_parts() {
        // e1's parent is e0, the entry before it, whether or not that is known when e1 is made.
        let child = |before: Option<&Entry>| {
            let lineage = Lineage::new(Some("e1"), Some("e0"), before);
            Entry::new(1, 10, 9, false, lineage, EntryKind::Label)
        };
        let root = entry(0);
        let continuing = child(Some(&root));
        assert!(matches!(continuing.lineage, Lineage::Continues(_)));
        let explicit = child(None);
        assert!(matches!(explicit.lineage, Lineage::Other(_)));
        // A parent that is not the entry before is kept as written.
        let elsewhere = child(Some(&entry(5)));
        assert_eq!(elsewhere.parent_id(Some(&entry(5))), Some("e0"));

        let mut split = Entries::new();
        split.push_part(vec![root.clone()]);
        split.push_part(vec![continuing.clone()]);
        let whole: Entries = vec![root.clone(), explicit].into();
        for entries in [&split, &whole] {
            assert_eq!(entries.parent_id(0), None);
            assert_eq!(entries.parent_id(1), Some("e0"));
            assert_eq!(entries.parent_id(2), None);
        }
        assert_eq!(split, whole);
        let other: Entries = vec![root, elsewhere].into();
        assert_eq!(other.parent_id(1), Some("e0"));
        assert_eq!(other, whole);
        let orphan: Entries = vec![entry(0), entry(1)].into();
        assert_ne!(orphan, whole);
    }

    #[test]
    #[should_panic(expected = "entry 3 of 3")]
    fn an_index_past_the_end_panics_like_a_slice() {
        let entries: Entries = (0..3).map(entry).collect::<Vec<_>>().into();
        let _ = &entries[3];
    }
}
