/**
 * SSE door: a tool call with `Accept: text/event-stream` answers as Server-Sent Events.
 *
 *   event: progress   data: a ProgressEvent (lib/tool.ts), as many as the tool reports
 *   event: result     data: the usual envelope, success or error, with usage; exactly one, last
 *
 * Everything before the stream (key, scope, workspace, JSON body) is refused as plain JSON by the
 * route's guard; once the stream has started, every outcome is a result event (HTTP 200). The
 * tool runs through executeTool like every door; the request's AbortSignal reaches it as ctx.signal,
 * so a client that goes away cancels the call. The usage record waits for the result (CallMeter.done).
 */
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { AppEnv } from "../http.js";
import { toToolError } from "../http.js";
import { executeTool } from "../run-tool.js";
import type { ProgressEvent, Tool, ToolContext } from "../tool.js";

/** Whether the caller asked for an event stream (Accept lists text/event-stream). */
export function wantsEventStream(accept: string | undefined): boolean {
  return !!accept && accept.split(",").some((t) => t.split(";")[0]!.trim().toLowerCase() === "text/event-stream");
}

export function streamToolCall(c: Context<AppEnv>, tool: Tool, ctx: ToolContext): Response {
  const call = c.get("call")!;
  let finished!: () => void;
  call.done = new Promise<void>((r) => (finished = r));
  return streamSSE(c, async (stream) => {
    // Progress is written in order; a write after the client left is dropped.
    let chain = Promise.resolve();
    const progress = (e: ProgressEvent) => {
      if (stream.aborted || stream.closed) return;
      chain = chain.then(() => stream.writeSSE({ event: "progress", data: JSON.stringify(e) })).catch(() => {});
    };
    let envelope: Record<string, unknown>;
    try {
      const r = await executeTool(tool, c.get("json"), { ...ctx, progress });
      envelope = { ok: true, tool: tool.name, ...r, usage: call.usage() };
    } catch (err) {
      const e = toToolError(err);
      if (e.code === "INTERNAL") console.error("internal error (sse)", err instanceof Error ? err.stack ?? err.message : String(err));
      call.code = e.code;
      envelope = { ok: false, tool: tool.name, error: { code: e.code, message: e.message, details: e.details }, usage: call.usage() };
    }
    try {
      await chain;
      if (!stream.aborted) await stream.writeSSE({ event: "result", data: JSON.stringify(envelope) });
    } finally {
      finished();
    }
  });
}
