// The reset-control reducer of docs/spec/reset-lifecycle.md §6: a pure state machine that decides, from one
// lifecycle event and the facts the adapter supplies lazily, whether a reset boundary is
// committed, whether the run continues or stops, and which request stays pending. It follows
// the 0.35.2+ variant chosen in docs/spec/README.md: an automatic (budget) close-out alone is
// discarded at settlement; only `wipe_memory`, the hard reserve, or a manual `/wipe-memory`
// commit. No I/O here.

export type Source = "manual" | "automatic";
export type Request =
	| { kind: "none" }
	| { kind: "close-out"; windowId: string; source: Source }
	| { kind: "stop-pending"; windowId: string }
	| { kind: "tool-requested"; windowId: string; source: "tool" | "automatic" };
export type Overflow = "idle" | "pending" | "pending-spent" | "spent";
export interface State {
	request: Request;
	overflow: Overflow;
}
export type Effect =
	| "none"
	| "close-out-armed"
	| "already-pending"
	| "commit-boundary"
	| "commit-boundary-stop"
	| "stop"
	| "recover-overflow";

export const initial: State = { request: { kind: "none" }, overflow: "idle" };
const NONE: Request = { kind: "none" };

function forWindow(request: Request, windowId: string): Request {
	if (request.kind === "stop-pending") return request;
	if (request.kind !== "none" && request.windowId === windowId) return request;
	return NONE;
}

export function closeOut(state: State, windowId: string, source: Source): [State, Effect] {
	const r = state.request;
	if (r.kind === "stop-pending") return [state, "already-pending"];
	if (r.kind === "tool-requested" && r.windowId === windowId) {
		if (source === "manual") return [{ ...state, request: { kind: "close-out", windowId, source: "manual" } }, "close-out-armed"];
		return [state, "already-pending"];
	}
	if (r.kind === "close-out" && r.windowId === windowId) {
		if (r.source === "manual" || source === "automatic") return [state, "already-pending"];
		return [{ ...state, request: { ...r, source: "manual" } }, "close-out-armed"];
	}
	return [{ ...state, request: { kind: "close-out", windowId, source } }, "close-out-armed"];
}

export function toolRequest(state: State, windowId: string): [State, Effect] {
	const r = state.request;
	if (r.kind === "stop-pending") return [state, "already-pending"];
	if (r.kind === "tool-requested" && r.windowId === windowId) return [state, "already-pending"];
	if (r.kind === "close-out" && r.windowId === windowId) {
		if (r.source === "manual") return [state, "already-pending"];
		return [{ ...state, request: { kind: "tool-requested", windowId, source: "automatic" } }, "close-out-armed"];
	}
	return [{ ...state, request: { kind: "tool-requested", windowId, source: "tool" } }, "close-out-armed"];
}

export interface TurnEndFacts {
	windowId: string;
	aborted: boolean;
	overflow: boolean;
	failed: boolean;
	enabled: boolean;
	queued: () => boolean;
	automaticResetEnabled: () => boolean;
	hardReserveDue: () => boolean;
}

export function turnEnd(state: State, f: TurnEndFacts): [State, Effect] {
	const r = forWindow(state.request, f.windowId);
	if (f.aborted) return [initial, "none"];
	if (r.kind === "stop-pending") return [{ request: r, overflow: "idle" }, "none"];
	const manual = r.kind === "close-out" && r.source === "manual";
	if (f.overflow) {
		const pend = manual ? f.enabled : !f.queued() && f.enabled && f.automaticResetEnabled();
		const spent = state.overflow === "pending-spent" || state.overflow === "spent";
		const overflow: Overflow = pend ? (spent ? "pending-spent" : "pending") : spent ? "spent" : "idle";
		return [{ request: manual ? r : NONE, overflow }, "none"];
	}
	if (f.failed) return [{ request: NONE, overflow: state.overflow }, "none"];
	if (!f.enabled) return [initial, "none"];
	if (r.kind === "tool-requested" || f.hardReserveDue()) {
		return manual ? [{ request: { kind: "stop-pending", windowId: f.windowId }, overflow: "idle" }, "commit-boundary-stop"] : [initial, "commit-boundary"];
	}
	return [{ request: r, overflow: "idle" }, "none"];
}

export interface SettleFacts {
	windowId: string;
	aborted: boolean;
	failed: boolean;
	queued: () => boolean;
	enabled: () => boolean;
	automaticResetEnabled: () => boolean;
}

export function beforeSettle(state: State, f: SettleFacts): [State, Effect] {
	const r = forWindow(state.request, f.windowId);
	if (f.aborted) return [initial, "none"];
	if (r.kind === "stop-pending") {
		if (f.queued()) return [state, "none"];
		if (r.windowId !== f.windowId) return [initial, "stop"];
		return [initial, f.failed || !f.enabled() ? "none" : "commit-boundary-stop"];
	}
	const manual = r.kind === "close-out" && r.source === "manual";
	if (state.overflow === "pending" || state.overflow === "pending-spent") {
		if (f.queued()) return [{ request: f.failed && !manual ? NONE : r, overflow: state.overflow }, "none"];
		if (manual && f.enabled()) return [initial, "commit-boundary-stop"];
		if (!f.enabled() || !f.automaticResetEnabled()) {
			return [{ request: f.failed ? NONE : r, overflow: state.overflow === "pending-spent" ? "spent" : "idle" }, "none"];
		}
		return [{ request: NONE, overflow: "spent" }, state.overflow === "pending-spent" ? "none" : "recover-overflow"];
	}
	if (f.failed || !f.enabled() || r.kind !== "close-out") return [{ request: NONE, overflow: state.overflow }, "none"];
	if (f.queued()) return [state, "none"];
	// 0.35.2+ (docs/spec/README.md decision): a budget close-out alone never commits at a normal stop.
	if (r.source === "automatic") return [{ request: NONE, overflow: state.overflow }, "none"];
	return [initial, "commit-boundary-stop"];
}
