// Direct unit tests of src/windows.ts (pure functions over session entries), plus the root
// window id checked against the binary's for session ids beyond ASCII.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
	BOOT,
	CONTINUATION,
	RESET_MARKER,
	boundaryCommitted,
	checkpointBacked,
	currentWindowId,
	inCurrentWindow,
	inspectMarkerTail,
	lastMarkerIndex,
	markerWindowId,
	mintWindowId,
	previousWindowId,
	rootWindowId,
	userAfterMarker,
} from "../src/windows.ts";
import { BIN } from "./harness.mjs";

const SESSION = "0123456789abcdef";

let next = 0;
/** An entry chained to `parent` (or to the previous one made). */
function entry(fields, parent) {
	const id = `e${++next}`;
	return { id, parentId: parent ?? null, timestamp: "2026-11-30T12:00:00.000Z", ...fields };
}
const user = (text) => entry({ type: "message", message: { role: "user", content: text } });
const assistant = () => entry({ type: "message", message: { role: "assistant", content: [] } });
const checkpoint = () => {
	const e = entry({ type: "compaction", summary: "", tokensBefore: 0 });
	e.firstKeptEntryId = e.id;
	return e;
};
const marker = (windowId, parent) => entry({ type: "custom", customType: RESET_MARKER, data: { windowId } }, parent?.id);
const boot = (windowId) => entry({ type: "custom_message", customType: BOOT, display: false, details: { windowId }, content: "" });
const continuation = () => entry({ type: "custom_message", customType: CONTINUATION, display: false, content: "" });

/** checkpoint → marker(windowId) → boot → continuation, the committed reset boundary. */
function boundary(windowId) {
	const cp = checkpoint();
	return [cp, marker(windowId, cp), boot(windowId), continuation()];
}

test("the root window id takes the first 8 code points of the session id", () => {
	assert.equal(rootWindowId(SESSION), "pcw:01234567:root");
	assert.equal(rootWindowId("short"), "pcw:short:root");
	// Astral characters are one code point each (two UTF-16 units).
	assert.equal(rootWindowId("😀😀😀😀😀😀😀😀😀"), "pcw:😀😀😀😀😀😀😀😀:root");
	assert.match(mintWindowId([], "😀😀😀😀😀😀😀😀😀"), /^pcw:(😀){8}:[0-9a-f]{8}$/u);
});

test("the root window id is the binary's, for ASCII, accented and astral session ids", () => {
	const dir = mkdtempSync(join(tmpdir(), "pi-context-windows-"));
	try {
		for (const id of [SESSION, "é1234567890", "😀1😀2😀3😀4😀5", "日本語のセッションです"]) {
			const file = join(dir, "session.jsonl");
			const header = { type: "session", version: 3, id, timestamp: "2026-11-30T12:00:00.000Z", cwd: dir };
			writeFileSync(file, `${JSON.stringify(header)}\n`);
			const r = spawnSync(BIN, ["history-windows", "--session", file], { input: "{}", encoding: "utf8" });
			assert.equal(r.status, 0, r.stdout + r.stderr);
			const windows = JSON.parse(r.stdout).data.windows;
			assert.equal(windows[0].window_id, rootWindowId(id), id);
		}
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

test("markers: only a custom reset marker with a non-empty string windowId counts", () => {
	assert.equal(markerWindowId(marker("pcw:x:1")), "pcw:x:1");
	assert.equal(markerWindowId(marker("")), undefined);
	assert.equal(markerWindowId(entry({ type: "custom", customType: RESET_MARKER, data: [] })), undefined);
	assert.equal(markerWindowId(entry({ type: "custom", customType: "other", data: { windowId: "w" } })), undefined);
	assert.equal(markerWindowId(undefined), undefined);
});

test("current and previous windows follow the markers on the branch", () => {
	const first = boundary("pcw:01234567:a");
	const second = boundary("pcw:01234567:b");
	const branch = [user("hi"), ...first, user("more"), ...second];
	assert.equal(currentWindowId([user("hi")], SESSION), "pcw:01234567:root");
	assert.equal(currentWindowId(branch, SESSION), "pcw:01234567:b");
	const last = lastMarkerIndex(branch);
	assert.equal(branch[last], second[1]);
	assert.equal(previousWindowId(branch, last, SESSION), "pcw:01234567:a");
	assert.equal(previousWindowId(branch, branch.indexOf(first[1]), SESSION), "pcw:01234567:root");
	const minted = mintWindowId(branch, SESSION);
	assert.match(minted, /^pcw:01234567:[0-9a-f]{8}$/);
	assert.ok(minted !== "pcw:01234567:a" && minted !== "pcw:01234567:b");
});

test("a boundary is committed only when checkpoint-backed, with one boot then the continuation", () => {
	const w = "pcw:01234567:a";
	const whole = [user("hi"), ...boundary(w)];
	assert.ok(checkpointBacked(whole, lastMarkerIndex(whole)));
	assert.ok(boundaryCommitted(whole, w));
	assert.ok(!boundaryCommitted(whole, "pcw:01234567:other"), "another window");
	// No checkpoint under the marker.
	const bare = [user("hi"), marker(w), boot(w), continuation()];
	assert.ok(!checkpointBacked(bare, 1));
	assert.ok(!boundaryCommitted(bare, w));
	// Two boots, or a message before the continuation.
	const [cp, m, b, c] = boundary(w);
	assert.ok(!boundaryCommitted([cp, m, b, boot(w), c], w));
	assert.ok(!boundaryCommitted([cp, m, b, user("x"), c], w));
	assert.ok(!boundaryCommitted([cp, m, b], w), "no continuation yet");
});

test("a marker's tail says what it needs, and refuses anything foreign", () => {
	const w = "pcw:01234567:a";
	assert.equal(inspectMarkerTail([user("hi")], SESSION), undefined);
	const [cp, m, b, c] = boundary(w);
	assert.deepEqual(inspectMarkerTail([cp, m], SESSION), {
		kind: "needs",
		boot: true,
		continuation: true,
		windowId: w,
		previousWindowId: "pcw:01234567:root",
	});
	assert.deepEqual(inspectMarkerTail([cp, m, b], SESSION), {
		kind: "needs",
		boot: false,
		continuation: true,
		windowId: w,
		previousWindowId: "pcw:01234567:root",
	});
	assert.deepEqual(inspectMarkerTail([cp, m, b, c], SESSION), { kind: "complete" });
	assert.deepEqual(inspectMarkerTail([cp, m, c], SESSION), { kind: "refused" }, "continuation before boot");
	assert.deepEqual(inspectMarkerTail([cp, m, assistant()], SESSION), { kind: "refused" });
	assert.deepEqual(inspectMarkerTail([cp, m, boot("pcw:01234567:z")], SESSION), { kind: "refused" }, "a boot for another window");
});

test("window-local lookups stop at the last marker", () => {
	const w = "pcw:01234567:a";
	const warning = entry({ type: "custom_message", customType: "pi-context/warning", display: true, content: "" });
	const branch = [warning, ...boundary(w)];
	assert.ok(inCurrentWindow([warning], "pi-context/warning"));
	assert.ok(!inCurrentWindow(branch, "pi-context/warning"), "before the marker");
	assert.ok(inCurrentWindow(branch, CONTINUATION));
	assert.ok(!userAfterMarker(branch));
	assert.ok(userAfterMarker([...branch, user("back")]));
	assert.ok(userAfterMarker([user("no marker at all")]));
});
