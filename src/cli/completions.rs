//! `pi-context completions <shell>`: print a completion script generated from the clap
//! definition, so completions can never drift from the real flags (a test compares the
//! checked-in files under `completions/` with this output, and another drives the bash script
//! in a real bash).
//!
//! The bash generator of `clap_complete` (up to at least 4.6.12) names the per-subcommand case
//! labels of a hyphenated binary differently from the state its word loop builds
//! (`pi__subcmd__context__subcmd__notes__subcmd__list` vs `pi__context__subcmd__notes__subcmd__list`),
//! so nothing after the subcommand ever completes. [`fix_bash_hyphenated_bin`] rewrites the
//! labels to the loop's spelling; it is a no-op once the generator is fixed upstream.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::common::Exit;
use crate::cli::{Answer, Cli, CmdError, Ctx, Io};

/// The binary name the scripts complete.
pub const BIN: &str = "pi-context";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to generate for (the global --format does not apply and is refused).
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: Args, _ctx: &Ctx, io: &mut Io) -> Result<Answer, CmdError> {
    io.stdout.write_all(script(args.shell).as_bytes())?;
    Ok(Answer::Written(Exit::Ok))
}

/// The completion script for `shell`, with the bash generator's hyphen bug worked around.
pub fn script(shell: Shell) -> String {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, BIN, &mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    match shell {
        Shell::Bash => fix_bash_hyphenated_bin(&text, BIN),
        _ => text,
    }
}

/// Rename the bash script's case labels for a hyphenated `bin` to the names its word loop
/// assigns: the generator turns the binary's own hyphen into `__subcmd__` in the labels but
/// into `__` in the loop.
pub fn fix_bash_hyphenated_bin(script: &str, bin: &str) -> String {
    if !bin.contains('-') {
        return script.to_string();
    }
    let label_spelling = bin.replace('-', "__subcmd__");
    let loop_spelling = bin.replace('-', "__");
    script.replace(&label_spelling, &loop_spelling)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_label_is_a_state_the_loop_can_reach() {
        let fixed = script(Shell::Bash);
        assert!(!fixed.contains("pi__subcmd__context"));
        for line in fixed.lines() {
            let line = line.trim();
            if let Some(label) = line.strip_suffix(')')
                && label.starts_with("pi__context")
                && !label.contains(',')
            {
                assert!(
                    fixed.contains(&format!("cmd=\"{label}\"")),
                    "case label {label} is never assigned"
                );
            }
        }
    }

    #[test]
    fn names_without_a_hyphen_are_left_alone() {
        assert_eq!(
            fix_bash_hyphenated_bin("a__subcmd__b", "tool"),
            "a__subcmd__b"
        );
    }
}
