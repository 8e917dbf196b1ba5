//! The read window `notes-read` and `history-read` share: a run of code points (never bytes)
//! from `offset_chars` (negative: from the end), at most `limit_chars` long, shrunk further
//! when the result would not fit the output budget; the facts that let the caller continue
//! (`next_offset_chars`, `limited_by`); the one-line continuation notice after the window's
//! text; and the refusal message for an offset past the end.

use serde::Serialize;

use crate::envelope::OUTPUT_BUDGET_BYTES;

/// A resolved window over a text of `total` code points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The first code point delivered.
    pub start: usize,
    /// The text's length in code points.
    pub total: usize,
    /// The most the request allows from `start` (the limit, or what is left).
    pub range: usize,
}

/// An offset past the end of the text (an offset equal to the length is a legal empty read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PastEnd {
    pub offset_chars: i64,
    pub total: usize,
}

/// Why a window stopped before the end of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LimitedBy {
    /// The request's `limit_chars`.
    Limit,
    /// The output budget.
    Bytes,
}

/// What a window of `delivered` code points leaves to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// Where the next read starts, `None` when the window reached the end.
    pub next: Option<usize>,
    pub limited_by: Option<LimitedBy>,
}

impl Window {
    /// Resolve `offset_chars` (negative counts from the end and is clamped to the start) and
    /// `limit_chars` over a text of `total` code points.
    pub fn resolve(offset_chars: i64, limit_chars: usize, total: usize) -> Result<Window, PastEnd> {
        if offset_chars > 0 && offset_chars as u64 > total as u64 {
            return Err(PastEnd {
                offset_chars,
                total,
            });
        }
        let start = if offset_chars >= 0 {
            offset_chars as usize
        } else {
            total.saturating_sub(offset_chars.unsigned_abs() as usize)
        };
        Ok(Window {
            start,
            total,
            range: limit_chars.min(total - start),
        })
    }

    /// The continuation facts when `delivered` code points (at most `range`) are shown.
    pub fn cut(&self, delivered: usize) -> Cut {
        let next = self.start + delivered;
        if next >= self.total {
            return Cut {
                next: None,
                limited_by: None,
            };
        }
        Cut {
            next: Some(next),
            limited_by: Some(if delivered == self.range {
                LimitedBy::Limit
            } else {
                LimitedBy::Bytes
            }),
        }
    }
}

/// The notice after a window's text (with its blank line), empty when the window reached the
/// end: how much is left and the `offset_chars` that continues.
pub fn continuation(
    offset: usize,
    total: usize,
    next: Option<usize>,
    limited_by: Option<LimitedBy>,
) -> String {
    match (limited_by, next) {
        (Some(LimitedBy::Limit), Some(next)) => format!(
            "\n\n[{} more characters. Use offset_chars={next} to continue.]",
            total - next
        ),
        (Some(LimitedBy::Bytes), Some(next)) => format!(
            "\n\n[Showing chars [{offset}, {next}) of {total} ({}KB limit). Use offset_chars={next} to continue.]",
            OUTPUT_BUDGET_BYTES / 1024
        ),
        _ => String::new(),
    }
}

/// What a window reads, as the past-the-end refusal names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// A note's body (`notes-read`).
    NoteBody,
    /// A history item's document (`history-read`).
    HistoryItem,
}

impl PastEnd {
    /// The refusal message: the offset, the length, and the largest legal offset.
    pub fn message(&self, reading: Reading) -> String {
        let PastEnd {
            offset_chars,
            total,
        } = self;
        let (end, has) = match reading {
            Reading::NoteBody => (" of the body", format!("the note has {total} body chars")),
            Reading::HistoryItem => ("", format!("the item has {total} chars")),
        };
        format!(
            "offset_chars {offset_chars} is past the end{end}: {has}; the largest legal offset is {total} (an empty end-read)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_resolve_from_either_end() {
        assert_eq!(
            Window::resolve(2, 10, 5),
            Ok(Window {
                start: 2,
                total: 5,
                range: 3
            })
        );
        assert_eq!(
            Window::resolve(-3, 1, 5).map(|w| (w.start, w.range)),
            Ok((2, 1))
        );
        assert_eq!(Window::resolve(-9, 9, 5).map(|w| w.start), Ok(0));
        assert_eq!(Window::resolve(5, 9, 5).map(|w| w.range), Ok(0));
        let past = Window::resolve(6, 9, 5).unwrap_err();
        assert_eq!(
            past.message(Reading::HistoryItem),
            "offset_chars 6 is past the end: the item has 5 chars; the largest legal offset is 5 (an empty end-read)"
        );
        assert!(
            past.message(Reading::NoteBody).starts_with(
                "offset_chars 6 is past the end of the body: the note has 5 body chars;"
            )
        );
    }

    #[test]
    fn cuts_say_what_stopped_them_and_the_notice_follows() {
        let w = Window::resolve(10, 5, 100).unwrap();
        let limit = w.cut(5);
        assert_eq!(limit.next, Some(15));
        assert_eq!(limit.limited_by, Some(LimitedBy::Limit));
        assert_eq!(
            continuation(10, 100, limit.next, limit.limited_by),
            "\n\n[85 more characters. Use offset_chars=15 to continue.]"
        );
        let bytes = w.cut(3);
        assert_eq!(bytes.limited_by, Some(LimitedBy::Bytes));
        assert_eq!(
            continuation(10, 100, bytes.next, bytes.limited_by),
            "\n\n[Showing chars [10, 13) of 100 (32KB limit). Use offset_chars=13 to continue.]"
        );
        let end = Window::resolve(-2, 5, 100).unwrap().cut(2);
        assert_eq!(end.next, None);
        assert_eq!(continuation(98, 100, end.next, end.limited_by), "");
    }
}
