//! The one result envelope every subcommand answers with, its bounds, and the one output
//! budget. Shared by all domains so that "fits" means the same thing everywhere.
//!
//! Wire form: `{"ok":true,"data":…}` or `{"ok":false,"error":{"code","message","details"?}}`.
//! A result fits when both its compact JSON envelope and its rendered text are at most
//! [`OUTPUT_BUDGET_BYTES`]; every selection (rows, windows, characters) is tested against
//! [`fits`] so the JSON and the text always describe the same selection.

use serde::Serialize;
use serde_json::{Value, json};

/// Both the rendered text and the compact JSON envelope of a tool result stay within this.
pub const OUTPUT_BUDGET_BYTES: usize = 32 * 1024;
/// A refusal message longer than this (in code points) is clipped.
pub const ERROR_MESSAGE_MAX_CHARS: usize = 2000;
/// Refusal details whose compact JSON exceeds this many bytes are replaced wholesale.
pub const ERROR_DETAILS_MAX_BYTES: usize = 4096;

/// One refusal: a stable machine code, a human message, optional structured details.
/// Construct it with [`Refusal::new`] so the bounds are always applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl Refusal {
    /// A refusal with bounded message and details (message clipped to 2,000 code points with a
    /// `…[truncated <k> chars]` suffix; details over 4,096 bytes replaced by a size marker).
    pub fn new(
        code: impl Into<String>,
        message: impl Into<String>,
        details: Option<Value>,
    ) -> Self {
        let message = clip_message(message.into());
        let details = details.map(|d| {
            let bytes = serde_json::to_string(&d)
                .map(|s| s.len())
                .unwrap_or(usize::MAX);
            if bytes > ERROR_DETAILS_MAX_BYTES {
                json!({"truncated": true, "details_bytes": bytes})
            } else {
                d
            }
        });
        Refusal {
            code: code.into(),
            message,
            details,
        }
    }

    pub fn plain(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, message, None)
    }

    /// `error: <code>: <message>` plus ` <details as compact JSON>` when present: the text
    /// form of every refusal, whatever the command. A message that opens by restating the code
    /// in words (`invalid request: …` under `invalid_request`) loses that opening here, so the
    /// text does not say it twice; the JSON message is left as it is.
    pub fn render_text(&self) -> String {
        let spoken = format!("{}: ", self.code.replace('_', " "));
        let message = match self.message.get(..spoken.len()) {
            Some(head) if head.eq_ignore_ascii_case(&spoken) => &self.message[spoken.len()..],
            _ => self.message.as_str(),
        };
        let mut text = format!("error: {}: {message}", self.code);
        if let Some(details) = &self.details {
            text.push(' ');
            text.push_str(&serde_json::to_string(details).unwrap_or_default());
        }
        text
    }

    /// The envelope `{"ok":false,"error":{…}}`.
    pub fn to_envelope(&self) -> Value {
        json!({"ok": false, "error": self})
    }
}

fn clip_message(message: String) -> String {
    let total = message.chars().count();
    if total <= ERROR_MESSAGE_MAX_CHARS {
        return message;
    }
    let kept: String = message.chars().take(ERROR_MESSAGE_MAX_CHARS).collect();
    format!(
        "{kept}…[truncated {} chars]",
        total - ERROR_MESSAGE_MAX_CHARS
    )
}

/// What kind of "no" a refusal is. Each domain's error type says it for each of its codes,
/// next to the code itself; the command layer turns a class into an exit code in one place
/// (`cli::error`, documented in `docs/protocol.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The request itself is malformed or breaks a bound of its schema (exit 2).
    Usage,
    /// A well-formed request that is refused (exit 1).
    Refused,
    /// We failed, not the caller: I/O or an internal fault (exit 70).
    Internal,
    /// Someone else holds what is needed (a lock, a remote that keeps moving) (exit 75).
    Busy,
    /// A remote that cannot be reached (exit 69).
    Unavailable,
}

/// A typed domain error: a stable code and class per variant, and the bounded refusal the
/// envelope carries. Its [`std::error::Error::source`] is the underlying cause, when any.
pub trait DomainError: std::error::Error + Send + Sync + 'static {
    /// The stable machine code (`not_found`, `io_error`, …).
    fn code(&self) -> &'static str;
    /// What kind of refusal the code is.
    fn class(&self) -> ErrorClass;
    /// The refusal as the envelope carries it (message and details).
    fn to_refusal(&self) -> Refusal {
        Refusal::plain(self.code(), self.to_string())
    }
}

/// The outcome of one operation, before printing: success data or a refusal, plus the
/// model-facing text rendered from that same value.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub outcome: Result<Value, Refusal>,
    pub text: String,
    /// See [`Reply::with_js_numbers`].
    js_numbers: bool,
}

impl Reply {
    /// A success whose text was rendered from `data` by the caller.
    #[allow(
        clippy::expect_used,
        reason = "result types serialise to JSON because they hold only JSON-safe data"
    )]
    pub fn ok(data: impl Serialize, text: String) -> Self {
        let data = serde_json::to_value(data)
            .expect("result types serialise to JSON because they hold only JSON-safe data");
        Reply {
            outcome: Ok(data),
            text,
            js_numbers: false,
        }
    }

    /// A refusal; its text is the uniform refusal rendering.
    pub fn refused(refusal: Refusal) -> Self {
        let text = refusal.render_text();
        Reply {
            outcome: Err(refusal),
            text,
            js_numbers: false,
        }
    }

    /// Print doubles in this reply's envelope as JavaScript's `JSON.stringify` does (`1` not
    /// `1.0`, `1e+21` not `1e21`): for results that carry values copied from a session, such
    /// as tool arguments, whose upstream form is JavaScript's.
    pub fn with_js_numbers(mut self) -> Self {
        self.js_numbers = true;
        self
    }

    /// The wire envelope as printed: compact JSON (doubles JavaScript-style when
    /// [`Reply::with_js_numbers`] was asked for).
    pub fn wire(&self) -> String {
        self.print(&self.envelope())
    }

    /// Print any envelope-shaped value the way this reply prints its envelope.
    pub fn print(&self, value: &Value) -> String {
        if self.js_numbers {
            to_js_wire(value)
        } else {
            value.to_string()
        }
    }

    /// The wire envelope.
    pub fn envelope(&self) -> Value {
        match &self.outcome {
            Ok(data) => json!({"ok": true, "data": data}),
            Err(refusal) => refusal.to_envelope(),
        }
    }
}

/// Compact JSON with doubles written as JavaScript's `JSON.stringify` writes them, so values
/// carried from a session (tool arguments) print as upstream prints them.
pub fn to_js_wire(value: &Value) -> String {
    // Writing a `Value` into memory cannot fail (its keys are strings).
    crate::history::jsjson::to_wire_string(value).unwrap_or_default()
}

/// `{"ok":true,"data":` + data + `}`.
const OK_WRAPPER: usize = r#"{"ok":true,"data":}"#.len();

/// Bytes of the compact JSON envelope `{"ok":true,"data":<data>}`.
pub fn ok_envelope_bytes(data: &impl Serialize) -> usize {
    // Computing it this way avoids building a Value.
    OK_WRAPPER
        + serde_json::to_vec(data)
            .map(|v| v.len())
            .unwrap_or(usize::MAX - OK_WRAPPER)
}

/// [`ok_envelope_bytes`] of a reply printed [`Reply::with_js_numbers`].
pub fn ok_envelope_bytes_js(data: &impl Serialize) -> usize {
    OK_WRAPPER
        + crate::history::jsjson::to_wire_string(data)
            .map(|v| v.len())
            .unwrap_or(usize::MAX - OK_WRAPPER)
}

/// [`fits`] for a reply printed [`Reply::with_js_numbers`].
pub fn fits_js(data: &impl Serialize, text: &str) -> bool {
    text.len() <= OUTPUT_BUDGET_BYTES && ok_envelope_bytes_js(data) <= OUTPUT_BUDGET_BYTES
}

/// The one budget predicate: a success result fits when its envelope and its text both stay
/// within [`OUTPUT_BUDGET_BYTES`].
pub fn fits(data: &impl Serialize, text: &str) -> bool {
    text.len() <= OUTPUT_BUDGET_BYTES && ok_envelope_bytes(data) <= OUTPUT_BUDGET_BYTES
}

/// The largest `n` in `0..=max` for which `ok(n)` holds, assuming `ok` is monotone
/// (true up to some point, false after). Used for "longest fitting prefix" searches.
pub fn largest_fitting(max: usize, mut ok: impl FnMut(usize) -> bool) -> Option<usize> {
    if ok(max) {
        return Some(max);
    }
    if !ok(0) {
        return None;
    }
    Some(bisect(0, max, ok))
}

/// The last `n` in `lo..hi` for which `ok(n)` holds, given that `ok(lo)` holds and `ok(hi)`
/// fails (`ok` monotone).
fn bisect(mut lo: usize, mut hi: usize, mut ok: impl FnMut(usize) -> bool) -> usize {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`largest_fitting`] starting from `guess` (an estimate of the answer): the boundary is
/// bracketed by steps doubling away from `guess`, then bisected. When `ok(n)` costs time in
/// proportion to `n` (rendering `n` rows), a close guess keeps every trial near the answer:
/// [`largest_fitting`] tries `max` first, which on a long list (thousands of windows of
/// which 256 fit) costs more than everything else a call does.
pub fn largest_fitting_from(
    max: usize,
    guess: usize,
    mut ok: impl FnMut(usize) -> bool,
) -> Option<usize> {
    let guess = guess.min(max);
    // `ok(lo)` holds and `ok(hi)` fails, once bracketed.
    let (mut lo, mut hi);
    let mut step = 1usize;
    if ok(guess) {
        lo = guess;
        loop {
            if lo == max {
                return Some(max);
            }
            let next = lo.saturating_add(step).min(max);
            if ok(next) {
                lo = next;
                step = step.saturating_mul(2);
            } else {
                hi = next;
                break;
            }
        }
    } else {
        hi = guess;
        loop {
            if hi == 0 {
                return None;
            }
            let next = hi.saturating_sub(step);
            if ok(next) {
                lo = next;
                break;
            }
            hi = next;
            step = step.saturating_mul(2);
        }
    }
    Some(bisect(lo, hi, ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_clipped_in_code_points() {
        let refusal = Refusal::plain("x", "é".repeat(2005));
        assert!(refusal.message.ends_with("…[truncated 5 chars]"));
        assert_eq!(refusal.message.chars().filter(|c| *c == 'é').count(), 2000);
    }

    #[test]
    fn oversized_details_are_replaced_wholesale() {
        let refusal = Refusal::new("x", "m", Some(json!({"blob": "a".repeat(5000)})));
        assert_eq!(refusal.details.unwrap()["truncated"], json!(true));
    }

    #[test]
    fn refusal_text_carries_details_as_compact_json() {
        let refusal = Refusal::new("unknown_seq", "no such seq", Some(json!({"seq": 7})));
        assert_eq!(
            refusal.render_text(),
            r#"error: unknown_seq: no such seq {"seq":7}"#
        );
    }

    #[test]
    fn refusal_text_does_not_restate_the_code() {
        let refusal = Refusal::plain("invalid_request", "invalid request: limit must be ≥ 1");
        assert_eq!(
            refusal.render_text(),
            "error: invalid_request: limit must be ≥ 1"
        );
        assert_eq!(refusal.message, "invalid request: limit must be ≥ 1");
        let other = Refusal::plain("invalid_request", "invalid requests are refused");
        assert_eq!(
            other.render_text(),
            "error: invalid_request: invalid requests are refused"
        );
        // A multi-byte message shorter than the code's words must not panic.
        assert_eq!(
            Refusal::plain("io_error", "é").render_text(),
            "error: io_error: é"
        );
    }

    #[test]
    fn envelope_bytes_match_serialised_envelope() {
        let data = json!({"a": [1, 2, "ü", 1.0, 1e21]});
        let whole = serde_json::to_vec(&json!({"ok": true, "data": data})).unwrap();
        assert_eq!(ok_envelope_bytes(&data), whole.len());
        let js = to_js_wire(&json!({"ok": true, "data": data}));
        assert_eq!(ok_envelope_bytes_js(&data), js.len());
        assert!(js.ends_with(r#"1,1e+21]}}"#));
    }

    #[test]
    fn largest_fitting_finds_the_boundary() {
        assert_eq!(largest_fitting(100, |n| n <= 37), Some(37));
        assert_eq!(largest_fitting(100, |_| true), Some(100));
        assert_eq!(largest_fitting(100, |_| false), None);
    }

    #[test]
    fn largest_fitting_from_a_guess_finds_the_boundary_trying_near_it() {
        for max in 0..40usize {
            // `answer` None: nothing fits.
            for answer in std::iter::once(None).chain((0..=max).map(Some)) {
                for guess in 0..max + 3 {
                    let mut tried = Vec::new();
                    let found = largest_fitting_from(max, guess, |n| {
                        tried.push(n);
                        answer.is_some_and(|a| n <= a)
                    });
                    assert_eq!(found, answer, "max {max} guess {guess}");
                    assert!(tried.iter().all(|&n| n <= max), "{tried:?}");
                    // Steps double away from the guess, so every trial lies within twice
                    // the distance from the guess to the boundary.
                    let boundary = answer.map_or(0, |a| a + 1).min(max);
                    let reach = 2 * boundary.abs_diff(guess.min(max)) + 1;
                    assert!(
                        tried.iter().all(|&n| n.abs_diff(guess.min(max)) <= reach),
                        "max {max} answer {answer:?} guess {guess}: {tried:?}"
                    );
                }
            }
        }
    }
}
