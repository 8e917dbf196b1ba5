// What a new user meets in the first hour, under the real Pi 1.6.0: /wipe-memory in print mode
// (`pi -p`, where the runtime is disposed right after the command), wipe_memory without a
// binary, PI_CODING_AGENT_DIR with a `~`, the extension's name in Pi's list, and the on/off
// switch surviving a reopened session.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { DefaultResourceLoader, SettingsManager } from "@earendil-works/pi-coding-agent";
import { findBinary } from "../src/binary.ts";
import { assertFourEntries, BIN, EXTENSION_DIR, REPO, bootsIn, callTool, messageText, readEntries, say, startSession, toolResults, world } from "./harness.mjs";

const CLOSE_OUT = "The human asked to end this context window";

/** One `pi -p` run in `w` (add `-c` through `extra`), answered by `steps`; returns the result and the requests the provider saw. */
function piPrint(w, name, steps, prompt, extra = []) {
	const script = join(w.root, `${name}.json`);
	const log = join(w.root, `${name}.requests.jsonl`);
	writeFileSync(script, JSON.stringify(steps));
	const pi = join(EXTENSION_DIR, "node_modules", ".bin", "pi");
	const r = spawnSync(
		pi,
		[
			"--offline",
			"-p",
			...extra,
			"--no-extensions",
			"-e",
			join(EXTENSION_DIR, "test", "faux-provider.ts"),
			"-e",
			EXTENSION_DIR,
			"--model",
			"faux/faux-1",
			"--no-skills",
			"--no-context-files",
			"--no-prompt-templates",
			"--no-themes",
			prompt,
		],
		{
			cwd: w.cwd,
			env: { ...process.env, PI_FAUX_SCRIPT: script, PI_FAUX_LOG: log, PATH: `${join(EXTENSION_DIR, "node_modules", ".bin")}:${process.env.PATH}` },
			encoding: "utf8",
			timeout: 120_000,
		},
	);
	const requests = existsSync(log)
		? readFileSync(log, "utf8")
				.trim()
				.split("\n")
				.map((l) => JSON.parse(l))
		: [];
	return { ...r, requests };
}

function sessionFile(w) {
	const dir = join(w.agentDir, "sessions");
	const sub = readdirSync(dir);
	assert.equal(sub.length, 1, "one session directory");
	const files = readdirSync(join(dir, sub[0]));
	assert.equal(files.length, 1, "pi -c continued the one session");
	return join(dir, sub[0], files[0]);
}

test("/wipe-memory in print mode (pi -c -p) runs the close-out and commits the four reset entries", () => {
	const w = world({ compaction: { enabled: false } });
	try {
		const first = piPrint(w, "first", [{ text: "I will remember persimmon." }], "Remember persimmon.");
		assert.equal(first.status, 0, first.stderr);

		const wipe = piPrint(
			w,
			"wipe",
			[{ toolCalls: [{ name: "notes_write", id: "w1", arguments: { address: "@project/state.md", content: "fruit: persimmon" } }] }, { text: "notes saved" }],
			"/wipe-memory",
			["-c"],
		);
		assert.equal(wipe.status, 0, wipe.stderr);
		assert.equal(wipe.requests.length, 2, "the close-out turn reached the provider (the note write, then the final reply)");
		assert.ok(wipe.requests[0].some((m) => messageText(m).includes(CLOSE_OUT)), "the close-out request was sent");

		const entries = readEntries(sessionFile(w));
		const windowId = assertFourEntries(entries);
		assert.equal(toolResults(entries, "notes_write")[0].isError, false, "the agent saved its notes first");
		const aborted = entries.filter((e) => e.type === "message" && e.message.role === "assistant" && e.message.stopReason === "aborted");
		assert.deepEqual(aborted, [], "no empty aborted assistant message on the branch");

		const next = piPrint(w, "next", [{ text: "fresh start" }], "What now?", ["-c"]);
		assert.equal(next.status, 0, next.stderr);
		assert.match(next.stdout, /fresh start/);
		const [request] = next.requests;
		assert.deepEqual(bootsIn(request), [windowId], "the next request opens with the new window's boot");
		const text = request.map(messageText).join("\n");
		assert.ok(!text.includes(CLOSE_OUT), "the close-out request stays in the old window");
		assert.ok(!text.includes("Remember persimmon."), "the earlier conversation stays in the old window");
	} finally {
		w.cleanup();
	}
});

test("wipe_memory without a binary is an error result the model reads, and the loop goes on", async () => {
	const w = world({ compaction: { enabled: false } });
	const missing = join(w.root, "no-such-dir", "pi-context");
	process.env.PI_CONTEXT_BIN = missing;
	const run = await startSession(w, { steps: [callTool("wipe_memory", {}), say("still in the same window")] });
	try {
		await run.prompt("Please close out.");
		const entries = run.entries();
		const [result] = toolResults(entries, "wipe_memory");
		assert.equal(result.isError, true, result.content[0].text);
		assert.match(result.content[0].text, /pi-context binary is missing/);
		const reply = entries.filter((e) => e.type === "message" && e.message.role === "assistant").at(-1);
		assert.equal(reply.message.content[0].text, "still in the same window", "the model got another turn after the error");
		assert.equal(run.requests.length, 2);
		assert.equal(entries.filter((e) => e.customType === "pi-context/reset-marker").length, 0);
		const notices = run.notices.filter((n) => n.message.includes("pi-context binary"));
		assert.equal(notices.length, 1, JSON.stringify(run.notices));
		assert.deepEqual(run.errors, []);
	} finally {
		process.env.PI_CONTEXT_BIN = BIN;
		run.dispose();
		w.cleanup();
	}
});

test("PI_CODING_AGENT_DIR=~/… reaches the binary unexpanded and the binary expands it as Pi does", async () => {
	const w = world({ compaction: { enabled: true, reserveTokens: 12345 } });
	const home = process.env.HOME;
	process.env.HOME = w.root;
	process.env.PI_CODING_AGENT_DIR = "~/agent";
	const run = await startSession(w, { steps: [callTool("get_context_remaining", {}), say("ok")] });
	try {
		await run.prompt("How much room is left?");
		const [result] = toolResults(run.entries(), "get_context_remaining");
		assert.equal(result.isError, false, result.content[0].text);
		const settings = result.details.data.settings;
		assert.equal(settings.global_path, join(w.agentDir, "settings.json"), "the settings of ~/agent were read");
		assert.equal(settings.reserve_tokens, 12345);
	} finally {
		process.env.HOME = home;
		process.env.PI_CODING_AGENT_DIR = w.agentDir;
		run.dispose();
		w.cleanup();
	}
});

test("Pi lists the extension as pi-context, not by its source folder", async () => {
	const w = world();
	try {
		const loader = new DefaultResourceLoader({
			cwd: w.cwd,
			agentDir: w.agentDir,
			settingsManager: SettingsManager.inMemory({}),
			additionalExtensionPaths: [EXTENSION_DIR],
			noSkills: true,
			noPromptTemplates: true,
			noThemes: true,
			noContextFiles: true,
		});
		await loader.reload();
		const { extensions, errors } = loader.getExtensions();
		assert.deepEqual(errors, []);
		const ours = extensions.filter((e) => e.path.startsWith(EXTENSION_DIR));
		assert.equal(ours.length, 1);
		// Pi's startup list labels a local extension by its path without a trailing index.ts.
		const segments = ours[0].path.split("/").filter(Boolean);
		if (/^index\.[jt]s$/.test(segments.at(-1))) segments.pop();
		assert.equal(segments.at(-1), "pi-context");
	} finally {
		w.cleanup();
	}
});

test("/pi-context off is remembered by the session and survives reopening it", async () => {
	const w = world({ compaction: { enabled: false } });
	const first = await startSession(w, { steps: [say("hello")] });
	let file;
	try {
		await first.prompt("hi");
		await first.prompt("/pi-context off");
		file = first.session.sessionFile;
		const switches = first.entries().filter((e) => e.type === "custom" && e.customType === "pi-context/switch");
		assert.deepEqual(
			switches.map((e) => e.data),
			[{ enabled: false }],
		);
		assert.match(first.notices.at(-1).message, /^pi-context: off · /);
	} finally {
		first.dispose();
	}
	const again = await startSession(w, { sessionFile: file, steps: [say("still off")] });
	try {
		await again.prompt("/pi-context");
		assert.match(again.notices.at(-1).message, /^pi-context: off · /, "the reopened session is still off");
		assert.ok(again.notices.at(-1).message.includes(`binary ${BIN} (from PI_CONTEXT_BIN)`), "the status names the binary in use and why");
		await again.prompt("more");
		assert.deepEqual(bootsIn(again.requests[0]).length, 1, "the old root boot is still there, but no new window machinery ran");
		await again.prompt("/pi-context on");
		assert.match(again.notices.at(-1).message, /^pi-context: on · /);
		const switches = again.entries().filter((e) => e.type === "custom" && e.customType === "pi-context/switch");
		assert.deepEqual(
			switches.map((e) => e.data),
			[{ enabled: false }, { enabled: true }],
		);
	} finally {
		again.dispose();
		w.cleanup();
	}
});

test("binary lookup: PI_CONTEXT_BIN, then the installed one on PATH, then this checkout's release build", () => {
	const w = world();
	try {
		const dir = join(w.root, "bin");
		mkdirSync(dir);
		const installed = join(dir, "pi-context");
		writeFileSync(installed, "#!/bin/sh\n");
		chmodSync(installed, 0o755);
		assert.deepEqual(findBinary({ PI_CONTEXT_BIN: "/x/pi-context", PATH: dir }), { path: "/x/pi-context", source: "PI_CONTEXT_BIN" });
		assert.ok(existsSync(BIN), "the checkout's release build exists (the tests run against it)");
		assert.deepEqual(findBinary({ PATH: dir }), { path: installed, source: "PATH" }, "an installed binary wins over a (possibly stale) checkout build");
		assert.deepEqual(findBinary({ PATH: join(w.root, "empty") }), { path: join(REPO, "target", "release", "pi-context"), source: "checkout" });
	} finally {
		w.cleanup();
	}
});
