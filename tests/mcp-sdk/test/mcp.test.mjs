// `pi-context mcp` driven by the official MCP TypeScript SDK client (pinned in package.json):
// listing, every tool (a success and a refusal each) compared with the CLI's answer to the same
// request, two clients writing one notes home at once, and malformed input at the wire.
import { strict as assert } from "node:assert";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");
const BIN = process.env.PI_CONTEXT_BIN ?? join(repo, "target/release/pi-context");
const SESSION_FILE = join(repo, "tests/fixtures/history/reset-windows.jsonl");
const NOW = "2026-11-30T12:00:00.000+00:00";

let tmp;
before(() => {
	tmp = mkdtempSync(join(tmpdir(), "pi-context-mcp-sdk-"));
});
after(() => rmSync(tmp, { recursive: true, force: true }));

/** A clean environment: a fake HOME, a fixed clock, no inherited PI_* variables; the caches
 * (history index, notes metadata) of the server and of the CLI apart, so both sides start from
 * the same state and report the same cache outcomes. */
function env(home, side = "mcp") {
	return { PATH: process.env.PATH ?? "", HOME: home, TZ: "UTC", PI_CONTEXT_NOW: NOW, PI_CONTEXT_CACHE_DIR: join(home, `cache-${side}`) };
}

function identity(notes) {
	return ["--notes-home", notes, "--project-key", "demo-1a2b3c4d", "--agent", "sdk-test", "--session-id", "sdk-session"];
}

async function connect(home, notes, extra = []) {
	mkdirSync(home, { recursive: true });
	const transport = new StdioClientTransport({
		command: BIN,
		args: ["mcp", ...identity(notes), ...extra],
		env: env(home),
		cwd: home,
		stderr: "pipe",
	});
	const client = new Client({ name: "pi-context-sdk-test", version: "1.0.0" });
	await client.connect(transport);
	return client;
}

/** The CLI's `--format both` envelope for the same command, flags and request. */
function cli(home, command, flags, request) {
	const out = spawnSync(BIN, ["--format", "both", command, ...flags], {
		input: JSON.stringify(request),
		env: env(home, "cli"),
		cwd: home,
		encoding: "utf8",
	});
	return JSON.parse(out.stdout);
}

// One success and one refusal per tool, in an order whose effects build on each other.
const CALLS = [
	["notes_write", { address: "@project/plan.md", content: "# Plan\n- ship it\n" }, true],
	["notes_write", { address: "@nowhere/x.md", content: "x" }, false],
	["notes_read", { address: "@project/plan.md" }, true],
	["notes_read", { address: "@project/missing.md" }, false],
	["notes_update", { address: "@project/plan.md", edits: [{ oldText: "ship it", newText: "shipped" }] }, true],
	["notes_update", { address: "@project/plan.md", edits: [{ oldText: "not there", newText: "x" }] }, false],
	["notes_list", { limit: 10 }, true],
	["notes_list", { scope: "galaxy" }, false],
	["notes_search", { query: "shipped" }, true],
	["notes_search", { query: [] }, false],
	["history_windows", {}, true],
	["history_windows", { unexpected: 1 }, false],
	["history_list", { limit: 5 }, true],
	["history_list", { limit: 0 }, false],
	["history_read", { seq: 3 }, true],
	["history_read", { seq: 999999 }, false],
	["history_search", { query: "notes" }, true],
	["history_search", {}, false],
];

test("lists the tools and the boot prompt; every tool answers as the CLI does", async () => {
	const home = join(tmp, "equality");
	const mcpNotes = join(home, "mcp-notes");
	const cliNotes = join(home, "cli-notes");
	cpSync(SESSION_FILE, join(tmp, "session.jsonl"));
	const session = ["--session", join(tmp, "session.jsonl")];
	mkdirSync(mcpNotes, { recursive: true });
	mkdirSync(cliNotes, { recursive: true });
	const client = await connect(home, mcpNotes, session);
	try {
		const { tools } = await client.listTools();
		const names = tools.map((t) => t.name);
		assert.deepEqual(names, [
			"notes_write",
			"notes_read",
			"notes_update",
			"notes_list",
			"notes_search",
			"history_windows",
			"history_list",
			"history_read",
			"history_search",
		]);
		for (const tool of tools) {
			assert.equal(tool.inputSchema.type, "object", tool.name);
			assert.equal(tool.inputSchema.additionalProperties, false, tool.name);
			assert.ok(tool.description.length > 40, tool.name);
		}
		assert.deepEqual(tools.find((t) => t.name === "notes_write").inputSchema.required, ["address", "content"]);
		const { prompts } = await client.listPrompts();
		assert.deepEqual(
			prompts.map((p) => p.name),
			["boot"],
		);
		console.log(`tools: ${names.join(", ")}`);
		console.log(`prompts: ${prompts.map((p) => p.name).join(", ")}`);

		let identical = 0;
		for (const [tool, args, ok] of CALLS) {
			const result = await client.callTool({ name: tool, arguments: args });
			const command = tool.replace("_", "-");
			const flags = tool.startsWith("notes_") ? identity(cliNotes) : session;
			const envelope = cli(home, command, flags, args);
			assert.equal(envelope.ok, ok, `${tool} ${JSON.stringify(args)}: CLI ok`);
			assert.equal(result.isError, !ok, `${tool} ${JSON.stringify(args)}: isError`);
			const expected = ok ? envelope.data : envelope.error;
			assert.deepEqual(result.structuredContent, expected, `${tool} ${JSON.stringify(args)}: structured`);
			assert.deepEqual(result.content, [{ type: "text", text: envelope.text }], `${tool}: text`);
			identical += 1;
		}
		console.log(`calls: ${CALLS.length} (${CALLS.filter((c) => c[2]).length} successes, ${CALLS.filter((c) => !c[2]).length} refusals); identical to the CLI: ${identical}/${CALLS.length}`);
		assert.equal(readFileSync(join(mcpNotes, "project/demo-1a2b3c4d/plan.md"), "utf8").includes("- shipped"), true);

		const boot = await client.getPrompt({ name: "boot" });
		const text = boot.messages[0].content.text;
		const render = cli(home, "boot-render", identity(mcpNotes), {
			tools: {
				notes: "notes_*",
				notes_list: "notes_list",
				history: "history_*",
				history_windows: "history_windows",
				history_list: "history_list",
				history_search: "history_search",
				history_read: "history_read",
				remaining: "",
				wipe: "",
			},
		});
		assert.equal(text, render.text);
		assert.match(text, /<context_window>/);
		assert.match(text, /@project\/plan\.md/);
	} finally {
		await client.close();
	}
});

test("without --session the history tools are absent and calling one is an error", async () => {
	const home = join(tmp, "nohistory");
	const client = await connect(home, join(home, "notes"));
	try {
		const { tools } = await client.listTools();
		assert.equal(tools.length, 5);
		await assert.rejects(client.callTool({ name: "history_list", arguments: {} }), /unknown tool/);
		const ok = await client.callTool({ name: "notes_list", arguments: {} });
		assert.equal(ok.isError, false);
	} finally {
		await client.close();
	}
});

test("two clients on one notes home: 2 x 100 notes_update appends, none lost", async () => {
	const home = join(tmp, "two");
	const notes = join(home, "notes");
	const a = await connect(home, notes);
	const b = await connect(home, notes);
	try {
		const created = await a.callTool({ name: "notes_write", arguments: { address: "@project/log.md", content: "END\n" } });
		assert.equal(created.isError, false);
		const append = (client, who, i) =>
			client.callTool({
				name: "notes_update",
				arguments: { address: "@project/log.md", edits: [{ oldText: "END\n", newText: `${who}-${i}\nEND\n` }] },
			});
		const results = await Promise.all([
			...Array.from({ length: 100 }, (_, i) => append(a, "a", i)),
			...Array.from({ length: 100 }, (_, i) => append(b, "b", i)),
		]);
		const failed = results.filter((r) => r.isError);
		assert.equal(failed.length, 0, JSON.stringify(failed[0]));
		const body = readFileSync(join(notes, "project/demo-1a2b3c4d/log.md"), "utf8");
		const lines = body.split("\n").filter((l) => /^[ab]-\d+$/.test(l));
		const unique = new Set(lines);
		console.log(`two clients: ${unique.size} of 200 appends on disk`);
		assert.equal(unique.size, 200);
		assert.equal(lines.length, 200);
	} finally {
		await a.close();
		await b.close();
	}
});

/** A raw server for what an SDK client never sends. */
class Raw {
	constructor(home, notes) {
		this.proc = spawn(BIN, ["mcp", ...identity(notes)], { env: env(home), cwd: home, stdio: ["pipe", "pipe", "pipe"] });
		this.buffer = "";
		this.waiters = [];
		this.proc.stdout.setEncoding("utf8");
		this.proc.stdout.on("data", (chunk) => {
			this.buffer += chunk;
			let at;
			while ((at = this.buffer.indexOf("\n")) >= 0) {
				const line = this.buffer.slice(0, at);
				this.buffer = this.buffer.slice(at + 1);
				this.waiters.shift()?.(JSON.parse(line));
			}
		});
		this.stderr = "";
		this.proc.stderr.on("data", (c) => {
			this.stderr += c;
		});
	}
	send(line) {
		const answer = new Promise((resolve) => this.waiters.push(resolve));
		this.proc.stdin.write(`${typeof line === "string" ? line : JSON.stringify(line)}\n`);
		return answer;
	}
	call(id, name, args) {
		return this.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
	}
	close() {
		this.proc.stdin.end();
		return new Promise((resolve) => this.proc.on("exit", (code) => resolve(code)));
	}
}

test("malformed JSON-RPC, unknown tool, wrong types, oversized arguments: error answers, server keeps serving", async () => {
	const home = join(tmp, "raw");
	mkdirSync(home, { recursive: true });
	const raw = new Raw(home, join(home, "notes"));
	const init = await raw.send({
		jsonrpc: "2.0",
		id: 1,
		method: "initialize",
		params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
	});
	assert.equal(init.result.serverInfo.name, "pi-context");
	raw.proc.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);

	const parse = await raw.send("{this is not json");
	assert.equal(parse.error.code, -32700);
	const shape = await raw.send({ jsonrpc: "2.0", id: 2, method: 7 });
	assert.equal(shape.error.code, -32600);
	const unknown = await raw.call(3, "no_such_tool", {});
	assert.equal(unknown.error.code, -32602);
	const types = await raw.call(4, "notes_write", { address: 42, content: ["x"] });
	assert.equal(types.result.isError, true);
	assert.equal(types.result.structuredContent.code, "invalid_request");
	const oversized = await raw.call(5, "notes_write", { address: "big.md", content: "x".repeat(17 * 1024 * 1024) });
	assert.equal(oversized.result.isError, true);
	assert.equal(oversized.result.structuredContent.code, "too_large");
	const method = await raw.send({ jsonrpc: "2.0", id: 6, method: "no/such/method" });
	assert.equal(method.error.code, -32601);
	const still = await raw.call(7, "notes_write", { address: "@project/after.md", content: "still serving" });
	assert.equal(still.result.isError, false, JSON.stringify(still));
	const code = await raw.close();
	assert.equal(code, 0, raw.stderr);
	assert.doesNotMatch(raw.stderr, /panicked/);
	console.log("malformed: parse error -32700, bad shape -32600, unknown tool -32602, wrong types and 17 MiB arguments refused as tool results, unknown method -32601; still serving; exit 0 on EOF");
});
