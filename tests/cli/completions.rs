//! The checked-in completion scripts, man pages and the help tree must match the real CLI: any
//! interface change shows up as a failing test and a reviewable diff. The bash script is also
//! driven in a real bash, and the zsh and fish scripts are parsed by their shells.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{files_in, pi_context, run};

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

/// Run `script` in a clean non-interactive bash with the checked-in completion script sourced,
/// completing `words` with the cursor on the last word; returns the candidates.
fn bash_complete(words: &[&str]) -> Vec<String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("completions/pi-context.bash");
    let quoted: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 {
        quoted[cword - 1].clone()
    } else {
        "''".into()
    };
    // What bash's programmable completion does on TAB: set COMP_WORDS/COMP_CWORD and call the
    // function registered with `complete -F` with (command, current word, previous word).
    let program = format!(
        r#"source '{script}' || exit 3
spec=$(complete -p pi-context) || exit 4
fn=${{spec##* -F }}; fn=${{fn%% *}}
COMP_WORDS=({words}); COMP_CWORD={cword}
COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}
"$fn" pi-context {cur} {prev}
printf '%s\n' "${{COMPREPLY[@]}}""#,
        script = script.display(),
        words = quoted.join(" "),
        cur = quoted[cword],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "bash failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_a_subcommands_flags_and_a_flags_values() {
    let flags = bash_complete(&["pi-context", "notes-list", "--"]);
    for flag in ["--notes-home", "--session-id", "--agent", "--format"] {
        assert!(
            flags.contains(&flag.to_string()),
            "{flag} missing: {flags:?}"
        );
    }
    let narrowed = bash_complete(&["pi-context", "--format", "text", "boot-render", "--pre"]);
    assert_eq!(narrowed, ["--previous-window-id"]);
    let values = bash_complete(&["pi-context", "history-list", "--format", ""]);
    assert_eq!(values, ["json", "text", "both"]);
    let shells = bash_complete(&["pi-context", "completions", "f"]);
    assert_eq!(shells, ["fish"]);
    let ops = bash_complete(&["pi-context", "dream-fs", "d"]);
    assert_eq!(ops, ["delete"]);
    let subcommands = bash_complete(&["pi-context", "history-"]);
    assert_eq!(
        subcommands,
        [
            "history-windows",
            "history-list",
            "history-read",
            "history-search"
        ]
    );
}

/// `shell -n file` (parse without running), or `None` when the shell is not installed.
fn parse_check(shell: &str, file: &str) -> Option<std::process::Output> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("completions")
        .join(file);
    match Command::new(shell).arg("-n").arg(&path).output() {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "SKIPPED: {shell} is not installed, so {file} was not parse-checked \
                 (apt-get install -y {shell})"
            );
            None
        }
        Err(e) => panic!("{shell} could not run: {e}"),
    }
}

#[test]
fn zsh_and_fish_scripts_parse() {
    for (shell, file) in [
        ("zsh", "_pi-context"),
        ("fish", "pi-context.fish"),
        ("bash", "pi-context.bash"),
    ] {
        if let Some(out) = parse_check(shell, file) {
            assert!(
                out.status.success(),
                "{shell} -n {file}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn completions_refuses_the_global_format_flag() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["--format", "text", "completions", "bash"][..],
        &["completions", "bash", "--format=json"][..],
    ] {
        let mut cmd = pi_context(home.path());
        cmd.args(args);
        let out = run(cmd, "");
        assert_eq!(out.code, 2, "{args:?}");
        assert_eq!(out.stdout, "", "{args:?}");
        assert!(
            out.stderr
                .contains("--format does not apply to `completions`"),
            "{args:?}: {}",
            out.stderr
        );
    }
}

/// The man pages clap_mangen renders for the CLI: `pi-context.1` and one page per
/// subcommand, as `(file name, bytes)`.
fn rendered_man_pages() -> Vec<(String, Vec<u8>)> {
    use clap::CommandFactory;
    let dir = tempfile::tempdir().unwrap();
    clap_mangen::generate_to(pi_context::cli::Cli::command(), dir.path()).unwrap();
    files_in(dir.path())
}

fn checked_in_pages(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.ends_with(".1"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn checked_in_man_pages_match_the_cli() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("man");
    let pages = rendered_man_pages();
    if std::env::var_os("PI_CONTEXT_BLESS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for stale in checked_in_pages(&dir) {
            std::fs::remove_file(dir.join(stale)).unwrap();
        }
        for (name, bytes) in &pages {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    let names: Vec<String> = pages.iter().map(|(n, _)| n.clone()).collect();
    assert!(names.contains(&"pi-context.1".to_string()));
    assert!(names.contains(&"pi-context-notes-list.1".to_string()));
    assert_eq!(
        checked_in_pages(&dir),
        names,
        "man/ drifted from the CLI: run `PI_CONTEXT_BLESS=1 cargo test --test cli man_pages`"
    );
    for (name, bytes) in &pages {
        let checked_in = std::fs::read(dir.join(name)).unwrap();
        assert!(
            &checked_in == bytes,
            "man/{name} drifted from the CLI: run `PI_CONTEXT_BLESS=1 cargo test --test cli man_pages`"
        );
    }
}

#[test]
fn every_subcommand_help_ends_with_examples_and_the_top_level_lists_exit_codes() {
    use clap::CommandFactory;
    let mut command = pi_context::cli::Cli::command();
    command.build();
    let top = command.render_long_help().to_string();
    for code in ["0 ", "1 ", "2 ", "70 ", "75 "] {
        assert!(
            top.lines().any(|l| l.trim_start().starts_with(code)),
            "exit code {code} missing from the top-level help"
        );
    }
    assert!(top.contains("docs/protocol.md"));
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    for name in names {
        let sub = command.find_subcommand_mut(&name).unwrap();
        let help = sub.render_long_help().to_string();
        let (_, examples) = help
            .rsplit_once("\nExamples:\n")
            .unwrap_or_else(|| panic!("{name} --help has no Examples: section"));
        let lines: Vec<&str> = examples.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(!lines.is_empty(), "{name}: empty Examples:");
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("pi-context {name}"))
                    || l.contains(&format!(" {name} "))
                    || l.ends_with(&format!(" {name}"))),
            "{name}: no example runs {name}: {lines:?}"
        );
        // The examples are shell, not prose: bash must parse them.
        let out = Command::new("bash")
            .args(["-n", "-c", examples])
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{name}: its examples do not parse as bash: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn boot_render_usage_shows_session_id_as_required() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = pi_context(home.path());
    cmd.args(["boot-render", "--help"]);
    let out = run(cmd, "");
    assert!(
        out.stdout
            .contains("Usage: pi-context boot-render [OPTIONS] --session-id <ID>"),
        "{}",
        out.stdout
    );
    let mut cmd = pi_context(home.path());
    cmd.arg("boot-render");
    let out = run(cmd, "");
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "", "a usage error prints no envelope");
    assert!(out.stderr.contains("--session-id <ID>"), "{}", out.stderr);
}
