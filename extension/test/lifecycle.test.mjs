// Lifecycle edges under the real Pi (SDK route, faux model, real binary): reopening a session
// from disk keeps its window, startup repairs only an incomplete marker tail, /compact is
// cancelled with a notice, and neither an abort nor a provider error ever commits a reset.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { assertFourEntries, bootsIn, callTool, fauxAssistantMessage, messageText, readEntries, say, startSession, world } from "./harness.mjs";

const SECRET = "quince-5512";
const markers = (entries) => entries.filter((e) => e.type === "custom" && e.customType === "pi-context/reset-marker");

/** A session with one committed manual reset; returns its file and window id. */
async function sessionWithReset(w) {
	const run = await startSession(w, { steps: [say(`noted ${SECRET}`), say("closing out")] });
	await run.prompt(`Remember ${SECRET}.`);
	await run.prompt("/wipe-memory");
	await run.session.waitForIdle();
	const file = run.session.sessionFile;
	const windowId = assertFourEntries(run.entries());
	run.dispose();
	return { file, windowId };
}

test("reopening the session file keeps the window: same boot, no old conversation, nothing re-appended", async () => {
	const w = world({ compaction: { enabled: false } });
	try {
		const { file, windowId } = await sessionWithReset(w);
		const before = readEntries(file).length;
		const run = await startSession(w, { sessionFile: file, steps: [say("back again")] });
		try {
			assert.equal(readEntries(file).length, before, "a complete tail is not repaired");
			await run.prompt("Where were we?");
			assert.deepEqual(bootsIn(run.requests[0]), [windowId]);
			assert.ok(!run.requests[0].some((m) => messageText(m).includes(SECRET)));
			assert.ok(!run.notices.some((n) => /memory cleared/.test(n.message)), "reopening is not a reset");
		} finally {
			run.dispose();
		}
	} finally {
		w.cleanup();
	}
});

test("startup repairs only an incomplete marker tail", async () => {
	const w = world({ compaction: { enabled: false } });
	try {
		const { file, windowId } = await sessionWithReset(w);
		// Cut the continuation (a crash between appends): the boot stays, the continuation returns.
		const lines = readFileSync(file, "utf8").trim().split("\n");
		writeFileSync(file, lines.slice(0, -1).join("\n") + "\n");
		let run = await startSession(w, { sessionFile: file, steps: [say("repaired")] });
		await run.prompt("hello");
		run.dispose();
		let entries = readEntries(file);
		const at = entries.findIndex((e) => e.type === "compaction");
		assertFourEntries(entries, at);
		assert.equal(entries.filter((e) => e.customType === "pi-context/boot" && e.details?.windowId === windowId).length, 1, "the boot is not duplicated");
		assert.ok(!run.notices.some((n) => /memory cleared/.test(n.message)), "a repair is silent");

		// A marker followed by conversation but no boot is refused, never repaired: the provider
		// request is cancelled instead of leaking history.
		const bare = lines.slice(0, lines.findIndex((l) => l.includes('"pi-context/boot"') && l.includes(windowId)));
		bare.push(JSON.stringify({ type: "message", id: "feedbeef", parentId: JSON.parse(bare.at(-1)).id, timestamp: new Date().toISOString(), message: { role: "user", content: [{ type: "text", text: "after the marker" }], timestamp: Date.now() } }));
		writeFileSync(file, bare.join("\n") + "\n");
		run = await startSession(w, { sessionFile: file, steps: [say("must not be asked")] });
		await run.prompt("anything?");
		entries = readEntries(file);
		assert.equal(entries.filter((e) => e.customType === "pi-context/boot" && e.details?.windowId === windowId).length, 0, "refused tail: no repair");
		assert.equal(run.requests.length, 0, "the request was cancelled");
		assert.ok(run.notices.some((n) => n.type === "error" && n.message.includes(windowId) && n.message.includes("/wipe-memory")));
		run.dispose();
	} finally {
		w.cleanup();
	}
});

test("/compact is cancelled with a notice pointing to /wipe-memory", async () => {
	const w = world({ compaction: { enabled: false, keepRecentTokens: 1 } });
	const run = await startSession(w, { steps: [say("one"), say("two")] });
	try {
		await run.prompt("first");
		await run.prompt("second");
		await assert.rejects(run.session.compact());
		assert.equal(run.entries().filter((e) => e.type === "compaction").length, 0);
		assert.ok(run.notices.some((n) => n.type === "warning" && n.message.includes("/compact") && n.message.includes("/wipe-memory")));
	} finally {
		run.dispose();
		w.cleanup();
	}
});

test("an aborted close-out never commits a reset", async () => {
	const w = world({ compaction: { enabled: false } });
	let abortNext = false;
	const aborter = (pi) => {
		pi.on("context", (_e, ctx) => {
			if (abortNext) {
				abortNext = false;
				ctx.abort();
			}
		});
	};
	const run = await startSession(w, { steps: [say("one"), say("two")], extraFactories: [aborter] });
	try {
		await run.prompt("first");
		abortNext = true;
		await run.prompt("/wipe-memory");
		await run.session.waitForIdle();
		assert.equal(markers(run.entries()).length, 0, "aborted: no reset");
		await run.prompt("next");
		assert.equal(markers(run.entries()).length, 0, "the aborted request is forgotten, not committed later");
		assert.ok(!run.notices.some((n) => /memory cleared/.test(n.message)));
	} finally {
		run.dispose();
		w.cleanup();
	}
});

test("a provider error never commits a reset", async () => {
	const w = world({ compaction: { enabled: false } });
	const run = await startSession(w, {
		steps: [say("one"), fauxAssistantMessage("", { stopReason: "error", errorMessage: "upstream exploded" }), say("three")],
	});
	try {
		await run.prompt("first");
		await run.prompt("/wipe-memory");
		await run.session.waitForIdle();
		assert.equal(markers(run.entries()).length, 0, "error: no reset");
		await run.prompt("next");
		assert.equal(markers(run.entries()).length, 0, "the failed close-out is dropped");
	} finally {
		run.dispose();
		w.cleanup();
	}
});

test("/tree skips the branch summary when a reset marker lies on the path", async () => {
	const w = world({ compaction: { enabled: false } });
	try {
		const { file } = await sessionWithReset(w);
		const run = await startSession(w, { sessionFile: file, steps: [] });
		try {
			const firstUser = run.entries().find((e) => e.type === "message" && e.message.role === "user");
			await run.session.navigateTree(firstUser.id, { summarize: true });
			const summaries = run.entries().filter((e) => e.type === "branch_summary");
			assert.ok(summaries.every((e) => e.summary === ""), "no generated summary");
			assert.equal(run.faux.state.callCount, 0, "no model call for a summary");
			assert.ok(run.notices.some((n) => n.message.startsWith("pi-context: branch summary skipped")));
		} finally {
			run.dispose();
		}
	} finally {
		w.cleanup();
	}
});
