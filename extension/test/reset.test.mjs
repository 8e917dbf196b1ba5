// The reset protocol under the real Pi (SDK route, faux model, real binary): a manual
// /wipe-memory closes out, commits exactly the four entries in order at settlement, and stops;
// the next provider request carries the new window's boot and none of the earlier conversation;
// history_search still finds the earlier conversation.
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertFourEntries, binary, bootsIn, callTool, messageText, requestText, say, startSession, toolResults, world } from "./harness.mjs";

const SECRET = "marmalade-7731";

test("root boot is written at the head of a new session", async () => {
	const w = world({ compaction: { enabled: false } });
	const run = await startSession(w, { steps: [say("hello")] });
	try {
		await run.prompt("hi");
		const entries = run.entries();
		const boots = entries.filter((e) => e.type === "custom_message" && e.customType === "pi-context/boot");
		assert.equal(boots.length, 1);
		const header = entries[0];
		assert.deepEqual(boots[0].details, { windowId: `pcw:${header.id.slice(0, 8)}:root` });
		assert.equal(boots[0].display, false);
		// The provider saw the boot before the user's prompt.
		const req = run.requests[0];
		assert.deepEqual(bootsIn(req), [boots[0].details.windowId]);
		const bootAt = req.findIndex((m) => messageText(m).startsWith("<context_window>"));
		const userAt = req.findIndex((m) => m.role === "user" && messageText(m) === "hi");
		assert.ok(bootAt >= 0 && bootAt < userAt, "boot precedes the conversation");
		assert.ok(!run.notices.some((n) => /memory cleared/.test(n.message)), "no reset notice for the root boot");
	} finally {
		run.dispose();
		w.cleanup();
	}
});

test("/wipe-memory commits the four entries, the next request holds only the fresh window, history still finds the past", async () => {
	const w = world({ compaction: { enabled: false } });
	const run = await startSession(w, {
		steps: [
			say(`I will remember ${SECRET}.`),
			// The manual close-out turn: the agent saves a note, then stops.
			callTool("notes_write", { address: "@project/state.md", content: "goal: test the reset" }),
			say("notes saved"),
		],
	});
	try {
		await run.prompt(`The secret word is ${SECRET}.`);
		await run.prompt("/wipe-memory");
		await run.session.waitForIdle();
		const entries = run.entries();
		const windowId = assertFourEntries(entries);
		// The close-out request went to the model hidden, and the run stopped in the fresh window.
		const manual = entries.filter((e) => e.type === "custom_message" && e.customType === "pi-context/manual-wipe");
		assert.equal(manual.length, 1);
		assert.equal(manual[0].display, false);
		// Its text is the binary's close-out, even with automatic compaction off (no budget
		// warning would ever be due): the extension has no text of its own.
		const closeOut = binary("budget-check", ["--agent-dir", w.agentDir, "--cwd", w.cwd], { close_out: true }).data.message;
		assert.equal(closeOut.kind, "close_out");
		assert.equal(manual[0].content, closeOut.text);
		// The continuation is boot-render's, from the same call that rendered the boot.
		const rendered = binary("boot-render", ["--session-id", entries[0].id], {}).data;
		assert.equal(entries.at(-1).content, rendered.continuation);
		assert.match(rendered.continuation, /^<context_window_continuation>/);
		assert.equal(run.requests.length, 3, "no request after the reset: a manual wipe stops");
		assert.ok(run.notices.some((n) => n.message.includes("received; the agent closes out its notes")));
		assert.deepEqual(
			run.notices.filter((n) => n.message.startsWith("pi-context: memory cleared")).map((n) => n.message),
			[`pi-context: memory cleared · ${windowId}`],
		);

		run.respond(callTool("history_search", { query: SECRET }), say("found it"));
		await run.prompt("What was the secret word?");
		const fresh = run.requests[3];
		const text = requestText(fresh);
		assert.ok(!text.includes(SECRET), "no earlier conversation reaches the provider");
		assert.ok(!text.includes("goal: test the reset"), "no earlier tool call reaches the provider");
		assert.deepEqual(bootsIn(fresh), [windowId], "exactly one boot: the fresh window's");
		const bootAt = fresh.findIndex((m) => messageText(m).startsWith("<context_window>"));
		const userAt = fresh.findIndex((m) => m.role === "user" && messageText(m) === "What was the secret word?");
		assert.ok(bootAt >= 0 && bootAt < userAt, "the boot comes before the new conversation");
		const found = toolResults(run.entries(), "history_search")[0];
		assert.equal(found.isError, false);
		assert.ok(found.content[0].text.includes(SECRET), "history_search finds the earlier conversation");
	} finally {
		run.dispose();
		w.cleanup();
	}
});
