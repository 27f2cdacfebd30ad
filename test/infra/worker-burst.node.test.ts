/**
 * A burst of calls against the real Worker (wrangler dev): the work each call leaves for after its
 * answer (held usage records, held index upkeep: lib/shared/held-batches.ts) is batched across the calls
 * of the burst, and no request waits on another request's promise. The runtime would log
 * "Worker's code had hung" / "Promise will never complete" for each request that did, and drop
 * what it was waiting for. Every call's usage record is counted in the Worker's log.
 * And a streamed answer's record reaches the usage store (the Durable Object the usage routes read), not
 * only the log: an SSE tool call's and an export's (lib/run/metering/usage.ts emitUsageAtEnd).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { setupTenant, startWorker, type WorkerProcess } from "../support/wrangler-dev.js";

let w: WorkerProcess;

beforeAll(async () => {
  w = await startWorker({ logLevel: "log" });
}, 120_000);

afterAll(async () => {
  await w?.stop();
});

/** The usage records of `tenant` in the Worker's log so far (one JSON line per call). */
function usageOf(tenant: string): { tool: string; ok: boolean }[] {
  return w
    .log()
    .split("\n")
    .filter((l) => l.includes('"type":"toolshed.usage"'))
    .map((l) => JSON.parse(l.slice(l.indexOf("{"))) as { tenant: string; tool: string; ok: boolean })
    .filter((u) => u.tenant === tenant);
}

/** Waits (polling the log, no fixed sleep) until `tenant` has `n` usage records, or fails after 20 s. */
async function untilUsage(tenant: string, n: number): Promise<void> {
  const until = Date.now() + 20_000;
  while (usageOf(tenant).length < n && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
}

const HUNG = /had hung|never complete|different request context|Cannot perform I\/O on behalf of a different request/i;

it("a burst of concurrent calls, and a second one while the first is held: no hung request, one usage record per call", async () => {
  const t = await setupTenant(w, "burst");
  const N = 40;
  // First wave: writes, reads and greps on one workspace from many sessions at once.
  const wave = (from: number) =>
    Promise.all(
      Array.from({ length: N }, (_, i) => {
        const n = from + i;
        if (i % 4 === 3) return t.call("grep", { pattern: "hello" }, `s${n}`);
        if (i % 4 === 2) return t.call("ls", { path: "/" }, `s${n}`);
        return t.call("write", { file_path: `f${n}.txt`, content: `hello ${n}\n` }, `s${n}`);
      }),
    );
  const first = await wave(0);
  // The second wave arrives while the first wave's records and index changes are still held.
  const second = await wave(N);
  expect([...first, ...second].filter((r) => !r.ok).map((r) => JSON.stringify(r).slice(0, 300))).toEqual([]);
  await untilUsage("burst", 2 * N);
  // One more call after both waves: its record comes out after theirs, so every batch of theirs is done.
  expect((await t.call("read", { file_path: "f0.txt" })).ok).toBe(true);
  await untilUsage("burst", 2 * N + 1);
  const usage = usageOf("burst");
  expect(usage).toHaveLength(2 * N + 1);
  expect(usage.filter((u) => u.tool === "write")).toHaveLength(N);
  expect(usage.every((u) => u.ok)).toBe(true);
  expect(w.log().split("\n").filter((l) => HUNG.test(l))).toEqual([]);
  // The index upkeep of the burst landed too: grep finds every file written.
  const g = await t.call("grep", { pattern: "hello", output_mode: "files_with_matches" });
  expect(g.ok).toBe(true);
  expect(JSON.stringify(g)).toContain(`f${N + 1}.txt`);
}, 90_000);

it("a streamed answer's usage record reaches the store: SSE tool calls and exports", async () => {
  const t = await setupTenant(w, "streamed");
  const manage = ((await (await fetch(`${w.url}/v1/admin/tenants/streamed/keys`, { method: "POST", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ scopes: ["read", "manage"] }) })).json()) as { key: string }).key;
  expect((await t.call("write", { file_path: "a.txt", content: "hi\n" })).ok).toBe(true);
  const auth = { authorization: `Bearer ${t.key}` };
  for (let i = 0; i < 3; i++) {
    const sse = await fetch(`${t.base}/tools/read`, { method: "POST", headers: { ...auth, "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify({ file_path: "a.txt" }) });
    expect(await sse.text()).toContain("event: result");
    const exp = await fetch(`${t.base}/export`, { headers: auth });
    expect(exp.headers.get("content-length")).toBeNull();
    await exp.arrayBuffer();
  }
  // What GET /v1/usage/export lists, polled (no fixed sleep) until the six records are there or 20 s passed (records are held 1 s).
  const stored = async () => {
    const text = await (await fetch(`${w.url}/v1/usage/export?limit=1000`, { headers: { authorization: `Bearer ${manage}` } })).text();
    return text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { tool?: string; route?: string });
  };
  const count = (rs: { tool?: string; route?: string }[]) => ({ read: rs.filter((r) => r.tool === "read").length, export: rs.filter((r) => r.route === "GET export").length });
  const until = Date.now() + 20_000;
  let got = count(await stored());
  while ((got.read < 3 || got.export < 3) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    got = count(await stored());
  }
  // Before: 0 to 1 of the three reads and none of the exports (their write to the store was cancelled with the request).
  expect(got).toEqual({ read: 3, export: 3 });
}, 60_000);
