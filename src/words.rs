//! The few word forms every human- and model-facing text shares, so singular and plural read
//! right everywhere ("1 note", "2 notes", "seq 3", "seqs 3-5"). Pure formatting: no I/O.

/// `"<n> <one>"` when `n` is 1, else `"<n> <many>"`.
///
/// ```
/// use pi_context::words::plural;
/// assert_eq!(plural(1, "event", "events"), "1 event");
/// assert_eq!(plural(0, "match", "matches"), "0 matches");
/// ```
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A seq range: `"seq 3"` when it holds one seq, else `"seqs 3-5"`.
///
/// ```
/// use pi_context::words::seq_range;
/// assert_eq!(seq_range("3", "3"), "seq 3");
/// assert_eq!(seq_range("3", "5"), "seqs 3-5");
/// ```
pub fn seq_range(first: &str, last: &str) -> String {
    if first == last {
        format!("seq {first}")
    } else {
        format!("seqs {first}-{last}")
    }
}
