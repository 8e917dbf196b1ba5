// Test-only extension for the `pi -p` route: registers pi-ai's scripted faux provider so the
// real `pi` CLI runs a whole agent loop offline. The script is JSON named by $PI_FAUX_SCRIPT:
// an array of steps `{ text?, toolCalls?: [{ name, arguments?, id? }] }`. When $PI_FAUX_LOG names
// a file, every provider request's messages are appended to it as one JSON line.
import { appendFileSync, readFileSync } from "node:fs";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall, type ToolCall } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

type Step = { text?: string; toolCalls?: Array<{ name: string; arguments?: ToolCall["arguments"]; id?: string }> };

export default function (pi: ExtensionAPI): void {
	const faux = fauxProvider({ provider: "faux", models: [{ id: "faux-1", contextWindow: 100_000, maxTokens: 4096 }] });
	const file = process.env.PI_FAUX_SCRIPT;
	const steps: Step[] = file ? JSON.parse(readFileSync(file, "utf8")) : [{ text: "no script" }];
	const log = process.env.PI_FAUX_LOG;
	faux.setResponses(
		steps.map((s) => {
			const message = fauxAssistantMessage(
				[...(s.text ? [fauxText(s.text)] : []), ...(s.toolCalls ?? []).map((c) => fauxToolCall(c.name, c.arguments ?? {}, { id: c.id }))],
				{ stopReason: s.toolCalls?.length ? "toolUse" : "stop" },
			);
			return (context: { messages: unknown[] }) => {
				if (log) appendFileSync(log, `${JSON.stringify(context.messages)}\n`);
				return message;
			};
		}),
	);
	pi.registerProvider(faux.provider);
}
