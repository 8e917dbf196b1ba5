//! The merge of one file, note by note: never a whole-tree "ours/theirs".
//!
//! Input: the three versions of one path (merge base, ours = this machine, theirs = the
//! remote), each possibly absent. A note (a `.md` file whose three versions all have a
//! frontmatter block and no `\r`) is merged field by field and its body by lines, three-way
//! against the base (`diffy`'s diff3). Anything else is merged as plain text by lines, and
//! bytes that are not UTF-8 only when one side left them alone. When a merge cannot decide,
//! the result is a [`Merged::Conflict`]: the caller keeps *ours* live, byte for byte (never
//! conflict markers), and writes *theirs* beside it as a conflict note. Nothing here touches
//! the disk or Git.
//!
//! Field rules (documented in `docs/protocol.md`, "sync"):
//! - `createdAt`: the earlier; `updatedAt`, `lastAccessed`: the later (as instants; the
//!   chosen side's text is kept, offset included).
//! - `accessCount`, `recurrenceCount`: both sides' increments over the base are kept
//!   (`base + Δours + Δtheirs`); a side that went below the base (a reset) gives `max`.
//! - `crumpledAt`: a crumple on one side and an edit on the other (body, `updatedAt`, `origin`
//!   or any other non-volatile key changed) leaves the note live; a crumple facing no edit
//!   stays; two different crumple times give the later; a smooth (removal) beats a re-crumple.
//! - `origin`: three-way; when both sides changed it differently, the side with the later
//!   `updatedAt` (ours on a tie).
//! - `recurrenceWindows`: three-way; when both changed it and both are lists, their union
//!   (ours' order, then theirs' new items).
//! - every other key, unknown ones included: three-way per key (a key added on one side is
//!   kept, a key removed on one side and untouched on the other is removed); both sides
//!   changing it differently is a conflict of the whole note.
//!
//! Files: one side changed → that side; both changed alike → it; deleted on one side and
//! edited on the other → the edit (a note whose only change was volatile — access bookkeeping
//! or a crumple — counts as unedited, so the delete wins); deleted on both → deleted.

use serde_json::{Map, Value};

use crate::notes::frontmatter;
use crate::notes::note::parse_stamp;

/// Why a file could not be merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConflictReason {
    /// Both sides changed the same lines of the body (or of a file without frontmatter).
    Body,
    /// Both sides changed one metadata key to different values.
    Field,
    /// Both sides created the file with different contents.
    BothAdded,
    /// Both sides changed a file that is not UTF-8 text.
    Binary,
}

impl ConflictReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ConflictReason::Body => "body",
            ConflictReason::Field => "field",
            ConflictReason::BothAdded => "both_added",
            ConflictReason::Binary => "binary",
        }
    }
}

/// How a clean result came about (for the counts of a sync).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Both sides agree, or only one side changed: no merging was needed.
    Taken,
    /// Both sides changed the file and their changes were combined.
    Combined,
    /// One side deleted, the other edited: the edit was kept.
    KeptEdit,
}

/// The result of merging one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// The content to keep (`None`: the file is deleted).
    Clean { content: Option<Vec<u8>>, how: How },
    /// No automatic answer: `ours` stays live, `theirs` is kept beside it.
    Conflict {
        ours: Vec<u8>,
        theirs: Vec<u8>,
        reason: ConflictReason,
        /// The metadata key, for a [`ConflictReason::Field`] conflict.
        key: Option<String>,
    },
}

/// Keys that change on every read or crumple: they never make a note "edited".
const VOLATILE_KEYS: [&str; 3] = ["lastAccessed", "accessCount", "crumpledAt"];

/// Merge the three versions of one file. `note` says whether the path is a note (`.md`).
pub fn merge_file(
    note: bool,
    base: Option<&[u8]>,
    ours: Option<&[u8]>,
    theirs: Option<&[u8]>,
) -> Merged {
    let clean = |content: Option<&[u8]>, how| Merged::Clean {
        content: content.map(<[u8]>::to_vec),
        how,
    };
    if ours == theirs {
        return clean(ours, How::Taken);
    }
    if ours == base {
        return clean(theirs, How::Taken);
    }
    if theirs == base {
        return clean(ours, How::Taken);
    }
    match (base, ours, theirs) {
        (Some(b), None, Some(t)) => {
            if note && only_volatile_change(b, t) {
                clean(None, How::Taken)
            } else {
                clean(Some(t), How::KeptEdit)
            }
        }
        (Some(b), Some(o), None) => {
            if note && only_volatile_change(b, o) {
                clean(None, How::Taken)
            } else {
                clean(Some(o), How::KeptEdit)
            }
        }
        (_, Some(o), Some(t)) => both_changed(note, base, o, t),
        // `ours == theirs` covered both absent; one absent side with no base means the other
        // side added it, and `ours == base` / `theirs == base` took that.
        _ => unreachable!("every absent-side case is decided above"),
    }
}

fn both_changed(note: bool, base: Option<&[u8]>, ours: &[u8], theirs: &[u8]) -> Merged {
    let conflict = |reason, key: Option<String>| Merged::Conflict {
        ours: ours.to_vec(),
        theirs: theirs.to_vec(),
        reason,
        key,
    };
    let text = |bytes: &[u8]| std::str::from_utf8(bytes).ok().map(str::to_owned);
    let (Some(o), Some(t)) = (text(ours), text(theirs)) else {
        return conflict(ConflictReason::Binary, None);
    };
    let b = match base {
        Some(bytes) => match text(bytes) {
            Some(b) => Some(b),
            None => return conflict(ConflictReason::Binary, None),
        },
        None => None,
    };
    let body_conflict = if base.is_some() {
        ConflictReason::Body
    } else {
        ConflictReason::BothAdded
    };
    if note && let Some(result) = merge_note(b.as_deref(), &o, &t) {
        return match result {
            Ok(text) => Merged::Clean {
                content: Some(text.into_bytes()),
                how: How::Combined,
            },
            Err(NoteConflict::Body) => conflict(body_conflict, None),
            Err(NoteConflict::Field(key)) => conflict(ConflictReason::Field, Some(key)),
        };
    }
    match merge_lines(b.as_deref().unwrap_or(""), &o, &t) {
        Some(text) => Merged::Clean {
            content: Some(text.into_bytes()),
            how: How::Combined,
        },
        None => conflict(body_conflict, None),
    }
}

/// Three-way line merge; `None` on overlapping changes.
fn merge_lines(base: &str, ours: &str, theirs: &str) -> Option<String> {
    if ours == theirs || theirs == base {
        return Some(ours.to_string());
    }
    if ours == base {
        return Some(theirs.to_string());
    }
    diffy::merge(base, ours, theirs).ok()
}

enum NoteConflict {
    Body,
    Field(String),
}

/// A note parsed for merging; `None` when it does not qualify (no block, or `\r` in it,
/// which the parser would normalise and so change bytes the user wrote).
fn parse_for_merge(text: &str) -> Option<(Map<String, Value>, &str)> {
    if text.contains('\r') {
        return None;
    }
    let parsed = frontmatter::parse(text);
    if !parsed.has_frontmatter {
        return None;
    }
    let body = match parsed.body {
        std::borrow::Cow::Borrowed(b) => b,
        std::borrow::Cow::Owned(_) => return None,
    };
    Some((parsed.fields, body))
}

/// `None`: not mergeable as a note (merge as text instead).
fn merge_note(
    base: Option<&str>,
    ours: &str,
    theirs: &str,
) -> Option<Result<String, NoteConflict>> {
    let (of, ob) = parse_for_merge(ours)?;
    let (tf, tb) = parse_for_merge(theirs)?;
    let parsed_base = match base {
        Some(b) => Some(parse_for_merge(b)?),
        None => None,
    };
    let empty = Map::new();
    let (bf, bb) = match &parsed_base {
        Some((f, b)) => (f, *b),
        None => (&empty, ""),
    };
    let has_base = parsed_base.is_some();
    let Some(body) = merge_lines(bb, ob, tb) else {
        return Some(Err(NoteConflict::Body));
    };
    let ours_edited = !has_base || edited(bf, bb, &of, ob);
    let theirs_edited = !has_base || edited(bf, bb, &tf, tb);
    let fields = match merge_fields(has_base, bf, &of, &tf, ours_edited, theirs_edited) {
        Ok(fields) => fields,
        Err(key) => return Some(Err(NoteConflict::Field(key))),
    };
    // Keep a side's exact bytes when the merge equals it (no reformatting churn).
    if fields == of && body == ob {
        return Some(Ok(ours.to_string()));
    }
    if fields == tf && body == tb {
        return Some(Ok(theirs.to_string()));
    }
    Some(Ok(frontmatter::serialize(&fields, &body)))
}

/// Whether a side changed the note beyond volatile bookkeeping.
fn edited(
    base_fields: &Map<String, Value>,
    base_body: &str,
    fields: &Map<String, Value>,
    body: &str,
) -> bool {
    if body != base_body {
        return true;
    }
    let differs = |key: &String| {
        !VOLATILE_KEYS.contains(&key.as_str()) && base_fields.get(key) != fields.get(key)
    };
    base_fields.keys().any(differs) || fields.keys().any(differs)
}

/// Whether `side` differs from `base` only in volatile keys (never by being smoothed).
fn only_volatile_change(base: &[u8], side: &[u8]) -> bool {
    let (Ok(b), Ok(s)) = (std::str::from_utf8(base), std::str::from_utf8(side)) else {
        return false;
    };
    let (Some((bf, bb)), Some((sf, sb))) = (parse_for_merge(b), parse_for_merge(s)) else {
        return false;
    };
    let smoothed = bf.contains_key("crumpledAt") && !sf.contains_key("crumpledAt");
    !smoothed && !edited(&bf, bb, &sf, sb)
}

/// Merge the metadata maps; `Err(key)` names a key both sides changed differently.
fn merge_fields(
    has_base: bool,
    base: &Map<String, Value>,
    ours: &Map<String, Value>,
    theirs: &Map<String, Value>,
    ours_edited: bool,
    theirs_edited: bool,
) -> Result<Map<String, Value>, String> {
    let mut keys: Vec<&String> = ours.keys().collect();
    keys.extend(theirs.keys().filter(|k| !ours.contains_key(*k)));
    let mut out = Map::new();
    for key in keys {
        let (b, o, t) = (base.get(key), ours.get(key), theirs.get(key));
        let value = match key.as_str() {
            "crumpledAt" => merge_crumpled(b, o, t, ours_edited, theirs_edited),
            "createdAt" => merge_stamp(b, o, t, Pick::Earlier),
            "updatedAt" | "lastAccessed" => merge_stamp(b, o, t, Pick::Later),
            "accessCount" | "recurrenceCount" => merge_counter(has_base, b, o, t),
            "origin" => three_way(b, o, t).unwrap_or_else(|| {
                if later(theirs.get("updatedAt"), ours.get("updatedAt")) {
                    t.cloned()
                } else {
                    o.cloned()
                }
            }),
            "recurrenceWindows" => match three_way(b, o, t) {
                Some(v) => v,
                None => match (o, t) {
                    (Some(Value::Array(oa)), Some(Value::Array(ta))) => {
                        let mut union = oa.clone();
                        union.extend(ta.iter().filter(|v| !oa.contains(v)).cloned());
                        Some(Value::Array(union))
                    }
                    _ => return Err(key.clone()),
                },
            },
            _ => match three_way(b, o, t) {
                Some(v) => v,
                None => return Err(key.clone()),
            },
        };
        if let Some(value) = value {
            out.insert(key.clone(), value);
        }
    }
    Ok(out)
}

/// Plain three-way for one value: `None` when both sides changed it differently.
fn three_way(b: Option<&Value>, o: Option<&Value>, t: Option<&Value>) -> Option<Option<Value>> {
    if o == t || t == b {
        Some(o.cloned())
    } else if o == b {
        Some(t.cloned())
    } else {
        None
    }
}

#[derive(Clone, Copy)]
enum Pick {
    Earlier,
    Later,
}

fn instant(v: Option<&Value>) -> Option<i64> {
    v.and_then(parse_stamp).map(|t| t.timestamp_millis())
}

/// Whether `a` is strictly later than `b` (unreadable stamps are never later).
fn later(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (instant(a), instant(b)) {
        (Some(a), Some(b)) => a > b,
        (Some(_), None) => true,
        _ => false,
    }
}

fn merge_stamp(
    b: Option<&Value>,
    o: Option<&Value>,
    t: Option<&Value>,
    pick: Pick,
) -> Option<Value> {
    if let (Some(oi), Some(ti)) = (instant(o), instant(t)) {
        let take_theirs = match pick {
            Pick::Earlier => ti < oi,
            Pick::Later => ti > oi,
        };
        return if take_theirs { t.cloned() } else { o.cloned() };
    }
    // A stamp removed or unreadable on one side: plain three-way, else keep what exists.
    three_way(b, o, t).unwrap_or_else(|| o.or(t).cloned())
}

fn merge_counter(
    has_base: bool,
    b: Option<&Value>,
    o: Option<&Value>,
    t: Option<&Value>,
) -> Option<Value> {
    let num = |v: Option<&Value>| v.and_then(Value::as_f64).filter(|n| n.is_finite());
    let (Some(on), Some(tn)) = (num(o), num(t)) else {
        return three_way(b, o, t).unwrap_or_else(|| o.or(t).cloned());
    };
    let bn = num(b).unwrap_or(0.0);
    let merged = if has_base && on >= bn && tn >= bn {
        bn + (on - bn) + (tn - bn)
    } else {
        on.max(tn)
    };
    Some(number(merged))
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::from(0), Value::Number)
    }
}

fn merge_crumpled(
    b: Option<&Value>,
    o: Option<&Value>,
    t: Option<&Value>,
    ours_edited: bool,
    theirs_edited: bool,
) -> Option<Value> {
    if o == t {
        return o.cloned();
    }
    if o == b {
        // Only theirs changed the crumple state.
        return if t.is_some() && ours_edited {
            None
        } else {
            t.cloned()
        };
    }
    if t == b {
        return if o.is_some() && theirs_edited {
            None
        } else {
            o.cloned()
        };
    }
    match (o, t) {
        (Some(_), Some(_)) => {
            if later(t, o) {
                t.cloned()
            } else {
                o.cloned()
            }
        }
        // A smooth on one side beats a re-crumple on the other.
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(fields: &str, body: &str) -> Vec<u8> {
        format!("---\n{fields}\n---\n\n{body}").into_bytes()
    }

    fn clean(m: Merged) -> String {
        match m {
            Merged::Clean {
                content: Some(c), ..
            } => String::from_utf8(c).unwrap(),
            other => panic!("expected a clean merge, got {other:?}"),
        }
    }

    const B: &str = "origin: self\ncreatedAt: 2026-01-01T00:00:00.000+00:00\nupdatedAt: 2026-01-01T00:00:00.000+00:00\nlastAccessed: 2026-01-01T00:00:00.000+00:00\naccessCount: 3";

    #[test]
    fn different_lines_of_one_body_merge() {
        let base = note(B, "one\ntwo\nthree\nfour\nfive\n");
        let ours = note(B, "ONE\ntwo\nthree\nfour\nfive\n");
        let theirs = note(B, "one\ntwo\nthree\nfour\nFIVE\n");
        let merged = clean(merge_file(true, Some(&base), Some(&ours), Some(&theirs)));
        assert!(
            merged.ends_with("\n\nONE\ntwo\nthree\nfour\nFIVE\n"),
            "{merged}"
        );
    }

    #[test]
    fn same_line_is_a_conflict_keeping_both_sides_verbatim() {
        let base = note(B, "one\n");
        let ours = note(B, "mine\n");
        let theirs = note(B, "yours\n");
        match merge_file(true, Some(&base), Some(&ours), Some(&theirs)) {
            Merged::Conflict {
                ours: o,
                theirs: t,
                reason,
                ..
            } => {
                assert_eq!((o, t), (ours, theirs));
                assert_eq!(reason, ConflictReason::Body);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn access_bookkeeping_merges_by_later_time_and_summed_increments() {
        let base = note(B, "x\n");
        let ours = note(
            &B.replace("accessCount: 3", "accessCount: 5")
                .replace("lastAccessed: 2026-01-01T00", "lastAccessed: 2026-01-03T00"),
            "x\n",
        );
        let theirs = note(
            &B.replace("accessCount: 3", "accessCount: 4")
                .replace("lastAccessed: 2026-01-01T00", "lastAccessed: 2026-01-05T00"),
            "x\n",
        );
        let merged = clean(merge_file(true, Some(&base), Some(&ours), Some(&theirs)));
        assert!(merged.contains("accessCount: 6\n"), "{merged}");
        assert!(
            merged.contains("lastAccessed: 2026-01-05T00:00:00.000+00:00"),
            "{merged}"
        );
    }

    #[test]
    fn a_crumple_facing_an_edit_leaves_the_note_live_and_alone_it_stays() {
        let base = note(B, "x\n");
        let crumpled = note(
            &format!("{B}\ncrumpledAt: 2026-01-02T00:00:00.000+00:00"),
            "x\n",
        );
        let edited = note(B, "x\ny\n");
        let merged = clean(merge_file(
            true,
            Some(&base),
            Some(&crumpled),
            Some(&edited),
        ));
        assert!(!merged.contains("crumpledAt"), "{merged}");
        assert!(merged.ends_with("x\ny\n"));
        let read_only = note(&B.replace("accessCount: 3", "accessCount: 4"), "x\n");
        let merged = clean(merge_file(
            true,
            Some(&base),
            Some(&read_only),
            Some(&crumpled),
        ));
        assert!(merged.contains("crumpledAt"), "{merged}");
        assert!(merged.contains("accessCount: 4"), "{merged}");
    }

    #[test]
    fn unknown_keys_from_both_sides_are_kept_and_a_real_clash_is_a_conflict() {
        let base = note(B, "x\n");
        let ours = note(&format!("{B}\nmine: 1"), "x\n");
        let theirs = note(&format!("{B}\ntheirs: 2"), "x\n");
        let merged = clean(merge_file(true, Some(&base), Some(&ours), Some(&theirs)));
        assert!(merged.contains("mine: 1\ntheirs: 2"), "{merged}");
        let ours = note(&format!("{B}\nk: a"), "x\n");
        let theirs = note(&format!("{B}\nk: b"), "x\n");
        assert!(matches!(
            merge_file(true, Some(&base), Some(&ours), Some(&theirs)),
            Merged::Conflict { reason: ConflictReason::Field, key: Some(k), .. } if k == "k"
        ));
    }

    #[test]
    fn delete_against_edit_keeps_the_edit_but_not_against_a_read() {
        let base = note(B, "x\n");
        let edited = note(B, "x\nmore\n");
        assert_eq!(
            merge_file(true, Some(&base), None, Some(&edited)),
            Merged::Clean {
                content: Some(edited.clone()),
                how: How::KeptEdit
            }
        );
        let read = note(&B.replace("accessCount: 3", "accessCount: 9"), "x\n");
        assert_eq!(
            merge_file(true, Some(&base), Some(&read), None),
            Merged::Clean {
                content: None,
                how: How::Taken
            }
        );
        assert_eq!(
            merge_file(true, Some(&base), None, None),
            Merged::Clean {
                content: None,
                how: How::Taken
            }
        );
    }

    #[test]
    fn both_added_differently_is_a_conflict_and_alike_is_one_note() {
        let a = note(B, "a\n");
        let b = note(B, "b\n");
        assert!(matches!(
            merge_file(true, None, Some(&a), Some(&b)),
            Merged::Conflict {
                reason: ConflictReason::BothAdded,
                ..
            }
        ));
        assert_eq!(
            clean(merge_file(true, None, Some(&a), Some(&a))).as_bytes(),
            a
        );
    }

    #[test]
    fn created_is_the_earlier_and_origin_follows_the_later_update() {
        let base = note(B, "x\n");
        let ours = note(
            &B.replace("origin: self", "origin: user")
                .replace("updatedAt: 2026-01-01T00", "updatedAt: 2026-01-02T00"),
            "x\n",
        );
        let theirs = note(
            &B.replace("origin: self", "origin: external")
                .replace("updatedAt: 2026-01-01T00", "updatedAt: 2026-01-04T00")
                .replace("createdAt: 2026-01-01T00", "createdAt: 2025-06-01T00"),
            "x\n",
        );
        let merged = clean(merge_file(true, Some(&base), Some(&ours), Some(&theirs)));
        assert!(merged.contains("origin: external"), "{merged}");
        assert!(merged.contains("createdAt: 2025-06-01"), "{merged}");
        assert!(merged.contains("updatedAt: 2026-01-04"), "{merged}");
    }

    #[test]
    fn binary_both_changed_is_a_conflict() {
        let base = b"\xff\x00a".to_vec();
        assert!(matches!(
            merge_file(false, Some(&base), Some(b"\xff1"), Some(b"\xff2")),
            Merged::Conflict {
                reason: ConflictReason::Binary,
                ..
            }
        ));
    }
}
