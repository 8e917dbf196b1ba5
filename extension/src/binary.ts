// Finding and running the `pi-context` binary. This module owns the one process call per
// decision: it spawns the binary with `--format both`, writes the JSON request on stdin, and
// parses the envelope (structured data plus the model-facing text of the same result). It holds
// no domain logic and never interprets `data`: callers pass it through.
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The envelope every `pi-context` command prints, plus the `text` of `--format both`. */
export type Envelope =
	| { ok: true; data: unknown; text: string }
	| { ok: false; error: { code: string; message: string; details?: unknown }; text: string };

/** The one text for a binary that cannot be found, with how to provide one. */
export const BINARY_NOT_FOUND =
	"pi-context binary not found: set PI_CONTEXT_BIN, build it with `cargo build --release` in the pi-context checkout, or install it with `cargo install --path .`";

/** Raised when the binary cannot be found or run at all (not a refusal: refusals are envelopes). */
export class BinaryUnavailable extends Error {
	constructor(message: string) {
		super(message);
		this.name = "BinaryUnavailable";
	}
}

function executable(path: string): boolean {
	try {
		accessSync(path, constants.X_OK);
		return true;
	} catch {
		return false;
	}
}

/** Where a binary was found: the variable, the PATH, or this checkout's release build. */
export type BinarySource = "PI_CONTEXT_BIN" | "PATH" | "checkout";

/**
 * Where the binary is, and how it was found: `PI_CONTEXT_BIN`, else the first `pi-context` on
 * `PATH` (what `cargo install` put there), else the checkout's `target/release/pi-context` next
 * to this extension. The installed binary wins over the checkout's build on purpose: a release
 * build left behind by an old `cargo build` must not silently shadow the one the user
 * installed; to run a checkout build, point `PI_CONTEXT_BIN` at it. `undefined` when none exists.
 */
export function findBinary(env: NodeJS.ProcessEnv = process.env): { path: string; source: BinarySource } | undefined {
	const explicit = env.PI_CONTEXT_BIN;
	if (explicit && explicit.trim() !== "") return { path: explicit, source: "PI_CONTEXT_BIN" };
	for (const dir of (env.PATH ?? "").split(delimiter)) {
		if (!dir) continue;
		const candidate = join(dir, "pi-context");
		if (executable(candidate)) return { path: candidate, source: "PATH" };
	}
	// `import.meta.dirname` is undefined under Pi's loader; a URL relative to this module works.
	const checkout = fileURLToPath(new URL("../../target/release/pi-context", import.meta.url));
	if (executable(checkout)) return { path: checkout, source: "checkout" };
	return undefined;
}

/** The path `findBinary` finds. */
export function locateBinary(env: NodeJS.ProcessEnv = process.env): string | undefined {
	return findBinary(env)?.path;
}

/**
 * The binary a call would run when it exists and is executable, else undefined (an explicit
 * `PI_CONTEXT_BIN` naming nothing runnable counts as missing).
 */
export function usableBinary(env: NodeJS.ProcessEnv = process.env): string | undefined {
	const bin = locateBinary(env);
	return bin !== undefined && executable(bin) ? bin : undefined;
}

export interface RunOptions {
	/** Aborting kills the child (Esc in Pi). */
	signal?: AbortSignal;
	/** Working directory of the child (the session's cwd). */
	cwd?: string;
	/** Override the binary (tests, bench). */
	bin?: string;
}

/** How long one call may take before it is killed; every command is meant to take milliseconds. */
const CALL_TIMEOUT_MS = 60_000;

/**
 * Run `pi-context --format both <command> <flags…>` with `request` as JSON on stdin and return
 * the parsed envelope. A refusal is a normal return (`ok:false`); a missing binary raises
 * `BinaryUnavailable`; a crash without an envelope raises an Error carrying stderr.
 */
export function runPiContext(command: string, flags: string[], request: unknown, options: RunOptions = {}): Promise<Envelope> {
	const bin = options.bin ?? locateBinary();
	if (!bin) {
		return Promise.reject(
			new BinaryUnavailable(BINARY_NOT_FOUND),
		);
	}
	return new Promise((resolve, reject) => {
		const child = spawn(bin, ["--format", "both", command, ...flags], {
			cwd: options.cwd,
			signal: options.signal,
			stdio: ["pipe", "pipe", "pipe"],
		});
		// Our own timer rather than spawn's `timeout`: Node leaves that one armed when the spawn
		// itself fails (ENOENT emits no exit), which kept Pi alive for the whole timeout.
		const timer = setTimeout(() => child.kill("SIGKILL"), CALL_TIMEOUT_MS);
		timer.unref();
		const out: Buffer[] = [];
		const err: Buffer[] = [];
		child.stdout.on("data", (b: Buffer) => out.push(b));
		child.stderr.on("data", (b: Buffer) => err.push(b));
		// A child that exits before reading stdin closes the pipe; that is not our failure.
		child.stdin.on("error", () => undefined);
		child.on("error", (e: NodeJS.ErrnoException) => {
			clearTimeout(timer);
			if (e.code === "ENOENT" || e.code === "EACCES") {
				const source = options.bin ? "" : process.env.PI_CONTEXT_BIN ? " (from PI_CONTEXT_BIN)" : "";
				reject(
					new BinaryUnavailable(
						`pi-context binary not runnable at ${bin}${source} (${e.code}): point PI_CONTEXT_BIN at a built pi-context, build it with \`cargo build --release\` in the pi-context checkout, or install it with \`cargo install --path .\``,
					),
				);
			} else {
				reject(e);
			}
		});
		child.on("close", (code, signal) => {
			clearTimeout(timer);
			const stdout = Buffer.concat(out).toString("utf8").trim();
			const stderr = Buffer.concat(err).toString("utf8").trim();
			let parsed: unknown;
			try {
				parsed = JSON.parse(stdout);
			} catch {
				reject(new Error(`pi-context ${command} failed (exit ${code ?? signal}): ${stderr || stdout || "no output"}`));
				return;
			}
			const env = parsed as Partial<Envelope> & { text?: unknown };
			if (typeof env !== "object" || env === null || typeof env.ok !== "boolean") {
				reject(new Error(`pi-context ${command} printed no envelope (exit ${code ?? signal})`));
				return;
			}
			if (typeof env.text !== "string") {
				// An envelope without text (an older binary, or an internal failure written
				// before formatting): render the refusal line the protocol defines.
				env.text = env.ok ? JSON.stringify((env as { data?: unknown }).data ?? null, null, 2) : refusalText(env as Envelope & { ok: false });
			}
			resolve(env as Envelope);
		});
		child.stdin.end(JSON.stringify(request ?? {}));
	});
}

function refusalText(env: { error?: { code?: string; message?: string; details?: unknown } }): string {
	const e = env.error ?? {};
	const details = e.details === undefined ? "" : ` ${JSON.stringify(e.details)}`;
	return `error: ${e.code ?? "internal"}: ${e.message ?? "no message"}${details}`;
}

/** The envelope without the `text` field: what tool results keep as `details`. */
export function withoutText(env: Envelope): Omit<Envelope, "text"> {
	const { text: _text, ...rest } = env;
	return rest as Omit<Envelope, "text">;
}
