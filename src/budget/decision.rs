//! The stateless budget decision: thresholds from the resolved settings, the
//! `get_context_remaining` countdown, and what the host should do on this request
//! (`none` / `reminder` / `warning` / `hard_reset`), with the model-facing reminder or warning
//! text when one is due. Pure: the host supplies usage, the model id and the window facts.

use serde::{Deserialize, Serialize};

use super::settings::Settings;
use crate::protocol::ToolNames;

/// Tokens between the warning line and the hard reserve: the agent's runway to close out.
pub const WARNING_RUNWAY_TOKENS: u64 = 16_384;

/// The three lines, compared against *remaining* tokens (`context_window − tokens`); a line is
/// crossed when remaining ≤ line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Thresholds {
    /// reserve + reminder margin.
    pub reminder: u64,
    /// reserve + [`WARNING_RUNWAY_TOKENS`].
    pub warning: u64,
    /// The hard reserve: at or below it the host resets without the agent.
    pub reserve: u64,
}

/// `reminder = reserve + margin`, `warning = reserve + 16,384`.
pub fn derive_thresholds(reserve: u64, reminder_margin: u64) -> Thresholds {
    Thresholds {
        reminder: reserve.saturating_add(reminder_margin),
        warning: reserve.saturating_add(WARNING_RUNWAY_TOKENS),
        reserve,
    }
}

/// What `get_context_remaining` reports: the countdown to the warning line (the runway below
/// it and the reserve stay hidden), `None` when usage is unknown.
pub fn remaining_budget(remaining: Option<u64>, warning: u64) -> Option<u64> {
    remaining.map(|r| r.saturating_sub(warning))
}

/// The policy for one model: thresholds plus the automatic flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Policy {
    pub thresholds: Thresholds,
    /// `compaction.enabled`: gates the warning, the automatic close-out and the hard reserve.
    pub automatic: bool,
}

impl Policy {
    /// Resolve the policy for `model` (`"<provider>/<id>"`); the warning, if any, is about an
    /// invalid model override for that model.
    pub fn resolve(settings: &Settings, model: Option<&str>) -> (Policy, Option<String>) {
        let (reserve, warning) = settings.reserve_tokens_for(model);
        (
            Policy {
                thresholds: derive_thresholds(reserve, settings.reminder_margin_tokens),
                automatic: settings.compaction_enabled,
            },
            warning,
        )
    }
}

/// Context usage of the active window as the host measured it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Tokens in use; `null` when the host cannot tell.
    pub tokens: Option<u64>,
    /// The model's context window; `null` or `0` when unknown.
    pub context_window: Option<u64>,
}

impl Usage {
    /// Physical room left, `max(0, window − tokens)`; `None` when either side is unknown.
    pub fn remaining(&self) -> Option<u64> {
        match (self.tokens, self.context_window) {
            (Some(tokens), Some(window)) if window > 0 => Some(window.saturating_sub(tokens)),
            _ => None,
        }
    }
}

/// What the current window already holds (durable or staged by the host).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(default, deny_unknown_fields)]
pub struct WindowFacts {
    /// A reminder (`pi-context/guidance`) is already in this window.
    pub reminder_shown: bool,
    /// A budget warning (`pi-context/warning`) is already in this window.
    pub warning_shown: bool,
}

/// The host's action for this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Nothing to add.
    None,
    /// Stage the early reminder (persisted at turn end, never added to this request).
    Reminder,
    /// Append the final warning to this request and persist it.
    Warning,
    /// At or below the hard reserve with automatic compaction on: commit a reset at turn end
    /// without the agent. The warning text comes along when the window has none yet.
    HardReset,
}

/// A model-facing message the host should stage or inject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Message {
    /// `reminder` or `warning` (`close_out` when the host asked for it).
    #[schemars(extend("enum" = ["reminder", "warning", "close_out"]))]
    pub kind: &'static str,
    /// The entry type to persist it under.
    #[schemars(extend("enum" = ["pi-context/guidance", "pi-context/warning", "pi-context/manual-wipe"]))]
    pub custom_type: &'static str,
    pub text: String,
}

/// The full answer of one budget check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Check {
    pub decision: Decision,
    /// Physical room left (`context_window − tokens`, floored at 0); `null` when unknown.
    pub remaining: Option<u64>,
    /// What `get_context_remaining` reports: the countdown to the warning line.
    pub remaining_tokens: Option<u64>,
    pub thresholds: Thresholds,
    pub automatic: bool,
    /// In the warning zone with automatic compaction and pi-context on: (re-)arm the automatic
    /// close-out for this window on every such request.
    pub arm_close_out: bool,
    /// automatic ∧ usage known ∧ remaining ≤ reserve; reported whatever `enabled` says (the
    /// host's reset logic applies it).
    pub hard_reserve_due: bool,
    /// The countdown frozen into the reminder text (only with a reminder).
    pub reminder_left: Option<u64>,
    /// The reminder or warning to stage/inject, when due.
    pub message: Option<Message>,
}

/// Decide for one request. `enabled` is pi-context's on/off switch.
pub fn decide(
    policy: &Policy,
    usage: Option<&Usage>,
    window: &WindowFacts,
    enabled: bool,
    tools: &ToolNames,
) -> Check {
    let t = policy.thresholds;
    let remaining = usage.and_then(Usage::remaining);
    let hard_reserve_due = policy.automatic && remaining.is_some_and(|r| r <= t.reserve);
    let mut check = Check {
        decision: Decision::None,
        remaining,
        remaining_tokens: remaining_budget(remaining, t.warning),
        thresholds: t,
        automatic: policy.automatic,
        arm_close_out: false,
        hard_reserve_due,
        reminder_left: None,
        message: None,
    };
    let Some(remaining) = remaining.filter(|_| enabled) else {
        return check;
    };
    if policy.automatic && remaining <= t.warning {
        check.arm_close_out = true;
        if !window.warning_shown {
            check.message = Some(warning_message(tools));
        }
        check.decision = if hard_reserve_due {
            Decision::HardReset
        } else if window.warning_shown {
            Decision::None
        } else {
            Decision::Warning
        };
        return check;
    }
    if window.warning_shown || window.reminder_shown || remaining > t.reminder {
        return check;
    }
    let left = remaining.saturating_sub(t.warning);
    check.decision = Decision::Reminder;
    check.reminder_left = Some(left);
    check.message = Some(Message {
        kind: "reminder",
        custom_type: "pi-context/guidance",
        text: reminder_text(left, tools),
    });
    check
}

/// The `get_context_remaining` tool text: pretty JSON (two-space indent).
#[allow(
    clippy::expect_used,
    reason = "a one-field JSON object always serialises"
)]
pub fn remaining_text(remaining_tokens: Option<u64>) -> String {
    serde_json::to_string_pretty(&serde_json::json!({ "remaining_tokens": remaining_tokens }))
        .expect("a one-field JSON object always serialises")
}

/// The early reminder: a frozen countdown and a nudge to bring notes up to date.
pub fn reminder_text(left: u64, tools: &ToolNames) -> String {
    format!(
        "<context_window_guidance>\n\
         Context budget: {left} left before the final warning (a snapshot; {remaining} \
         gives the live count).\n\
         Save what matters now with {notes}: the goal, decisions, current state and next step, \
         and anything that so far lives only in your head. Crumple notes that went stale and \
         keep each MAP.md true.\n\
         When your notes are ready, call {wipe} to start a fresh window; otherwise carry on and \
         keep them current.\n\
         </context_window_guidance>",
        left = crate::words::plural(
            usize::try_from(left).unwrap_or(usize::MAX),
            "token",
            "tokens"
        ),
        remaining = tools.remaining,
        notes = tools.notes,
        wipe = tools.wipe,
    )
}

/// The final warning, sent when the budget reaches the warning line.
pub fn warning_text(tools: &ToolNames) -> String {
    close_out_text(
        "Final warning: this context window is almost full and your memory is about to be wiped.",
        tools,
    )
}

/// The text of a manual close-out (`/wipe-memory`): the same instructions as the final warning,
/// but saying why honestly — the human asked, the window need not be full.
pub fn manual_close_out_text(tools: &ToolNames) -> String {
    close_out_text(
        "The human asked to end this context window: your memory is about to be wiped.",
        tools,
    )
}

/// One close-out instruction, whatever started it: `why` is its first line.
fn close_out_text(why: &str, tools: &ToolNames) -> String {
    format!(
        "<context_window_guidance>\n\
         {why}\n\
         Close out now with {notes}:\n\
         - write the current state into notes: the goal, what changed, blockers, next steps, \
         the skills you will need again, and which notes or docs to read first;\n\
         - update the notes that are still true, crumple the ones that are not, and keep each \
         MAP.md honest;\n\
         - for anything that stays only in history, note the seq to revisit.\n\
         Then call {wipe} immediately. History is an archive to search later, not a rescue.\n\
         </context_window_guidance>",
        notes = tools.notes,
        wipe = tools.wipe,
    )
}

/// The close-out request a host sends when the human asks to end the window (`/wipe-memory`),
/// under the manual entry type. Independent of usage and of `compaction.enabled`: the human's
/// request does not depend on the budget.
pub fn close_out_message(tools: &ToolNames) -> Message {
    Message {
        kind: "close_out",
        custom_type: "pi-context/manual-wipe",
        text: manual_close_out_text(tools),
    }
}

impl Check {
    /// This check answering an explicit close-out request: `message` becomes the close-out
    /// text whatever the usage and settings; every other field keeps the usage-based answer.
    pub fn with_close_out(mut self, tools: &ToolNames) -> Check {
        self.message = Some(close_out_message(tools));
        self
    }
}

fn warning_message(tools: &ToolNames) -> Message {
    Message {
        kind: "warning",
        custom_type: "pi-context/warning",
        text: warning_text(tools),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: Policy = Policy {
        thresholds: Thresholds {
            reminder: 40_960,
            warning: 32_768,
            reserve: 16_384,
        },
        automatic: true,
    };

    fn at(remaining: u64) -> Usage {
        Usage {
            tokens: Some(200_000 - remaining),
            context_window: Some(200_000),
        }
    }

    fn run(policy: &Policy, remaining: u64, window: WindowFacts) -> Check {
        decide(
            policy,
            Some(&at(remaining)),
            &window,
            true,
            &ToolNames::default(),
        )
    }

    #[test]
    fn defaults_give_the_documented_lines() {
        let (policy, w) = Policy::resolve(&Settings::default(), None);
        assert_eq!(policy, DEFAULT);
        assert!(w.is_none());
    }

    #[test]
    fn countdown_reaches_zero_at_the_warning_line_and_stays_there() {
        assert_eq!(remaining_budget(None, 32_768), None);
        assert_eq!(remaining_budget(Some(40_000), 32_768), Some(7_232));
        assert_eq!(remaining_budget(Some(32_768), 32_768), Some(0));
        assert_eq!(remaining_budget(Some(0), 32_768), Some(0));
    }

    #[test]
    fn usage_past_the_physical_window_is_zero_remaining() {
        let usage = Usage {
            tokens: Some(250_000),
            context_window: Some(200_000),
        };
        assert_eq!(usage.remaining(), Some(0));
        let unknown_window = Usage {
            tokens: Some(1),
            context_window: Some(0),
        };
        assert_eq!(unknown_window.remaining(), None);
    }

    #[test]
    fn lines_are_inclusive() {
        let none = WindowFacts::default();
        assert_eq!(run(&DEFAULT, 40_961, none).decision, Decision::None);
        assert_eq!(run(&DEFAULT, 40_960, none).decision, Decision::Reminder);
        assert_eq!(run(&DEFAULT, 32_769, none).decision, Decision::Reminder);
        assert_eq!(run(&DEFAULT, 32_768, none).decision, Decision::Warning);
        assert_eq!(run(&DEFAULT, 16_385, none).decision, Decision::Warning);
        assert_eq!(run(&DEFAULT, 16_384, none).decision, Decision::HardReset);
    }

    #[test]
    fn reminder_freezes_the_countdown_in_its_text() {
        let check = run(&DEFAULT, 40_000, WindowFacts::default());
        assert_eq!(check.reminder_left, Some(7_232));
        let message = check.message.unwrap();
        assert_eq!(message.custom_type, "pi-context/guidance");
        assert!(message.text.contains(" 7232 tokens"));
    }

    #[test]
    fn custom_tool_names_replace_every_default_in_the_texts() {
        let tools = ToolNames {
            notes: "memo_*".into(),
            remaining: "room_left".into(),
            wipe: "fresh_start".into(),
            ..ToolNames::default()
        };
        for text in [reminder_text(1, &tools), warning_text(&tools)] {
            assert!(text.contains("fresh_start"));
            for default in ["notes_*", "get_context_remaining", "wipe_memory"] {
                assert!(!text.contains(default), "{default} in {text}");
            }
        }
    }

    #[test]
    fn close_out_replaces_the_message_whatever_the_budget() {
        let off = Policy {
            automatic: false,
            ..DEFAULT
        };
        for (policy, remaining) in [(&DEFAULT, 100_000), (&DEFAULT, 40_000), (&off, 20_000)] {
            let check = run(policy, remaining, WindowFacts::default());
            let decision = check.decision;
            let closed = check.with_close_out(&ToolNames::default());
            assert_eq!(closed.decision, decision, "the decision is unchanged");
            let message = closed.message.unwrap();
            assert_eq!(message.kind, "close_out");
            assert_eq!(message.custom_type, "pi-context/manual-wipe");
            assert_eq!(message.text, manual_close_out_text(&ToolNames::default()));
            assert!(
                message
                    .text
                    .starts_with("<context_window_guidance>\nThe human asked")
            );
        }
    }

    #[test]
    fn margin_below_the_runway_means_the_warning_always_wins() {
        let policy = Policy {
            thresholds: derive_thresholds(16_384, 1_000),
            automatic: true,
        };
        assert_eq!(
            run(&policy, 30_000, WindowFacts::default()).decision,
            Decision::Warning
        );
        assert_eq!(
            run(&policy, 17_384, WindowFacts::default()).decision,
            Decision::Warning
        );
    }
}
