// Context windows on the active branch: window ids, reset markers, checkpoint backing, whether
// a reset boundary is committed, and what a marker's tail needs to be repaired. Pure functions
// over Pi session entries (the branch, root → leaf); they read no files and call no binary.
// These are host facts of the reset protocol (docs/spec/reset-lifecycle.md §1, §9, §11), not notes/history
// decisions, which stay in `pi-context`.
import { randomUUID } from "node:crypto";
import type { SessionEntry } from "@earendil-works/pi-coding-agent";

export const BOOT = "pi-context/boot";
export const RESET_MARKER = "pi-context/reset-marker";
export const CONTINUATION = "pi-context/continuation";
export const GUIDANCE = "pi-context/guidance";
export const WARNING = "pi-context/warning";
export const MANUAL_WIPE = "pi-context/manual-wipe";
/** A custom entry (never sent to the model) recording `/pi-context on|off`: `{ enabled }`. */
export const SWITCH = "pi-context/switch";

type Entry = SessionEntry;

/** The first 8 code points of the session id (not UTF-16 units: the binary counts the same). */
function sessionPrefix(sessionId: string): string {
	return Array.from(sessionId).slice(0, 8).join("");
}

/** The root window id, `pcw:<first 8 code points of the session id>:root`. */
export function rootWindowId(sessionId: string): string {
	return `pcw:${sessionPrefix(sessionId)}:root`;
}

/** The marker's window id when `entry` is a valid reset marker, else undefined. */
export function markerWindowId(entry: Entry | undefined): string | undefined {
	if (!entry || entry.type !== "custom" || entry.customType !== RESET_MARKER) return undefined;
	const data = entry.data as { windowId?: unknown } | null | undefined;
	if (!data || typeof data !== "object" || Array.isArray(data)) return undefined;
	return typeof data.windowId === "string" && data.windowId !== "" ? data.windowId : undefined;
}

/** Index of the last valid marker on the branch, or -1. */
export function lastMarkerIndex(branch: readonly Entry[]): number {
	for (let i = branch.length - 1; i >= 0; i--) if (markerWindowId(branch[i]) !== undefined) return i;
	return -1;
}

export function hasMarker(branch: readonly Entry[]): boolean {
	return lastMarkerIndex(branch) >= 0;
}

export function currentWindowId(branch: readonly Entry[], sessionId: string): string {
	const i = lastMarkerIndex(branch);
	return i >= 0 ? (markerWindowId(branch[i]) as string) : rootWindowId(sessionId);
}

/** The window current before the marker at `index` (the previous marker's, else the root). */
export function previousWindowId(branch: readonly Entry[], index: number, sessionId: string): string {
	for (let i = index - 1; i >= 0; i--) {
		const w = markerWindowId(branch[i]);
		if (w !== undefined) return w;
	}
	return rootWindowId(sessionId);
}

/** A fresh reset window id, distinct from every marker id on the branch. */
export function mintWindowId(branch: readonly Entry[], sessionId: string): string {
	const taken = new Set(branch.map(markerWindowId).filter((w): w is string => w !== undefined));
	for (;;) {
		const id = `pcw:${sessionPrefix(sessionId)}:${randomUUID().slice(0, 8)}`;
		if (!taken.has(id)) return id;
	}
}

/** The marker at `index` is preceded by its parent, a retain-none empty-summary compaction. */
export function checkpointBacked(branch: readonly Entry[], index: number): boolean {
	const marker = branch[index];
	const prev = branch[index - 1];
	return (
		!!marker &&
		!!prev &&
		marker.parentId === prev.id &&
		prev.type === "compaction" &&
		prev.summary === "" &&
		prev.firstKeptEntryId === prev.id
	);
}

function isBootFor(entry: Entry, windowId: string): boolean {
	return entry.type === "custom_message" && entry.customType === BOOT && bootWindowId(entry.details) === windowId;
}

export function bootWindowId(details: unknown): string | undefined {
	if (!details || typeof details !== "object") return undefined;
	const w = (details as { windowId?: unknown }).windowId;
	return typeof w === "string" ? w : undefined;
}

/**
 * docs/spec/reset-lifecycle.md §11.1: the last marker on the branch is a valid, checkpoint-backed marker for
 * `windowId`, followed by exactly one hidden boot for it and then a hidden continuation, before
 * any other marker, message, foreign custom message, compaction or branch summary.
 */
export function boundaryCommitted(branch: readonly Entry[], windowId: string): boolean {
	const index = lastMarkerIndex(branch);
	if (index < 0 || markerWindowId(branch[index]) !== windowId || !checkpointBacked(branch, index)) return false;
	let boots = 0;
	for (const e of branch.slice(index + 1)) {
		if (e.type === "custom_message") {
			if (e.customType === BOOT && isBootFor(e, windowId) && e.display === false) {
				boots++;
				if (boots > 1) return false;
				continue;
			}
			if (e.customType === CONTINUATION && e.display === false) return boots === 1;
			return false;
		}
		if (e.type === "message" || e.type === "compaction" || e.type === "branch_summary") return false;
		if (markerWindowId(e) !== undefined) return false;
	}
	return false;
}

export type TailState =
	| { kind: "refused" }
	| { kind: "complete" }
	| { kind: "needs"; boot: boolean; continuation: boolean; windowId: string; previousWindowId: string };

/** docs/spec/reset-lifecycle.md §9: what the last marker's tail lacks (or why it must not be touched). */
export function inspectMarkerTail(branch: readonly Entry[], sessionId: string): TailState | undefined {
	const index = lastMarkerIndex(branch);
	if (index < 0) return undefined;
	const windowId = markerWindowId(branch[index]) as string;
	let boot = false;
	let continuation = false;
	for (const e of branch.slice(index + 1)) {
		if (markerWindowId(e) !== undefined) return { kind: "refused" };
		if (e.type === "message" || e.type === "compaction" || e.type === "branch_summary") return { kind: "refused" };
		if (e.type === "custom_message") {
			if (e.customType === BOOT && isBootFor(e, windowId)) {
				if (boot || continuation) return { kind: "refused" };
				boot = true;
			} else if (e.customType === CONTINUATION) {
				if (!boot || continuation) return { kind: "refused" };
				continuation = true;
			} else {
				return { kind: "refused" };
			}
		}
	}
	if (boot && continuation) return { kind: "complete" };
	return { kind: "needs", boot: !boot, continuation: !continuation, windowId, previousWindowId: previousWindowId(branch, index, sessionId) };
}

/** Whether a `custom_message` of `customType` exists in the current window (back to the last marker). */
export function inCurrentWindow(branch: readonly Entry[], customType: string): boolean {
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (markerWindowId(e) !== undefined) return false;
		if (e.type === "custom_message" && e.customType === customType) return true;
	}
	return false;
}

/** Whether a `user` message follows the last marker on the branch. */
export function userAfterMarker(branch: readonly Entry[]): boolean {
	const index = lastMarkerIndex(branch);
	return branch.slice(index + 1).some((e) => e.type === "message" && e.message.role === "user");
}

/** The last `/pi-context on|off` recorded on the branch, or undefined when it was never used. */
export function lastSwitch(branch: readonly Entry[]): boolean | undefined {
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e.type !== "custom" || e.customType !== SWITCH) continue;
		const enabled = (e.data as { enabled?: unknown } | null | undefined)?.enabled;
		if (typeof enabled === "boolean") return enabled;
	}
	return undefined;
}
