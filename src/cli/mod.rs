//! The command-line layer: one thin module per subcommand. Each parses its flags and its one
//! JSON request, resolves environment and identity into explicit values, calls one domain,
//! and prints one result. This is the only place that reads the environment, the clock, or
//! decides exit codes.

pub mod boot_render;
pub mod budget_check;
pub mod claude_hook;
pub mod common;
pub mod completions;
pub mod doctor;
pub mod dream;
pub mod dream_fs;
pub mod error;
pub mod examples;
pub mod history;
pub mod mcp;
pub mod notes;
#[cfg(test)]
mod parse_tests;
pub mod project_key;
pub mod schema;
pub mod strict;
pub mod sync;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use chrono::{DateTime, FixedOffset};
use clap::{Parser, Subcommand};

pub use common::{Exit, Format, emit, read_request};
pub use error::{Answer, CmdError};

/// The top-level command line, written once for two structs: [`Cli`], the whole command tree,
/// and `Top`, the same top level without its subcommands, to which [`parse`] adds only the
/// subcommand being run.
macro_rules! top_level {
    ($(#[$extra:meta])* $vis:vis struct $name:ident { $($fields:tt)* }) => {
        /// Durable memory for coding agents: notes, session history, boot block, budget policy and
        /// dream consolidation, as plumbing commands that read one JSON request on stdin and write
        /// one JSON result on stdout.
        #[derive(Debug, Parser)]
        #[command(
            name = "pi-context",
            version,
            propagate_version = true,
            max_term_width = 100,
            after_long_help = examples::TOP_LEVEL,
            mut_subcommands = examples::attach
        )]
        $(#[$extra])*
        $vis struct $name {
            /// What to print on stdout: the JSON envelope (default), the model-facing text, or both
            /// (the envelope with an added top-level "text" field).
            #[arg(long, global = true, value_enum, default_value_t = Format::Json)]
            pub format: Format,
            $($fields)*
        }
    };
}

top_level! {
    pub struct Cli {
        #[command(subcommand)]
        pub command: Command,
    }
}

top_level! {
    #[allow(dead_code)] // only its command is built, never its value
    #[group(id = "Cli")] // the argument group the derive names after the struct, as in `Cli`
    struct Top {}
}

/// The subcommands, written once for two uses: the [`Command`] enum (the whole tree, for help,
/// completions, man pages and errors) and `with_subcommand`, which adds one of them — built by
/// the same derive from the same attributes — to the top level.
macro_rules! subcommands {
    ($($(#[$attr:meta])* $variant:ident($args:ty),)*) => {
        #[derive(Debug, Subcommand)]
        pub enum Command {
            $($(#[$attr])* $variant($args),)*
        }

        /// `top` with the one subcommand called `name` added, or `None` when there is none.
        fn with_subcommand(top: clap::Command, name: &str) -> Option<clap::Command> {
            $({
                #[derive(Subcommand)]
                #[allow(dead_code)] // only its command is built, never its value
                enum One {
                    $(#[$attr])* $variant($args),
                }
                if <One as Subcommand>::has_subcommand(name) {
                    return Some(<One as Subcommand>::augment_subcommands(top));
                }
            })*
            None
        }
    };
}

subcommands! {
    NotesWrite(notes::write::Args),
    NotesRead(notes::read::Args),
    NotesUpdate(notes::update::Args),
    NotesList(notes::list::Args),
    NotesSearch(notes::search::Args),
    ProjectKey(project_key::Args),
    HistoryWindows(history::windows::Args),
    HistoryList(history::list::Args),
    HistoryRead(history::read::Args),
    HistorySearch(history::search::Args),
    BootRender(boot_render::Args),
    BudgetCheck(budget_check::Args),
    /// Consolidate the notes store with a dreamer model (locked, gated, jailed, audited).
    Dream(dream::Args),
    /// Jailed file operations for the dreamer's write, edit and delete tools.
    DreamFs(dream_fs::Args),
    /// Check a notes home without changing it.
    Doctor(doctor::Args),
    Mcp(mcp::Args),
    ClaudeHook(claude_hook::Args),
    /// The same notes on every machine: commit, fetch, merge note by note, push (never forced).
    Sync(sync::Args),
    /// Print a shell completion script.
    Completions(completions::Args),
}

/// Everything a handler may know about the process world, resolved once at start-up.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// A snapshot of the environment variables (handlers never call `std::env`).
    pub env: BTreeMap<String, String>,
    /// The process working directory.
    pub cwd: PathBuf,
    /// "Now", captured once: `PI_CONTEXT_NOW` (RFC 3339) when set, for reproducible tests;
    /// otherwise the wall clock in the local time zone.
    pub now: DateTime<FixedOffset>,
    /// The output format chosen with `--format`.
    pub format: Format,
}

impl Ctx {
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    /// A variable that is set and non-empty.
    pub fn var_non_empty(&self, name: &str) -> Option<&str> {
        self.var(name).filter(|v| !v.is_empty())
    }
}

/// The process streams, injected so handlers can run in-process in tests.
pub struct Io<'a> {
    pub stdin: &'a mut dyn Read,
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    /// Whether stderr is a terminal (progress output is shown only then).
    pub stderr_is_terminal: bool,
    /// Whether stdin is a terminal (the request reader then says on stderr what it waits for).
    pub stdin_is_terminal: bool,
}

/// Run one parsed command: the handler answers or refuses, and [`error::finish`] prints the
/// outcome and gives the exit code.
pub fn run(cli: Cli, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let outcome = match cli.command {
        Command::NotesWrite(args) => notes::write::run(args, ctx, io).map(Answer::from),
        Command::NotesRead(args) => notes::read::run(args, ctx, io).map(Answer::from),
        Command::NotesUpdate(args) => notes::update::run(args, ctx, io).map(Answer::from),
        Command::NotesList(args) => notes::list::run(args, ctx, io).map(Answer::from),
        Command::NotesSearch(args) => notes::search::run(args, ctx, io).map(Answer::from),
        Command::ProjectKey(args) => project_key::run(args, ctx, io).map(Answer::from),
        Command::HistoryWindows(args) => history::windows::run(args, ctx, io).map(Answer::from),
        Command::HistoryList(args) => history::list::run(args, ctx, io).map(Answer::from),
        Command::HistoryRead(args) => history::read::run(args, ctx, io).map(Answer::from),
        Command::HistorySearch(args) => history::search::run(args, ctx, io).map(Answer::from),
        Command::BootRender(args) => boot_render::run(args, ctx, io).map(Answer::from),
        Command::BudgetCheck(args) => budget_check::run(args, ctx, io).map(Answer::from),
        Command::Dream(args) => dream::run(args, ctx, io).map(Answer::from),
        Command::DreamFs(args) => dream_fs::run(args, ctx, io).map(Answer::from),
        Command::Doctor(args) => doctor::run(args, ctx, io),
        Command::Mcp(args) => mcp::run(args, ctx, io),
        Command::ClaudeHook(args) => claude_hook::run(args, ctx, io),
        Command::Sync(args) => sync::run(args, ctx, io).map(Answer::from),
        Command::Completions(args) => completions::run(args, ctx, io),
    };
    error::finish(outcome, ctx, io)
}

/// What an in-process run wrote, and how it ended.
pub struct Captured {
    pub outcome: anyhow::Result<Exit>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Run one parsed command in-process with `stdin` as its request, capturing its stdout and
/// stderr (the MCP server's tool calls; the in-process handler tests).
pub fn run_captured(cli: Cli, ctx: &Ctx, stdin: &[u8]) -> Captured {
    let (mut stdin, mut stdout, mut stderr) = (stdin, Vec::new(), Vec::new());
    let mut io = Io {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
        stderr_is_terminal: false,
        stdin_is_terminal: false,
    };
    let outcome = run(cli, ctx, &mut io);
    Captured {
        outcome,
        stdout,
        stderr,
    }
}

/// "Now": `PI_CONTEXT_NOW` (RFC 3339) when set, for reproducible tests; otherwise the wall
/// clock in the local time zone. A long-running command (`mcp`) calls this once per request.
pub fn resolve_now(env: &BTreeMap<String, String>) -> Result<DateTime<FixedOffset>, String> {
    match env
        .get("PI_CONTEXT_NOW")
        .map(|s| DateTime::parse_from_rfc3339(s))
    {
        Some(Ok(fixed)) => Ok(fixed),
        Some(Err(e)) => Err(format!("PI_CONTEXT_NOW is not an RFC 3339 timestamp: {e}")),
        None => Ok(chrono::Local::now().fixed_offset()),
    }
}

/// Raise this process's soft limit of open files to its hard limit. A notes walk holds a
/// handle per directory it still has files to read from (that is what keeps every open inside
/// the notes root, see `confine`), so a home with more directories than the common soft limit
/// of 1,024 would otherwise show as unavailable. Best effort: a limit that cannot be raised is
/// left as it is. Nothing here uses `select`, the one API that needs descriptors below 1,024.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum)
        && current < maximum
    {
        let _ = setrlimit(
            Resource::Nofile,
            rustix::process::Rlimit {
                current: Some(maximum),
                maximum: Some(maximum),
            },
        );
    }
}

/// The process entry point: parse, resolve the world, run, map errors to exit codes; returns
/// the exit code (the binary's C `main` returns it, see `src/main.rs`).
pub fn main() -> u8 {
    raise_open_file_limit();
    let cli = match parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => {
            // Help and version are successes; everything else is a usage error (exit 2).
            let _ = err.print();
            return if err.use_stderr() {
                Exit::Usage.code()
            } else {
                0
            };
        }
    };
    if !matches!(cli.command, Command::Mcp(_)) {
        crate::memory::exit_follows_the_call();
    }
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let now = match resolve_now(&env) {
        Ok(now) => now,
        Err(message) => {
            eprintln!("error: {message}");
            return Exit::Usage.code();
        }
    };
    let ctx = Ctx {
        env,
        cwd,
        now,
        format: cli.format,
    };
    let stderr_is_terminal = std::io::stderr().is_terminal();
    let stdin_is_terminal = std::io::stdin().is_terminal();
    // Unlocked handles (each call locks briefly): `mcp` reads and writes the same streams
    // from its async runtime, which would deadlock behind a lock held here.
    let (mut stdin, mut stdout, mut stderr) =
        (std::io::stdin(), std::io::stdout(), std::io::stderr());
    let mut io = Io {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
        stderr_is_terminal,
        stdin_is_terminal,
    };
    match run(cli, &ctx, &mut io) {
        Ok(exit) => exit.code(),
        Err(err) => {
            if common::is_broken_pipe(&err) {
                return 0;
            }
            report_internal(&err, &ctx, &mut io);
            Exit::Internal.code()
        }
    }
}

/// Parse the command line. Beyond clap's own checks, `completions` refuses an explicit
/// `--format`: the flag is global, but a completion script has no JSON or text form, and
/// silently ignoring it would hide a mistake.
///
/// A command line that names a subcommand is first parsed against the top level with only that
/// subcommand (building all nineteen costs a tool call more than the rest of its start-up); only
/// help, version, completions, errors and unknown names build the whole tree, so everything
/// clap prints comes from the whole tree. `tests::lazy_subcommands_parse_like_the_full_tree`
/// proves each lazily built subcommand equal to the one in the tree.
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    if let Some(cli) = parse_lazily(&args) {
        return Ok(cli);
    }
    parse_full(args)
}

/// The name of the subcommand the command line runs, when only `--format` precedes it.
fn subcommand_name(args: &[std::ffi::OsString]) -> Option<&str> {
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let arg = arg.to_str()?;
        if arg == "--format" {
            rest.next()?;
        } else if arg.starts_with("--format=") {
            continue;
        } else if arg.starts_with('-') {
            return None;
        } else {
            return Some(arg);
        }
    }
    None
}

/// The top level with only the subcommand `name` (`None` when there is no such subcommand).
pub fn lazy_command(name: &str) -> Option<clap::Command> {
    use clap::CommandFactory;
    let command = with_subcommand(Top::command(), name)?;
    // What the derive adds for a required subcommand field, and the attribute that can only
    // reach subcommands present when it runs.
    Some(
        command
            .subcommand_required(true)
            .arg_required_else_help(true)
            .mut_subcommands(examples::attach),
    )
}

/// A successful parse against the top level with only the named subcommand; `None` sends every
/// other case (help, version, errors, `completions`) to the whole tree.
fn parse_lazily(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::FromArgMatches;
    let name = subcommand_name(args)?;
    if name == "completions" {
        return None;
    }
    let matches = lazy_command(name)?.try_get_matches_from(args).ok()?;
    Cli::from_arg_matches(&matches).ok()
}

fn parse_full(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::parser::ValueSource;
    use clap::{CommandFactory, FromArgMatches};
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(args)?;
    if let Some(("completions", sub)) = matches.subcommand() {
        let explicit =
            |m: &clap::ArgMatches| m.value_source("format") == Some(ValueSource::CommandLine);
        if explicit(&matches) || explicit(sub) {
            let kind = clap::error::ErrorKind::ArgumentConflict;
            let message =
                "--format does not apply to `completions`: its output is always a shell script";
            return Err(match command.find_subcommand_mut("completions") {
                Some(completions) => completions.error(kind, message),
                None => command.error(kind, message),
            });
        }
    }
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// An internal failure that escaped a handler, printed in the chosen format like every other
/// outcome (the envelope, the text, or both) with its cause chain on stderr.
fn report_internal(err: &anyhow::Error, ctx: &Ctx, io: &mut Io) {
    use crate::envelope::DomainError;
    let refusal = error::Internal(format!("{err:#}")).to_refusal();
    let reply = crate::envelope::Reply::refused(refusal);
    // When stdout is gone, the stderr line is all that can still be said.
    let _ = emit(&reply, ctx, io);
    let _ = writeln!(io.stderr, "error: {err:#}");
}
