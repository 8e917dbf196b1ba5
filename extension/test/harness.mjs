// Test harness: a REAL Pi 1.6.0 AgentSession (SDK route) driven by the scripted faux model, with
// this extension loaded from TypeScript by Pi's own loader, the real `pi-context` binary, and
// every path isolated in a temp dir (PI_CODING_AGENT_DIR, PI_NOTES_HOME, PI_CONTEXT_CACHE_DIR; never ~/.pi, ~/.agents or ~/.cache).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import {
	createAgentSession,
	DefaultResourceLoader,
	ModelRuntime,
	SessionManager,
	SettingsManager,
} from "@earendil-works/pi-coding-agent";

export const EXTENSION_DIR = fileURLToPath(new URL("..", import.meta.url));
export const REPO = fileURLToPath(new URL("../..", import.meta.url));
export const BIN = process.env.PI_CONTEXT_BIN || join(REPO, "target", "release", "pi-context");
export const ALL_TOOLS = [
	"notes_write",
	"notes_update",
	"notes_read",
	"notes_list",
	"notes_search",
	"history_windows",
	"history_list",
	"history_read",
	"history_search",
	"get_context_remaining",
	"wipe_memory",
];
export { fauxAssistantMessage, fauxText, fauxToolCall };

/** A fresh isolated world: temp root, cwd, agent dir (with settings.json), notes home, env. */
export function world(settings = {}) {
	const root = mkdtempSync(join(tmpdir(), "pi-context-ext-"));
	const dirs = { root, cwd: join(root, "cwd"), agentDir: join(root, "agent"), sessionDir: join(root, "sessions"), notesHome: join(root, "notes") };
	for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
	writeFileSync(join(dirs.agentDir, "settings.json"), JSON.stringify(settings));
	process.env.PI_CODING_AGENT_DIR = dirs.agentDir;
	process.env.PI_NOTES_HOME = dirs.notesHome;
	// The binary's caches (history index, notes metadata) stay in the temp world too.
	process.env.PI_CONTEXT_CACHE_DIR = join(root, "cache");
	process.env.PI_OFFLINE = "1";
	process.env.PI_TELEMETRY = "0";
	process.env.PI_CONTEXT_BIN = BIN;
	delete process.env.PI_NOTES_AGENT;
	return { ...dirs, settings, cleanup: () => (process.env.KEEP ? console.log("kept", root) : rmSync(root, { recursive: true, force: true })) };
}

/**
 * Start a session in `w`. `steps` are faux responses (messages or functions of the request);
 * every provider request's messages are recorded in `requests`. Pass `sessionFile` to reopen
 * an existing session from disk.
 */
export async function startSession(w, { steps = [], contextWindow = 100_000, tools = ALL_TOOLS, sessionFile, extraFactories = [] } = {}) {
	const runtime = await ModelRuntime.create({
		authPath: join(w.agentDir, "auth.json"),
		modelsPath: null,
		modelsStorePath: join(w.agentDir, "models"),
		refreshOnCreate: false,
		allowModelNetwork: false,
	});
	const faux = fauxProvider({ provider: "faux", models: [{ id: "faux-1", contextWindow, maxTokens: 4096 }] });
	runtime.registerNativeProvider(faux.provider);
	const model = runtime.getModel("faux", "faux-1");
	const requests = [];
	const record = (step) => (context, options, state, m) => {
		requests.push(structuredClone(context.messages));
		return typeof step === "function" ? step(context, options, state, m) : step;
	};
	faux.setResponses(steps.map(record));
	const settingsManager = SettingsManager.inMemory({ ...w.settings, retry: { enabled: false } });
	const resourceLoader = new DefaultResourceLoader({
		cwd: w.cwd,
		agentDir: w.agentDir,
		settingsManager,
		additionalExtensionPaths: [EXTENSION_DIR],
		extensionFactories: extraFactories,
		noSkills: true,
		noPromptTemplates: true,
		noThemes: true,
		noContextFiles: true,
		systemPromptOverride: () => "You are a test agent.",
	});
	await resourceLoader.reload();
	const loaded = resourceLoader.getExtensions();
	if (loaded.errors.length) throw new Error(`extension load errors: ${JSON.stringify(loaded.errors)}`);
	const sessionManager = sessionFile ? SessionManager.open(sessionFile, w.sessionDir) : SessionManager.create(w.cwd, w.sessionDir);
	const { session } = await createAgentSession({
		cwd: w.cwd,
		agentDir: w.agentDir,
		modelRuntime: runtime,
		model,
		thinkingLevel: "off",
		settingsManager,
		sessionManager,
		resourceLoader,
		tools,
	});
	const notices = [];
	const errors = [];
	await session.bindExtensions({
		uiContext: { notify: (message, type) => notices.push({ type: type ?? "info", message }) },
		onError: (err) => errors.push(err),
	});
	return {
		session,
		faux,
		requests,
		notices,
		errors,
		/** Queue more faux responses (recorded like the first ones). */
		respond: (...more) => faux.appendResponses(more.map(record)),
		async prompt(text) {
			await session.prompt(text);
			await session.waitForIdle();
		},
		entries: () => readEntries(session.sessionFile),
		dispose: () => session.dispose(),
	};
}

export function readEntries(file) {
	return readFileSync(file, "utf8")
		.trim()
		.split("\n")
		.map((l) => JSON.parse(l));
}

/** A faux step that calls one tool. */
export function callTool(name, args = {}, id = `call-${name}-${Math.random().toString(16).slice(2, 8)}`) {
	return fauxAssistantMessage([fauxToolCall(name, args, { id })], { stopReason: "toolUse" });
}

export function say(text) {
	return fauxAssistantMessage([fauxText(text)]);
}

/** The toolResult message entries of `name`, in order. */
export function toolResults(entries, name) {
	return entries.filter((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === name).map((e) => e.message);
}

/** Flatten a request's messages to searchable text. */
export function requestText(messages) {
	return messages
		.map((m) => {
			const c = m.content;
			if (typeof c === "string") return c;
			if (Array.isArray(c)) return c.map((b) => b.text ?? (b.type === "toolCall" ? JSON.stringify(b.arguments) : "")).join("\n");
			return m.summary ?? "";
		})
		.join("\n");
}

/** Provider-side text of one message (custom messages reach the provider as user messages). */
export function messageText(m) {
	const c = m.content;
	if (typeof c === "string") return c;
	if (Array.isArray(c)) return c.map((b) => b.text ?? "").join("\n");
	return "";
}

/** The boot blocks in a provider request, as the ids of the windows they open. */
export function bootsIn(request) {
	return request
		.filter((m) => m.role !== "system" && messageText(m).startsWith("<context_window>"))
		.map((m) => /Current context window id: (\S+)/.exec(messageText(m))?.[1]);
}

/** The four reset entries at the end of `entries`, checked in order; returns the window id. */
export function assertFourEntries(entries, at = entries.length - 4) {
	const [compaction, marker, boot, continuation] = entries.slice(at, at + 4);
	assert.equal(compaction.type, "compaction");
	assert.equal(compaction.summary, "");
	assert.equal(compaction.firstKeptEntryId, compaction.id, "retain-none: the compaction keeps only itself");
	assert.equal(marker.type, "custom");
	assert.equal(marker.customType, "pi-context/reset-marker");
	assert.equal(marker.parentId, compaction.id);
	assert.deepEqual(Object.keys(marker.data), ["windowId"]);
	const windowId = marker.data.windowId;
	assert.match(windowId, /^pcw:[0-9a-f]{8}:[0-9a-f]{8}$/);
	assert.equal(boot.type, "custom_message");
	assert.equal(boot.customType, "pi-context/boot");
	assert.equal(boot.display, false);
	assert.deepEqual(boot.details, { windowId });
	assert.ok(boot.content.startsWith("<context_window>"), "the boot block starts with <context_window>");
	assert.ok(boot.content.includes(windowId), "the boot names its window");
	assert.equal(continuation.type, "custom_message");
	assert.equal(continuation.customType, "pi-context/continuation");
	assert.equal(continuation.display, false);
	return windowId;
}


/** Ask the real binary directly (what the extension must pass through unchanged). */
export function binary(command, flags = [], request = {}) {
	const out = spawnSync(BIN, [command, ...flags], { input: JSON.stringify(request), encoding: "utf8" });
	assert.equal(out.status, 0, `${command}: ${out.stdout}${out.stderr}`);
	return JSON.parse(out.stdout);
}
