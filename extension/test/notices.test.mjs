// Failure notices under the real Pi (SDK route, faux model): a missing binary gives one clear
// notice and error tool results, never a crash; a notes home that cannot be read gives the
// binary's "notes index incomplete" notice once while the boot still renders.
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { BIN, binary, bootsIn, callTool, say, startSession, toolResults, world } from "./harness.mjs";

test("a missing binary: one clear notice, no crash, tools return an error result", async () => {
	const w = world({ compaction: { enabled: true } });
	const missing = join(w.root, "no-such-dir", "pi-context");
	process.env.PI_CONTEXT_BIN = missing;
	const run = await startSession(w, {
		steps: [callTool("notes_write", { address: "plan.md", content: "x" }), callTool("get_context_remaining", {}), say("carrying on without memory")],
	});
	try {
		await run.prompt("hi");
		await run.prompt("/wipe-memory");
		await run.session.waitForIdle();
		const binaryNotices = run.notices.filter((n) => n.message.includes("pi-context binary"));
		assert.equal(binaryNotices.length, 1, JSON.stringify(run.notices));
		assert.equal(binaryNotices[0].type, "error");
		assert.ok(binaryNotices[0].message.includes(missing), "the notice names the path it tried");
		assert.match(binaryNotices[0].message, /PI_CONTEXT_BIN|cargo build --release/);
		assert.deepEqual(run.errors, [], "no extension error reached Pi");
		const entries = run.entries();
		for (const name of ["notes_write", "get_context_remaining"]) {
			const [result] = toolResults(entries, name);
			assert.ok(result, `${name} has a result`);
			assert.equal(result.isError, true, name);
			assert.match(result.content[0].text, /pi-context binary/, name);
		}
		const reply = entries.filter((e) => e.type === "message" && e.message.role === "assistant").at(-1);
		assert.equal(reply.message.content[0].text, "carrying on without memory", "the run went on after the failed tools");
		assert.equal(entries.filter((e) => e.customType === "pi-context/boot").length, 0, "no boot without a binary");
		assert.equal(entries.filter((e) => e.customType === "pi-context/manual-wipe").length, 0, "no close-out text of the extension's own");
		assert.equal(entries.filter((e) => e.customType === "pi-context/reset-marker").length, 0);
	} finally {
		process.env.PI_CONTEXT_BIN = BIN;
		run.dispose();
		w.cleanup();
	}
});

test("a home that fails to read: the notes-index-incomplete notice once, the boot still renders", async () => {
	const w = world({ compaction: { enabled: false } });
	// A regular file where the @human home directory belongs (tests run as root: chmod 000 would not stop a read).
	rmSync(join(w.notesHome, "human"), { recursive: true, force: true });
	writeFileSync(join(w.notesHome, "human"), "not a directory");
	const run = await startSession(w, { steps: [callTool("notes_write", { address: "@project/ok.md", content: "still works" }), say("one"), say("two")] });
	try {
		await run.prompt("hi");
		await run.prompt("again");
		const incomplete = run.notices.filter((n) => n.message.includes("notes index incomplete"));
		assert.equal(incomplete.length, 1, JSON.stringify(run.notices));
		assert.equal(incomplete[0].type, "warning");
		const entries = run.entries();
		const [boot] = entries.filter((e) => e.customType === "pi-context/boot");
		// The notice is the binary's, verbatim.
		const rendered = binary("boot-render", ["--session-id", entries[0].id, "--cwd", w.cwd], {}).data;
		assert.equal(incomplete[0].message, rendered.notice);
		assert.match(rendered.notice, /could not open @human; notes_list can retry/);
		assert.deepEqual(bootsIn(run.requests[0]), [boot.details.windowId], "the boot still reached the provider");
		assert.match(boot.content, /notes_list/);
		assert.equal(toolResults(entries, "notes_write")[0].isError, false, "healthy homes still work");
	} finally {
		run.dispose();
		w.cleanup();
	}
});
