/**
 * The plugin backend: the seed SDK's line protocol, run once per call in the bash sandbox through
 * the executor (same limits; network only with the key's `network` scope). stdin gets
 * `{"type":"init"}` then `{"type":"call","name","call_id","params"}` and closes; the plugin
 * answers its init line (`{"type":"init","tools":[...]}`, optional) and one
 * `{"type":"result","call_id","content":[{type:"text",text}],"is_error"}` line, then exits at EOF.
 */
import { ToolError } from "../../shared/errors.js";
import { randomId } from "../../shared/hash.js";
import { runForeground } from "../../exec/runs.js";
import { runCaller } from "../../exec/call.js";
import { executorOf, runRequest } from "../../exec/tool-support.js";
import { withEgressSecrets } from "../secrets/egress.js";
import type { ToolContext } from "../../contract/tool.js";
import type { CustomToolInput } from "./definition.js";

/** Most stdout bytes a plugin may print (the result line included). */
export const MAX_PLUGIN_OUTPUT = 200_000;
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export interface PluginReply {
  text: string;
  is_error: boolean;
  content: { type: string; text?: string }[];
}

const failed = (reason: string, message: string, extra: Record<string, unknown> = {}) => new ToolError("PLUGIN_FAILED", message, { reason, ...extra });

/** Reads the plugin's stdout: JSON lines only; the one result with our call_id. */
export function parsePluginOutput(stdout: string, callId: string, exitCode: number | null, stderr: string): PluginReply {
  const lines = stdout.split("\n").map((l) => l.trim()).filter(Boolean);
  let result: Record<string, unknown> | null = null;
  for (const line of lines) {
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      throw failed("invalid_output", `The plugin printed a line that is not JSON: ${JSON.stringify(line.slice(0, 200))}. Plugins print only protocol lines on stdout (logs go to stderr).`);
    }
    if (!msg || typeof msg !== "object" || Array.isArray(msg)) throw failed("invalid_output", `The plugin printed ${JSON.stringify(line.slice(0, 200))}, not a JSON object with a "type".`);
    const m = msg as Record<string, unknown>;
    if (m.type === "init") continue;
    if (m.type !== "result") throw failed("invalid_output", `The plugin printed a message of type ${JSON.stringify(m.type)}; expected "init" or "result".`);
    if (m.call_id !== callId) throw failed("wrong_call_id", `The plugin answered call_id ${JSON.stringify(m.call_id)}, not the ${JSON.stringify(callId)} it was sent. It must echo the call's call_id.`);
    result = m;
  }
  if (!result) {
    throw failed("crashed", `The plugin exited (code ${exitCode ?? "none"}) without a result line.${stderr.trim() ? ` Its stderr ends with: ${stderr.trim().slice(-500)}` : ""}`, { exit_code: exitCode });
  }
  const content = result.content;
  if (!Array.isArray(content) || content.some((c) => !c || typeof c !== "object" || typeof (c as { type?: unknown }).type !== "string")) {
    throw failed("invalid_output", 'The plugin\'s result has no valid "content" (an array of {"type":"text","text":...}).');
  }
  const text = content.map((c: { type: string; text?: unknown }) => (c.type === "text" && typeof c.text === "string" ? c.text : `[${c.type} content]`)).join("\n");
  return { text, is_error: result.is_error === true, content };
}

export async function callPlugin(def: CustomToolInput, backend: Extract<CustomToolInput["backend"], { type: "plugin" }>, args: unknown, ctx: ToolContext): Promise<PluginReply & { files_changed: string[] }> {
  const executor = executorOf(ctx.deps);
  const callId = `call_${randomId(16)}`;
  const program = backend.path ? `exec ./${quote(backend.path.replace(/^\/+/, ""))}` : backend.command!;
  const command = [program, ...(backend.args ?? []).map(quote)].join(" ");
  const stdin = `${JSON.stringify({ type: "init" })}\n${JSON.stringify({ type: "call", name: def.name, call_id: callId, params: args })}\n`;
  const seconds = backend.timeout ?? 30;
  const req = await withEgressSecrets(ctx, await runRequest(ctx, { command, timeoutMs: seconds * 1000, stdin }));
  req.limits = { ...req.limits, output_bytes: MAX_PLUGIN_OUTPUT };
  const r = await runForeground(ctx.deps.storage, executor, req, ctx.waitUntil, runCaller(ctx));
  if (r.timed_out) throw new ToolError("TIMEOUT", `The ${def.name} plugin did not answer within ${seconds} s and was stopped (it must print its result line and exit when stdin closes).`, { timeout_s: seconds });
  if (r.truncated || r.stdout.length >= MAX_PLUGIN_OUTPUT) throw failed("output_too_large", `The ${def.name} plugin printed more than ${MAX_PLUGIN_OUTPUT} bytes (on stdout or stderr); a result must be smaller, and logging must stay under that bound.`);
  return { ...parsePluginOutput(r.stdout, callId, r.exit_code, r.stderr), files_changed: r.files_changed };
}
