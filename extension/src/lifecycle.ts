// The reset protocol of docs/spec/reset-lifecycle.md on Pi 1.6.0 hooks: the boot at each window head,
// the provider projection that sends only the active window, the four-entry reset boundary,
// `/wipe-memory`, `wipe_memory`, the budget reminder/warning, the hard-reserve safety reset,
// `/pi-context on|off`, `/compact` and `/tree` handling, notices, and startup repair of an
// incomplete marker tail. Decisions about notes, boot text and budget come from `pi-context`
// (decisions.ts); this module only sequences them against Pi's lifecycle.
import {
	type AgentBeforeSettleEvent,
	type AgentToolResult,
	type BoundaryResult,
	type ContextEvent,
	type ContextEventResult,
	type ExtensionAPI,
	type ExtensionCommandContext,
	type ExtensionContext,
	type SessionBoundaryDraft,
	type SessionEntry,
	type TurnEndEvent,
	VERSION,
} from "@earendil-works/pi-coding-agent";
import { isContextOverflow } from "@earendil-works/pi-ai";
import { Type } from "typebox";
import { BINARY_NOT_FOUND, BinaryUnavailable, findBinary, locateBinary, usableBinary, withoutText } from "./binary.ts";
import { type Boot, type Budget, checkBudget, closeOutText, renderBoot } from "./decisions.ts";
import { identityOf } from "./identity.ts";
import * as R from "./reducer.ts";
import {
	initialState,
	type LifecycleState,
	modelSelected,
	runAborted,
	runSettled,
	sessionShutDown,
	sessionStarted,
	switchedOff,
	switchedOn,
} from "./state.ts";
import {
	BOOT,
	boundaryCommitted,
	bootWindowId,
	CONTINUATION,
	checkpointBacked,
	currentWindowId,
	GUIDANCE,
	hasMarker,
	inCurrentWindow,
	inspectMarkerTail,
	lastMarkerIndex,
	MANUAL_WIPE,
	markerWindowId,
	lastSwitch,
	SWITCH,
	mintWindowId,
	RESET_MARKER,
	rootWindowId,
	userAfterMarker,
	WARNING,
} from "./windows.ts";

export const EXTENSION_VERSION = "0.1.0";

/** One message of a provider request, as Pi's `context` hooks pass it. */
type Msg = ContextEvent["messages"][number];

/** Whether a custom message of `customType` lies in the segment of window `windowId`. */
function windowHas(branch: readonly SessionEntry[], sessionId: string, windowId: string, customType: string): boolean {
	let current = rootWindowId(sessionId);
	for (const e of branch) {
		const w = markerWindowId(e);
		if (w !== undefined) current = w;
		else if (current === windowId && e.type === "custom_message" && e.customType === customType) return true;
	}
	return false;
}

export class Lifecycle {
	/** Everything remembered between hooks (state.ts), changed through its named transitions. */
	private readonly s: LifecycleState = initialState();

	constructor(private readonly pi: ExtensionAPI) {}

	// ---- notices -------------------------------------------------------------------------

	private notify(ctx: ExtensionContext, message: string, level: "info" | "warning" | "error" = "info"): void {
		try {
			ctx.ui.notify(message, level);
		} catch {
			// A UI that cannot show notices must never break the agent.
		}
	}

	/** One clear notice when the binary is missing; other errors are reported by the caller. */
	binaryProblem(ctx: ExtensionContext, err: unknown): boolean {
		if (!(err instanceof BinaryUnavailable)) return false;
		if (!this.s.binaryNoticeShown) {
			this.s.binaryNoticeShown = true;
			this.notify(ctx, `pi-context: ${err.message}. Notes, history, boot and budget are unavailable until then.`, "error");
		}
		return true;
	}

	private warnOnce(ctx: ExtensionContext, warnings: readonly string[]): void {
		for (const w of warnings) {
			if (this.s.shownWarnings.has(w)) continue;
			this.s.shownWarnings.add(w);
			this.notify(ctx, w, "warning");
		}
	}

	/** "memory cleared" for each staged reset once its boundary is committed on the branch. */
	private flushNotices(ctx: ExtensionContext, final: boolean): void {
		const sm = ctx.sessionManager;
		const branch = sm.getBranch();
		for (const w of [...this.s.pendingResetNotices]) {
			if (boundaryCommitted(branch, w)) {
				this.s.pendingResetNotices.delete(w);
				this.notify(ctx, `pi-context: memory cleared · ${w}`, "info");
			}
		}
		const warned = this.s.pendingWarningNotice;
		if (warned !== undefined && windowHas(branch, sm.getSessionId(), warned, WARNING)) {
			this.s.pendingWarningNotice = undefined;
			if (!this.s.warnedWindows.has(warned)) {
				this.s.warnedWindows.add(warned);
				this.notify(ctx, "pi-context: Context almost full. The agent was asked to save its notes and call wipe_memory to close out this memory window.", "warning");
			}
		}
		if (final) {
			this.s.pendingResetNotices.clear();
			this.s.pendingWarningNotice = undefined;
		}
	}

	// ---- transitions ---------------------------------------------------------------------

	private isCurrent(ctx: ExtensionContext, gen: number, sessionId: string, windowId: string): boolean {
		const sm = ctx.sessionManager;
		return (
			this.s.active &&
			this.s.enabled &&
			gen === this.s.generation &&
			!ctx.signal?.aborted &&
			sm.getSessionId() === sessionId &&
			currentWindowId(sm.getBranch(), sessionId) === windowId
		);
	}

	private async start(ctx: ExtensionContext): Promise<void> {
		// The on/off switch as last set on this branch (`/pi-context on|off`); on by default.
		sessionStarted(this.s, lastSwitch(ctx.sessionManager.getBranch()) ?? true);
		if (!locateBinary()) {
			this.binaryProblem(ctx, new BinaryUnavailable(BINARY_NOT_FOUND));
			return;
		}
		// Resolve settings once at start so invalid settings warn right away.
		try {
			const budget = await this.budget(ctx);
			this.warnOnce(ctx, budget.warnings);
		} catch (err) {
			if (!this.binaryProblem(ctx, err)) this.notify(ctx, `pi-context: could not read the budget settings (${(err as Error).message}).`, "warning");
		}
		if (this.s.enabled) await this.ensureBoot(ctx);
	}

	// ---- boot ensure / repair (docs/spec/reset-lifecycle.md §9) ----------------------------------------

	async ensureBoot(ctx: ExtensionContext): Promise<void> {
		const sm = ctx.sessionManager;
		const gen = this.s.generation;
		const sessionId = sm.getSessionId();
		const branch = sm.getBranch();
		const root = rootWindowId(sessionId);
		const id = identityOf(ctx);
		const openedAt = new Date();
		try {
			if (!hasMarker(branch)) {
				const hasRootBoot = () =>
					sm.getBranch().some((e) => e.type === "custom_message" && e.customType === BOOT && bootWindowId(e.details) === root);
				if (hasRootBoot()) return;
				const boot = await renderBoot(id, { firstWindowId: root, currentWindowId: root }, openedAt);
				if (!this.isCurrent(ctx, gen, sessionId, root) || hasRootBoot()) return;
				this.reportIncomplete(ctx, root, boot.notice);
				this.pi.sendMessage({ customType: BOOT, content: boot.text, display: false, details: { windowId: root } }, { triggerTurn: false });
				return;
			}
			const tail = inspectMarkerTail(branch, sessionId);
			if (!tail || tail.kind !== "needs") return;
			// One boot-render call gives both texts a repair may need (the boot, the continuation).
			const boot = await renderBoot(id, { firstWindowId: root, currentWindowId: tail.windowId, previousWindowId: tail.previousWindowId }, openedAt);
			if (tail.boot) this.reportIncomplete(ctx, tail.windowId, boot.notice);
			if (!this.isCurrent(ctx, gen, sessionId, tail.windowId)) return;
			const again = inspectMarkerTail(sm.getBranch(), sessionId);
			if (!again || again.kind !== "needs") return;
			if (again.boot) {
				this.pi.sendMessage({ customType: BOOT, content: boot.text, display: false, details: { windowId: tail.windowId } }, { triggerTurn: false });
			}
			if (again.continuation) {
				this.pi.sendMessage({ customType: CONTINUATION, content: boot.continuation, display: false }, { triggerTurn: false });
			}
		} catch (err) {
			if (!this.binaryProblem(ctx, err)) this.notify(ctx, `pi-context: could not write the boot block (${(err as Error).message}).`, "warning");
		}
	}

	private reportIncomplete(ctx: ExtensionContext, windowId: string, notice: string | null): void {
		if (notice === null || this.s.incompleteWindows.has(windowId)) return;
		this.s.incompleteWindows.add(windowId);
		this.notify(ctx, notice, "warning");
	}

	// ---- reset construction (docs/spec/reset-lifecycle.md §8) -------------------------------------------

	/** The four drafts of a reset, or undefined when it could not (or must not) be built. */
	private async buildReset(ctx: ExtensionContext): Promise<SessionBoundaryDraft[] | undefined> {
		const sm = ctx.sessionManager;
		const gen = this.s.generation;
		const sessionId = sm.getSessionId();
		const branch = sm.getBranch();
		const previous = currentWindowId(branch, sessionId);
		const id = identityOf(ctx);
		const openedAt = new Date();
		const windowId = mintWindowId(branch, sessionId);
		let boot: Boot;
		try {
			boot = await renderBoot(id, { firstWindowId: rootWindowId(sessionId), currentWindowId: windowId, previousWindowId: previous }, openedAt);
			if (this.isCurrent(ctx, gen, sessionId, previous)) this.reportIncomplete(ctx, windowId, boot.notice);
		} catch (err) {
			if (this.isCurrent(ctx, gen, sessionId, previous) && !this.binaryProblem(ctx, err)) {
				this.notify(ctx, `pi-context: could not build reset (${(err as Error).message}).`, "warning");
			}
			return undefined;
		}
		if (!this.isCurrent(ctx, gen, sessionId, previous)) return undefined;
		this.s.pendingResetNotices.add(windowId);
		return [
			{ type: "compaction", summary: "", firstKeptEntryId: null },
			{ type: "custom", customType: RESET_MARKER, data: { windowId } },
			{ type: "custom_message", customType: BOOT, content: boot.text, display: false, details: { windowId } },
			{ type: "custom_message", customType: CONTINUATION, content: boot.continuation, display: false },
		];
	}

	// ---- budget ---------------------------------------------------------------------------

	private windowFacts(ctx: ExtensionContext, windowId: string) {
		const branch = ctx.sessionManager.getBranch();
		return {
			reminderShown: inCurrentWindow(branch, GUIDANCE) || this.s.staged.guidance?.windowId === windowId,
			warningShown: inCurrentWindow(branch, WARNING) || this.s.staged.warning?.windowId === windowId,
		};
	}

	async budget(ctx: ExtensionContext, signal?: AbortSignal, enabled = this.s.enabled): Promise<Budget> {
		const sm = ctx.sessionManager;
		const windowId = currentWindowId(sm.getBranch(), sm.getSessionId());
		const budget = await checkBudget(ctx, this.windowFacts(ctx, windowId), enabled, signal);
		this.s.automatic = budget.automatic;
		return budget;
	}

	/** `context` hook: stage the reminder, inject the warning and arm the budget close-out. */
	private async onContext(messages: Msg[], ctx: ExtensionContext): Promise<ContextEventResult | undefined> {
		if (!this.s.active || !this.s.enabled) return undefined;
		const sm = ctx.sessionManager;
		const sessionId = sm.getSessionId();
		const windowId = currentWindowId(sm.getBranch(), sessionId);
		let budget: Budget;
		try {
			budget = await this.budget(ctx);
		} catch (err) {
			this.binaryProblem(ctx, err);
			return undefined;
		}
		this.warnOnce(ctx, budget.warnings);
		// Every request in the warning zone re-arms the budget close-out (an earlier attempt may
		// have been aborted); the warning itself is injected and persisted once per window.
		if (budget.armCloseOut) [this.s.reset] = R.closeOut(this.s.reset, windowId, "automatic");
		if (budget.warningText) {
			delete this.s.staged.guidance;
			this.s.staged.warning = { windowId, content: budget.warningText };
			const warning: Msg = { role: "custom", customType: WARNING, content: budget.warningText, display: false, timestamp: Date.now() };
			return { messages: [...messages, warning] };
		}
		if (budget.reminderText) this.s.staged.guidance = { windowId, content: budget.reminderText };
		return undefined;
	}

	// ---- provider projection (docs/spec/reset-lifecycle.md §10, §7.4) -----------------------------------

	private onContextWithSystem(messages: Msg[], ctx: ExtensionContext): ContextEventResult | undefined {
		if (!this.s.active) return undefined;
		const sm = ctx.sessionManager;
		const branch = sm.getBranch();
		const sessionId = sm.getSessionId();
		// Pi persists system messages as entries; the refusal path keeps them and nothing else.
		const system = messages.filter((m) => m.role === "system");
		// Stop latch after a manual safety reset: cancel Pi's follow-up in the fresh window.
		const r = this.s.reset.request;
		if (r.kind === "stop-pending" && !ctx.hasPendingMessages()) {
			const w = currentWindowId(branch, sessionId);
			if (hasMarker(branch) && w !== r.windowId && boundaryCommitted(branch, w) && !userAfterMarker(branch)) {
				ctx.abort();
				return { messages: system };
			}
		}
		const index = lastMarkerIndex(branch);
		const isBoot = (m: Msg, w: string) => m.role === "custom" && m.customType === BOOT && bootWindowId(m.details) === w;
		if (index >= 0) {
			const w = markerWindowId(branch[index]) as string;
			const at = messages.findIndex((m) => isBoot(m, w));
			if (at < 0) {
				if (!this.s.refusedWindows.has(w)) {
					this.s.refusedWindows.add(w);
					this.notify(ctx, `pi-context: window ${w} has no boot block, so the request was cancelled to keep earlier history out of it. Use /wipe-memory to start a fresh window.`, "error");
				}
				ctx.abort();
				return { messages: system };
			}
			if (checkpointBacked(branch, index)) return undefined;
			// A legacy marker-only reset: keep the system message, then everything from the boot on.
			return { messages: [...system, ...messages.slice(at)] };
		}
		const root = rootWindowId(sessionId);
		const boots = messages.map((m, i) => (isBoot(m, root) ? i : -1)).filter((i) => i >= 0);
		if (boots.length <= 1) return undefined;
		const keep = messages[boots[boots.length - 1]];
		const out: Msg[] = [];
		messages.forEach((m, i) => {
			if (i === boots[0]) out.push(keep);
			else if (!isBoot(m, root)) out.push(m);
		});
		return { messages: out };
	}

	// ---- turn_end: the sole composer (docs/spec/reset-lifecycle.md §7.1) --------------------------------

	private async onTurnEnd(e: TurnEndEvent, ctx: ExtensionContext): Promise<BoundaryResult | undefined> {
		if (!this.s.active) return undefined;
		const sm = ctx.sessionManager;
		const sessionId = sm.getSessionId();
		const windowId = currentWindowId(sm.getBranch(), sessionId);
		const assistant = e.message?.role === "assistant" ? e.message : undefined;
		const aborted = e.outcome === "aborted" || assistant?.stopReason === "aborted" || !!ctx.signal?.aborted;
		const failed = e.outcome === "error";
		const staged = this.s.staged;
		this.s.staged = {};
		const drafts: SessionBoundaryDraft[] = [];
		if (this.s.enabled && !aborted && !failed) {
			for (const [draft, type] of [
				[staged.guidance, GUIDANCE],
				[staged.warning, WARNING],
			] as const) {
				if (draft && draft.windowId === windowId) {
					drafts.push({ type: "custom_message", customType: type, content: draft.content, display: false });
					if (type === WARNING) this.s.pendingWarningNotice = windowId;
				}
			}
		}
		const entries = [...e.entries, ...drafts];
		const overflow = !aborted && assistant !== undefined && isContextOverflow(assistant, ctx.model?.contextWindow);
		const queued = () => (e.context?.pendingMessages?.length ?? 0) > 0 || ctx.hasPendingMessages();
		// `hardReserveDue` needs a fresh budget answer; ask only when the reducer would read it.
		let hardReserveDue = false;
		const r = this.s.reset.request;
		const requestHere = r.kind === "tool-requested" && r.windowId === windowId;
		if (this.s.enabled && !aborted && !failed && !overflow && !requestHere && r.kind !== "stop-pending") {
			try {
				hardReserveDue = (await this.budget(ctx)).hardReserveDue && this.s.automatic;
			} catch (err) {
				this.binaryProblem(ctx, err);
			}
		}
		const [next, effect] = R.turnEnd(this.s.reset, {
			windowId,
			aborted,
			overflow,
			failed,
			enabled: this.s.enabled,
			queued,
			automaticResetEnabled: () => this.s.automatic,
			hardReserveDue: () => hardReserveDue,
		});
		this.s.reset = next;
		if (effect === "commit-boundary" || effect === "commit-boundary-stop") {
			const reset = await this.buildReset(ctx);
			if (reset) return { entries: [...entries, ...reset], continue: effect === "commit-boundary" };
			return { entries };
		}
		return drafts.length > 0 ? { entries } : undefined;
	}

	private async onBeforeSettle(e: AgentBeforeSettleEvent, ctx: ExtensionContext): Promise<BoundaryResult | undefined> {
		if (!this.s.active) return undefined;
		const sm = ctx.sessionManager;
		const windowId = currentWindowId(sm.getBranch(), sm.getSessionId());
		const [next, effect] = R.beforeSettle(this.s.reset, {
			windowId,
			aborted: e.outcome === "aborted" || !!ctx.signal?.aborted,
			failed: e.outcome === "error",
			queued: () => (e.context?.pendingMessages?.length ?? 0) > 0 || ctx.hasPendingMessages(),
			enabled: () => this.s.enabled,
			automaticResetEnabled: () => this.s.automatic,
		});
		this.s.reset = next;
		if (effect === "stop") return { entries: e.entries, continue: false };
		if (effect === "commit-boundary" || effect === "commit-boundary-stop" || effect === "recover-overflow") {
			const reset = await this.buildReset(ctx);
			if (!reset) return undefined;
			return { entries: [...e.entries, ...reset], continue: effect !== "commit-boundary-stop" };
		}
		return undefined;
	}

	// ---- tools and commands ---------------------------------------------------------------

	wipeMemory(ctx: ExtensionContext): AgentToolResult<unknown> {
		if (!this.s.enabled) {
			const body = { error: "pi-context is off, so there is no memory window to wipe; the human can turn it on with /pi-context on." };
			return { content: [{ type: "text", text: JSON.stringify(body, null, 2) }], details: body, isError: true };
		}
		const sm = ctx.sessionManager;
		// Without the binary no reset can be built: say so as an error the model reads, and keep
		// the loop going (no terminate), instead of a request that would silently never happen.
		if (usableBinary() === undefined) {
			const problem = new BinaryUnavailable(
				`pi-context binary not found or not runnable${process.env.PI_CONTEXT_BIN ? ` at ${process.env.PI_CONTEXT_BIN} (from PI_CONTEXT_BIN)` : ""}`,
			);
			this.binaryProblem(ctx, problem);
			const body = {
				error: "wipe_memory is unavailable: the pi-context binary is missing, so this context window cannot be reset. Carry on in this window; the human has been told how to fix it.",
			};
			return { content: [{ type: "text", text: JSON.stringify(body, null, 2) }], details: body, isError: true };
		}
		const windowId = currentWindowId(sm.getBranch(), sm.getSessionId());
		const [next, effect] = R.toolRequest(this.s.reset, windowId);
		this.s.reset = next;
		const body = { status: effect === "already-pending" ? "rollover_already_pending" : "rollover_requested" };
		return { content: [{ type: "text", text: JSON.stringify(body, null, 2) }], details: body, terminate: true };
	}

	async getContextRemaining(ctx: ExtensionContext, signal?: AbortSignal): Promise<AgentToolResult<unknown>> {
		// The countdown does not depend on the on/off switch.
		const budget = await this.budget(ctx, signal, true);
		return { content: [{ type: "text", text: budget.envelope.text }], details: withoutText(budget.envelope) };
	}

	async wipeCommand(ctx: ExtensionCommandContext): Promise<void> {
		if (!this.s.enabled) {
			this.notify(ctx, "pi-context: /wipe-memory needs pi-context to be on (/pi-context on).", "error");
			return;
		}
		const sm = ctx.sessionManager;
		const requested = currentWindowId(sm.getBranch(), sm.getSessionId());
		if (!ctx.isIdle() && !ctx.signal) {
			await ctx.waitForIdle();
			if (!this.s.enabled || currentWindowId(sm.getBranch(), sm.getSessionId()) !== requested) return;
		}
		const idle = ctx.isIdle();
		const [next, effect] = R.closeOut(this.s.reset, requested, "manual");
		this.s.reset = next;
		if (effect === "already-pending") return;
		this.notify(
			ctx,
			idle
				? "pi-context: /wipe-memory received; the agent closes out its notes, then stops in a fresh memory window."
				: "pi-context: /wipe-memory queued; the agent is asked to close out its notes, and the reset commits when the run settles.",
			"info",
		);
		let text: string;
		try {
			text = await closeOutText(ctx);
		} catch (err) {
			// No text of our own to fall back on: drop the request, as when sending fails.
			this.s.reset = R.initial;
			if (!this.binaryProblem(ctx, err)) this.notify(ctx, `pi-context: could not get the close-out request (${(err as Error).message}).`, "error");
			return;
		}
		try {
			this.pi.sendMessage({ customType: MANUAL_WIPE, content: text, display: false }, { triggerTurn: true, deliverAs: "steer" });
		} catch (err) {
			this.s.reset = R.initial;
			this.notify(ctx, `pi-context: could not send the close-out request (${(err as Error).message}).`, "error");
			return;
		}
		// Print and JSON modes (no UI) dispose the runtime as soon as the command returns, before
		// the triggered turn would run: wait for it, so the close-out reaches the model and the
		// reset is committed at settlement. With a UI the session lives on and the TUI stays free.
		if (!ctx.hasUI) await ctx.waitForIdle();
	}

	async toggleCommand(args: string, ctx: ExtensionCommandContext): Promise<void> {
		const arg = args.trim().toLowerCase();
		if (arg !== "" && arg !== "on" && arg !== "off") {
			this.notify(ctx, `pi-context: unknown argument "${args.trim()}". Usage: /pi-context [on|off]`, "error");
			return;
		}
		if (arg === "on" || arg === "off") {
			// The switch is remembered in the session (a custom entry, never sent to the model), so
			// `pi -c` and a reopened session keep it; it follows the branch like everything else.
			if ((arg === "on") !== this.s.enabled) {
				this.pi.appendEntry(SWITCH, { enabled: arg === "on" });
			}
		}
		if (arg === "on") {
			switchedOn(this.s);
			await this.ensureBoot(ctx);
		} else if (arg === "off") {
			switchedOff(this.s);
		}
		const bin = findBinary();
		const binary = bin ? `binary ${bin.path} (from ${bin.source === "checkout" ? "this checkout's target/release" : bin.source})` : "binary not found";
		this.notify(ctx, `pi-context: ${this.s.enabled ? "on" : "off"} · extension ${EXTENSION_VERSION} (${binary}) · Pi ${VERSION}`, "info");
	}

	// ---- registration ---------------------------------------------------------------------

	register(): void {
		const pi = this.pi;
		pi.on("session_start", (_e, ctx) => this.start(ctx));
		pi.on("session_tree", (_e, ctx) => this.start(ctx));
		pi.on("session_shutdown", () => sessionShutDown(this.s));
		pi.on("model_select", () => modelSelected(this.s));
		pi.on("context", (e, ctx) => this.onContext(e.messages, ctx));
		pi.on("context_with_system", (e, ctx) => this.onContextWithSystem(e.messages, ctx));
		pi.on("turn_start", (_e, ctx) => {
			if (this.s.active) this.flushNotices(ctx, false);
		});
		pi.on("turn_end", (e, ctx) => this.onTurnEnd(e, ctx));
		pi.on("agent_before_settle", (e, ctx) => this.onBeforeSettle(e, ctx));
		pi.on("agent_end", (_e, ctx) => {
			if (ctx.signal?.aborted) runAborted(this.s);
		});
		pi.on("agent_settled", (_e, ctx) => {
			if (!this.s.active) return;
			this.flushNotices(ctx, true);
			runSettled(this.s);
		});
		pi.on("session_before_compact", (e, ctx) => {
			if (!this.s.active) return undefined;
			if (e.signal.aborted) return { cancel: true };
			if (this.s.enabled || hasMarker(ctx.sessionManager.getBranch())) {
				if (e.reason === "manual") {
					this.notify(ctx, "pi-context: /compact is disabled while context windows are active. Use /wipe-memory to close out this window and start a fresh one.", "warning");
				}
				return { cancel: true };
			}
			return undefined;
		});
		pi.on("session_before_tree", (e, ctx) => {
			if (!e.preparation.userWantsSummary) return undefined;
			const sm = ctx.sessionManager;
			if (hasMarker(sm.getBranch()) || hasMarker(sm.getBranch(e.preparation.targetId))) {
				this.notify(ctx, "pi-context: branch summary skipped: a memory reset lies on this path, and history tools keep the old window readable.", "info");
				return { summary: { summary: "" } };
			}
			return undefined;
		});

		pi.registerTool({
			name: "wipe_memory",
			label: "Wipe memory",
			description:
				"End this context window now: your in-context memory is wiped and you continue in a fresh window that starts with your boot block. Call it after your notes hold everything a future you needs (goal, decisions, state, next step). History stays readable with the history tools.",
			promptSnippet: "wipe_memory: close out this context window once your notes are saved",
			parameters: Type.Object({}, { additionalProperties: false }),
			executionMode: "sequential",
			execute: async (_id, _params, _signal, _onUpdate, ctx) => this.wipeMemory(ctx),
		});
		pi.registerTool({
			name: "get_context_remaining",
			label: "Context remaining",
			description:
				"How many tokens of room are left in this context window before it is wiped. When it reaches 0 your memory is reset, so save notes before big work.",
			promptSnippet: "get_context_remaining: tokens left before this context window is wiped",
			parameters: Type.Object({}, { additionalProperties: false }),
			execute: async (_id, _params, signal, _onUpdate, ctx) => {
				try {
					return await this.getContextRemaining(ctx, signal);
				} catch (err) {
					this.binaryProblem(ctx, err);
					throw err;
				}
			},
		});
		pi.registerCommand("wipe-memory", {
			description: "Close out this memory window: the agent saves its notes, then stops in a fresh window",
			handler: (_args, ctx) => this.wipeCommand(ctx),
		});
		pi.registerCommand("pi-context", {
			description: "Turn pi-context on or off, or show its status: /pi-context [on|off]",
			getArgumentCompletions: (prefix) =>
				["on", "off"].filter((v) => v.startsWith(prefix.trim().toLowerCase())).map((v) => ({ value: v, label: v })),
			handler: (args, ctx) => this.toggleCommand(args, ctx),
		});
	}
}
