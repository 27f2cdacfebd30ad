/**
 * GET /v1/tools?format=openai|anthropic|mcp, checked against each provider's documented rules for
 * every tool; the strict-mode call shape (every key present, null for the optional ones) run
 * through the tool routes; key-scoped listings; the output-schema hook itself.
 * Node, over the memory driver (Ajv and the MCP SDK's own ToolSchema run here).
 */
import Ajv2020 from "ajv/dist/2020.js";
import { ToolSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "@hono/zod-openapi";
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { anthropicTool, mcpTool, openaiTool, STRICT_FORMATS } from "../../../lib/contract/formats.js";
import { toCustomTool } from "../../../lib/tools/custom/tool.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { defineTool, inputJsonSchema, toolsServed } from "../../../lib/contract/tool.js";
import { assertOutput, checkOutputs } from "../../support/output-check.js";

const ADMIN = "admin-token";
const app = checkOutputs(createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, tools), tools);
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const ajv = new Ajv2020({ strict: false, allErrors: true });

const list = async (format?: string, key?: string) => {
  const r = await app.request(`/v1/tools${format ? `?format=${format}` : ""}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  return { status: r.status, body: (await r.json()) as any };
};
const admin = async (path: string, body: unknown) =>
  (await (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json()) as any;

let fullKey = "";
let readKey = "";
beforeAll(async () => {
  await admin("/v1/admin/tenants", { id: "fmt" });
  fullKey = (await admin("/v1/admin/tenants/fmt/keys", {})).key;
  readKey = (await admin("/v1/admin/tenants/fmt/keys", { scopes: ["read"] })).key;
  const w = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${fullKey}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  expect(w.status).toBe(201);
});

/** OpenAI strict mode (structured outputs, "supported schemas"): the rules, as a checker. Returns the violations. */
function strictViolations(schema: any, path = "parameters", depth = 0): string[] {
  const out: string[] = [];
  const allowed = new Set(["type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "description", "$defs", "$ref", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems"]);
  if (depth > 10) out.push(`${path}: nested deeper than 10 levels`);
  for (const k of Object.keys(schema)) if (!allowed.has(k)) out.push(`${path}: keyword '${k}' is not supported in strict mode`);
  if (typeof schema.format === "string" && !STRICT_FORMATS.has(schema.format)) out.push(`${path}: format '${schema.format}'`);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes("object") || schema.properties) {
    if (schema.additionalProperties !== false) out.push(`${path}: additionalProperties must be false`);
    const props = Object.keys(schema.properties ?? {});
    const req = schema.required ?? [];
    if (props.length !== req.length || props.some((p) => !req.includes(p))) out.push(`${path}: every property must be required`);
    for (const p of props) out.push(...strictViolations(schema.properties[p], `${path}.${p}`, depth + 1));
  }
  if (schema.items) out.push(...strictViolations(schema.items, `${path}[]`, depth + 1));
  for (const [i, a] of (schema.anyOf ?? []).entries()) out.push(...strictViolations(a, `${path}|${i}`, depth + 1));
  return out;
}

/** The call OpenAI strict mode makes when the model sets only `given`: every key present, null for the rest. */
function strictCall(schema: any, given: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(schema.properties).map((k) => [k, k in given ? given[k] : null]));
}

describe("GET /v1/tools?format=openai", () => {
  it("every tool passes strict-mode rules, its name pattern and the 1,024-character description limit", async () => {
    // The checker bites: our own (non-strict) input schemas break its rules.
    expect(strictViolations(inputJsonSchema(tools.find((t) => t.name === "read")!))).toContain("parameters: every property must be required");
    const { status, body } = await list("openai");
    expect(status).toBe(200);
    expect(body.tools.map((t: any) => t.name)).toEqual(tools.map((t) => t.name));
    for (const t of body.tools) {
      expect(t.type).toBe("function");
      expect(t.name).toMatch(NAME);
      expect(t.strict).toBe(true);
      expect(t.description.length).toBeGreaterThan(20);
      expect(t.description.length).toBeLessThanOrEqual(1024);
      expect(t.parameters.type).toBe("object"); // the root is an object, never anyOf
      expect(t.parameters.anyOf).toBeUndefined();
      expect(strictViolations(t.parameters), t.name).toEqual([]);
      expect(ajv.validateSchema(t.parameters), t.name).toBe(true);
      // An all-null call (every optional argument left unset) fits the schema as far as the optional keys go.
      const validate = ajv.compile(t.parameters);
      const required = new Set((inputJsonSchema(tools.find((x) => x.name === t.name)!).required ?? []) as string[]);
      const optionalNulls = strictCall(t.parameters, {});
      for (const k of required) delete optionalNulls[k];
      validate(optionalNulls);
      const errs = (validate.errors ?? []).filter((e) => e.keyword !== "required" && !(e.keyword === "type" && required.has(e.instancePath.slice(1))));
      expect(errs, t.name).toEqual([]);
    }
  });

  it("says in words what strict mode cannot express (maxLength) and leaves out open maps", async () => {
    const { body } = await list("openai");
    const wf = body.tools.find((t: any) => t.name === "web_fetch");
    expect(wf.parameters.properties.headers).toBeUndefined();
    const rc = body.tools.find((t: any) => t.name === "run_code");
    expect(rc.parameters.properties.env).toBeUndefined();
    expect(JSON.stringify(body.tools)).not.toMatch(/"(minLength|maxLength|default|propertyNames|\$schema)"/);
  });

  it("strict-mode calls (all keys present, null for the optional ones) work on read, write, grep, ls, glob and edit", async () => {
    const { body } = await list("openai");
    const schemaOf = (n: string) => body.tools.find((t: any) => t.name === n).parameters;
    const call = async (tool: string, given: Record<string, unknown>) => {
      const args = strictCall(schemaOf(tool), given);
      expect(Object.values(args)).toContain(null);
      const r = await app.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${fullKey}`, "content-type": "application/json", "x-session-id": "strict" }, body: JSON.stringify(args) });
      const json = (await r.json()) as any;
      expect(r.status, `${tool}: ${JSON.stringify(json)}`).toBe(200);
      return json;
    };
    expect((await call("write", { file_path: "src/a.ts", content: "const a = 1;\nconst b = 2;\n" })).data.created).toBe(true);
    expect((await call("read", { file_path: "src/a.ts" })).output).toContain("const a = 1;");
    expect((await call("edit", { file_path: "src/a.ts", old_string: "const b = 2;", new_string: "const b = 3;" })).data.replacements).toBe(1);
    expect((await call("grep", { pattern: "const b" })).data.files).toEqual(["src/a.ts"]);
    expect((await call("ls", {})).output).toContain("src/");
    expect((await call("glob", { pattern: "**/*.ts" })).data.matches[0].path).toBe("src/a.ts");
  });
});

describe("GET /v1/tools?format=anthropic", () => {
  it("every tool is {name, description, input_schema} with an object schema Ajv compiles", async () => {
    const { status, body } = await list("anthropic");
    expect(status).toBe(200);
    for (const t of body.tools) {
      expect(Object.keys(t).sort()).toEqual(["description", "input_schema", "name"]);
      expect(t.name).toMatch(NAME);
      expect(t.description).toBe(toolsServed(tools, false).find((x) => x.name === t.name)!.description); // this app has no live sessions
      expect(t.input_schema.type).toBe("object");
      expect(() => ajv.compile(t.input_schema), t.name).not.toThrow();
    }
  });
});

describe("GET /v1/tools?format=mcp", () => {
  it("every tool is a valid MCP Tool (the SDK's own ToolSchema), with object input and output schemas and all four hints", async () => {
    const { body } = await list("mcp");
    expect(body.tools).toHaveLength(tools.length);
    for (const t of body.tools) {
      const parsed = ToolSchema.safeParse(t);
      expect(parsed.success, `${t.name}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      expect(t.inputSchema.type).toBe("object");
      expect(t.outputSchema.type).toBe("object");
      expect(t.title.length).toBeGreaterThan(0);
      for (const h of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) expect(typeof t.annotations[h], `${t.name}.${h}`).toBe("boolean");
      expect(() => ajv.compile(t.outputSchema), t.name).not.toThrow();
    }
  });

  it("read-only tools say so and never claim to destroy; writers are not read-only", async () => {
    const { body } = await list("mcp");
    for (const t of body.tools) {
      const tool = tools.find((x) => x.name === t.name)!;
      if (t.annotations.readOnlyHint) expect(t.annotations.destructiveHint, t.name).toBe(false);
      if (tool.permission === "write") expect(t.annotations.readOnlyHint, t.name).toBe(false);
    }
  });
});

describe("GET /v1/tools and keys", () => {
  it("lists every tool without a key, only the key's tools with a valid one", async () => {
    expect((await list()).body.tools).toHaveLength(tools.length);
    const ro = await list("mcp", readKey);
    expect(ro.status).toBe(200);
    const names = ro.body.tools.map((t: any) => t.name);
    expect(names).toContain("read");
    expect(names).not.toContain("write");
    expect(names).not.toContain("bash");
    expect(names).toEqual(tools.filter((t) => t.permission === "read").map((t) => t.name));
    // Public: a credential that is not a valid key is not refused; it lists every tool.
    const bogus = await list("openai", "tsk_not_a_key");
    expect(bogus.status).toBe(200);
    expect(bogus.body.tools).toHaveLength(tools.length);
  });

  it("refuses an unknown format, naming the ones there are", async () => {
    const r = await list("gemini");
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toMatch(/openai/);
  });

  it("the default format shows summary, annotations and output_schema for every tool", async () => {
    for (const t of (await list()).body.tools) {
      expect(t.summary.length).toBeLessThanOrEqual(1024);
      expect(t.output_schema.type).toBe("object");
      expect(t.annotations.title).toBeTruthy();
    }
  });
});

describe("the output-schema hook (test/support/output-check.ts)", () => {
  const drifting = defineTool({
    name: "drift",
    description: "test tool",
    summary: "test tool",
    annotations: { title: "Drift", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    category: "file",
    permission: "read",
    input: z.object({ shape: z.string() }),
    output: z.object({ n: z.number() }),
    async execute(args) {
      const data: Record<string, unknown> = args.shape === "ok" ? { n: 1 } : args.shape === "extra" ? { n: 1, surprise: true } : { n: "one" };
      return { title: "drift", output: "x", data };
    },
  });
  it("rejects a wrong type and an undeclared key; accepts a fitting data", () => {
    expect(() => assertOutput(drifting, { n: 1 })).not.toThrow();
    expect(() => assertOutput(drifting, { n: "one" })).toThrow(/drift: data does not match.*\n.*n:/);
    expect(() => assertOutput(drifting, { n: 1, surprise: true })).toThrow(/surprise: not in the output schema/);
  });
  it("fires on a tool call through a checked app", async () => {
    const a = checkOutputs(createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, [drifting]), [drifting]);
    const ad = (p: string, b: unknown) => a.request(p, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(b) });
    await ad("/v1/admin/tenants", { id: "d" });
    const key = ((await (await ad("/v1/admin/tenants/d/keys", {})).json()) as any).key;
    const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    expect((await a.request("/v1/workspaces", { method: "POST", headers: h, body: JSON.stringify({ id: "w" }) })).status).toBe(201);
    const call = (shape: string) => a.request("/v1/workspaces/w/tools/drift", { method: "POST", headers: h, body: JSON.stringify({ shape }) });
    expect((await call("ok")).status).toBe(200);
    await expect(call("extra")).rejects.toThrow(/not in the output schema/);
    await expect(call("wrong")).rejects.toThrow(/data does not match/);
  });
});

describe("a declared schema's $schema (SEP-1613)", () => {
  const declared = { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { q: { $ref: "#/$defs/q" } }, $defs: { q: { type: "string" } }, additionalProperties: false };
  const custom = toCustomTool({ name: "lookup", description: "Looks a thing up.", input_schema: declared, backend: { type: "webhook", url: "https://hooks.example.com/t", secret: "s".repeat(32) }, created_at: "", updated_at: "" } as never);
  it("MCP lists a custom tool's schema as declared, $schema included; the built-in tools' generated schemas without it", () => {
    expect(mcpTool(custom).inputSchema).toEqual(declared);
    const read = tools.find((t) => t.name === "read")!;
    expect(inputJsonSchema(read).$schema).toBeDefined();
    expect(mcpTool(read).inputSchema).not.toHaveProperty("$schema");
  });
  it("the OpenAI and Anthropic shapes drop $schema for every tool, a declared one included", () => {
    expect(anthropicTool(custom).input_schema).not.toHaveProperty("$schema");
    expect(anthropicTool(custom).input_schema).toMatchObject({ $defs: declared.$defs, additionalProperties: false });
    expect(openaiTool(custom).parameters).not.toHaveProperty("$schema");
  });
});
