/**
 * A deployment without live sessions (no coordinator: AWS without its table, Workers without the
 * LIVE binding) serves every tool as Tool.withoutLive (lib/contract/tool.ts toolsServed): the model is
 * never offered keep_alive there, by any tool, in any format. The rule is checked for every built-in
 * tool, so a new tool that mentions keep_alive must say what it is without it.
 */
import { describe, expect, it } from "vitest";
import { z } from "@hono/zod-openapi";
import { tools } from "../../../functions/index.js";
import { defineTool, inputJsonSchema, toolDefinition, toolsServed } from "../../../lib/contract/tool.js";
import { exportTools, TOOL_FORMATS } from "../../../lib/contract/formats.js";

const LIVE_WORDS = /keep_alive|idle_timeout_s|live sandbox|live shell/;

describe("tools without live sessions", () => {
  it("no tool's definition, in any format, mentions keep_alive or a live sandbox; with live sessions bash and run_code do", () => {
    const served = toolsServed(tools, false);
    expect(served.map((t) => t.name)).toEqual(tools.map((t) => t.name));
    for (const t of served) expect(JSON.stringify(toolDefinition(t)), t.name).not.toMatch(/keep_alive|idle_timeout_s/);
    for (const t of served) expect(`${t.description}\n${t.summary}`, t.name).not.toMatch(LIVE_WORDS);
    for (const format of TOOL_FORMATS.filter((f) => f !== "toolshed")) expect(JSON.stringify(exportTools(served, format)), format).not.toMatch(/keep_alive|idle_timeout_s/);
    const live = toolsServed(tools, true);
    expect(live).toBe(tools);
    for (const name of ["bash", "run_code"]) {
      const t = live.find((x) => x.name === name)!;
      expect(Object.keys((inputJsonSchema(t) as any).properties)).toEqual(expect.arrayContaining(["keep_alive", "idle_timeout_s"]));
      expect(t.description).toContain("keep_alive: true");
    }
    // Only the tools that take keep_alive have another shape.
    expect(tools.filter((t) => t.withoutLive).map((t) => t.name).sort()).toEqual(["bash", "run_code"]);
  });

  it("the variant takes the same arguments less the omitted ones, and runs the same execute", async () => {
    const bash = toolsServed(tools, false).find((t) => t.name === "bash")!;
    expect(() => bash.parseArgs!({ command: "ls", keep_alive: true })).toThrow(/Unknown argument 'keep_alive'/);
    expect(bash.parseArgs!({ command: "ls", timeout: 5, keep_env: true })).toEqual({ command: "ls", timeout: 5, keep_env: true });
    expect(bash.execute).toBe(tools.find((t) => t.name === "bash")!.execute);
  });

  it("defineTool refuses a liveless that omits an argument the input lacks or requires", () => {
    const base = { name: "t", description: "d", summary: "s", category: "execute" as const, permission: "execute" as const, annotations: { title: "T", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }, output: z.object({}), execute: async () => ({ title: "", output: "", data: {} }) };
    const input = z.object({ a: z.string(), b: z.boolean().optional() });
    expect(() => defineTool({ ...base, input, liveless: { description: "d", summary: "s", omit: ["c"] } })).toThrow(/omits c/);
    expect(() => defineTool({ ...base, input, liveless: { description: "d", summary: "s", omit: ["a"] } })).toThrow(/omits a/);
    expect(Object.keys(defineTool({ ...base, input, liveless: { description: "d", summary: "s", omit: ["b"] } }).withoutLive!.input.shape)).toEqual(["a"]);
  });
});
