/** SSE door (lib/doors/sse.ts): Accept: text/event-stream answers progress events, then exactly one result event. */
import { z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { tools as allTools } from "../../../functions/index.js";
import { HEARTBEAT_MS } from "../../../lib/doors/sse.js";
import { defineTool, type Tool } from "../../../lib/contract/tool.js";
import { newTenant, testApp, upload } from "../../helpers.js";
import { readEvents } from "../../support/sse-events.js";

/** A tool that reports two output chunks 300 ms apart, then answers. */
const ticker = defineTool({
  name: "ticker",
  description: "Test tool: reports progress.\nReturns: {n}",
  summary: "Test tool: reports progress.",
  annotations: { title: "Ticker", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ n: z.number() }),
  category: "file",
  permission: "read",
  input: z.object({ fail: z.boolean().optional() }),
  async execute(args, ctx) {
    ctx.progress?.({ kind: "output", stream: "stdout", text: "first\n" });
    await new Promise((r) => setTimeout(r, 300));
    ctx.progress?.({ kind: "status", message: "half", done: 1, total: 2 });
    if (args.fail) throw new (await import("../../../lib/shared/errors.js")).ToolError("NO_MATCH", "nothing matched; try another pattern");
    return { title: "ticker", output: "done", data: { n: 2 } };
  },
}) as Tool;

/** A tool that waits `ms` without reporting, or until its call is cancelled; it records what its signal saw. */
const waits: { aborted: boolean }[] = [];
const waiter = defineTool({
  name: "waiter",
  description: "Test tool: waits.\nReturns: {aborted}",
  summary: "Test tool: waits.",
  annotations: { title: "Waiter", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ aborted: z.boolean() }),
  category: "file",
  permission: "read",
  input: z.object({ ms: z.number() }),
  async execute(args, ctx) {
    const seen = { aborted: false };
    waits.push(seen);
    await new Promise<void>((r) => {
      const t = setTimeout(r, args.ms);
      ctx.signal?.addEventListener("abort", () => ((seen.aborted = true), clearTimeout(t), r()), { once: true });
    });
    return { title: "waiter", output: "waited", data: { aborted: seen.aborted } };
  },
}) as Tool;

const usages: any[] = [];
const app = () => testApp({ onUsage: (u) => usages.push(u) }, [...allTools, ticker, waiter]);
const sse = { "content-type": "application/json", accept: "text/event-stream" };

describe("SSE tool calls", () => {
  it("streams progress events before the one result event, and bills the call once", async () => {
    const t = await newTenant(app());
    const res = await t.req(`/v1/workspaces/${t.ws}/tools/ticker`, { method: "POST", headers: sse, body: "{}" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = await readEvents(res);
    expect(events.map((e) => e.event)).toEqual(["progress", "progress", "result"]);
    expect(events[0]!.data).toEqual({ kind: "output", stream: "stdout", text: "first\n" });
    expect(events[1]!.data).toEqual({ kind: "status", message: "half", done: 1, total: 2 });
    expect(events[2]!.at - events[0]!.at).toBeGreaterThanOrEqual(200);
    expect(events[2]!.data).toMatchObject({ ok: true, tool: "ticker", title: "ticker", output: "done", data: { n: 2 } });
    expect(Object.keys(events[2]!.data.usage).sort()).toEqual(["bytes_read", "bytes_written", "ms"]);
    await new Promise((r) => setTimeout(r, 20));
    expect(usages.filter((u) => u.tenant === t.tenant && u.tool === "ticker")).toEqual([expect.objectContaining({ ok: true })]);
  });

  it("a tool's error is the result event, with its code and usage; the call is billed with the code", async () => {
    const t = await newTenant(app());
    const res = await t.req(`/v1/workspaces/${t.ws}/tools/ticker`, { method: "POST", headers: sse, body: JSON.stringify({ fail: true }) });
    expect(res.status).toBe(200);
    const events = await readEvents(res);
    expect(events.at(-1)!.event).toBe("result");
    expect(events.filter((e) => e.event === "result")).toHaveLength(1);
    expect(events.at(-1)!.data).toMatchObject({ ok: false, tool: "ticker", error: { code: "NO_MATCH" }, usage: { ms: expect.any(Number) } });
    await new Promise((r) => setTimeout(r, 20));
    expect(usages.filter((u) => u.tenant === t.tenant && u.tool === "ticker")).toEqual([expect.objectContaining({ ok: false, code: "NO_MATCH" })]);
  });

  it("invalid arguments are a result event too; the same call without the header answers the same envelope as JSON", async () => {
    const t = await newTenant(app());
    await upload(t, "a.txt", "hello\n");
    const streamed = await readEvents(await t.req(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: { ...sse, "x-session-id": "s1" }, body: JSON.stringify({ file_path: "a.txt" }) }));
    const plain = await t.call("read", { file_path: "a.txt" });
    expect(streamed.map((e) => e.event)).toEqual(["result"]);
    const { usage: u1, ...r1 } = streamed[0]!.data;
    const { usage: u2, ...r2 } = plain.body;
    expect(r1).toEqual(r2);
    expect(Object.keys(u1)).toEqual(Object.keys(u2));
    const bad = await readEvents(await t.req(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: sse, body: JSON.stringify({ file_pth: "a.txt" }) }));
    expect(bad.map((e) => e.event)).toEqual(["result"]);
    expect(bad[0]!.data).toMatchObject({ ok: false, error: { code: "INVALID_ARGUMENT" } });
  });

  it("a quiet call writes a keep-alive comment every HEARTBEAT_MS; a client that cancels the stream aborts the tool's signal", async () => {
    const t = await newTenant(app());
    const res = await t.req(`/v1/workspaces/${t.ws}/tools/waiter`, { method: "POST", headers: sse, body: JSON.stringify({ ms: HEARTBEAT_MS + 400 }) });
    const raw = await res.text();
    expect(raw).toContain(": keep-alive\n\n");
    expect(raw.trimEnd().endsWith("}")).toBe(true); // the result event is last
    const gone = await t.req(`/v1/workspaces/${t.ws}/tools/waiter`, { method: "POST", headers: sse, body: JSON.stringify({ ms: 20_000 }) });
    const reader = gone.body!.getReader();
    await new Promise((r) => setTimeout(r, 100));
    const before = waits.length;
    expect(waits.at(-1)!.aborted).toBe(false);
    await reader.cancel();
    const until = Date.now() + HEARTBEAT_MS * 3;
    while (!waits.at(-1)!.aborted && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(waits.length).toBe(before);
    expect(waits.at(-1)!.aborted).toBe(true);
  });

  it("refusals before the stream (no key, missing scope, another tenant's workspace) are plain JSON", async () => {
    const a = app();
    const t = await newTenant(a);
    const other = await newTenant(a);
    const noKey = await a.request(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: sse, body: "{}" });
    expect(noKey.status).toBe(401);
    expect(noKey.headers.get("content-type")).toMatch(/^application\/json/);
    const ro = await newTenant(a, { scopes: ["read"] });
    const denied = await ro.req(`/v1/workspaces/${ro.ws}/tools/write`, { method: "POST", headers: sse, body: JSON.stringify({ file_path: "x", content: "y" }) });
    expect(denied.status).toBe(403);
    expect(denied.headers.get("content-type")).toMatch(/^application\/json/);
    const foreign = await other.req(`/v1/workspaces/nope-${t.tenant}/tools/read`, { method: "POST", headers: sse, body: JSON.stringify({ file_path: "a" }) });
    expect(foreign.status).toBe(404);
    expect(((await foreign.json()) as any).error.code).toBe("NOT_FOUND");
  });
});
