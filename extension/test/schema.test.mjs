// The model-facing tools' TypeBox parameter schemas against the binary's request schemas
// (docs/schema/<command>.request.json, generated from the Rust request types): the same
// properties, JSON types, required-ness, enums, bounds and item shapes, and every default the
// binary applies stated in the tool's description with the same value. A change on either side
// without the other fails here.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BINARY_TOOLS } from "../src/tools.ts";

const SCHEMA_DIR = new URL("../../docs/schema/", import.meta.url);

function requestSchema(command) {
	return JSON.parse(readFileSync(new URL(`${command}.request.json`, SCHEMA_DIR), "utf8"));
}

/** The comparable facts of one schema node: `null` is left out of the types (an optional
 * field may be sent as null to the binary, which reads it as absent), and unions merge. */
function shape(node, root) {
	const out = { types: new Set(), values: null, bounds: {}, items: null, properties: null, required: [], closed: undefined, default: undefined };
	const visit = (n) => {
		if (n.$ref) visit(root.$defs[n.$ref.replace("#/$defs/", "")]);
		for (const t of [n.type ?? []].flat()) if (t !== "null") out.types.add(t);
		for (const v of [...(n.const !== undefined ? [n.const] : []), ...(n.enum ?? [])]) {
			if (v === null) continue;
			out.values ??= new Set();
			out.values.add(v);
			out.types.add(typeof v);
		}
		for (const branch of [...(n.anyOf ?? []), ...(n.oneOf ?? [])]) visit(branch);
		for (const key of ["minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"]) {
			if (n[key] !== undefined) out.bounds[key] = n[key];
		}
		if (n.items) out.items = shape(n.items, root);
		if (n.type === "object" || n.properties) {
			out.properties = { ...(out.properties ?? {}) };
			for (const [name, p] of Object.entries(n.properties ?? {})) out.properties[name] = shape(p, root);
			out.required = [...(n.required ?? [])].sort();
			out.closed = n.additionalProperties === false;
		}
		if (n.default !== undefined && n.default !== null) out.default = n.default;
	};
	visit(node);
	return out;
}

function compare(tool, rust, pi, where) {
	assert.deepEqual([...pi.types].sort(), [...rust.types].sort(), `${where}: JSON types`);
	assert.deepEqual(pi.values && [...pi.values].sort(), rust.values && [...rust.values].sort(), `${where}: allowed values`);
	assert.deepEqual(pi.bounds, rust.bounds, `${where}: bounds`);
	if (rust.items || pi.items) {
		assert.ok(rust.items && pi.items, `${where}: items on both sides`);
		compare(tool, rust.items, pi.items, `${where}[]`);
	}
	if (rust.properties || pi.properties) {
		assert.deepEqual(Object.keys(pi.properties ?? {}).sort(), Object.keys(rust.properties ?? {}).sort(), `${where}: properties`);
		assert.deepEqual(pi.required, rust.required, `${where}: required`);
		assert.equal(pi.closed, rust.closed, `${where}: additionalProperties`);
		for (const name of Object.keys(rust.properties ?? {})) {
			compare(tool, rust.properties[name], pi.properties[name], `${where}.${name}`);
		}
	}
}

/** Every default the binary applies, as the tool's descriptions state it. */
function defaultsStated(tool, rust) {
	const params = tool.parameters.properties ?? {};
	for (const [name, field] of Object.entries(rust.properties ?? {})) {
		const said = /\(default (-?\d+)\)/.exec(params[name]?.description ?? "");
		if (field.default === undefined) {
			assert.equal(said, null, `${tool.name}.${name}: the description states a default the binary does not apply`);
		} else if (field.default !== 0) {
			assert.ok(said, `${tool.name}.${name}: the description does not state the default ${field.default}`);
			assert.equal(Number(said[1]), field.default, `${tool.name}.${name}: default`);
		}
	}
}

test("every binary-backed tool's parameters match its command's request schema", () => {
	assert.ok(BINARY_TOOLS.length >= 9);
	for (const tool of BINARY_TOOLS) {
		const root = requestSchema(tool.command);
		const rust = shape(root, root);
		const pi = shape(tool.parameters, tool.parameters);
		compare(tool, rust, pi, tool.name);
		defaultsStated(tool, rust);
	}
});

test("the comparison notices a difference", () => {
	const tool = BINARY_TOOLS.find((t) => t.name === "history_read");
	const root = requestSchema(tool.command);
	const rust = shape(root, root);
	const pi = shape(tool.parameters, tool.parameters);
	const loosened = structuredClone(tool.parameters);
	delete loosened.properties.limit_chars.maximum;
	assert.throws(() => compare(tool, rust, shape(loosened, loosened), tool.name), /bounds/);
	const optional = { ...structuredClone(tool.parameters), required: [] };
	assert.throws(() => compare(tool, rust, shape(optional, optional), tool.name), /required/);
	compare(tool, rust, pi, tool.name);
});
