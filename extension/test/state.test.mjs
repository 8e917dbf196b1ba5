// Direct unit tests of src/state.ts: the lifecycle's one state value and what each named
// transition resets (and what it keeps).
import assert from "node:assert/strict";
import { test } from "node:test";
import { initial as reducerInitial } from "../src/reducer.ts";
import {
	initialState,
	modelSelected,
	runAborted,
	runSettled,
	sessionShutDown,
	sessionStarted,
	switchedOff,
	switchedOn,
} from "../src/state.ts";

const ARMED = { request: { kind: "close-out", windowId: "w", source: "manual" }, overflow: "idle" };

/** A state with something pending in every field a transition may reset. */
function busy() {
	const s = initialState();
	sessionStarted(s, true);
	s.reset = ARMED;
	s.staged = { warning: { windowId: "w", content: "save your notes" } };
	s.pendingResetNotices.add("w");
	s.pendingWarningNotice = "w";
	s.shownWarnings.add("pi-context: a settings warning");
	s.warnedWindows.add("w");
	s.refusedWindows.add("w");
	s.incompleteWindows.add("w");
	s.binaryNoticeShown = true;
	s.automatic = false;
	return s;
}

/** The instance-wide memory no transition forgets. */
function assertInstanceMemoryKept(s) {
	assert.ok(s.warnedWindows.has("w") && s.refusedWindows.has("w") && s.incompleteWindows.has("w"));
	assert.equal(s.binaryNoticeShown, true);
	assert.equal(s.automatic, false);
}

test("a fresh state is on, inactive and has nothing pending", () => {
	const s = initialState();
	assert.deepEqual(
		[s.enabled, s.active, s.generation, s.reset, s.staged, s.pendingResetNotices.size, s.pendingWarningNotice],
		[true, false, 0, reducerInitial, {}, 0, undefined],
	);
	assert.notEqual(initialState().pendingResetNotices, s.pendingResetNotices, "no shared sets between instances");
});

test("a session start begins a new lifecycle with the branch's switch and nothing pending", () => {
	const s = busy();
	const generation = s.generation;
	sessionStarted(s, false);
	assert.equal(s.generation, generation + 1);
	assert.deepEqual([s.active, s.enabled], [true, false]);
	assert.deepEqual([s.reset, s.staged, s.pendingResetNotices.size, s.pendingWarningNotice], [reducerInitial, {}, 0, undefined]);
	assert.equal(s.shownWarnings.size, 0, "settings warnings may show again");
	assertInstanceMemoryKept(s);
});

test("a shutdown ends the lifecycle the same way and leaves the session inactive", () => {
	const s = busy();
	const generation = s.generation;
	sessionShutDown(s);
	assert.equal(s.generation, generation + 1);
	assert.equal(s.active, false);
	assert.deepEqual([s.reset, s.staged, s.pendingResetNotices.size, s.shownWarnings.size], [reducerInitial, {}, 0, 0]);
	assertInstanceMemoryKept(s);
});

test("switching off drops what is pending but keeps the lifecycle's shown warnings; on only bumps", () => {
	const s = busy();
	const generation = s.generation;
	switchedOff(s);
	assert.deepEqual([s.enabled, s.generation, s.active], [false, generation + 1, true]);
	assert.deepEqual([s.reset, s.staged, s.pendingResetNotices.size, s.pendingWarningNotice], [reducerInitial, {}, 0, undefined]);
	assert.equal(s.shownWarnings.size, 1);
	s.reset = ARMED;
	switchedOn(s);
	assert.deepEqual([s.enabled, s.generation, s.reset], [true, generation + 2, ARMED]);
	assertInstanceMemoryKept(s);
});

test("run-scoped transitions touch only the run's fields", () => {
	const settled = busy();
	runSettled(settled);
	assert.deepEqual([settled.reset, settled.staged], [reducerInitial, {}]);
	assert.ok(settled.pendingResetNotices.has("w"), "notices are flushed by the hook, not dropped here");

	const aborted = busy();
	runAborted(aborted);
	assert.equal(aborted.reset, reducerInitial);
	assert.ok(aborted.staged.warning, "drafts are dropped at turn_end, not by the abort");

	const switched = busy();
	modelSelected(switched);
	assert.deepEqual([switched.staged, switched.reset], [{}, ARMED]);
});
