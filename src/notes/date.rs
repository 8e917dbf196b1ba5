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
pub fn parse_date(value: &str) -> Option<DateTime<FixedOffset>> {
    let value = value.trim();
    stamp_as_written(value).or_else(|| by_grammar(value))
}

/// The form pi-context writes (`YYYY-MM-DDTHH:MM:SS.mmm±HH:MM`, see `note::format_stamp`), read
/// field by field without the grammar's regex: every separator at its place, every field ASCII
/// digits, each range-checked as the grammar checks it (a real calendar day, hour ≤ 23, minute,
/// second and zone minute ≤ 59, zone hour ≤ 23), so whatever it accepts the grammar reads as
/// the same instant and offset; anything else (a leap second `:60` included) is left to the
/// grammar. A listing reads three stamps per note several times over, so this is hot.
fn stamp_as_written(value: &str) -> Option<DateTime<FixedOffset>> {
    let b = value.as_bytes();
    if b.len() != "2026-01-01T00:00:00.000+00:00".len() {
        return None;
    }
    for (at, sep) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (26, b':'),
    ] {
        if b[at] != sep {
            return None;
        }
    }
    let sign = match b[23] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let field = |at: usize, len: usize| -> Option<u32> {
        b[at..at + len].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let (hour, minute, second) = (field(11, 2)?, field(14, 2)?, field(17, 2)?);
    let (zone_hour, zone_minute) = (field(24, 2)?, field(27, 2)?);
    if hour > 23 || minute > 59 || second > 59 || zone_hour > 23 || zone_minute > 59 {
        return None;
    }
    let year = i32::try_from(field(0, 4)?).ok()?;
    let date = NaiveDate::from_ymd_opt(year, field(5, 2)?, field(8, 2)?)?;
    let time = NaiveTime::from_hms_milli_opt(hour, minute, second, field(20, 3)?)?;
    let offset = FixedOffset::east_opt(sign * (zone_hour * 3600 + zone_minute * 60) as i32)?;
    date.and_time(time).and_local_timezone(offset).single()
}

#[allow(
    clippy::expect_used,
    reason = "the date grammar is a valid regex because it is a constant"
)]
fn by_grammar(value: &str) -> Option<DateTime<FixedOffset>> {
    static GRAMMAR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?([Zz]|([+-])([0-9]{2})(?::?([0-9]{2}))?)?)?$",
        )
        .expect("the date grammar is a valid regex because it is a constant")
    });
    let caps = GRAMMAR.captures(value)?;
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

    /// The shortcut for written stamps answers as the grammar: for every instant and offset
    /// written the way pi-context writes them, and for near misses of that form.
    #[test]
    fn written_stamps_read_as_the_grammar_reads_them() {
        use chrono::{SecondsFormat, TimeZone};
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut taken = 0;
        for _ in 0..20_000 {
            let millis = (next() % 400_000_000_000_000) as i64 - 62_000_000_000_000;
            let offset = (next() % (2 * 86_399)) as i32 - 86_399;
            let offset = FixedOffset::east_opt(offset - offset % 60).unwrap();
            let Some(t) = offset.timestamp_millis_opt(millis).single() else {
                continue;
            };
            let text = t.to_rfc3339_opts(SecondsFormat::Millis, false);
            let by_shortcut = stamp_as_written(&text);
            taken += usize::from(by_shortcut.is_some());
            if let Some(t2) = by_shortcut {
                assert_eq!((t2, t2.offset()), (t, t.offset()), "{text}");
            }
            assert_eq!(parse_date(&text), by_grammar(&text), "{text}");
            // Near misses: every single byte changed to each character the form uses.
            let i = (next() % text.len() as u64) as usize;
            for c in "0123456789T:-+.Zz 6".chars() {
                let mut bytes = text.clone().into_bytes();
                bytes[i] = c as u8;
                let Ok(near) = String::from_utf8(bytes) else {
                    continue;
                };
                assert_eq!(parse_date(&near), by_grammar(&near), "{near}");
            }
        }
        assert!(taken > 5_000, "the shortcut was taken {taken} times");
        for text in [
            "2026-12-31T23:59:60.000+00:00",
            "2026-01-01T00:00:00.000-00:00",
            "2026-01-01t00:00:00.000+00:00",
            "2026-01-01 00:00:00.000+00:00",
            "2026-02-29T00:00:00.000+00:00",
            "2026-01-01T00:00:00.000+24:00",
        ] {
            assert_eq!(parse_date(text), by_grammar(text), "{text}");
        }
    }

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
