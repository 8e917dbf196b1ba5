// Direct unit tests of src/reducer.ts, the pure reset-control state machine
// (docs/spec/reset-lifecycle.md §6): every transition family, and which lazy facts it reads.
import assert from "node:assert/strict";
import { test } from "node:test";
import { beforeSettle, closeOut, initial, toolRequest, turnEnd } from "../src/reducer.ts";

const W = "pcw:01234567:root";
const OTHER = "pcw:01234567:next";

/** A lazy fact that records that it was read. */
function fact(value, reads, name) {
	return () => {
		reads.push(name);
		return value;
	};
}

/** turn_end facts: a successful enabled turn in W unless overridden. */
function turnFacts(over = {}, reads = []) {
	const { queued = false, automatic = true, hardReserve = false, ...rest } = over;
	return {
		windowId: W,
		aborted: false,
		overflow: false,
		failed: false,
		enabled: true,
		queued: fact(queued, reads, "queued"),
		automaticResetEnabled: fact(automatic, reads, "automatic"),
		hardReserveDue: fact(hardReserve, reads, "hardReserve"),
		...rest,
	};
}

/** before_settle facts: a successful enabled settle in W unless overridden. */
function settleFacts(over = {}, reads = []) {
	const { queued = false, enabled = true, automatic = true, ...rest } = over;
	return {
		windowId: W,
		aborted: false,
		failed: false,
		queued: fact(queued, reads, "queued"),
		enabled: fact(enabled, reads, "enabled"),
		automaticResetEnabled: fact(automatic, reads, "automatic"),
		...rest,
	};
}

const manual = { request: { kind: "close-out", windowId: W, source: "manual" }, overflow: "idle" };
const automatic = { request: { kind: "close-out", windowId: W, source: "automatic" }, overflow: "idle" };
const tool = { request: { kind: "tool-requested", windowId: W, source: "tool" }, overflow: "idle" };
const stopPending = { request: { kind: "stop-pending", windowId: W }, overflow: "idle" };

test("close-out requests arm once and a manual one upgrades an automatic or tool request", () => {
	assert.deepEqual(closeOut(initial, W, "automatic"), [automatic, "close-out-armed"]);
	assert.deepEqual(closeOut(automatic, W, "automatic"), [automatic, "already-pending"]);
	assert.deepEqual(closeOut(automatic, W, "manual"), [manual, "close-out-armed"]);
	assert.deepEqual(closeOut(manual, W, "automatic"), [manual, "already-pending"]);
	assert.deepEqual(closeOut(manual, W, "manual"), [manual, "already-pending"]);
	assert.deepEqual(closeOut(tool, W, "manual"), [manual, "close-out-armed"]);
	assert.deepEqual(closeOut(tool, W, "automatic"), [tool, "already-pending"]);
	assert.deepEqual(closeOut(stopPending, OTHER, "manual"), [stopPending, "already-pending"]);
	// A request for another window is replaced.
	const [next, effect] = closeOut(manual, OTHER, "automatic");
	assert.deepEqual([next.request, effect], [{ kind: "close-out", windowId: OTHER, source: "automatic" }, "close-out-armed"]);
});

test("tool requests arm once, are absorbed by a manual close-out and upgrade an automatic one", () => {
	assert.deepEqual(toolRequest(initial, W), [tool, "close-out-armed"]);
	assert.deepEqual(toolRequest(tool, W), [tool, "already-pending"]);
	assert.deepEqual(toolRequest(manual, W), [manual, "already-pending"]);
	assert.deepEqual(toolRequest(automatic, W), [{ request: { kind: "tool-requested", windowId: W, source: "automatic" }, overflow: "idle" }, "close-out-armed"]);
	assert.deepEqual(toolRequest(stopPending, W), [stopPending, "already-pending"]);
});

test("turn end commits a tool request, and a manual one also latches the stop", () => {
	assert.deepEqual(turnEnd(tool, turnFacts()), [initial, "commit-boundary"]);
	const [next, effect] = turnEnd(manual, turnFacts({ hardReserve: true }));
	assert.equal(effect, "commit-boundary-stop");
	assert.deepEqual(next, stopPending);
	// A pending stop never resets twice in one run.
	assert.deepEqual(turnEnd(stopPending, turnFacts({ windowId: OTHER, hardReserve: true })), [stopPending, "none"]);
	// An armed close-out without a tool request stays armed.
	assert.deepEqual(turnEnd(automatic, turnFacts()), [automatic, "none"]);
});

test("turn end reads the hard reserve only when no tool request is pending", () => {
	const reads = [];
	turnEnd(tool, turnFacts({}, reads));
	assert.deepEqual(reads, []);
	turnEnd(initial, turnFacts({ hardReserve: true }, reads));
	assert.deepEqual(reads, ["hardReserve"]);
});

test("aborts, failures and a disabled extension end the request at turn end", () => {
	assert.deepEqual(turnEnd(manual, turnFacts({ aborted: true })), [initial, "none"]);
	const spent = { ...tool, overflow: "spent" };
	assert.deepEqual(turnEnd(spent, turnFacts({ failed: true })), [{ request: { kind: "none" }, overflow: "spent" }, "none"]);
	assert.deepEqual(turnEnd(tool, turnFacts({ enabled: false })), [initial, "none"]);
	// A request for another window does not count.
	assert.deepEqual(turnEnd({ ...tool, request: { ...tool.request, windowId: OTHER } }, turnFacts()), [initial, "none"]);
});

test("an overflow arms one recovery per chain and reads only the facts it needs", () => {
	const reads = [];
	const [pending] = turnEnd(initial, turnFacts({ overflow: true }, reads));
	assert.equal(pending.overflow, "pending");
	assert.deepEqual(reads, ["queued", "automatic"], "never the hard reserve");
	assert.deepEqual(beforeSettle(pending, settleFacts()), [{ request: { kind: "none" }, overflow: "spent" }, "recover-overflow"]);
	// A second overflow in the same chain gets no second reset.
	const [again] = turnEnd({ request: { kind: "none" }, overflow: "spent" }, turnFacts({ overflow: true }));
	assert.equal(again.overflow, "pending-spent");
	assert.deepEqual(beforeSettle(again, settleFacts()), [{ request: { kind: "none" }, overflow: "spent" }, "none"]);
	// Queued input, or automatic resets off, leave no recovery pending.
	assert.equal(turnEnd(initial, turnFacts({ overflow: true, queued: true }))[0].overflow, "idle");
	assert.equal(turnEnd(initial, turnFacts({ overflow: true, automatic: false }))[0].overflow, "idle");
});

test("a manual close-out that overflows commits and stops, even with automatic resets off", () => {
	const [pending] = turnEnd(manual, turnFacts({ overflow: true, automatic: false }));
	assert.deepEqual(pending, { request: manual.request, overflow: "pending" });
	assert.deepEqual(beforeSettle(pending, settleFacts({ automatic: false })), [initial, "commit-boundary-stop"]);
});

test("a queued settle with a pending overflow reads only the queue", () => {
	const reads = [];
	const pending = { request: { kind: "none" }, overflow: "pending" };
	assert.deepEqual(beforeSettle(pending, settleFacts({ queued: true }, reads)), [pending, "none"]);
	assert.deepEqual(reads, ["queued"]);
});

test("settling commits a manual close-out and stops, but drops an automatic one (0.35.2+)", () => {
	assert.deepEqual(beforeSettle(manual, settleFacts()), [initial, "commit-boundary-stop"]);
	assert.deepEqual(beforeSettle(automatic, settleFacts()), [initial, "none"]);
	assert.deepEqual(beforeSettle(manual, settleFacts({ queued: true })), [manual, "none"], "waits for queued input");
	assert.deepEqual(beforeSettle(manual, settleFacts({ failed: true })), [initial, "none"]);
	assert.deepEqual(beforeSettle(manual, settleFacts({ enabled: false })), [initial, "none"]);
	assert.deepEqual(beforeSettle(manual, settleFacts({ aborted: true })), [initial, "none"]);
});

test("the stop latch stops after the safety reset committed, or commits it when it did not", () => {
	// The window moved on: the reset committed at turn end, so only stop.
	assert.deepEqual(beforeSettle(stopPending, settleFacts({ windowId: OTHER })), [initial, "stop"]);
	// Still in the old window: commit now and stop, unless failed or disabled.
	assert.deepEqual(beforeSettle(stopPending, settleFacts()), [initial, "commit-boundary-stop"]);
	assert.deepEqual(beforeSettle(stopPending, settleFacts({ failed: true })), [initial, "none"]);
	assert.deepEqual(beforeSettle(stopPending, settleFacts({ enabled: false })), [initial, "none"]);
	assert.deepEqual(beforeSettle(stopPending, settleFacts({ queued: true })), [stopPending, "none"]);
});
