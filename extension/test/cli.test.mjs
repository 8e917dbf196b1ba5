// The `pi -p` route: the real `pi` 1.6.0 CLI loads this package with `-e <dir>` (as a user
// would with `pi -e ./extension`), a test-only extension supplies the scripted faux model, and
// the tools reach the real binary. Assertions are on the session JSONL, not on the faux text.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { EXTENSION_DIR, readEntries, toolResults, world } from "./harness.mjs";

test("pi -p loads the package, writes the root boot, and round-trips notes and history tools", () => {
	const w = world({ compaction: { enabled: false } });
	try {
		const script = join(w.root, "faux.json");
		writeFileSync(
			script,
			JSON.stringify([
				{ toolCalls: [{ name: "notes_write", id: "c1", arguments: { address: "@project/cli.md", content: "written from pi -p" } }] },
				{ toolCalls: [{ name: "history_search", id: "c2", arguments: { query: "persimmon" } }] },
				{ toolCalls: [{ name: "wipe_memory", id: "c3", arguments: {} }] },
				{ text: "done" },
			]),
		);
		const pi = join(EXTENSION_DIR, "node_modules", ".bin", "pi");
		const r = spawnSync(
			pi,
			[
				"--offline",
				"-p",
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
				"Remember the persimmon.",
			],
			{ cwd: w.cwd, env: { ...process.env, PI_FAUX_SCRIPT: script, PATH: `${join(EXTENSION_DIR, "node_modules", ".bin")}:${process.env.PATH}` }, encoding: "utf8", timeout: 120_000 },
		);
		assert.equal(r.status, 0, r.stderr);
		assert.match(r.stdout, /done/);
		const dir = join(w.agentDir, "sessions");
		const sub = readdirSync(dir);
		const file = join(dir, sub[0], readdirSync(join(dir, sub[0]))[0]);
		const entries = readEntries(file);
		assert.equal(entries.filter((e) => e.customType === "pi-context/boot").length, 2, "root boot + the reset's boot");
		const write = toolResults(entries, "notes_write")[0];
		assert.equal(write.isError, false, write.content[0].text);
		assert.equal(write.details.ok, true);
		const search = toolResults(entries, "history_search")[0];
		assert.equal(search.isError, false, search.content[0].text);
		assert.match(search.content[0].text, /persimmon/i);
		assert.equal(entries.filter((e) => e.customType === "pi-context/reset-marker").length, 1, "wipe_memory committed a reset");
	} finally {
		w.cleanup();
	}
});
