// The dreamer's write, edit and delete tools for `pi-context dream`. They replace Pi's
// built-in write and edit: every call goes through `pi-context dream-fs`, the one Rust jail
// (notes home only, no symlink or hard-link escapes, delete only crumpled notes), which also
// journals the attempt for the dream report. No decision is taken here.
//
// `pi-context dream` embeds this file, writes it to its per-run directory and loads it with
// `pi -e`; it passes PI_CONTEXT_BIN (its own binary), PI_NOTES_HOME and
// PI_CONTEXT_DREAM_JOURNAL in the environment.
import { spawn } from "node:child_process";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

type Envelope = { ok: boolean; data?: unknown; error?: { code: string; message: string }; text?: string };

function runDreamFs(op: string, request: unknown, signal: AbortSignal | undefined): Promise<Envelope> {
	const bin = process.env.PI_CONTEXT_BIN || "pi-context";
	const args = ["--format", "both", "dream-fs", op];
	if (process.env.PI_NOTES_HOME) args.push("--notes-home", process.env.PI_NOTES_HOME);
	if (process.env.PI_CONTEXT_DREAM_JOURNAL) args.push("--journal", process.env.PI_CONTEXT_DREAM_JOURNAL);
	return new Promise((resolve) => {
		const child = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"], signal });
		let out = "";
		let err = "";
		child.stdout.on("data", (d) => (out += d));
		child.stderr.on("data", (d) => (err += d));
		child.on("error", (e) =>
			resolve({ ok: false, error: { code: "spawn_failed", message: `cannot run ${bin}: ${e.message}` } }),
		);
		child.on("close", (code) => {
			try {
				resolve(JSON.parse(out) as Envelope);
			} catch {
				resolve({ ok: false, error: { code: "bad_output", message: `${bin} dream-fs ${op} exited ${code}: ${err || out}` } });
			}
		});
		child.stdin.end(JSON.stringify(request));
	});
}

function toResult(envelope: Envelope) {
	const text = envelope.text ?? (envelope.ok ? "ok" : `error: ${envelope.error?.code}: ${envelope.error?.message}`);
	return {
		content: [{ type: "text" as const, text }],
		details: envelope.ok ? envelope.data : envelope.error,
		isError: !envelope.ok,
	};
}

export default function (pi: ExtensionAPI): void {
	const home = process.env.PI_NOTES_HOME ?? "the notes home";
	const where = `Paths are relative to the notes home ${home} or absolute inside it; anything else is refused.`;

	pi.registerTool({
		name: "write",
		label: "write",
		description: `Create or replace a file under the notes home with the given content. ${where}`,
		promptSnippet: "write: create or replace a note file under the notes home",
		executionMode: "sequential",
		parameters: Type.Object({
			path: Type.String({ description: "File path under the notes home" }),
			content: Type.String({ description: "The whole new file content" }),
		}),
		async execute(_id, params, signal) {
			return toResult(await runDreamFs("write", { path: params.path, content: params.content }, signal));
		},
	});

	pi.registerTool({
		name: "edit",
		label: "edit",
		description: `Replace exact text in a file under the notes home. Each oldText must occur exactly once; all edits apply together or none does. ${where}`,
		promptSnippet: "edit: exact-text replacements in a note file under the notes home",
		executionMode: "sequential",
		parameters: Type.Object({
			path: Type.String({ description: "File path under the notes home" }),
			edits: Type.Array(
				Type.Object({
					oldText: Type.String({ description: "Exact text to replace (must be unique in the file)" }),
					newText: Type.String({ description: "Replacement text" }),
				}),
			),
		}),
		async execute(_id, params, signal) {
			return toResult(await runDreamFs("edit", { path: params.path, edits: params.edits }, signal));
		},
	});

	pi.registerTool({
		name: "delete",
		label: "delete",
		description: `Delete a crumpled note (one whose frontmatter has crumpledAt). Live notes are refused: crumple them first with edit. ${where}`,
		promptSnippet: "delete: remove a crumpled note from the notes home",
		executionMode: "sequential",
		parameters: Type.Object({ path: Type.String({ description: "File path under the notes home" }) }),
		async execute(_id, params, signal) {
			return toResult(await runDreamFs("delete", { path: params.path }, signal));
		},
	});
}
