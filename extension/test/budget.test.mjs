// Budget close-outs under the real Pi (SDK route, faux model, real binary): the reminder is
// persisted once, the warning is injected into the request that crosses the warning line and
// persisted, `wipe_memory` then commits the reset after its batch and the run continues in the
// fresh window; the hard reserve resets without the agent's cooperation; nothing resets while off.
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertFourEntries, bootsIn, callTool, messageText, say, startSession, toolResults, world } from "./harness.mjs";

const customs = (entries, type) => entries.filter((e) => e.type === "custom_message" && e.customType === type);
const BULK = "lorem ipsum dolor sit amet ".repeat(1200); // ≈ 32k chars ≈ 8k tokens

test("budget warning at the warning line, then wipe_memory continues in the fresh window", async () => {
	const w = world({ compaction: { enabled: true } });
	let warnedRequest;
	const run = await startSession(w, {
		contextWindow: 40_000,
		steps: [
			say("hello"),
			(context) => {
				warnedRequest = context.messages;
				return callTool("wipe_memory", {}, "call-wipe");
			},
			say("continuing in the fresh window"),
		],
	});
	try {
		await run.prompt("hi");
		let entries = run.entries();
		assert.equal(customs(entries, "pi-context/guidance").length, 1, "the reminder is persisted once in the window");
		assert.equal(customs(entries, "pi-context/warning").length, 0);

		await run.prompt(`Here is a long document:\n${BULK}`);
		entries = run.entries();
		// The warning reached the model in the very request that crossed the line, at the end.
		const last = warnedRequest.at(-1);
		assert.match(messageText(last), /<context_window_guidance>/);
		assert.equal(customs(entries, "pi-context/warning").length, 1, "the warning is persisted");
		const wipe = toolResults(entries, "wipe_memory")[0];
		assert.deepEqual(JSON.parse(wipe.content[0].text), { status: "rollover_requested" });
		// Order: …, toolResult, warning, compaction, marker, boot, continuation, fresh reply.
		const at = entries.findIndex((e) => e.type === "compaction");
		const windowId = assertFourEntries(entries, at);
		assert.equal(entries[at - 1].customType, "pi-context/warning");
		const reply = entries.at(-1);
		assert.equal(reply.message?.role, "assistant");
		assert.match(messageText(reply.message), /fresh window/);
		const fresh = run.requests.at(-1);
		assert.deepEqual(bootsIn(fresh), [windowId]);
		assert.ok(!fresh.some((m) => messageText(m).includes("lorem ipsum")), "the fresh window starts without the old conversation");
		assert.ok(run.notices.some((n) => n.message === `pi-context: memory cleared · ${windowId}`));
		assert.equal(run.notices.filter((n) => n.message.startsWith("pi-context: Context almost full")).length, 1);
	} finally {
		run.dispose();
		w.cleanup();
	}
});

test("the hard reserve commits a safety reset and the run continues in the fresh window", async () => {
	const w = world({ compaction: { enabled: true } });
	const run = await startSession(w, { contextWindow: 40_000, steps: [say("ok"), say("after the safety reset")] });
	try {
		await run.prompt(`${BULK}${BULK}${BULK}`);
		const entries = run.entries();
		const at = entries.findIndex((e) => e.type === "compaction");
		assert.ok(at > 0, "the hard reserve committed a reset");
		const windowId = assertFourEntries(entries, at);
		assert.equal(run.requests.length, 2, "one request follows in the fresh window");
		assert.deepEqual(bootsIn(run.requests[1]), [windowId]);
		assert.ok(!run.requests[1].some((m) => messageText(m).includes("lorem ipsum")));
	} finally {
		run.dispose();
		w.cleanup();
	}
});

test("while off: wipe_memory and /wipe-memory refuse and nothing resets; on again keeps one root boot", async () => {
	const w = world({ compaction: { enabled: false } });
	const run = await startSession(w, { steps: [callTool("wipe_memory", {}), say("understood")] });
	try {
		await run.prompt("/pi-context off");
		assert.ok(run.notices.some((n) => /^pi-context: off · /.test(n.message)));
		await run.prompt("please wipe");
		const wipe = toolResults(run.entries(), "wipe_memory")[0];
		assert.equal(wipe.isError, true);
		assert.match(JSON.parse(wipe.content[0].text).error, /off/);
		await run.prompt("/wipe-memory");
		assert.ok(run.notices.some((n) => n.type === "error" && /must be on|needs pi-context to be on/.test(n.message)));
		assert.equal(run.entries().filter((e) => e.customType === "pi-context/reset-marker").length, 0);
		await run.prompt("/pi-context bogus");
		assert.ok(run.notices.some((n) => n.type === "error" && /\[on\|off\]/.test(n.message)));
		await run.prompt("/pi-context");
		assert.ok(run.notices.filter((n) => /^pi-context: off · /.test(n.message)).length === 2, "bare status reports off");
		await run.prompt("/pi-context on");
		assert.ok(run.notices.some((n) => /^pi-context: on · .* · Pi 1\.6\.0$/.test(n.message)));
		const boots = run.entries().filter((e) => e.customType === "pi-context/boot");
		assert.equal(boots.length, 1, "the root boot exists once (written at start, not duplicated by on)");
	} finally {
		run.dispose();
		w.cleanup();
	}
});
