//! The checked-in completion scripts and the help tree must match the real CLI: any interface
//! change shows up as a failing test and a reviewable diff.

use std::path::PathBuf;

use crate::support::{pi_context, run};

const SHELLS: &[(&str, &str)] = &[
    ("bash", "pi-context.bash"),
    ("zsh", "_pi-context"),
    ("fish", "pi-context.fish"),
    ("elvish", "pi-context.elv"),
    ("powershell", "_pi-context.ps1"),
];

#[test]
fn checked_in_completions_match_the_cli() {
    let home = tempfile::tempdir().unwrap();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("completions");
    for (shell, file) in SHELLS {
        let out = run(
            {
                let mut c = pi_context(home.path());
                c.args(["completions", shell]);
                c
            },
            "",
        );
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        assert!(!out.stdout.is_empty(), "{shell}: empty script");
        let path = dir.join(file);
        if std::env::var_os("PI_CONTEXT_BLESS").is_some() {
            std::fs::write(&path, &out.stdout).unwrap();
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run `PI_CONTEXT_BLESS=1 cargo test completions`",
                path.display()
            )
        });
        assert!(
            checked_in == out.stdout,
            "{} drifted from the CLI: run `PI_CONTEXT_BLESS=1 cargo test completions`",
            path.display()
        );
    }
}

#[test]
fn clap_definition_is_consistent() {
    use clap::CommandFactory;
    pi_context::cli::Cli::command().debug_assert();
}

#[test]
fn help_tree_snapshot() {
    use clap::CommandFactory;
    // A fixed width, so the snapshot does not depend on the terminal running the tests.
    let mut command = pi_context::cli::Cli::command().term_width(100);
    command.build();
    let mut text = command.render_long_help().to_string();
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        let sub = command
            .find_subcommand_mut(&name)
            .expect("listed subcommands exist");
        text.push_str(&format!("\n===== pi-context {name} --help\n"));
        text.push_str(&sub.render_long_help().to_string());
    }
    insta::assert_snapshot!("help_tree", text);
}
