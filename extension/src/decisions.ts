// The boot and budget calls: one `pi-context` process per decision. This module only shapes
// the request from live facts and reads the fields of the answer; the boot text, thresholds,
// the countdown, the decision and the reminder, warning, close-out and continuation texts all come from the binary.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { type Envelope, runPiContext } from "./binary.ts";
import { type Identity, identityFlags } from "./identity.ts";

export class RefusedError extends Error {
	constructor(readonly envelope: Envelope & { ok: false }) {
		super(envelope.text);
		this.name = "RefusedError";
	}
}

export interface BootWindows {
	firstWindowId: string;
	currentWindowId: string;
	previousWindowId?: string;
}

export interface Boot {
	text: string;
	/** The continuation a reset appends right after this boot (`data.continuation`). */
	continuation: string;
	/** The one UI warning when some homes could not be read (the boot still rendered), else null. */
	notice: string | null;
}

/**
 * `boot-render` for one window head. `openedAt` is captured by the caller before any await.
 * The first (root) window id is derived by the binary from the session id.
 */
export async function renderBoot(id: Identity, windows: BootWindows, openedAt: Date, signal?: AbortSignal): Promise<Boot> {
	const flags = [...identityFlags(id), "--window-id", windows.currentWindowId, "--opened-at", openedAt.toISOString()];
	if (windows.previousWindowId) flags.push("--previous-window-id", windows.previousWindowId);
	const env = await runPiContext("boot-render", flags, {}, { signal, cwd: id.cwd });
	if (!env.ok) throw new RefusedError(env);
	const data = (env.data ?? {}) as { notice?: unknown; continuation?: unknown };
	if (typeof data.continuation !== "string" || data.continuation === "") {
		throw new Error("boot-render returned no continuation text (an older pi-context binary? rebuild or reinstall it)");
	}
	return { text: env.text, continuation: data.continuation, notice: typeof data.notice === "string" ? data.notice : null };
}

export type BudgetAction = "none" | "reminder" | "warning" | "hard_reset";

export interface Budget {
	action: BudgetAction;
	/** What `get_context_remaining` reports (countdown to the warning line), null when unknown. */
	remainingTokens: number | null;
	/** Whether automatic compaction (the budget close-out and the hard reserve) is on. */
	automatic: boolean;
	/** The hard reserve is reached (independent of the on/off switch). */
	hardReserveDue: boolean;
	/** The request is in the warning zone with automatic on: arm the budget close-out. */
	armCloseOut: boolean;
	reminderText?: string;
	warningText?: string;
	/** Settings warnings, each shown once. */
	warnings: string[];
	envelope: Envelope;
}

export interface WindowFacts {
	reminderShown: boolean;
	warningShown: boolean;
}

/** `budget-check` with the live usage, model, on/off switch and settings locations. */
export async function checkBudget(ctx: ExtensionContext, window: WindowFacts, enabled: boolean, signal?: AbortSignal): Promise<Budget> {
	return readBudget(await runBudgetCheck(ctx, window, enabled, usageOf(ctx), signal));
}

/** The live usage as the wire wants it (`null` when Pi has none). */
export function usageOf(ctx: ExtensionContext): WireUsage {
	const usage = ctx.getContextUsage();
	return usage ? { tokens: usage.tokens, context_window: usage.contextWindow } : null;
}

export type WireUsage = { tokens: number | null; context_window: number | null } | null;

async function runBudgetCheck(
	ctx: ExtensionContext,
	window: WindowFacts,
	enabled: boolean,
	usage: WireUsage,
	signal?: AbortSignal,
	closeOut = false,
): Promise<Envelope & { ok: true }> {
	const request: Record<string, unknown> = {
		usage,
		model: ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : null,
		window: { reminder_shown: window.reminderShown, warning_shown: window.warningShown },
		enabled,
	};
	if (closeOut) request.close_out = true;
	// No --agent-dir: the child inherits PI_CODING_AGENT_DIR and the binary resolves it exactly
	// as Pi does (a leading `~` expanded; else ~/.pi/agent), so the two can never diverge.
	const flags = ["--cwd", ctx.cwd];
	// Project settings count only when Pi trusts the project.
	if (!ctx.isProjectTrusted()) flags.push("--untrusted-project");
	const env = await runPiContext("budget-check", flags, request, { signal, cwd: ctx.cwd });
	if (!env.ok) throw new RefusedError(env);
	return env;
}

/**
 * The shared close-out text for `/wipe-memory`: `budget-check` with `close_out: true` hands it
 * out whatever the usage and `compaction.enabled`. Throws when the binary gives none.
 */
export async function closeOutText(ctx: ExtensionContext, signal?: AbortSignal): Promise<string> {
	const env = await runBudgetCheck(ctx, { reminderShown: false, warningShown: false }, true, usageOf(ctx), signal, true);
	const message = (env.data as { message?: { kind?: unknown; text?: unknown } | null } | null)?.message;
	if (message?.kind !== "close_out" || typeof message.text !== "string" || message.text === "") {
		throw new Error("budget-check returned no close-out text (an older pi-context binary? rebuild or reinstall it)");
	}
	return message.text;
}

function num(v: unknown): number | null {
	return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function readBudget(env: Envelope & { ok: true }): Budget {
	const d = (env.data ?? {}) as Record<string, any>;
	const raw = String(d.decision ?? "none");
	const action: BudgetAction = raw === "reminder" || raw === "warning" || raw === "hard_reset" ? raw : "none";
	const message = d.message && typeof d.message === "object" ? (d.message as { kind?: unknown; text?: unknown }) : undefined;
	const messageText = typeof message?.text === "string" ? message.text : undefined;
	return {
		action,
		remainingTokens: num(d.remaining_tokens),
		automatic: d.automatic !== false,
		hardReserveDue: d.hard_reserve_due === true,
		armCloseOut: d.arm_close_out === true,
		reminderText: message?.kind === "reminder" ? messageText : undefined,
		warningText: message?.kind === "warning" ? messageText : undefined,
		warnings: Array.isArray(d.warnings) ? d.warnings.map((w: unknown) => String(w)) : [],
		envelope: env,
	};
}
