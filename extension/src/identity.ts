// Identity of one call, taken from the live Pi context at the moment of the call (never
// cached: the model, the session and the leaf change under us). Turned into the CLI flags the
// `pi-context` commands share. Slugging, project keys and homes are the binary's business.
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";

export interface Identity {
	sessionId: string;
	cwd: string;
	/** The active model id (`provider/id` form is fine: the binary slugs the last segment). */
	model: string | undefined;
	/** `PI_NOTES_AGENT` when set; the binary defaults to `anonymous`. */
	agent: string | undefined;
}

export function identityOf(ctx: ExtensionContext): Identity {
	const agent = process.env.PI_NOTES_AGENT;
	return {
		sessionId: ctx.sessionManager.getSessionId(),
		cwd: ctx.sessionManager.getCwd?.() ?? ctx.cwd,
		model: ctx.model?.id,
		agent: agent && agent.trim() !== "" ? agent : undefined,
	};
}

/** `--session-id … --cwd … [--model …] [--agent …]` for notes and boot commands. */
export function identityFlags(id: Identity): string[] {
	const flags = ["--session-id", id.sessionId, "--cwd", id.cwd];
	if (id.model) flags.push("--model", id.model);
	if (id.agent) flags.push("--agent", id.agent);
	return flags;
}

/**
 * `--session FILE --leaf ID` for history commands. Pi writes the session file synchronously
 * as entries are appended, so the file is current when a tool runs. A session that has no file
 * (`--no-session`, or not yet flushed) is written to a temporary snapshot first, so history
 * tools work the same everywhere; `dispose()` removes that snapshot.
 */
export function sessionFlags(ctx: ExtensionContext): { flags: string[]; dispose(): void } {
	const sm = ctx.sessionManager;
	const leaf = sm.getLeafId();
	const file = sm.getSessionFile();
	let path = file;
	let dir: string | undefined;
	if (!file || !existsNonEmpty(file)) {
		dir = mkdtempSync(join(tmpdir(), "pi-context-session-"));
		path = join(dir, "session.jsonl");
		const lines = [sm.getHeader(), ...sm.getEntries()].filter((e) => e != null).map((e) => JSON.stringify(e));
		writeFileSync(path, lines.join("\n") + "\n");
	}
	const flags = ["--session", path as string];
	if (leaf) flags.push("--leaf", leaf);
	return {
		flags,
		dispose() {
			if (dir) rmSync(dir, { recursive: true, force: true });
		},
	};
}

function existsNonEmpty(path: string): boolean {
	try {
		return statSync(path).size > 0;
	} catch {
		return false;
	}
}
