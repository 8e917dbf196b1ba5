// pi-context for Pi 1.6.0: the package entry. Registers the eleven tools, the two commands and
// the lifecycle hooks. Nothing is started here (no processes, no timers): the factory also runs
// for invocations that never start a session.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Lifecycle } from "./lifecycle.ts";
import { registerBinaryTools } from "./tools.ts";

export default function piContext(pi: ExtensionAPI): void {
	const lifecycle = new Lifecycle(pi);
	registerBinaryTools(pi, (ctx, err) => lifecycle.binaryProblem(ctx, err));
	lifecycle.register();
}
