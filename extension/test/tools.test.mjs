// Every tool round-trips through the real `pi-context` binary under the real Pi (SDK route,
// faux model): the model calls it, the extension spawns the binary with the live identity, and
// the toolResult persisted in the session JSONL carries the binary's text as content and its
// envelope as details, with isError exactly on ok:false.
import assert from "node:assert/strict";
import { test } from "node:test";
import { callTool, say, startSession, toolResults, world } from "./harness.mjs";

test("every binary-backed tool round-trips through the real binary", async () => {
	const w = world({ compaction: { enabled: false } });
	const run = await startSession(w, {
		steps: [
			callTool("notes_write", { address: "plan.md", content: "the zebra plan\nsecond line" }),
			callTool("notes_read", { address: "plan.md" }),
			callTool("notes_update", { address: "plan.md", edits: [{ oldText: "zebra", newText: "okapi" }] }),
			callTool("notes_list", { scope: "session" }),
			callTool("notes_search", { query: "okapi" }),
			callTool("notes_read", { address: "missing.md" }),
			callTool("history_windows", {}),
			callTool("history_list", {}),
			callTool("history_search", { query: "marmalade" }),
			callTool("history_read", { seq: 1 }),
			callTool("get_context_remaining", {}),
			say("all done"),
		],
	});
	try {
		await run.prompt("Please keep a plan about marmalade.");
		const entries = run.entries();
		const one = (name, i = 0) => {
			const r = toolResults(entries, name)[i];
			assert.ok(r, `${name} has a toolResult`);
			assert.equal(r.content[0].type, "text");
			return r;
		};
		for (const name of ["notes_write", "notes_update", "notes_list", "notes_search", "history_windows", "history_list", "history_search", "history_read"]) {
			const r = one(name);
			assert.equal(r.isError, false, `${name}: ${r.content[0].text}`);
			assert.equal(r.details.ok, true, name);
			assert.ok(!("text" in r.details), `${name}: details hold the envelope without text`);
			assert.ok(r.content[0].text.length > 0, name);
		}
		assert.equal(one("notes_write").details.data.outcome, "created");
		const read = one("notes_read");
		assert.equal(read.isError, false);
		assert.match(read.content[0].text, /the zebra plan/);
		assert.match(one("notes_search").content[0].text, /okapi/i);
		assert.match(one("notes_list").content[0].text, /plan\.md/);
		const missing = one("notes_read", 1);
		assert.equal(missing.isError, true);
		assert.equal(missing.details.ok, false);
		assert.equal(missing.details.error.code, "not_found");
		assert.match(missing.content[0].text, /^error: not_found: /);
		assert.match(one("history_search").content[0].text, /marmalade/i);
		const remaining = one("get_context_remaining");
		assert.equal(remaining.isError, false);
		const shown = JSON.parse(remaining.content[0].text);
		assert.equal(typeof shown.remaining_tokens, "number");
		assert.equal(remaining.details.data.remaining_tokens, shown.remaining_tokens);
		assert.deepEqual(run.errors, []);
	} finally {
		run.dispose();
		w.cleanup();
	}
});
