/**
 * Provider-native tools: POST /v1/workspaces/{ws}/compat/anthropic/{tool} and .../compat/openai/{tool}.
 * The body is what the model produced (Anthropic: the tool_use input, or the whole tool_use block;
 * OpenAI: the apply_patch_call / shell_call item, or its operation / action); the answer is the
 * item the provider's API expects back. A tool's failure is part of that item (is_error, "failed",
 * an exit code), with HTTP 200 and the code in X-Toolshed-Error-Code (a held call's id in
 * X-Toolshed-Pending-Id); a bad key, a missing
 * workspace or a malformed request are HTTP errors as on every route.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { liveOff } from "../../exec/live/run-live.js";
import { ANTHROPIC_TOOLS, anthropicWording, keepAliveOf, runAnthropic } from "../../doors/compat/anthropic.js";
import { callIdOf, OPENAI_TOOLS, runApplyPatch, runShell } from "../../doors/compat/openai.js";
import type { RunTool } from "../../doors/compat/types.js";
import type { AppDeps } from "../deps.js";
import { isToolError, ToolError } from "../../shared/errors.js";
import { checkSessionId } from "../../layout/paths.js";
import { openWorkspace, runTool, type CallScope } from "../../run/run-tool.js";
import type { Tool } from "../../contract/tool.js";
import { secureRoute } from "./access.js";
import { backgroundOf, errorResponses, newApp, WsParam } from "./common.js";
import type { Context } from "hono";
import { emitUsage } from "../../run/metering/usage.js";
import { toToolError } from "../../contract/errors.js";
import { routeNameOf, routeUsageRecord } from "./route-usage.js";

const Headers = z.object({
  "x-session-id": z.string().optional().openapi({ description: "The agent's conversation; scopes file records (default: default)." }),
});
const Body = z.record(z.string(), z.unknown());

const TextBlock = z.object({ type: z.literal("text"), text: z.string() });
const ToolResultBlock = z.object({ type: z.literal("tool_result"), tool_use_id: z.string().optional(), content: z.array(TextBlock), is_error: z.boolean() }).openapi("AnthropicToolResult");
const ApplyPatchCallOutput = z.object({ type: z.literal("apply_patch_call_output"), call_id: z.string().optional(), status: z.enum(["completed", "failed"]), output: z.string() });
const ShellCallOutput = z.object({
  type: z.literal("shell_call_output"),
  call_id: z.string().optional(),
  output: z.array(z.object({ stdout: z.string(), stderr: z.string(), outcome: z.union([z.object({ type: z.literal("exit"), exit_code: z.number() }), z.object({ type: z.literal("timeout") })]) })),
  max_output_length: z.number().nullable(),
});

/** The tools of this app by name, run through the one tool path on an opened workspace. */
async function runnerFor(c: Context, deps: AppDeps, tools: readonly Tool[], wsId: string): Promise<MeteredRun> {
  const started = Date.now();
  const auth = c.get("auth");
  const seen = c.get("workspace");
  const record = seen && seen.tenant === auth.tenant && seen.id === wsId ? seen.record : undefined;
  const background = backgroundOf(c);
  const scope: CallScope = { deps, auth, wsId, session: checkSessionId(c.req.header("x-session-id") ?? "default"), signal: c.req.raw.signal, door: c.req.path.includes("/compat/openai/") ? "compat-openai" : "compat-anthropic", ...(record ? { record } : {}), ...(background ? { background } : {}) };
  const ws = await openWorkspace(scope);
  let ran = false;
  const run: RunTool = (name, args) => {
    const tool = tools.find((t) => t.name === name);
    if (!tool) throw new ToolError("UNAVAILABLE", `The ${name} tool, which answers this call, is not enabled on this server.`, { tool: name });
    ran = true;
    return runTool(tool, args, { ...scope, ws });
  };
  // A call the adapter refused before any tool ran (an unknown command, an input it cannot map, a tool not
  // enabled) has no tool to meter it (runTool records each tool call): one record of its own, named by its
  // route ("POST compat/anthropic"), as the tool route records a call of an unknown tool. Before
  // (2026-12-01) such a call took a rate-limit token and left no usage record.
  const refused = (error: unknown) => {
    if (ran || !isToolError(error)) return;
    emitUsage(deps.onUsage, routeUsageRecord({ auth, workspace: wsId, route: routeNameOf("POST", c.req.routePath), code: toToolError(error).code, ms: Date.now() - started, bytes_read: 0, bytes_written: 0 }), background);
  };
  return Object.assign(run, { refused });
}

/** The compat door's RunTool, and the record of a call it refused before any tool ran. */
type MeteredRun = RunTool & { refused(error: unknown): void };

/**
 * The tool error's code, and for a held call (NEEDS_APPROVAL, NEEDS_INPUT) its pending id: the
 * provider's model has no pending_result tool, so the app takes the held call itself (docs/approvals.md).
 */
const errorHeader = (e: ToolError | undefined): Record<string, string> => {
  if (!e) return {};
  const pending = e.details.pending_id;
  return { "x-toolshed-error-code": e.code, ...(typeof pending === "string" ? { "x-toolshed-pending-id": pending } : {}) };
};

export function compatApp(deps: AppDeps, tools: readonly Tool[]) {
  const app = newApp();
  // Any valid key of the workspace's tenant; each tool the call runs checks its own scope (runTool).
  const common = { method: "post" as const, tags: ["compat"] };
  const access = { auth: "tenant", scope: "any", workspace: true, runsTools: true } as const;

  app.openapi(
    createRoute(secureRoute(deps, access, {
      ...common,
      path: "/v1/workspaces/{ws}/compat/anthropic/{tool}",
      operationId: "compat_anthropic",
      summary: "Anthropic's text editor and bash tools: a tool_use input in, a tool_result block out",
      description:
        "Send the `input` of a `tool_use` block (with its id in `X-Tool-Use-Id`), or the whole `tool_use` block. The answer is the `tool_result` block to put in the next user message. Tool errors come back as `is_error: true` blocks (HTTP 200, code in `X-Toolshed-Error-Code`; a call held for approval or input also has its pending id in `X-Toolshed-Pending-Id`).",
      request: {
        params: WsParam.extend({ tool: z.enum(ANTHROPIC_TOOLS).openapi({ param: { name: "tool", in: "path" } }) }),
        headers: Headers.extend({
          "x-tool-use-id": z.string().optional().openapi({ description: "The tool_use block's id, echoed as tool_use_id." }),
          "x-toolshed-keep-alive": z.enum(["true", "false"]).optional().openapi({ description: "bash only, bash's keep_alive (docs/live-sessions.md): `true` runs the command in the session's live sandbox, starting one when it has none (processes, /tmp and the whole shell persist across the session's calls; needs X-Session-Id); `false` runs it in a fresh sandbox (the shell replayed: cwd, exported variables, functions), leaving a live sandbox of the session alone (the output says so). Absent: in the session's live sandbox when it holds one, else fresh with the shell replayed; never starts one." }),
        }),
        body: { required: true, content: { "application/json": { schema: Body } } },
      },
      responses: { 200: { description: "The tool_result block", content: { "application/json": { schema: ToolResultBlock } } }, ...errorResponses(400, 401, 404, 500) },
    })),
    async (c) => {
      const { ws, tool } = c.req.valid("param");
      const body = c.req.valid("json");
      const block = body.type === "tool_use";
      const input = block ? body.input : body;
      const id = (block && typeof body.id === "string" ? body.id : undefined) ?? c.req.header("x-tool-use-id");
      const run = await runnerFor(c, deps, tools, ws);
      let text: string;
      let error: ToolError | undefined;
      try {
        const keep = keepAliveOf(c.req.header("x-toolshed-keep-alive"));
        // Without live sessions bash takes no keep_alive (Tool.withoutLive): asking for one is refused, false is what every call is.
        if (!deps.live && keep.keepAlive) throw liveOff("X-Toolshed-Keep-Alive: true");
        text = (await runAnthropic(tool, input, run, deps.live ? keep : {})).text;
      } catch (e) {
        run.refused(e);
        if (!isToolError(e)) throw e;
        error = e;
        text = `Error: ${anthropicWording(e.message)}`;
      }
      const result = { type: "tool_result" as const, ...(id ? { tool_use_id: id } : {}), content: [{ type: "text" as const, text }], is_error: error !== undefined };
      return c.json(result, 200, errorHeader(error));
    },
  );

  app.openapi(
    createRoute(secureRoute(deps, access, {
      ...common,
      path: "/v1/workspaces/{ws}/compat/openai/{tool}",
      operationId: "compat_openai",
      summary: "OpenAI's apply_patch and shell tools: a *_call item in, the matching *_call_output item out",
      description:
        "Send the `apply_patch_call` or `shell_call` item (or its `operation` / `action`, with the call id in `X-Call-Id`). The answer is the `apply_patch_call_output` or `shell_call_output` item for the next request's input. A failed patch is `status: \"failed\"`; a refused command is exit code 126 with the reason in stderr (HTTP 200, code in `X-Toolshed-Error-Code`; a call held for approval or input also has its pending id in `X-Toolshed-Pending-Id`).",
      request: {
        params: WsParam.extend({ tool: z.enum(OPENAI_TOOLS).openapi({ param: { name: "tool", in: "path" } }) }),
        headers: Headers.extend({ "x-call-id": z.string().optional().openapi({ description: "The call's call_id, echoed in the output item." }) }),
        body: { required: true, content: { "application/json": { schema: Body } } },
      },
      responses: {
        200: { description: "The output item", content: { "application/json": { schema: z.union([ApplyPatchCallOutput, ShellCallOutput]) } } },
        ...errorResponses(400, 401, 404, 500),
      },
    })),
    async (c) => {
      const { ws, tool } = c.req.valid("param");
      const body = c.req.valid("json");
      const callId = callIdOf(body) ?? c.req.header("x-call-id");
      const run = await runnerFor(c, deps, tools, ws);
      let r: Awaited<ReturnType<typeof runApplyPatch>> | Awaited<ReturnType<typeof runShell>>;
      try {
        r = tool === "apply_patch" ? await runApplyPatch(body, callId, run) : await runShell(body, callId, run, { live: deps.live !== undefined });
      } catch (e) {
        run.refused(e);
        throw e;
      }
      if (r.error) run.refused(r.error);
      return c.json(r.item, 200, errorHeader(r.error));
    },
  );
  return app;
}
