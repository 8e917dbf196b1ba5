// Bench (not a test): median overhead of one tool call through the extension's own code path
// (identity from a context, spawn `pi-context --format both`, JSON request on stdin, envelope
// parsed back into content + details), next to the floor of spawning `cat` the same way.
// Run by scripts/bench-extension under Node 22 (type stripping loads the .ts sources).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { envelopeResult, runTool, BINARY_TOOLS } from "../src/tools.ts";
import { locateBinary, runPiContext } from "../src/binary.ts";

const N = Number(process.env.BENCH_N ?? 200);
const root = mkdtempSync(join(tmpdir(), "pi-context-bench-"));
const cwd = join(root, "cwd");
mkdirSync(cwd);
process.env.PI_NOTES_HOME = join(root, "notes");
const bin = locateBinary();
if (!bin) throw new Error("pi-context binary not found (build it: cargo build --release)");

const ctx = {
	cwd,
	model: { provider: "faux", id: "faux-1" },
	sessionManager: { getSessionId: () => "01234567-89ab-7def-8123-456789abcdef", getCwd: () => cwd },
};
const tool = (name) => BINARY_TOOLS.find((t) => t.name === name);

function median(xs) {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)];
}
async function time(label, fn) {
	for (let i = 0; i < 10; i++) await fn(); // warm up
	const xs = [];
	for (let i = 0; i < N; i++) {
		const t = performance.now();
		await fn();
		xs.push(performance.now() - t);
	}
	const m = median(xs);
	console.log(`${label.padEnd(44)} median ${m.toFixed(2)} ms  p90 ${[...xs].sort((a, b) => a - b)[Math.floor(N * 0.9)].toFixed(2)} ms`);
	return m;
}
function catOnce() {
	return new Promise((resolve, reject) => {
		const c = spawn("cat", [], { stdio: ["pipe", "pipe", "pipe"] });
		const out = [];
		c.stdout.on("data", (b) => out.push(b));
		c.on("error", reject);
		c.on("close", () => resolve(JSON.parse(Buffer.concat(out).toString())));
		c.stdin.end(JSON.stringify({ ok: true, data: { address: "bench.md" }, text: "x" }));
	});
}

console.log(`binary: ${bin}; ${N} calls each`);
const floor = await time("spawn cat + JSON both ways (reference)", catOnce);
const budgetRequest = { usage: { tokens: 50_000, context_window: 200_000 }, model: "faux/faux-1", window: { reminder_shown: false, warning_shown: false }, enabled: true };
const budget = await time("budget-check (per provider request)", () => runPiContext("budget-check", ["--agent-dir", join(root, "agent"), "--cwd", cwd], budgetRequest));
let read;
try {
	await runPiContext("notes-write", ["--session-id", ctx.sessionManager.getSessionId(), "--cwd", cwd], { address: "bench.md", content: "bench body\n".repeat(100) });
	read = await time("notes_read through the extension", async () => envelopeResult(await runTool(tool("notes_read"), { address: "bench.md" }, undefined, ctx)));
	await time("notes_list through the extension", async () => envelopeResult(await runTool(tool("notes_list"), {}, undefined, ctx)));
} catch (err) {
	console.log(`notes tools unavailable in this binary: ${String(err.message).split("\n")[0]}`);
}
// The overhead the extension adds (spawn + JSON both ways + parsing) is measured on
// budget-check, whose own work is ~1 ms; notes_read adds the command's own cost (its access
// bump is a durable write), which belongs to the notes command, not to the extension.
console.log(`overhead of one tool call through the extension: median ${budget.toFixed(2)} ms (target <= 10 ms), ${(budget / floor).toFixed(2)}x the cat spawn floor${read ? `; notes_read end to end ${read.toFixed(2)} ms` : ""}`);
rmSync(root, { recursive: true, force: true });
