//! `pi-context dream`: one locked, gated, jailed, audited consolidation run of the notes store
//! by a real Pi dreamer (`pi -p`).
//!
//! This layer resolves flags, environment, settings and the clock; evaluates the gates; takes
//! the lock; owns the dreamer process (its own process group, killed on `--timeout`, SIGINT
//! or SIGTERM); and prints one JSON result. The lock, gates, jail, journal, audit and report
//! are `crate::dream`. Progress goes to stderr only when stderr is a terminal.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::budget::settings;
use crate::cli::budget_check::resolve_agent_dir;
use crate::cli::common::{Exit, emit, resolve_cache_dir, resolve_notes_home};
use crate::cli::{Ctx, Io};
use crate::dream::{self, audit, gates, journal, lock, playbook, report};
use crate::envelope::{Refusal, Reply};

/// The dreamer's tools: Pi's read-only built-ins plus our jailed write, edit and delete
/// (which replace the built-ins of the same names).
pub const DREAMER_TOOLS: &str = "read,grep,find,ls,write,edit,delete";
/// How long a dreamer gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(5);
/// At most this much of the dreamer's stdout (its final text) and stderr is kept.
const CAPTURE_MAX_BYTES: usize = 1024 * 1024;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Notes home; default `$PI_NOTES_HOME`, else `~/.agents/notes`. Created when missing.
    #[arg(long, value_name = "DIR")]
    pub notes_home: Option<PathBuf>,
    /// Dreamer model pattern for Pi's `--model` (beats the `pi-context.dreamer` setting).
    #[arg(long, value_name = "MODEL")]
    pub dreamer: Option<String>,
    /// Run even when the time or material gate is closed (never bypasses the lock).
    #[arg(long)]
    pub force: bool,
    /// Material gate: at least this many session homes changed since the last run.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub min_sessions: u64,
    /// Time gate: at least this many hours since the last run (decimals allowed).
    #[arg(long, value_name = "H", default_value_t = 24.0, value_parser = parse_hours)]
    pub min_hours: f64,
    /// End the dreamer after this long and record a failed run (e.g. `90s`, `30m`, `2h`).
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The Pi binary; default `$PI_CONTEXT_PI_BIN`, else `pi` on PATH.
    #[arg(long, value_name = "PATH")]
    pub pi_bin: Option<PathBuf>,
    /// Pi's agent directory (global settings); default `$PI_CODING_AGENT_DIR`, else
    /// `~/.pi/agent`. Passed to the dreamer as `PI_CODING_AGENT_DIR`.
    #[arg(long, value_name = "DIR")]
    pub agent_dir: Option<PathBuf>,
}

fn parse_hours(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(h) if h.is_finite() && h >= 0.0 => Ok(h),
        _ => Err(format!("{text:?} is not a non-negative number of hours")),
    }
}

/// `<number>[ms|s|m|h]`, a bare number being seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 90s, 30m, 2h)"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?} (use ms, s, m or h)"
            ));
        }
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!("{text:?} must be a positive duration"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The signal (SIGINT/SIGTERM) received during the run, 0 when none.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only an atomic store: the one thing that is async-signal-safe here.
    SIGNALLED.store(signal, Ordering::SeqCst);
}

/// Catch SIGINT and SIGTERM for the rest of the process, so the run can end the dreamer,
/// record the failure and release the lock instead of dying with the lock held.
fn catch_signals() {
    // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe; replacing
    // the default disposition of these two signals is this process's own business.
    unsafe {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

fn signalled() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// A random version-4 UUID from the kernel's generator (the lock token).
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// Which model the dreamer uses and why.
struct Dreamer {
    model: Option<String>,
    source: &'static str,
    warnings: Vec<String>,
}

/// `--dreamer` (non-empty) > `pi-context.dreamer` in Pi settings (global, then the invocation
/// directory's project settings winning per key) > Pi's automatic model.
fn resolve_dreamer(args: &Args, ctx: &Ctx, agent_dir: &Path) -> Dreamer {
    if let Some(model) = args.dreamer.as_deref().filter(|m| !m.is_empty()) {
        return Dreamer {
            model: Some(model.to_string()),
            source: "flag",
            warnings: Vec::new(),
        };
    }
    let (model, warnings) = dreamer_setting(agent_dir, &ctx.cwd);
    Dreamer {
        source: if model.is_some() {
            "settings"
        } else {
            "automatic"
        },
        model,
        warnings,
    }
}

/// The `pi-context.dreamer` setting from `<agent_dir>/settings.json` and the invocation
/// directory's `.pi/settings.json` (project wins), with only the warnings that concern it: an
/// unreadable settings file, or an invalid value (ignored with one warning). Other keys are
/// `budget-check`'s business and never warn here.
fn dreamer_setting(agent_dir: &Path, cwd: &Path) -> (Option<String>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut only_dreamer = |path: &Path| match settings::read_settings_file(path) {
        Ok(value) => value
            .as_ref()
            .and_then(|v| v.get("pi-context"))
            .and_then(|o| o.get("dreamer"))
            .map(|d| json!({"pi-context": {"dreamer": d}})),
        Err(warning) => {
            warnings.push(warning);
            None
        }
    };
    let global = only_dreamer(&agent_dir.join("settings.json"));
    let project = only_dreamer(&cwd.join(".pi").join("settings.json"));
    let (resolved, more) = settings::Settings::resolve(global.as_ref(), project.as_ref());
    warnings.extend(more);
    (resolved.dreamer, warnings)
}

/// How the dreamer process ended.
enum DreamerEnd {
    Completed {
        stdout: String,
    },
    Failed {
        code: &'static str,
        message: String,
        stdout: String,
    },
}

struct Progress<'a, 'b> {
    io: &'a mut Io<'b>,
}

impl Progress<'_, '_> {
    fn line(&mut self, text: &str) {
        if self.io.stderr_is_terminal {
            let _ = writeln!(self.io.stderr, "dream: {text}");
        }
    }
}

fn system_time(now: chrono::DateTime<chrono::FixedOffset>) -> SystemTime {
    let millis = now.timestamp_millis();
    if millis >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_millis(millis as u64)
    } else {
        SystemTime::UNIX_EPOCH - Duration::from_millis(millis.unsigned_abs())
    }
}

fn io_failure(message: String, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    emit(
        &Reply::refused(Refusal::plain("io_error", message)),
        ctx,
        io,
    )
}

pub fn run(args: Args, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let home = resolve_notes_home(args.notes_home.as_deref(), ctx);
    if let Err(e) = std::fs::create_dir_all(&home) {
        return io_failure(
            format!("cannot create the notes home {}: {e}", home.display()),
            ctx,
            io,
        );
    }
    let now = system_time(ctx.now);
    let last_run = match lock::last_run(&home) {
        Ok(last) => last,
        Err(e) => return io_failure(format!("cannot read the last-run sidecar: {e}"), ctx, io),
    };
    let time_gate = gates::time_gate(last_run, args.min_hours, now);
    let changed = match gates::changed_sessions(&home, last_run) {
        Ok(n) => n,
        Err(e) => return io_failure(format!("cannot scan pi/session/: {e}"), ctx, io),
    };
    let material_gate = gates::material_gate(changed, args.min_sessions);
    let gate_lines = vec![
        format!("time gate: {}", time_gate.reason),
        format!("material gate: {}", material_gate.reason),
    ];
    let gates_json = json!({
        "time": time_gate,
        "material": material_gate,
        "forced": args.force,
    });
    let open = time_gate.ok && material_gate.ok;
    if !open && !args.force {
        let data = json!({
            "outcome": "skipped",
            "notes_home": home,
            "gates": gates_json,
        });
        let text = format!("{}\nskipped: a gate is closed", gate_lines.join("\n"));
        return emit(&Reply::ok(data, text), ctx, io);
    }

    // A dreamer that cannot start would still cost a lock, a baseline and a failed commit:
    // check it first, so a misconfigured cron run changes nothing.
    let pi_bin = pi_bin(&args, ctx);
    if find_executable(&pi_bin, ctx.var("PATH").unwrap_or("")).is_none() {
        let refusal = Refusal::new(
            "dreamer_unavailable",
            format!(
                "cannot find the dreamer's Pi binary {}: set --pi-bin or PI_CONTEXT_PI_BIN, or put pi on PATH",
                pi_bin.display()
            ),
            Some(json!({"pi_bin": pi_bin, "gates": gates_json})),
        );
        return emit(&Reply::refused(refusal), ctx, io);
    }

    catch_signals();
    let token = match random_token() {
        Ok(token) => token,
        Err(e) => return io_failure(format!("cannot generate the lock token: {e}"), ctx, io),
    };
    let now_text = ctx
        .now
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
    let held = match lock::acquire(&home, std::process::id(), &token, now, &now_text) {
        Ok(held) => held,
        Err(err) => {
            let refusal = Refusal::new(
                err.code(),
                err.to_string(),
                Some(json!({
                    "lock_path": home.join(lock::LOCK_FILE),
                    "gates": gates_json,
                })),
            );
            let exit = emit(&Reply::refused(refusal), ctx, io)?;
            return Ok(match err {
                lock::LockError::Held { .. } => Exit::LockHeld,
                lock::LockError::Io { .. } => exit,
            });
        }
    };
    let mut progress = Progress { io };
    progress.line(&format!("{}; lock taken", gate_lines.join("; ")));

    let agent_dir = resolve_agent_dir(args.agent_dir.as_deref(), ctx);
    let dreamer = resolve_dreamer(&args, ctx, &agent_dir);
    for warning in &dreamer.warnings {
        let _ = writeln!(progress.io.stderr, "{warning}");
    }

    let stamp = unique_stamp(&home, &dream::stamp(ctx.now));
    let mut data = json!({
        "outcome": "failed",
        "stamp": stamp,
        "notes_home": home,
        "gates": gates_json,
        "dreamer": {"model": dreamer.model, "source": dreamer.source},
        "report_path": null,
        "baseline_commit": null,
        "final_commit": null,
        "changes": null,
        "warnings": dreamer.warnings,
    });

    // Reads defer their access bumps to the access journal; the baseline (and the dreamer,
    // which reads note files directly) must see them in the files.
    if let Some(cache_dir) = resolve_cache_dir(ctx)
        && let Err(e) = crate::notes::store::fold_pending_access(&home, &cache_dir)
    {
        let _ = writeln!(
            progress.io.stderr,
            "dream: could not fold pending access metadata into the notes: {e}"
        );
    }
    let baseline = match audit::snapshot(&home, &format!("baseline {stamp}"), ctx.now) {
        Ok(snapshot) => snapshot,
        Err(e) => {
            let _ = held.fail_release();
            let message = format!("baseline audit failed: {e}");
            let _ = writeln!(progress.io.stderr, "dream: {message}");
            let refusal = Refusal::new("baseline_failed", message, Some(data));
            let io = progress.io;
            return emit(&Reply::refused(refusal), ctx, io);
        }
    };
    data["baseline_commit"] = json!(baseline.commit);
    progress.line(&format!(
        "baseline {} ({})",
        baseline.commit,
        if baseline.created {
            "committed"
        } else {
            "unchanged"
        }
    ));

    let run_dir = tempfile::Builder::new()
        .prefix("pi-context-dream-")
        .tempdir()?;
    let journal_path = run_dir.path().join("journal.jsonl");
    let end = match signalled() {
        Some(signal) => DreamerEnd::Failed {
            code: "interrupted",
            message: format!(
                "interrupted by {} before the dreamer started",
                signal_name(signal)
            ),
            stdout: String::new(),
        },
        None => {
            progress.line("dreamer running");
            run_dreamer(
                &args,
                ctx,
                &home,
                &agent_dir,
                &dreamer,
                run_dir.path(),
                &journal_path,
            )
        }
    };

    let entries = journal::read(&journal_path).unwrap_or_default();
    let (failure, failure_message, final_text) = match &end {
        DreamerEnd::Completed { stdout } => (None, None, stdout.as_str()),
        DreamerEnd::Failed {
            code,
            message,
            stdout,
        } => (Some(*code), Some(message.as_str()), stdout.as_str()),
    };
    if let Some(message) = failure_message {
        let _ = writeln!(progress.io.stderr, "dream: {message}");
    }
    let mut failure: Option<(&'static str, String)> =
        failure.map(|code| (code, failure_message.unwrap_or_default().to_string()));
    let report_rel = format!("dreams/{stamp}.md");
    let report_path = home.join(&report_rel);
    let report_text = report::render(&report::ReportInput {
        stamp: &stamp,
        failure: failure.as_ref().map(|(code, _)| *code),
        failure_message: failure.as_ref().map(|(_, m)| m.as_str()),
        final_text,
        model: dreamer.model.as_deref(),
        baseline_commit: &baseline.commit,
        gate_lines: &gate_lines,
        forced: args.force && !open,
        entries: &entries,
    });
    let report_written = match crate::fsio::write_atomic(&report_path, report_text.as_bytes()) {
        Ok(()) => {
            data["report_path"] = json!(report_path);
            true
        }
        Err(e) => {
            let message = format!("could not write report at {}: {e}", report_path.display());
            let _ = writeln!(progress.io.stderr, "dream: {message}");
            failure.get_or_insert(("report_failed", message));
            false
        }
    };
    let message = if failure.is_some() {
        format!("dream {stamp} (failed)")
    } else {
        format!("dream {stamp}")
    };
    match audit::snapshot(&home, &message, ctx.now) {
        Ok(snapshot) => {
            data["final_commit"] = json!(snapshot.commit);
            progress.line(&format!("committed \"{message}\" {}", snapshot.commit));
        }
        Err(e) => {
            let text = format!("final audit failed: {e}");
            let _ = writeln!(progress.io.stderr, "dream: {text}");
            if report_written {
                let _ = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&report_path)
                    .and_then(|mut f| write!(f, "\n## Final audit failed\n\n{e}\n"));
            }
            failure.get_or_insert(("audit_failed", text));
        }
    }
    data["changes"] = changes(&entries);

    let release = if failure.is_some() {
        held.fail_release()
    } else {
        held.release()
    };
    if let Err(e) = release {
        let _ = writeln!(progress.io.stderr, "dream: could not release the lock: {e}");
    }
    let io = progress.io;
    match failure {
        None => {
            data["outcome"] = json!("dreamed");
            let text = render_text(&gate_lines, &data);
            emit(&Reply::ok(data, text), ctx, io)
        }
        Some((code, message)) => {
            data["outcome"] = json!("failed");
            emit(
                &Reply::refused(Refusal::new(code, message, Some(data))),
                ctx,
                io,
            )
        }
    }
}

/// The stamp, suffixed `-2`, `-3`, … when a report of that name exists (two runs within one
/// millisecond, or a fixed test clock).
#[allow(
    clippy::expect_used,
    reason = "some suffix is free because the directory is finite"
)]
fn unique_stamp(home: &Path, base: &str) -> String {
    let taken = |s: &str| home.join("dreams").join(format!("{s}.md")).exists();
    if !taken(base) {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|s| !taken(s))
        .expect("some suffix is free because the directory is finite")
}

fn changes(entries: &[journal::Entry]) -> Value {
    let applied = |op: &str| entries.iter().filter(|e| e.ok && e.op == op).count();
    json!({
        "attempted": entries.len(),
        "applied": entries.iter().filter(|e| e.ok).count(),
        "refused": entries.iter().filter(|e| !e.ok).count(),
        "written": applied("write"),
        "edited": applied("edit"),
        "deleted": applied("delete"),
    })
}

fn render_text(gate_lines: &[String], data: &Value) -> String {
    let mut lines: Vec<String> = gate_lines.to_vec();
    let changes = &data["changes"];
    lines.push(format!(
        "dreamed: {} changes applied ({} written, {} edited, {} deleted), {} refused",
        changes["applied"],
        changes["written"],
        changes["edited"],
        changes["deleted"],
        changes["refused"]
    ));
    lines.push(format!(
        "commits: baseline {} · dream {}",
        data["baseline_commit"].as_str().unwrap_or("-"),
        data["final_commit"].as_str().unwrap_or("-")
    ));
    lines.push(format!(
        "report: {}",
        data["report_path"].as_str().unwrap_or("-")
    ));
    lines.join("\n")
}

/// Start `pi -p` as the dreamer and wait for it, ending it on timeout or signal.
/// The Pi binary: `--pi-bin`, else `PI_CONTEXT_PI_BIN`, else `pi` (looked up on PATH).
fn pi_bin(args: &Args, ctx: &Ctx) -> PathBuf {
    args.pi_bin
        .clone()
        .or_else(|| ctx.var_non_empty("PI_CONTEXT_PI_BIN").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("pi"))
}

/// Where `program` would be executed from: itself when it names a path, else the first
/// executable regular file of that name in `path_var` (as `execvp` searches).
fn find_executable(program: &Path, path_var: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 || program.is_absolute() {
        return runnable(program).then(|| program.to_path_buf());
    }
    std::env::split_paths(path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| runnable(candidate))
}

#[allow(
    clippy::expect_used,
    reason = "status is set when the loop ended without ended_by"
)]
fn run_dreamer(
    args: &Args,
    ctx: &Ctx,
    home: &Path,
    agent_dir: &Path,
    dreamer: &Dreamer,
    run_dir: &Path,
    journal_path: &Path,
) -> DreamerEnd {
    let failed = |code, message: String| DreamerEnd::Failed {
        code,
        message,
        stdout: String::new(),
    };
    let tools = run_dir.join("dream-tools.ts");
    if let Err(e) = std::fs::write(&tools, playbook::TOOLS_EXTENSION) {
        return failed(
            "dreamer_unavailable",
            format!("cannot stage the dreamer's tools: {e}"),
        );
    }
    // Always this very binary: the jail the tools reach must be the one this run documents,
    // whatever `PI_CONTEXT_BIN` says in the caller's environment.
    let self_bin = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            return failed(
                "dreamer_unavailable",
                format!("cannot locate the pi-context binary for the dreamer's tools: {e}"),
            );
        }
    };
    let pi_bin = pi_bin(args, ctx);
    let store_wide = ctx.cwd.starts_with(home)
        || std::fs::canonicalize(&ctx.cwd)
            .ok()
            .zip(std::fs::canonicalize(home).ok())
            .is_some_and(|(cwd, home)| cwd.starts_with(home));
    let project_key = (!store_wide).then(|| crate::notes::project_key(&ctx.cwd));
    let now_text = ctx
        .now
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
    let task = playbook::task(&playbook::RunFacts {
        notes_home: home,
        invocation_dir: &ctx.cwd,
        project_key: project_key.as_deref(),
        store_wide,
        now: &now_text,
    });

    let mut command = Command::new(&pi_bin);
    command
        .args(["-p", "--no-session", "--no-extensions"])
        .arg("-e")
        .arg(&tools)
        .args(["--tools", DREAMER_TOOLS, "--thinking", "off"])
        .args([
            "--no-skills",
            "--no-prompt-templates",
            "--no-themes",
            "--no-context-files",
        ]);
    if let Some(model) = &dreamer.model {
        command.arg("--model").arg(model);
    }
    command
        .arg("--")
        .arg(&task)
        .env_clear()
        .envs(&ctx.env)
        .env("PI_NOTES_HOME", home)
        .env("PI_CONTEXT_DREAM_JOURNAL", journal_path)
        .env("PI_CONTEXT_BIN", &self_bin)
        .env("PI_CODING_AGENT_DIR", agent_dir)
        .current_dir(&ctx.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    {
        use std::os::unix::process::CommandExt;
        // Its own process group, so a kill reaches Pi and every tool process it started, and
        // a terminal's Ctrl-C reaches only us (we then end the group ourselves).
        command.process_group(0);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return failed(
                "dreamer_unavailable",
                format!("cannot start the dreamer {}: {e}", pi_bin.display()),
            );
        }
    };
    let stdout = capture(child.stdout.take());
    let stderr = capture(child.stderr.take());
    let deadline = Instant::now() + args.timeout;
    let mut ended_by: Option<(&'static str, String)> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(e) => {
                ended_by = Some((
                    "dreamer_failed",
                    format!("cannot wait for the dreamer: {e}"),
                ));
                break None;
            }
        }
        if let Some(signal) = signalled() {
            ended_by = Some((
                "interrupted",
                format!(
                    "interrupted by {}; the dreamer was ended",
                    signal_name(signal)
                ),
            ));
            break None;
        }
        if Instant::now() >= deadline {
            ended_by = Some((
                "timeout",
                format!(
                    "the dreamer ran longer than --timeout ({}s) and was ended",
                    args.timeout.as_secs_f64()
                ),
            ));
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if status.is_none() {
        end_group(&mut child);
    }
    let stdout_text = stdout.finish();
    let stderr_text = stderr.finish();
    if let Some((code, message)) = ended_by {
        return DreamerEnd::Failed {
            code,
            message,
            stdout: stdout_text,
        };
    }
    let status = status.expect("status is set when the loop ended without ended_by");
    if status.success() {
        DreamerEnd::Completed {
            stdout: stdout_text,
        }
    } else {
        let tail = tail_lines(&stderr_text, 20);
        DreamerEnd::Failed {
            code: "dreamer_failed",
            message: format!(
                "dreamer failed ({status}){}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            ),
            stdout: stdout_text,
        }
    }
}

/// TERM the dreamer's process group, then KILL it after a grace period.
fn end_group(child: &mut std::process::Child) {
    let group = child.id() as libc::pid_t;
    // SAFETY: plain kill(2) on the process group we created for the child.
    unsafe {
        libc::kill(-group, libc::SIGTERM);
    }
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            // The leader is gone; make sure no straggler of its group survives.
            // SAFETY: as above.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
    let _ = child.wait();
}

/// A pipe drained on its own thread into a bounded buffer.
struct Captured {
    buffer: Arc<Mutex<Vec<u8>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[allow(clippy::expect_used, reason = "no panics while holding the buffer")]
fn capture(pipe: Option<impl Read + Send + 'static>) -> Captured {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let thread = pipe.map(|mut pipe| {
        let buffer = Arc::clone(&buffer);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let mut held = buffer.lock().expect("no panics while holding the buffer");
                let room = CAPTURE_MAX_BYTES.saturating_sub(held.len());
                held.extend_from_slice(&chunk[..n.min(room)]);
            }
        })
    });
    Captured { buffer, thread }
}

impl Captured {
    /// What was read, waiting briefly for the pipe to close (a straggler that escaped the
    /// process group could keep it open forever).
    #[allow(clippy::expect_used, reason = "no panics while holding the buffer")]
    fn finish(mut self) -> String {
        if let Some(thread) = self.thread.take() {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !thread.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
        let bytes = self
            .buffer
            .lock()
            .expect("no panics while holding the buffer");
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_hours("-1").is_err());
        assert_eq!(parse_hours("0.5").unwrap(), 0.5);
    }

    #[test]
    fn token_is_a_v4_uuid() {
        let t = random_token().unwrap();
        let re = regex::Regex::new(
            "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        )
        .unwrap();
        assert!(re.is_match(&t), "{t}");
    }
}
