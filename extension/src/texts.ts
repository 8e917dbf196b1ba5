// Host prose that is not a notes, boot or budget decision: the reset continuation (the one
// piece of reset prose, never part of a boot) and a fallback close-out request used only when
// `budget-check` cannot supply its warning text.

export const CONTINUATION_TEXT = [
	"<context_window_continuation>",
	"You just woke up in a fresh context window: your in-context memory of the previous window is gone.",
	"Nothing durable was lost. Your notes are intact (the boot block above indexes them) and the whole earlier conversation is still readable with history_search, history_list and history_read.",
	"Read the notes that matter for your current task, then carry on where you left off. Do not redo finished work; check your notes and history first.",
	"</context_window_continuation>",
].join("\n");

export const CLOSE_OUT_FALLBACK = [
	"<context_window_guidance>",
	"The human asked to close out this context window. Before it is wiped: write your current goal, decisions, state, blockers and next step into notes; update notes that are still true and crumple the ones that are not; keep each MAP.md honest; note the history seqs worth revisiting.",
	"Then call wipe_memory. After the reset, history is an archive, not a rescue: only your notes carry you forward.",
	"</context_window_guidance>",
].join("\n");
