//! The one date grammar of note metadata (`createdAt`, `updatedAt`, `lastAccessed`,
//! `crumpledAt`): what the store reads as a date and what `doctor` accepts, so the two can
//! never disagree. A documented subset of JavaScript's `Date.parse`, which the original store
//! used:
//!
//! `YYYY-MM-DD`, optionally followed by `T` (or `t`, or one space) and `HH:MM`, optional `:SS`,
//! optional `.` plus 1–9 fraction digits, and an optional zone `Z`, `z`, `±HH:MM`, `±HHMM` or
//! `±HH`. Every field must be in range (a real calendar day, hour ≤ 23, minute and second ≤ 59,
//! zone hour ≤ 23). A date alone is midnight UTC (as in JavaScript); a date-time without a zone
//! is read as UTC (JavaScript would take the machine's zone, which a pure library cannot know).
//! Words, numbers (epoch milliseconds included) and partial dates (`2026`, `2026-09`) are not
//! dates.

use std::sync::LazyLock;

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime};
use regex::Regex;

/// Parse one metadata value as a date (surrounding whitespace ignored). Digits are ASCII
/// `0-9` (a Unicode `\d` compiles to a regex some hundred times larger, built on every
/// command that reads a date, and accepted non-ASCII digits the fields then rejected).
///
/// ```
/// use pi_context::notes::date::parse_date;
/// let day = parse_date("2026-01-01").unwrap();
/// assert_eq!(day.to_rfc3339(), "2026-01-01T00:00:00+00:00");
/// let t = parse_date("2026-09-15T17:31:45.392+08:00").unwrap();
/// assert_eq!(t.timestamp_millis(), 1_789_464_705_392);
/// assert!(parse_date("1600000000000").is_none());
/// assert!(parse_date("yesterday").is_none());
/// ```
#[allow(
    clippy::expect_used,
    reason = "the date grammar is a valid regex because it is a constant"
)]
pub fn parse_date(value: &str) -> Option<DateTime<FixedOffset>> {
    static GRAMMAR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?([Zz]|([+-])([0-9]{2})(?::?([0-9]{2}))?)?)?$",
        )
        .expect("the date grammar is a valid regex because it is a constant")
    });
    let caps = GRAMMAR.captures(value.trim())?;
    let num =
        |i: usize| -> Option<u32> { caps.get(i).map(|m| m.as_str().parse().unwrap_or(u32::MAX)) };
    let year = i32::try_from(num(1)?).ok()?;
    let date = NaiveDate::from_ymd_opt(year, num(2)?, num(3)?)?;
    let (hour, minute, second) = (
        num(4).unwrap_or(0),
        num(5).unwrap_or(0),
        num(6).unwrap_or(0),
    );
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let nanos = caps.get(7).map_or(0, |m| {
        let digits = m.as_str();
        digits.parse::<u32>().unwrap_or(0) * 10u32.pow(9 - digits.len() as u32)
    });
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?;
    let offset_seconds = match caps.get(9) {
        None => 0,
        Some(sign) => {
            let (zh, zm) = (num(10)?, num(11).unwrap_or(0));
            if zh > 23 || zm > 59 {
                return None;
            }
            let magnitude = (zh * 3600 + zm * 60) as i32;
            if sign.as_str() == "-" {
                -magnitude
            } else {
                magnitude
            }
        }
    };
    let offset = FixedOffset::east_opt(offset_seconds)?;
    date.and_time(time).and_local_timezone(offset).single()
}

/// Whether `value` is a date in the grammar.
pub fn is_date(value: &str) -> bool {
    parse_date(value).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar() {
        for ok in [
            "2026-09-15T17:31:45.392+08:00",
            "2026-09-15T17:31:45Z",
            "2026-09-15T17:31:45.123456789z",
            "2026-09-15T17:31",
            "2026-09-15 17:31:45",
            "2026-09-15T17:31:45+0800",
            "2026-09-15T17:31:45-05",
            "2026-09-15",
            "2024-02-29",
            " 2026-09-15 ",
        ] {
            assert!(is_date(ok), "{ok}");
        }
        for bad in [
            "yesterday",
            "",
            "17",
            "1600000000000",
            "2026",
            "2026-09",
            "2026-13-01",
            "2025-02-29",
            "2026-09-15T24:00",
            "2026-09-15T17:60",
            "2026-09-15T17:31:45+24:00",
            "2026-09-15T17:31:45+08:60",
            "2026-09-15Z",
            "2026-09-15T17",
            "2026-09-15T17:31:45.",
            "2026-09-15T17:31:45 +08:00",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }

    #[test]
    fn values_keep_their_instant_and_offset() {
        let t = parse_date("2026-09-15T17:31:45.5-05:30").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-09-15T17:31:45.500-05:30");
        let t = parse_date("2026-09-15 17:31").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-09-15T17:31:00+00:00");
        let t = parse_date("2026-09-15T17:31:45.000000001Z").unwrap();
        assert_eq!(t.timestamp_subsec_nanos(), 1);
    }
}
