/**
 * SSE door: a tool call with `Accept: text/event-stream` answers as Server-Sent Events.
 *
 *   event: progress   data: a ProgressEvent (lib/contract/tool.ts), as many as the tool reports
 *   event: result     data: the usual envelope, success or error, with usage; exactly one, last
 *   : keep-alive      a comment every HEARTBEAT_MS (SSE clients ignore it)
 *
 * Everything before the stream (key, scope, workspace, JSON body) is refused as plain JSON by the
 * route's guard; once the stream has started, every outcome is a result event (HTTP 200). The
 * tool runs through executeTool like every door; the request's AbortSignal reaches it as ctx.signal,
 * so a client that goes away cancels the call. The usage record waits for the result (CallMeter.done).
 */
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { toToolError } from "../contract/errors.js";
import { executeTool, type RunContext } from "../run/run-tool.js";
import type { CallMeter } from "../run/metering/usage.js";
import type { ProgressEvent, Tool } from "../contract/tool.js";

/** How often an event stream that has nothing to send writes a comment line (client-gone detection, idle proxies). */
export const HEARTBEAT_MS = 1000;

/** Whether the caller asked for an event stream (Accept lists text/event-stream). */
export function wantsEventStream(accept: string | undefined): boolean {
  return !!accept && accept.split(",").some((t) => t.split(";")[0]!.trim().toLowerCase() === "text/event-stream");
}

/** The call as an event stream: `call` meters it (the route's), `args` are its arguments as sent. */
export function streamToolCall(c: Context, call: CallMeter, args: unknown, tool: Tool, ctx: RunContext): Response {
  let finished!: () => void;
  call.done = new Promise<void>((r) => (finished = r));
  return streamSSE(c, async (stream) => {
    // Progress is written in order; a write after the client left is dropped.
    let chain = Promise.resolve();
    const progress = (e: ProgressEvent) => {
      if (stream.aborted || stream.closed) return;
      chain = chain.then(() => stream.writeSSE({ event: "progress", data: JSON.stringify(e) })).catch(() => {});
    };
    // The client is gone when the request's signal aborts (Node; Workers with enable_request_signal) or the
    // response stream is cancelled. workerd notices a closed connection only when it writes to it: a comment
    // line (": keep-alive", ignored by SSE clients) every HEARTBEAT_MS also keeps idle proxies from closing it.
    const gone = new AbortController();
    const leave = () => gone.abort();
    if (ctx.signal?.aborted) leave();
    ctx.signal?.addEventListener("abort", leave, { once: true });
    stream.onAbort(leave);
    const heartbeat = setInterval(() => {
      if (stream.aborted || stream.closed) return;
      chain = chain.then(() => stream.write(": keep-alive\n\n")).then(() => {}, () => {});
    }, HEARTBEAT_MS);
    let envelope: Record<string, unknown>;
    try {
      const r = await executeTool(tool, args, { ...ctx, progress, signal: gone.signal }, { door: "sse" });
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
      clearInterval(heartbeat);
      ctx.signal?.removeEventListener("abort", leave);
      finished();
    }
  });
}
