/**
 * A route's bytes are billed as they pass, declared or not (lib/api/routes/route-usage.ts): a batch upload
 * or an import sent without a Content-Length (chunked) is billed the bytes it brought, and an export streamed
 * without one the bytes it sent (both were billed 0). Real R2 and KV in workerd, answered with a waitUntil.
 */
import { describe, expect, it } from "vitest";
import type { UsageRecord } from "../../../../lib/run/metering/record.js";
import { executionContext, newTenant, testApp } from "../../../helpers.js";

const streamOf = (bytes: Uint8Array, chunk = 16 * 1024) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i += chunk) c.enqueue(bytes.slice(i, i + chunk));
      c.close();
    },
  });

describe("a route's bytes without a declared length", () => {
  it("a chunked batch upload is billed what it brought, a streamed export what it sent", async () => {
    const usage: UsageRecord[] = [];
    const app = testApp({ onUsage: (u) => void usage.push(u) });
    const t = await newTenant(app);
    const { ctx, settle } = executionContext();
    const lines = Array.from({ length: 20 }, (_, i) => JSON.stringify({ path: `f${i}.txt`, content: Array.from({ length: 1_000 }, () => Math.random().toString(36).slice(2, 12)).join("") })).join("\n") + "\n";
    const body = new TextEncoder().encode(lines);
    const up = await app.request(`/v1/workspaces/${t.ws}/uploads?mode=all`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/x-ndjson" }, body: streamOf(body), duplex: "half" } as RequestInit, undefined, ctx);
    expect(up.status, await up.clone().text()).toBe(200);
        const exp = await app.request(`/v1/workspaces/${t.ws}/export`, { headers: { authorization: `Bearer ${t.key}` } }, undefined, ctx);
    expect(exp.status).toBe(200);
    expect(exp.headers.get("content-length")).toBeNull();
    const sent = (await exp.arrayBuffer()).byteLength;
    expect(sent).toBeGreaterThan(100_000);
    await settle();
    const uploads = usage.find((u) => u.route === "POST uploads");
    expect(uploads?.bytes_written, JSON.stringify(usage)).toBe(body.length);
    const exported = usage.find((u) => u.route === "GET export");
    expect(exported?.bytes_read, JSON.stringify(usage)).toBe(sent);
  });
});
