//! The lazily built command line ([`super::parse`] builds only the subcommand being run) parses
//! exactly as the whole tree: every subcommand built alone is equal to the one in the tree, and
//! sample command lines give the same `Cli` or the same error either way.

use clap::CommandFactory;

use super::{Cli, lazy_command, parse, parse_full, subcommand_name};

/// `{:#?}` of a built command without the named fields of its own (not of its arguments').
fn debug_without(command: &clap::Command, fields: &[&str]) -> String {
    let text = format!("{command:#?}");
    let mut kept = String::new();
    let mut skipping = false;
    for line in text.lines() {
        // A field of the command itself is indented by exactly four spaces.
        let own_field = line.starts_with("    ") && !line.starts_with("     ");
        if own_field {
            skipping = fields
                .iter()
                .any(|f| line.starts_with(&format!("    {f}: ")));
        } else if line == "}" {
            skipping = false;
        }
        if !skipping {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// What only the help listing reads: a subcommand's position in it (`disp_ord`), and the position
/// the next one added would take (`current_disp_ord`). Help is only ever printed from the whole
/// tree.
const DISPLAY_ORDER: [&str; 2] = ["disp_ord", "current_disp_ord"];

#[test]
fn lazy_subcommands_parse_like_the_full_tree() {
    let mut full = Cli::command();
    full.build();
    // `help` is clap's own, added when a command is built (the lazy one gets its own too).
    let names: Vec<String> = full
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .filter(|name| name != "help")
        .collect();
    assert_eq!(names.len(), 19, "{names:?}");
    for name in &names {
        let mut lazy = lazy_command(name).unwrap_or_else(|| panic!("{name}: no lazy command"));
        lazy.build();
        let lazy_names: Vec<&str> = lazy.get_subcommands().map(|s| s.get_name()).collect();
        assert_eq!(lazy_names, [name.as_str(), "help"]);
        let in_tree = full.find_subcommand(name).unwrap();
        let alone = lazy.find_subcommand(name).unwrap();
        // Everything: arguments (flags, values, defaults, globals propagated from the top),
        // groups, settings, help texts and examples.
        assert_eq!(
            debug_without(alone, &DISPLAY_ORDER),
            debug_without(in_tree, &DISPLAY_ORDER),
            "{name}"
        );
        let ids = |c: &clap::Command| -> Vec<String> {
            c.get_arguments().map(|a| a.get_id().to_string()).collect()
        };
        assert!(ids(alone).contains(&"format".to_owned()), "{name}");
        // The top level: all but the subcommands (the one thing it is meant to lack).
        let top = [DISPLAY_ORDER.as_slice(), &["subcommands"]].concat();
        assert_eq!(
            debug_without(&lazy, &top),
            debug_without(&full, &top),
            "{name}"
        );
    }
    assert!(lazy_command("no-such-command").is_none());
    assert!(lazy_command("help").is_none());
}

/// Every command line here gives the same `Cli` or the same error (kind and rendered text)
/// through `parse` as through the whole tree.
#[test]
fn parse_answers_as_the_whole_tree() {
    let lines: &[&[&str]] = &[
        &["notes-read"],
        &[
            "notes-read",
            "--notes-home",
            "/n",
            "--session-id",
            "s",
            "--no-cache",
        ],
        &[
            "--format",
            "both",
            "notes-read",
            "--agent",
            "a",
            "--model",
            "m",
        ],
        &["--format=text", "budget-check"],
        &["budget-check", "--format", "text"],
        &["notes-list", "--scope"],
        &["notes-read", "--bogus"],
        &["notes-read", "--help"],
        &["notes-read", "-h"],
        &["notes-read", "--version"],
        &["notes-read", "extra"],
        &["--format", "xml", "notes-read"],
        &["--format"],
        &["completions", "bash"],
        &["completions", "bash", "--format", "json"],
        &["--format", "json", "completions", "zsh"],
        &["help", "notes-read"],
        &["no-such-command"],
        &["--version"],
        &["--help"],
        &[],
        &["history-search", "--project", "p"],
        &["dream", "--dry-run"],
        &["sync"],
        &["mcp"],
        &["doctor"],
    ];
    for line in lines {
        let argv = || std::iter::once("pi-context").chain(line.iter().copied());
        let whole = parse_full(argv().map(Into::into).collect());
        let lazy = parse(argv());
        match (lazy, whole) {
            (Ok(lazy), Ok(whole)) => {
                assert_eq!(format!("{lazy:?}"), format!("{whole:?}"), "{line:?}")
            }
            (Err(lazy), Err(whole)) => {
                assert_eq!(lazy.kind(), whole.kind(), "{line:?}");
                assert_eq!(lazy.to_string(), whole.to_string(), "{line:?}");
            }
            (lazy, whole) => panic!("{line:?}: lazy {lazy:?}, whole tree {whole:?}"),
        }
    }
}

#[test]
fn the_subcommand_name_is_found_after_format_only() {
    let name = |line: &[&str]| {
        let args: Vec<std::ffi::OsString> = std::iter::once("pi-context")
            .chain(line.iter().copied())
            .map(Into::into)
            .collect();
        subcommand_name(&args).map(str::to_owned)
    };
    assert_eq!(name(&["notes-read", "--x"]).as_deref(), Some("notes-read"));
    assert_eq!(name(&["--format", "both", "mcp"]).as_deref(), Some("mcp"));
    assert_eq!(name(&["--format=text", "sync"]).as_deref(), Some("sync"));
    assert_eq!(name(&["--format"]), None);
    assert_eq!(name(&["--help", "notes-read"]), None);
    assert_eq!(name(&["-V"]), None);
    assert_eq!(name(&[]), None);
}
