// A scripted Anthropic Messages endpoint on 127.0.0.1 for driving the real Claude Code offline.
// It answers from the last message of each request (side queries carry the conversation too):
// a user prompt → tool_use notes_write (project note) → notes_write (bare note, the session
// home) → notes_read → a final text quoting what the read returned. Every request is recorded.
import { appendFileSync as require_append } from "node:fs";
import { createServer } from "node:http";

export const PREFIX = "mcp__plugin_pi-context_notes__";

const SCRIPT = {
	start: { id: "toolu_w1", name: `${PREFIX}notes_write`, input: { address: "@project/e2e.md", content: "written by claude through pi-context mcp" } },
	toolu_w1: { id: "toolu_w2", name: `${PREFIX}notes_write`, input: { address: "e2e-session.md", content: "bare note in the session home" } },
	toolu_w2: { id: "toolu_r1", name: `${PREFIX}notes_read`, input: { address: "@project/e2e.md" } },
};

function sse(res, events) {
	res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
	for (const [event, data] of events) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
	res.end();
}

function message(model, block, stop) {
	const start = { type: "message_start", message: { id: `msg_${Date.now()}`, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } };
	const events = [["message_start", start]];
	if (block.type === "tool_use") {
		events.push(["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } }]);
		events.push(["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } }]);
	} else {
		events.push(["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }]);
		events.push(["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: block.text } }]);
	}
	events.push(["content_block_stop", { type: "content_block_stop", index: 0 }]);
	events.push(["message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }]);
	events.push(["message_stop", { type: "message_stop" }]);
	return events;
}

function reply(body) {
	const hasOurTools = (body.tools ?? []).some((t) => t.name === `${PREFIX}notes_write`);
	// SessionStart context arrives as a role "system" entry after the prompt: skip those.
	const last = (body.messages ?? []).filter((m) => m.role !== "system").at(-1);
	const blocks = Array.isArray(last?.content) ? last.content : [{ type: "text", text: String(last?.content ?? "") }];
	const result = blocks.find((b) => b.type === "tool_result");
	if (result) {
		const next = SCRIPT[result.tool_use_id];
		if (next) return { type: "tool_use", ...next };
		const text = Array.isArray(result.content) ? result.content.map((c) => c.text ?? "").join("") : String(result.content);
		return { type: "text", text: `done: ${text}` };
	}
	if (hasOurTools && last?.role === "user") return { type: "tool_use", ...SCRIPT.start };
	return { type: "text", text: "ok" };
}

export function startFake() {
	const requests = [];
	const server = createServer((req, res) => {
		let raw = "";
		req.on("data", (c) => {
			raw += c;
		});
		req.on("end", () => {
			const path = req.url.split("?")[0];
			const body = raw ? JSON.parse(raw) : {};
			requests.push({ method: req.method, path, body });
			if (process.env.FAKE_LOG) require_append(process.env.FAKE_LOG, `${JSON.stringify({ path, body })}\n`);
			if (path === "/v1/messages/count_tokens") {
				res.writeHead(200, { "content-type": "application/json" });
				res.end(JSON.stringify({ input_tokens: 100 }));
			} else if (path === "/v1/messages") {
				const block = reply(body);
				sse(res, message(body.model, block, block.type === "tool_use" ? "tool_use" : "end_turn"));
			} else {
				res.writeHead(404);
				res.end();
			}
		});
	});
	return new Promise((resolve) => {
		server.listen(0, "127.0.0.1", () => resolve({ server, requests, url: `http://127.0.0.1:${server.address().port}` }));
	});
}
