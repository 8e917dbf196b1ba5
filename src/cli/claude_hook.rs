//! `pi-context claude-hook`: Claude Code's `SessionStart` hook. Reads the hook input on stdin,
//! records the host's current session for `pi-context mcp --host-state` (the server's own
//! `CLAUDE_CODE_SESSION_ID` goes stale after /clear; the hook's `session_id` does not), and
//! answers with Claude Code's hook envelope carrying the boot block as additional context,
//! rendered by `boot-render` within a character budget (Claude Code caps hook output at
//! 10,000 characters).
//!
//! This is a host adapter: its stdout is Claude Code's hook protocol, not our envelope.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::common::{CacheArgs, Exit, IdentityArgs, NotesArgs, absolute_from, read_request};
use super::error::RequestError;
use super::mcp::{HostState, host_state_file, host_tool_names};
use super::{Answer, CmdError, Ctx, Io, boot_render};

/// The MCP tool-name prefix Claude Code gives the plugin's server (`pi-context` plugin,
/// `notes` server).
pub const CLAUDE_TOOL_PREFIX: &str = "mcp__plugin_pi-context_notes__";

/// Claude Code SessionStart hook: print the boot block as additional context.
///
/// Reads the hook input ({"session_id", "transcript_path", "cwd", "hook_event_name", "source",
/// "model"?, …}) on stdin and prints {"hookSpecificOutput": {"hookEventName": "SessionStart",
/// "additionalContext": <boot block>}}. With --host-state, records the session for
/// `pi-context mcp --host-state` (keyed by Claude Code's process id).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Identity; --session-id and --cwd default to the hook's session_id and cwd.
    #[command(flatten)]
    pub identity: IdentityArgs,
    /// Directory shared with `pi-context mcp --host-state`: the current session is written to
    /// `<DIR>/<parent pid>.json`.
    #[arg(long, value_name = "DIR")]
    pub host_state: Option<PathBuf>,
    /// Character budget of the boot block (Claude Code caps hook output at 10,000).
    #[arg(long, value_name = "N", default_value_t = 9000)]
    pub max_chars: usize,
    /// Prefix of the MCP tool names the boot refers to.
    #[arg(long, value_name = "PREFIX", default_value = CLAUDE_TOOL_PREFIX)]
    pub tool_prefix: String,
}

#[derive(Debug, Deserialize)]
struct HookInput {
    session_id: String,
    #[serde(default)]
    transcript_path: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    hook_event_name: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    model: Option<Value>,
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> Result<Answer, CmdError> {
    let input: HookInput = read_request(io)?;
    if let Some(event) = input
        .hook_event_name
        .as_deref()
        .filter(|e| *e != "SessionStart")
    {
        let problem = format!("claude-hook handles SessionStart only (got {event})");
        return Err(RequestError::Invalid(problem).into());
    }
    // `model` is a string in some Claude Code versions and {"id", "display_name"} in others.
    let model = match &input.model {
        Some(Value::String(id)) => Some(id.clone()),
        Some(Value::Object(m)) => m.get("id").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    let mut identity = args.identity.clone();
    identity.session_id = Some(input.session_id.clone());
    if identity.cwd.is_none() && identity.project_key.is_none() {
        identity.cwd = input.cwd.as_ref().map(PathBuf::from);
    }
    if identity.model.is_none() {
        identity.model = model.clone();
    }
    if let Some(dir) = &args.host_state {
        let state = HostState {
            session_id: input.session_id.clone(),
            transcript_path: input.transcript_path.clone(),
            cwd: input.cwd.clone(),
            model,
            source: input.source.clone(),
        };
        let file = host_state_file(
            &absolute_from(&ctx.cwd, dir),
            std::os::unix::process::parent_id(),
        );
        let bytes = serde_json::to_vec(&state)?;
        if let Err(e) = crate::fsio::write_atomic(&file, &bytes) {
            // The boot still goes out; the MCP server then keeps its fallback session.
            writeln!(
                io.stderr,
                "pi-context claude-hook: could not record the session in {}: {e}",
                file.display()
            )?;
        }
    }
    let render = boot_render::Args {
        notes: NotesArgs {
            identity,
            cache: CacheArgs::default(),
        },
        window_id: None,
        previous_window_id: None,
        opened_at: None,
        max_chars: Some(args.max_chars),
    };
    // boot-render in-process: its request on a stdin of its own, its refusal (typed) ours.
    let request = json!({"tools": host_tool_names(&args.tool_prefix, false)}).to_string();
    let mut stdin = request.as_bytes();
    let mut unused = Vec::new();
    let boot = boot_render::run(
        render,
        ctx,
        &mut Io {
            stdin: &mut stdin,
            stdout: &mut unused,
            stderr: &mut *io.stderr,
            stderr_is_terminal: io.stderr_is_terminal,
            stdin_is_terminal: false,
        },
    )?;
    let output = json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": boot.text,
        }
    });
    writeln!(io.stdout, "{output}")?;
    io.stdout.flush()?;
    Ok(Answer::Written(Exit::Ok))
}
