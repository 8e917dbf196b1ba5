//! The `Examples:` section that ends every subcommand's `--help`, and the top-level help's exit
//! codes. Kept in one table so a new subcommand without examples fails a test instead of
//! shipping bare help; each example is a real shell pipeline a user can paste.

use clap::Command;

/// What the top-level `--help` ends with: the exit codes and where the protocol is written down.
pub const TOP_LEVEL: &str = "\
Exit status:
  0   success, including \"nothing to do\" (a gated dream skip)
  1   a refusal (ok:false on stdout), doctor found issues, or a failed dream
  2   usage error or malformed request
  69  the remote cannot be reached (sync); try again later
  70  an I/O or internal failure (ok:false on stdout, one `error:` line on stderr)
  75  a lock held by another run (dream, sync); try again later

Every request, response, error code and exit code is described in docs/protocol.md of the
pi-context source. Run `pi-context <command> --help` for a command's request and examples.";

/// `(subcommand, examples)`: the lines after `Examples:` in the subcommand's long help.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "notes-write",
        "  echo '{\"address\":\"@project/plan.md\",\"content\":\"# Plan\\n- ship it\"}' | pi-context notes-write
  jq -n --rawfile c TODO.md '{address: \"@human/todo.md\", content: $c, origin: \"user\"}' \\
    | pi-context --format text notes-write",
    ),
    (
        "notes-read",
        "  echo '{\"address\":\"@project/plan.md\"}' | pi-context --format text notes-read
  echo '{\"address\":\"@project/plan.md\"}' | pi-context notes-read | jq -r .data.text",
    ),
    (
        "notes-update",
        "  echo '{\"address\":\"@project/plan.md\",\"edits\":[{\"oldText\":\"ship it\",\"newText\":\"shipped\"}]}' \\
    | pi-context --format text notes-update
  echo '{\"address\":\"@project/plan.md\",\"crumpled\":true}' | pi-context notes-update",
    ),
    (
        "notes-list",
        "  pi-context --format text notes-list </dev/null
  echo '{\"scope\":\"project\",\"limit\":5}' | pi-context notes-list | jq -r '.data.files[].address'",
    ),
    (
        "notes-search",
        "  echo '{\"query\":\"deadline\"}' | pi-context --format text notes-search
  echo '{\"query\":[\"todo\",\"fixme\"],\"scope\":\"human\"}' | pi-context notes-search \\
    | jq -r '.data.files[] | \"\\(.address) \\(.matches_total)\"'",
    ),
    (
        "project-key",
        "  pi-context project-key | jq -r .data.project_key
  pi-context --format text project-key --cwd ~/src/app",
    ),
    (
        "history-windows",
        "  s=$(ls -t ~/.pi/agent/sessions/*/*.jsonl | head -n 1)   # the newest Pi session
  pi-context --format text history-windows --session \"$s\" </dev/null",
    ),
    (
        "history-list",
        "  s=$(ls -t ~/.pi/agent/sessions/*/*.jsonl | head -n 1)   # the newest Pi session
  echo '{\"limit\":20,\"roles\":[\"user\"]}' | pi-context --format text history-list --session \"$s\"
  pi-context history-list --session \"$s\" </dev/null | jq '.data.older_before'",
    ),
    (
        "history-read",
        "  s=$(ls -t ~/.pi/agent/sessions/*/*.jsonl | head -n 1)   # the newest Pi session
  echo '{\"seq\":42}' | pi-context --format text history-read --session \"$s\"
  echo '{\"seq\":42,\"offset_chars\":-2000}' | pi-context --format text history-read --session \"$s\"",
    ),
    (
        "history-search",
        "  s=$(ls -t ~/.pi/agent/sessions/*/*.jsonl | head -n 1)   # the newest Pi session
  echo '{\"query\":\"migration\"}' | pi-context --format text history-search --session \"$s\"
  echo '{\"query\":[\"panic\",\"error\"],\"roles\":[\"tool\"]}' \\
    | pi-context history-search --session \"$s\" | jq '.data.items[].seq'",
    ),
    (
        "boot-render",
        "  pi-context --format text boot-render --session-id demo </dev/null
  pi-context boot-render --session-id demo --agent ann </dev/null | jq -r .data.text",
    ),
    (
        "budget-check",
        "  pi-context --format text budget-check --settings-only
  echo '{\"usage\":{\"tokens\":150000,\"context_window\":200000}}' | pi-context budget-check \\
    | jq -r .data.decision",
    ),
    (
        "dream",
        "  pi-context --format text dream </dev/null                  # runs only when both gates are open
  pi-context dream --force --dreamer anthropic/claude-sonnet-4-5 </dev/null | jq .data",
    ),
    (
        "dream-fs",
        "  echo '{\"path\":\"pi/human/old.md\"}' | pi-context dream-fs delete --notes-home ~/.agents/notes
  echo '{\"path\":\"MAP.md\",\"content\":\"# Map\\n\"}' | pi-context dream-fs write --notes-home /tmp/notes",
    ),
    (
        "doctor",
        "  pi-context --format text doctor </dev/null
  echo '{\"all_issues\":true}' | pi-context doctor | jq -r '.data.issues[] | \"\\(.path): \\(.message)\"'",
    ),
    (
        "mcp",
        "  claude mcp add pi-context -- pi-context mcp --agent claude-code   # register with Claude Code
  pi-context mcp --session ~/.pi/agent/sessions/x/s.jsonl --session-id s1   # + history tools",
    ),
    (
        "claude-hook",
        "  echo '{\"session_id\":\"s1\",\"cwd\":\"'\"$PWD\"'\"}' | pi-context claude-hook --max-chars 9000
  pi-context claude-hook --host-state \"$CLAUDE_PLUGIN_DATA/sessions\" --agent claude-code   # in hooks.json",
    ),
    (
        "sync",
        "  pi-context --format text sync --remote /mnt/share/notes.git </dev/null
  pi-context sync </dev/null | jq -r '.data.conflicts[] | \"\\(.path) <- \\(.conflict_path)\"'",
    ),
    (
        "completions",
        "  pi-context completions bash > ~/.local/share/bash-completion/completions/pi-context
  pi-context completions fish > ~/.config/fish/completions/pi-context.fish",
    ),
];

/// The examples of `name`, when it has some.
pub fn examples_of(name: &str) -> Option<&'static str> {
    EXAMPLES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// Append the `Examples:` section to every subcommand's long help (after any text it already
/// ends with). Applied to the whole command tree by `Cli`'s `mut_subcommands`.
pub fn attach(sub: Command) -> Command {
    let Some(examples) = examples_of(sub.get_name()) else {
        return sub;
    };
    let text = match sub.get_after_long_help() {
        Some(existing) => format!("{existing}\n\nExamples:\n{examples}"),
        None => format!("Examples:\n{examples}"),
    };
    sub.after_long_help(text)
}
