/**
 * The output-schema hook: every successful tool response a test produces is checked against its
 * tool's `output` schema (lib/contract/tool.ts), so no tool's `data` can drift from what /v1/tools, MCP and
 * OpenAPI say it is. Wrap every app a test builds: `checkOutputs(createApp(deps, tools), tools)`
 * (test/helpers.ts does it for the Workers tests). A `data` that does not fit throws in the test.
 */
import type { z } from "@hono/zod-openapi";
import type { Tool } from "../../lib/contract/tool.js";

const TOOL_ROUTE = /^\/v1\/workspaces\/[^/]+\/tools\/([^/?]+)$/;

/** Problems of `data` against `schema`: zod's issues, and keys the schema does not declare (at the top level and in nested objects zod knows). */
export function outputProblems(schema: z.ZodObject, data: unknown): string[] {
  const r = schema.safeParse(data);
  const problems = r.success ? [] : r.error.issues.map((i) => `${i.path.join(".") || "(data)"}: ${i.message}`);
  if (data && typeof data === "object") {
    const declared = Object.keys(schema.shape);
    for (const k of Object.keys(data)) if (!declared.includes(k)) problems.push(`${k}: not in the output schema`);
  }
  return problems;
}

/** Throws when a tool's `data` does not fit its output schema. */
export function assertOutput(tool: Tool, data: unknown): void {
  const problems = outputProblems(tool.output, data);
  if (problems.length) throw new Error(`${tool.name}: data does not match its output schema:\n  ${problems.join("\n  ")}\ndata: ${JSON.stringify(data).slice(0, 2000)}`);
}

/** `s` percent-decoded, or null when it does not decode (a malformed escape). */
const decodedOrNull = (s: string): string | null => {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
};

/** Wraps app.fetch (which app.request calls) so every 200 tool response is checked. */
export function checkOutputs<A extends { fetch: (req: Request, ...rest: any[]) => Response | Promise<Response> }>(app: A, tools: readonly Tool[]): A {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const inner = app.fetch.bind(app);
  app.fetch = (async (req: Request, ...rest: any[]) => {
    const res = await inner(req, ...rest);
    const m = TOOL_ROUTE.exec(new URL(req.url).pathname);
    // A name that does not decode (a malformed escape) is no tool of the list: nothing to check.
    const tool = m ? byName.get(decodedOrNull(m[1]!) ?? "") : undefined;
    if (!tool || res.status !== 200 || !(res.headers.get("content-type") ?? "").includes("application/json")) return res;
    const body = (await res.clone().json()) as { ok?: boolean; data?: unknown };
    if (body.ok === true) assertOutput(tool, body.data);
    return res;
  }) as A["fetch"];
  return app;
}
