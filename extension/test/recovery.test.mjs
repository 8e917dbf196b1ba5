// Recovery paths under the real Pi (SDK route, faux model, real binary): a context-overflow
// error commits a reset and the run continues once in the fresh window; the hard reserve hit
// during a manual close-out commits the reset and the stop latch cancels Pi's follow-up
// request in the fresh window.
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertFourEntries, bootsIn, callTool, fauxAssistantMessage, messageText, say, startSession, world } from "./harness.mjs";

const markers = (entries) => entries.filter((e) => e.type === "custom" && e.customType === "pi-context/reset-marker");
const BULK = "lorem ipsum dolor sit amet ".repeat(1200); // ≈ 32k chars ≈ 8k tokens

test("a context overflow commits a reset and the run continues once in the fresh window", async () => {
	const w = world({ compaction: { enabled: true } });
	const run = await startSession(w, {
		steps: [
			say("one"),
			fauxAssistantMessage("", { stopReason: "error", errorMessage: "prompt is too long: 213462 tokens > 200000 maximum" }),
			say("recovered in the fresh window"),
		],
	});
	try {
		await run.prompt("first, about quokkas");
		await run.prompt("second");
		await run.session.waitForIdle();
		const entries = run.entries();
		assert.equal(markers(entries).length, 1, "exactly one reset");
		const at = entries.findIndex((e) => e.type === "compaction");
		const windowId = assertFourEntries(entries, at);
		// Pi drops the failed reply from its context with a context_edit; the reset follows both.
		const lastMessage = entries.slice(0, at).filter((e) => e.type === "message").at(-1);
		assert.equal(lastMessage.message.stopReason, "error", "the reset follows the overflowed reply");
		assert.equal(run.requests.length, 3, "one request follows in the fresh window");
		const fresh = run.requests[2];
		assert.deepEqual(bootsIn(fresh), [windowId]);
		assert.ok(!fresh.some((m) => messageText(m).includes("quokkas")), "the old conversation stays out");
		assert.match(messageText(entries.at(-1).message), /recovered/);
		assert.ok(run.notices.some((n) => n.message === `pi-context: memory cleared · ${windowId}`));
	} finally {
		run.dispose();
		w.cleanup();
	}
});

test("hard reserve during a manual close-out: reset after the tool batch, then the stop latch ends the run", async () => {
	const w = world({ compaction: { enabled: true } });
	const run = await startSession(w, {
		contextWindow: 40_000,
		steps: [
			say("ok"),
			// The close-out turn writes a note big enough to cross the hard reserve.
			callTool("notes_write", { address: "dump.md", content: `${BULK}${BULK}` }),
			say("must never be asked: the latch cancels this request"),
		],
	});
	try {
		await run.prompt(`read this: ${BULK}`);
		assert.equal(markers(run.entries()).length, 0, "the warning zone alone never resets");
		await run.prompt("/wipe-memory");
		await run.session.waitForIdle();
		const entries = run.entries();
		assert.equal(markers(entries).length, 1);
		const at = entries.findIndex((e) => e.type === "compaction");
		const windowId = assertFourEntries(entries, at);
		assert.equal(entries[at - 1].message?.role, "toolResult", "committed right after the tool batch");
		assert.equal(run.requests.length, 2, "no request in the fresh window: the latch stopped it");
		assert.ok(!entries.some((e) => e.message?.role === "assistant" && messageText(e.message).includes("must never be asked")));
		assert.ok(run.notices.some((n) => n.message === `pi-context: memory cleared · ${windowId}`));

		// The latch is spent: the next prompt runs normally in the fresh window.
		run.faux.setResponses([]);
		run.respond(say("fresh and working"));
		await run.prompt("hello again");
		assert.deepEqual(bootsIn(run.requests.at(-1)), [windowId]);
		assert.match(messageText(run.entries().at(-1).message), /fresh and working/);
	} finally {
		run.dispose();
		w.cleanup();
	}
});
