//! The dream report `dreams/<stamp>.md` ([`super::artifacts::report_rel`]): what the run was, what the dreamer said last, and
//! every write, edit and delete it attempted (refusals included), in order. Pure rendering.

use super::journal::Entry;

/// The dreamer's final text is cut to this many bytes in the report (at a char boundary).
pub const FINAL_TEXT_MAX_BYTES: usize = 64 * 1024;

/// Everything the report shows.
#[derive(Debug, Clone)]
pub struct ReportInput<'a> {
    pub stamp: &'a str,
    /// `None` for a completed run, else the failure code (`dreamer_failed`, `timeout`, …).
    pub failure: Option<&'a str>,
    /// The failure message, when failed.
    pub failure_message: Option<&'a str>,
    /// The dreamer's final text (stdout of `pi -p`).
    pub final_text: &'a str,
    /// The dreamer model, or `None` for Pi's automatic choice.
    pub model: Option<&'a str>,
    pub baseline_commit: &'a str,
    pub gate_lines: &'a [String],
    pub forced: bool,
    pub entries: &'a [Entry],
    /// Why the journal could not be read, when it could not (the attempted changes are then
    /// unknown, not none).
    pub journal_error: Option<&'a str>,
}

/// The report's markdown (always ends with a newline).
pub fn render(input: &ReportInput) -> String {
    let mut out = String::new();
    let failed = if input.failure.is_some() {
        " (failed)"
    } else {
        ""
    };
    out.push_str(&format!("# Dream {}{failed}\n\n", input.stamp));
    match input.failure {
        None => out.push_str("- outcome: completed\n"),
        Some(code) => out.push_str(&format!("- outcome: failed ({code})\n")),
    }
    out.push_str(&format!(
        "- dreamer model: {}\n",
        input.model.unwrap_or("Pi's automatic model")
    ));
    out.push_str(&format!("- baseline commit: {}\n", input.baseline_commit));
    for line in input.gate_lines {
        out.push_str(&format!("- {line}\n"));
    }
    if input.forced {
        out.push_str("- gates bypassed with --force\n");
    }
    if let Some(message) = input.failure_message {
        out.push_str("\n## Failure\n\n");
        out.push_str(message.trim_end());
        out.push('\n');
    }
    out.push_str("\n## Dreamer's final text\n\n");
    let text = input.final_text.trim();
    if text.is_empty() {
        out.push_str("(none)\n");
    } else {
        let cut = clip(text, FINAL_TEXT_MAX_BYTES);
        out.push_str(cut);
        if cut.len() < text.len() {
            out.push_str(&format!("\n…[cut: {} more bytes]", text.len() - cut.len()));
        }
        out.push('\n');
    }
    out.push_str("\n## Attempted changes\n\n");
    if let Some(error) = input.journal_error {
        out.push_str(&format!("- unknown: {}\n", error.replace('\n', " ")));
    } else if input.entries.is_empty() {
        out.push_str("- none\n");
    }
    for entry in input.entries {
        let path = entry.path.as_deref().unwrap_or("(no path)");
        if entry.ok {
            let outcome = entry.outcome.as_deref().unwrap_or("applied");
            match entry.target.as_deref() {
                Some(target) if target != path => out.push_str(&format!(
                    "- {} `{}` → {outcome} (`{target}`)\n",
                    entry.op, path
                )),
                _ => out.push_str(&format!("- {} `{}` → {outcome}\n", entry.op, path)),
            }
        } else {
            out.push_str(&format!(
                "- {} `{}` → refused ({}): {}\n",
                entry.op,
                path,
                entry.code.as_deref().unwrap_or("unknown"),
                entry.message.as_deref().unwrap_or("").replace('\n', " ")
            ));
        }
    }
    out
}

fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_report_lists_refusals() {
        let entries = vec![
            Entry {
                op: "delete".into(),
                path: Some("human/a.md".into()),
                ok: false,
                outcome: None,
                target: None,
                code: Some("not_crumpled".into()),
                message: Some("human/a.md is not a crumpled note".into()),
            },
            Entry {
                op: "write".into(),
                path: Some("/n/human/b.md".into()),
                ok: true,
                outcome: Some("created".into()),
                target: Some("human/b.md".into()),
                code: None,
                message: None,
            },
        ];
        let text = render(&ReportInput {
            stamp: "S",
            failure: Some("timeout"),
            failure_message: Some("the dreamer ran out of time"),
            final_text: "",
            model: None,
            baseline_commit: "abc",
            gate_lines: &["time gate: no prior dream".into()],
            forced: true,
            entries: &entries,
            journal_error: None,
        });
        assert!(text.starts_with("# Dream S (failed)\n"));
        assert!(text.contains("- outcome: failed (timeout)\n"));
        assert!(text.contains("- delete `human/a.md` → refused (not_crumpled): human/a.md is"));
        assert!(text.contains("- write `/n/human/b.md` → created (`human/b.md`)\n"));
        assert!(text.ends_with('\n'));
    }
}
