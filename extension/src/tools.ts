// The model-facing tools. Each one is a thin wrapper: its TypeBox schema is exactly the wire
// request of one `pi-context` command, `execute` makes one process call with the identity of
// the live context, and the result's text `content` and structured `details` come from that
// same envelope (`isError` exactly when `ok:false`). `wipe_memory` is the exception: it only
// records a reset request with the lifecycle (see lifecycle.ts).
import type { AgentToolResult, ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type, type TSchema } from "typebox";
import { type Envelope, runPiContext, withoutText } from "./binary.ts";
import { identityFlags, identityOf, sessionFlags } from "./identity.ts";

/** What every binary-backed tool keeps on its toolResult message. */
export type ToolDetails = Omit<Envelope, "text">;

export function envelopeResult(env: Envelope): AgentToolResult<ToolDetails> {
	return { content: [{ type: "text", text: env.text }], details: withoutText(env), isError: !env.ok };
}

/** The binary's defaults that the descriptions state, named once here; test/schema.test.mjs
 * checks each against the `default` of docs/schema/<command>.request.json. */
const DEFAULTS = { pageLimit: 20, maxCharsPerItem: 1200, readChars: 12000 } as const;

const origin = Type.Union([Type.Literal("user"), Type.Literal("self"), Type.Literal("external")], {
	description: 'Who the content comes from: "self" (you, the default), "user" (the human said it), "external" (a document, a tool, the web).',
});
const address = Type.String({
	description: "Note address: a bare path for this session (plan.md), or @project/…, @human/…, @self/…, @model/….",
});
const pattern = Type.Optional(
	Type.Union([Type.String(), Type.Null()], { description: "Glob over addresses to narrow the set, e.g. @project/** or *.md." }),
);
const scope = Type.Optional(
	Type.Union([Type.Literal("session"), Type.Literal("project"), Type.Literal("human"), Type.Literal("agent"), Type.Literal("model")], {
		description: "Only this home.",
	}),
);
const who = Type.Optional(Type.String({ description: "With scope agent or model: whose home (default: yours)." }));
const wastebasket = Type.Optional(Type.Boolean({ description: "Look at crumpled notes instead of live ones." }));
const query = Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })], {
	description: "A literal, or several literals matched as alternatives; case-insensitive, no regex.",
});
const roles = Type.Optional(
	Type.Array(Type.Union([Type.Literal("user"), Type.Literal("assistant"), Type.Literal("tool"), Type.Literal("context")]), {
		minItems: 1,
		description: "Only events of these roles. Without it, history_list shows the conversation and folds tool/context runs.",
	}),
);
const pageFields = {
	limit: Type.Optional(Type.Integer({ minimum: 1, description: `Maximum event rows on the page (default ${DEFAULTS.pageLimit}).` })),
	roles,
	before: Type.Optional(Type.Integer({ minimum: 1, description: "Only events with a seq below this (pass older_before to page back)." })),
	after: Type.Optional(Type.Integer({ minimum: 1, description: "Only events with a seq above this (pass newer_after to page forward)." })),
	window_id: Type.Optional(Type.String({ minLength: 1, description: "Only events of this context window (ids from history_windows)." })),
	max_chars_per_item: Type.Optional(Type.Integer({ minimum: 1, description: `Preview length per event (default ${DEFAULTS.maxCharsPerItem}).` })),
};
const noParams = Type.Object({}, { additionalProperties: false });

interface BinaryTool {
	name: string;
	label: string;
	description: string;
	promptSnippet: string;
	parameters: TSchema;
	command: string;
	/** Which flags locate the data: the notes identity, or the session file. */
	target: "notes" | "session";
	sequential?: boolean;
}

export const BINARY_TOOLS: BinaryTool[] = [
	{
		name: "notes_write",
		label: "Notes write",
		command: "notes-write",
		target: "notes",
		sequential: true,
		promptSnippet: "notes_write: create or replace a whole note (your memory across context windows)",
		description:
			"Create a note, or replace a note's whole body. Notes outlive the context window: write down what a future you needs (goal, decisions, state, next step, where to look). Returns whether the note was created, overwritten, or taken back out of the wastebasket. To change part of a note use notes_update.",
		parameters: Type.Object(
			{ address, content: Type.String({ description: "The whole markdown body." }), origin: Type.Optional(origin) },
			{ additionalProperties: false },
		),
	},
	{
		name: "notes_update",
		label: "Notes update",
		command: "notes-update",
		target: "notes",
		sequential: true,
		promptSnippet: "notes_update: edit, crumple/uncrumple or rename a note",
		description:
			"Change an existing note. `edits` replace exact text (each oldText must match once unless replace_all; all edits apply together or none does). `crumpled: true` moves an obsolete note to the wastebasket, `false` takes it out. `rename_to` moves the note and must be used alone. The receipt shows a diff.",
		parameters: Type.Object(
			{
				address,
				edits: Type.Optional(
					Type.Array(
						Type.Object(
							{
								oldText: Type.String({ description: "Exact text to find in the body." }),
								newText: Type.String({ description: "Its replacement." }),
							},
							{ additionalProperties: false },
						),
						{ description: "Text replacements, applied in order as one batch." },
					),
				),
				origin: Type.Optional(origin),
				crumpled: Type.Optional(Type.Boolean({ description: "true crumples the note (obsolete), false smooths it back." })),
				replace_all: Type.Optional(Type.Boolean({ description: "Replace every occurrence of each oldText." })),
				rename_to: Type.Optional(Type.String({ description: "New address; use alone, without edits, origin or crumpled." })),
			},
			{ additionalProperties: false },
		),
	},
	{
		name: "notes_read",
		label: "Notes read",
		command: "notes-read",
		target: "notes",
		promptSnippet: "notes_read: read a note (a window of its body, with metadata)",
		description:
			`Read a note's body from offset_chars (default 0; negative counts back from the end), up to limit_chars characters (default ${DEFAULTS.readChars}). When more remains the result says which offset_chars continues the read.`,
		parameters: Type.Object(
			{
				address,
				offset_chars: Type.Optional(Type.Integer({ description: "Start position in characters; negative counts from the end." })),
				limit_chars: Type.Optional(Type.Integer({ minimum: 1, maximum: 50000, description: `Characters to return (default ${DEFAULTS.readChars}).` })),
			},
			{ additionalProperties: false },
		),
	},
	{
		name: "notes_list",
		label: "Notes list",
		command: "notes-list",
		target: "notes",
		promptSnippet: "notes_list: list notes, most recently updated first",
		description:
			"List notes across all homes (this session, @project, @human, @self, @model), most recently updated first. Narrow with pattern; see crumpled notes with wastebasket.",
		parameters: Type.Object(
			{ pattern, scope, who, limit: Type.Optional(Type.Integer({ minimum: 1, description: "At most this many notes." })), wastebasket },
			{ additionalProperties: false },
		),
	},
	{
		name: "notes_search",
		label: "Notes search",
		command: "notes-search",
		target: "notes",
		promptSnippet: "notes_search: find literal text in note bodies",
		description:
			"Search note bodies for one literal or several (any of them), case-insensitively. Hits give the line and offset_chars to pass to notes_read. Most recently updated notes first.",
		parameters: Type.Object(
			{
				query,
				pattern,
				scope,
				who,
				limit: Type.Optional(Type.Integer({ minimum: 1, description: "At most this many notes." })),
				max_matches_per_file: Type.Optional(Type.Integer({ minimum: 1, description: "At most this many matching lines per note." })),
				wastebasket,
			},
			{ additionalProperties: false },
		),
	},
	{
		name: "history_windows",
		label: "History list windows",
		command: "history-windows",
		target: "session",
		promptSnippet: "history_windows: list this session's context windows (oldest first)",
		description:
			"List the context windows of this session, oldest first, with their seq ranges and event counts. Use a window_id to scope history_list and history_search. A forked session starts a new history.",
		parameters: noParams,
	},
	{
		name: "history_list",
		label: "History list items",
		command: "history-list",
		target: "session",
		promptSnippet: "history_list: page through this session's history, including before resets",
		description:
			"Page through this session's history, including everything before earlier memory resets. Shows the newest page by default, oldest first within the page; without roles, tool and context runs are folded into summary rows. Page back with before=older_before, forward with after=newer_after. Read a whole event with history_read.",
		parameters: Type.Object(pageFields, { additionalProperties: false }),
	},
	{
		name: "history_search",
		label: "History search",
		command: "history-search",
		target: "session",
		promptSnippet: "history_search: find literal text anywhere in this session's history",
		description:
			"Search this session's whole history (all windows, all roles: messages, tool names, arguments, output, nested calls) for one literal or several, case-insensitively. Each hit has a seq and the offset_chars of the match, to pass to history_read.",
		parameters: Type.Object({ query, ...pageFields }, { additionalProperties: false }),
	},
	{
		name: "history_read",
		label: "History read item",
		command: "history-read",
		target: "session",
		promptSnippet: "history_read: read one history event in full by seq",
		description:
			`Read one history event by seq: from offset_chars (default 0; negative counts from the end), up to limit_chars characters (default ${DEFAULTS.readChars}). Continue with next_offset_chars when more remains.`,
		parameters: Type.Object(
			{
				seq: Type.Integer({ minimum: 1, description: "The event's seq (from history_list or history_search)." }),
				offset_chars: Type.Optional(Type.Integer({ description: "Start position in characters; negative counts from the end." })),
				limit_chars: Type.Optional(Type.Integer({ minimum: 1, maximum: 50000, description: `Characters to return (default ${DEFAULTS.readChars}).` })),
			},
			{ additionalProperties: false },
		),
	},
];

/** Run one binary-backed tool's command for the live context. */
export async function runTool(tool: BinaryTool, params: unknown, signal: AbortSignal | undefined, ctx: ExtensionContext): Promise<Envelope> {
	if (tool.target === "notes") {
		const id = identityOf(ctx);
		return runPiContext(tool.command, identityFlags(id), params, { signal, cwd: id.cwd });
	}
	const session = sessionFlags(ctx);
	try {
		return await runPiContext(tool.command, session.flags, params, { signal, cwd: ctx.cwd });
	} finally {
		session.dispose();
	}
}

export function registerBinaryTools(pi: ExtensionAPI, onBinaryMissing: (ctx: ExtensionContext, err: Error) => void): void {
	for (const tool of BINARY_TOOLS) {
		pi.registerTool({
			name: tool.name,
			label: tool.label,
			description: tool.description,
			promptSnippet: tool.promptSnippet,
			parameters: tool.parameters,
			executionMode: tool.sequential ? "sequential" : undefined,
			async execute(_id, params, signal, _onUpdate, ctx) {
				try {
					return envelopeResult(await runTool(tool, params, signal, ctx));
				} catch (err) {
					onBinaryMissing(ctx, err as Error);
					throw err;
				}
			},
		});
	}
}
