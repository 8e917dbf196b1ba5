// Everything the lifecycle remembers between Pi's hooks, as one typed value, and the named
// transitions that reset parts of it. Each transition states which fields it touches; the
// lifecycle changes these fields only through them, or in the one hook that owns a field
// (the reducer's state at turn_end/before_settle, staged drafts in the context hook, the
// once-per-window sets where their notice is shown). No I/O here.
import * as R from "./reducer.ts";

/** A budget draft (reminder or warning) staged for `windowId`, persisted at turn_end. */
export interface Staged {
	windowId: string;
	content: string;
}

export interface LifecycleState {
	/** The `/pi-context on|off` switch. */
	enabled: boolean;
	/** A session is open (from session_start/session_tree to session_shutdown). */
	active: boolean;
	/** Bumped by every transition: asynchronous work begun under an older value is stale. */
	generation: number;
	/** The reset-control reducer's state (docs/spec/reset-lifecycle.md §6). */
	reset: R.State;
	/** Budget drafts waiting for turn_end. */
	staged: { guidance?: Staged; warning?: Staged };
	/** Windows of built resets whose "memory cleared" notice waits for the committed boundary. */
	pendingResetNotices: Set<string>;
	/** The window whose "context almost full" notice waits for its warning to be persisted. */
	pendingWarningNotice: string | undefined;
	/** Settings warnings already shown in this lifecycle. */
	shownWarnings: Set<string>;
	/** The last budget answer's automatic flag (a lazy reducer fact must be synchronous). */
	automatic: boolean;
	/** For the life of the extension instance: windows already warned "context almost full". */
	warnedWindows: Set<string>;
	/** … windows whose missing boot was already reported. */
	refusedWindows: Set<string>;
	/** … windows whose incomplete notes index was already reported. */
	incompleteWindows: Set<string>;
	/** … whether the missing-binary notice was shown. */
	binaryNoticeShown: boolean;
}

export function initialState(): LifecycleState {
	return {
		enabled: true,
		active: false,
		generation: 0,
		reset: R.initial,
		staged: {},
		pendingResetNotices: new Set(),
		pendingWarningNotice: undefined,
		shownWarnings: new Set(),
		automatic: true,
		warnedWindows: new Set(),
		refusedWindows: new Set(),
		incompleteWindows: new Set(),
		binaryNoticeShown: false,
	};
}

/** Drop what is pending for the current run: reducer state, staged drafts, unconfirmed notices. */
function dropPending(s: LifecycleState): void {
	s.reset = R.initial;
	s.staged = {};
	s.pendingResetNotices.clear();
	s.pendingWarningNotice = undefined;
}

/** session_start / session_tree: a new lifecycle on the branch, switched as it last was. */
export function sessionStarted(s: LifecycleState, enabled: boolean): void {
	s.generation++;
	dropPending(s);
	s.shownWarnings.clear();
	s.active = true;
	s.enabled = enabled;
}

/** session_shutdown: the lifecycle ends; nothing is pending and hooks do nothing until a start. */
export function sessionShutDown(s: LifecycleState): void {
	s.generation++;
	dropPending(s);
	s.shownWarnings.clear();
	s.active = false;
}

/** `/pi-context on`: enabled; work begun while off is stale. */
export function switchedOn(s: LifecycleState): void {
	s.enabled = true;
	s.generation++;
}

/** `/pi-context off`: disabled; pending resets, drafts and notices are dropped. */
export function switchedOff(s: LifecycleState): void {
	s.enabled = false;
	s.generation++;
	dropPending(s);
}

/** model_select: staged drafts were computed for another model's thresholds. */
export function modelSelected(s: LifecycleState): void {
	s.staged = {};
}

/** agent_settled: the run is over; its request and drafts end with it. */
export function runSettled(s: LifecycleState): void {
	s.reset = R.initial;
	s.staged = {};
}

/** agent_end with an aborted signal: nothing of the run's reset control survives. */
export function runAborted(s: LifecycleState): void {
	s.reset = R.initial;
}
