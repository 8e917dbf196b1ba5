//! `pi-context mcp`: a stdio MCP server (on `rmcp`, the official Rust MCP SDK) that gives any
//! MCP host the notes tools, the history tools of one Pi session, and the boot block.
//!
//! Every tool call runs the CLI command of the same name in-process, through [`crate::cli::run`]
//! with the tool arguments as the request bytes and `--format both`: the same request reader,
//! the same handler, the same 32 KiB budget. The envelope is split into the MCP result:
//! `structuredContent` = `data` (or the `error` object), `content` = the `text` the command
//! prints with `--format text`, `isError` exactly when `ok` is false.
//!
//! The process stdin/stdout carry JSON-RPC, one message per line; logs go to stderr only.

mod stdio;
pub mod tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult, ListToolsResult,
    PaginatedRequestParams, Prompt, PromptMessage, Role, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use super::common::{CacheArgs, Exit, Format, IdentityArgs, NotesArgs, absolute_from};
use super::error::Internal;
use super::history::SessionArgs;
use super::{Answer, Cli, CmdError, Command, Ctx, Io, boot_render, resolve_now};
use crate::envelope::DomainError;
use crate::protocol::ToolNames;

/// The name of the boot-block prompt.
pub const BOOT_PROMPT: &str = "boot";

/// Serve pi-context's notes (and one Pi session's history) to an MCP host over stdio.
///
/// One process per host session: JSON-RPC on stdin/stdout, one message per line, logs on
/// stderr; it exits when stdin closes. Tools: notes_write, notes_read, notes_update, notes_list,
/// notes_search, and with --session the four history_* tools. Prompt: "boot" (the boot block).
/// Without --session-id the server names a session home of its own for this process.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub notes: NotesArgs,
    /// A Pi session file (JSONL): enables history_windows, history_list, history_read and
    /// history_search over it (never modified).
    #[arg(long, value_name = "FILE")]
    pub session: Option<PathBuf>,
    /// With --session: entry id of the leaf whose path is the active branch [default: the
    /// file's last entry].
    #[arg(long, value_name = "ID", requires = "session")]
    pub leaf: Option<String>,
    /// With --session: read the whole file instead of using the session index.
    #[arg(long, requires = "session")]
    pub no_index: bool,
    /// Directory where a host hook records the host's current session (`claude-hook`):
    /// each call reads `<DIR>/<parent pid>.json` and, when present, its `session_id` names
    /// the session home (it follows /clear; --session-id is only the fallback).
    #[arg(long, value_name = "DIR")]
    pub host_state: Option<PathBuf>,
}

/// The server's fixed configuration, shared by every request.
struct Inner {
    env: BTreeMap<String, String>,
    cwd: PathBuf,
    identity: IdentityArgs,
    cache: CacheArgs,
    session: Option<SessionArgs>,
    /// `<host-state>/<parent pid>.json`, when `--host-state` is given.
    host_state_file: Option<PathBuf>,
    /// The session id this process named itself (no `--session-id`).
    own_session_id: Option<String>,
    tools: Vec<Tool>,
    instructions: String,
}

/// The `rmcp` handler: cheap to clone, one per connection.
#[derive(Clone)]
pub struct Server(Arc<Inner>);

impl Server {
    /// Build the server from its flags and the process world.
    pub fn new(args: Args, ctx: &Ctx) -> Server {
        let mut identity = args.notes.identity;
        let own_session_id = identity.session_id.is_none().then(|| {
            let id = format!("mcp-{}", uuid::Uuid::new_v4());
            identity.session_id = Some(id.clone());
            id
        });
        let session = args.session.map(|session| SessionArgs {
            session: absolute_from(&ctx.cwd, &session),
            leaf: args.leaf,
            no_index: args.no_index,
        });
        let host_state_file = args.host_state.map(|dir| {
            host_state_file(
                &absolute_from(&ctx.cwd, &dir),
                std::os::unix::process::parent_id(),
            )
        });
        let with_history = session.is_some();
        let tools = tools::TOOLS
            .iter()
            .filter(|t| with_history || t.family == tools::Family::Notes)
            .map(tools::ToolSpec::tool)
            .collect();
        let instructions = instructions(
            own_session_id.as_deref(),
            with_history,
            host_state_file.is_some(),
        );
        Server(Arc::new(Inner {
            env: ctx.env.clone(),
            cwd: ctx.cwd.clone(),
            identity,
            cache: args.notes.cache,
            session,
            host_state_file,
            own_session_id,
            tools,
            instructions,
        }))
    }

    /// The session id this process named itself, if it did.
    pub fn own_session_id(&self) -> Option<&str> {
        self.0.own_session_id.as_deref()
    }

    /// The instructions sent with `initialize`.
    pub fn instructions(&self) -> &str {
        &self.0.instructions
    }
}

fn instructions(own_session: Option<&str>, with_history: bool, host_state: bool) -> String {
    let mut text = String::from(
        "pi-context notes: durable markdown notes shared by every agent that uses the same notes \
home (Pi, Claude Code, Codex, Cursor, ...). Addresses: a bare path is this session's home; \
@project/... holds durable decisions about this project; @human/... guidance about the human; \
@self/... your own notebook across projects; @model/... the notebook of your current model. \
Write with notes_write, change with notes_update, find with notes_list and notes_search, read with \
notes_read. The prompt \"boot\" renders the notes index (the MAPs and the newest notes of each home).",
    );
    if with_history {
        text.push_str(
            " history_windows, history_list, history_search and history_read read the Pi session \
this server was started with.",
        );
    }
    match (own_session, host_state) {
        (Some(id), true) => text.push_str(&format!(
            " Bare addresses go to the host's current session as its hook recorded it; until it \
has, to a session home this server named for itself ({id}), which no other session sees."
        )),
        (Some(id), false) => text.push_str(&format!(
            " Bare addresses go to a session home this server named for itself ({id}): it \
lasts as long as this server process and no other session sees it, so keep anything \
worth keeping under @project/, @self/, @human/ or @model/."
        )),
        (None, _) => {}
    }
    text
}

impl Inner {
    /// The identity flags for one call: the host hook's current session id wins when recorded.
    fn identity(&self) -> IdentityArgs {
        let mut identity = self.identity.clone();
        if let Some(state) = self.host_state_file.as_deref().and_then(read_host_state) {
            identity.session_id = Some(state.session_id);
            if identity.model.is_none() {
                identity.model = state.model;
            }
        }
        identity
    }

    fn run_command(&self, command: Command, request: &[u8]) -> Value {
        run_in_process(command, request, &self.env, &self.cwd)
    }

    fn call_tool(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        let unknown = || McpError::invalid_params(format!("unknown tool: {name}"), None);
        let spec = tools::find(name, self.session.is_some()).ok_or_else(unknown)?;
        let command = spec
            .command(&self.identity(), self.cache, self.session.as_ref())
            .ok_or_else(unknown)?;
        let request = serde_json::to_vec(&Value::Object(arguments.unwrap_or_default()))
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(tool_result(self.run_command(command, &request)))
    }

    fn boot_prompt(&self) -> Result<GetPromptResult, McpError> {
        let args = boot_render::Args {
            notes: NotesArgs {
                identity: self.identity(),
                cache: self.cache,
            },
            window_id: None,
            previous_window_id: None,
            opened_at: None,
            max_chars: None,
        };
        let request = json!({"tools": host_tool_names("", self.session.is_some())});
        let envelope = self.run_command(Command::BootRender(args), request.to_string().as_bytes());
        let text = envelope["text"].as_str().unwrap_or_default().to_string();
        if envelope["ok"] != json!(true) {
            return Err(McpError::internal_error(text, None));
        }
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).with_description(
                "The pi-context boot block: identity, notes protocol and notes index",
            ),
        )
    }
}

/// Run one CLI command in-process with `request` as its stdin and return its envelope
/// (`--format both`: the envelope plus the top-level `text`); what the command writes on
/// stderr is passed on to the process stderr. "Now" is taken afresh for every call.
pub fn run_in_process(
    command: Command,
    request: &[u8],
    env: &BTreeMap<String, String>,
    cwd: &Path,
) -> Value {
    let now = match resolve_now(env) {
        Ok(now) => now,
        Err(message) => return internal_envelope(&message),
    };
    let ctx = Ctx {
        env: env.clone(),
        cwd: cwd.to_path_buf(),
        now,
        format: Format::Both,
    };
    let cli = Cli {
        format: Format::Both,
        command,
    };
    let super::Captured {
        outcome,
        stdout,
        stderr,
    } = super::run_captured(cli, &ctx, request);
    if !stderr.is_empty() {
        eprint!("{}", String::from_utf8_lossy(&stderr));
    }
    match outcome {
        Ok(_) => serde_json::from_slice(&stdout).unwrap_or_else(|e| {
            internal_envelope(&format!("the command printed no envelope: {e}"))
        }),
        Err(err) => {
            eprintln!("pi-context: error: {err:#}");
            internal_envelope(&format!("{err:#}"))
        }
    }
}

/// The tool-name bindings a non-Pi host's boot refers to: the MCP tool names behind `prefix`;
/// history names only when the history tools exist; no reset tools (Pi-only).
pub fn host_tool_names(prefix: &str, with_history: bool) -> ToolNames {
    let name = |n: &str| {
        if n.is_empty() {
            String::new()
        } else {
            format!("{prefix}{n}")
        }
    };
    let history = |n: &str| if with_history { name(n) } else { String::new() };
    ToolNames {
        notes: name("notes_*"),
        notes_list: name("notes_list"),
        history: history("history_*"),
        history_windows: history("history_windows"),
        history_list: history("history_list"),
        history_search: history("history_search"),
        history_read: history("history_read"),
        remaining: String::new(),
        wipe: String::new(),
    }
}

/// What a host hook recorded about the host's current session (`claude-hook`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostState {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The host state file of the process whose parent is `parent_pid`.
pub fn host_state_file(dir: &Path, parent_pid: u32) -> PathBuf {
    dir.join(format!("{parent_pid}.json"))
}

/// The host state recorded in `file`, if it is there and well-formed.
pub fn read_host_state(file: &Path) -> Option<HostState> {
    let bytes = std::fs::read(file).ok()?;
    serde_json::from_slice::<HostState>(&bytes)
        .ok()
        .filter(|s| !s.session_id.is_empty())
}

fn internal_envelope(message: &str) -> Value {
    let refusal = Internal(message.to_string()).to_refusal();
    let mut envelope = refusal.to_envelope();
    envelope["text"] = json!(refusal.render_text());
    envelope
}

/// Split a `--format both` envelope into an MCP tool result.
pub fn tool_result(mut envelope: Value) -> CallToolResult {
    let ok = envelope["ok"] == json!(true);
    let text = match envelope["text"].take() {
        Value::String(text) => text,
        _ => String::new(),
    };
    let structured = if ok {
        envelope["data"].take()
    } else {
        envelope["error"].take()
    };
    let mut result = if ok {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(structured);
    result
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("pi-context", env!("CARGO_PKG_VERSION")))
        .with_instructions(self.0.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.0.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.0.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let inner = self.0.clone();
        // The handlers do blocking file I/O under the store's locks: off the reactor, so calls
        // from one host run concurrently.
        tokio::task::spawn_blocking(move || inner.call_tool(&request.name, request.arguments))
            .await
            .map_err(|e| McpError::internal_error(format!("tool call failed: {e}"), None))?
            .map(CallToolResponse::from)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            BOOT_PROMPT,
            Some(
                "The boot block: who you are, how notes work, and the index of your notes (MAPs and newest notes of each home)",
            ),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != BOOT_PROMPT {
            return Err(McpError::invalid_params(
                format!("unknown prompt: {}", request.name),
                None,
            ));
        }
        let inner = self.0.clone();
        tokio::task::spawn_blocking(move || inner.boot_prompt())
            .await
            .map_err(|e| McpError::internal_error(format!("prompt failed: {e}"), None))?
            .map(GetPromptResponse::from)
    }
}

pub fn run(args: Args, ctx: &Ctx, _io: &mut Io) -> Result<Answer, CmdError> {
    let server = Server::new(args, ctx);
    if let Some(id) = server.own_session_id() {
        eprintln!(
            "pi-context mcp: no --session-id: bare addresses use this process's own session home {id}"
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(server, tokio::io::stdin(), tokio::io::stdout()))?;
    // Stdin may still be held by tokio's blocking reader; do not wait for it.
    runtime.shutdown_background();
    Ok(Answer::Written(Exit::Ok))
}

/// Serve one connection over a line-delimited JSON-RPC byte stream until the input ends.
pub async fn serve<R, W>(server: Server, input: R, output: W) -> anyhow::Result<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (transport, bridge) = stdio::bridge(input, output);
    let running = server.serve(transport).await;
    match running {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => eprintln!("pi-context mcp: connection ended before initialisation: {e}"),
    }
    bridge.finish().await;
    Ok(())
}
