// The Claude Code plugin with the real Claude Code CLI (pinned in package.json), offline:
// `claude plugin validate --strict`, then `claude -p` against a scripted local model server
// calls notes_write and notes_read through `pi-context mcp`, with the boot block from the
// SessionStart hook in its context. The notes land on disk.
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { PREFIX, startFake } from "../lib/fake-anthropic.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");
const BIN = process.env.PI_CONTEXT_BIN ?? join(repo, "target/release/pi-context");
const CLAUDE = join(here, "../node_modules/.bin/claude");
const PLUGIN = process.env.PLUGIN_DIR ?? join(repo, "integrations/claude-code");

function run(args, env, cwd) {
	return new Promise((resolve) => {
		const child = spawn(CLAUDE, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
		let stdout = "";
		let stderr = "";
		child.stdout.on("data", (c) => {
			stdout += c;
		});
		child.stderr.on("data", (c) => {
			stderr += c;
		});
		const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
		child.on("exit", (code) => {
			clearTimeout(timer);
			resolve({ code, stdout, stderr });
		});
	});
}

function claudeEnv(home, extra = {}) {
	return {
		PATH: `${dirname(BIN)}:${process.env.PATH}`,
		HOME: home,
		CLAUDE_CONFIG_DIR: join(home, ".claude"),
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
		CLAUDE_CODE_DISABLE_TERMINAL_TITLE: "1",
		CLAUDE_CODE_ATTRIBUTION_HEADER: "0",
		TZ: "UTC",
		...extra,
	};
}

test("claude plugin validate --strict accepts the plugin", async () => {
	const home = mkdtempSync(join(tmpdir(), "pi-context-cc-validate-"));
	try {
		const out = await run(["plugin", "validate", "--strict", PLUGIN], claudeEnv(home), home);
		assert.equal(out.code, 0, out.stdout + out.stderr);
		assert.match(out.stdout, /Validation passed/);
		assert.match(out.stdout, /SessionStart startup\|resume\|clear\|compact\|fork command pi-context \["claude-hook"/);
		assert.match(out.stdout, /mcpServers: notes stdio pi-context/);
	} finally {
		rmSync(home, { recursive: true, force: true });
	}
});

test("claude -p calls notes_write and notes_read through pi-context mcp; the boot is in its context", async () => {
	const home = mkdtempSync(join(tmpdir(), "pi-context-cc-e2e-"));
	const project = join(home, "project");
	mkdirSync(project);
	const notes = join(home, "notes");
	const fake = await startFake();
	const sessionId = "3f0c2a5e-7d1b-4c9a-8e2f-1a2b3c4d5e6f";
	try {
		const out = await run(
			[
				"-p",
				"Save a note about this test, then read it back.",
				"--plugin-dir",
				PLUGIN,
				"--session-id",
				sessionId,
				"--model",
				"fake-model",
				"--allowedTools",
				`${PREFIX}notes_write,${PREFIX}notes_read`,
				"--permission-mode",
				"dontAsk",
				"--max-turns",
				"6",
				"--output-format",
				"stream-json",
				"--verbose",
			],
			claudeEnv(home, {
				ANTHROPIC_BASE_URL: fake.url,
				ANTHROPIC_API_KEY: "dummy",
				ANTHROPIC_DEFAULT_HAIKU_MODEL: "fake-haiku",
				// Send every MCP tool up front (no deferred loading behind ToolSearch): deterministic.
				ENABLE_TOOL_SEARCH: "false",
				PI_NOTES_HOME: notes,
			}),
			project,
		);
		const summary = `exit ${out.code}\n${out.stdout.slice(0, 6000)}\n${out.stderr.slice(-2000)}\n${JSON.stringify(fake.requests.map((r) => [r.path, (r.body.tools ?? []).map((t) => t.name)]))}`;
		assert.equal(out.code, 0, summary);
		const main = fake.requests.filter((r) => r.path === "/v1/messages" && (r.body.tools ?? []).some((t) => t.name === `${PREFIX}notes_write`));
		assert.ok(main.length >= 4, `${main.length} main-loop requests\n${summary}`);
		const toolNames = main[0].body.tools.map((t) => t.name).filter((n) => n.startsWith(PREFIX));
		assert.deepEqual(toolNames.sort(), ["notes_list", "notes_read", "notes_search", "notes_update", "notes_write"].map((n) => PREFIX + n));
		const first = JSON.stringify(main[0].body.messages);
		assert.match(first, /<context_window>/, "the SessionStart boot reaches the model");
		assert.match(first, new RegExp(`${PREFIX}notes_\\*`));
		const project_note = readFileSync(
			join(notes, "project", readDirOne(join(notes, "project")), "e2e.md"),
			"utf8",
		);
		assert.match(project_note, /written by claude through pi-context mcp/);
		// The bare address went to the Claude session's own home, learnt from the hook.
		assert.ok(existsSync(join(notes, "pi/session", sessionId, "e2e-session.md")), "bare note in the hook's session home");
		const last = JSON.stringify(main.at(-1).body.messages.at(-1));
		assert.match(last, /written by claude through pi-context mcp/, "notes_read returned the note");
		assert.match(out.stdout, /done: /);
		console.log(`claude -p: ${fake.requests.length} model requests, notes_write x2 + notes_read through pi-context mcp; notes on disk`);
	} finally {
		fake.server.close();
		if (!process.env.KEEP_HOME) rmSync(home, { recursive: true, force: true });
	}
});

function readDirOne(dir) {
	const entries = readdirSync(dir);
	assert.equal(entries.length, 1, entries.join(","));
	return entries[0];
}
