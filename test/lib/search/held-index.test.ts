/**
 * Index upkeep after the response (Workers' waitUntil): changes are held and become one segment
 * per burst of calls (lib/shared/held-batches.ts). The app is called with an execution context
 * whose waitUntil collects the work, as Workers would run it after each answer. A change reaches the
 * indexer a timer turn after its call's answer (lib/shared/after-answer.ts): `heldNow` waits for it.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { searchIndexer } from "../../../lib/search/indexer.js";
import { IndexStore } from "../../../lib/search/store.js";
import { TrigramCollector } from "../../../lib/search/trigrams.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { newTenant, testApp, workersCalls, type Tenant } from "../../helpers.js";
import { ok } from "./helpers.js";

const driver = r2Driver(env.FILES);
const original = TrigramCollector.prototype.collect;

/** An app whose indexer holds changes as told, and the work its calls left for after their answers. */
function heldApp(hold: { holdMs: number; maxItems?: number; maxBytes?: number }) {
  const indexer = searchIndexer({ hold });
  const app = testApp({ listeners: [indexer] });
  return { app, indexer, ...workersCalls(app) };
}

/** Waits until the indexer holds `n` batches (the changes told after the answers have reached it). */
const heldNow = (h: { indexer: { held: { pending: number } } }, n: number) => vi.waitFor(() => expect(h.indexer.held.pending).toBe(n), { interval: 5 });

async function segmentsOf(t: Tenant) {
  const store = new IndexStore(driver, t.tenant, t.ws);
  const refs = await store.listSegments();
  const tables = await Promise.all(refs.map((r) => store.readFileTable(r)));
  return tables.map((files) => (files ?? []).map((f) => ({ path: f.path, etag: f.etag })));
}

describe("index upkeep held after the response", () => {
  it("a burst of writes becomes one segment; grep is exact before it lands", async () => {
    const h = heldApp({ holdMs: 300 });
    const t = await newTenant(h.app);
    const etags: Record<string, string> = {};
    for (const name of ["a.txt", "b.txt", "c.txt"]) etags[name] = ok(await h.call(t, "write", { file_path: name, content: `needle in ${name}\n` })).etag;
    // The second write of a.txt in the same burst: only its last version is indexed.
    ok(await h.call(t, "read", { file_path: "a.txt" }));
    etags["a.txt"] = ok(await h.call(t, "edit", { file_path: "a.txt", old_string: "needle", new_string: "needle again" })).etag;
    await heldNow(h, 1);
    expect(await segmentsOf(t)).toEqual([]);
    // Not indexed yet: grep reads the files themselves and finds every one, the edit included.
    const g = ok(await h.call(t, "grep", { pattern: "needle", output_mode: "content" }));
    expect(g.output ?? JSON.stringify(g)).toContain("needle again");
    const found = ok(await h.call(t, "grep", { pattern: "needle", output_mode: "files_with_matches" }));
    expect(JSON.stringify(found)).toContain("b.txt");
    expect(JSON.stringify(found)).toContain("c.txt");
    await h.settle();
    expect(h.indexer.held.pending).toBe(0);
    const segs = await segmentsOf(t);
    expect(segs).toHaveLength(1);
    expect(segs[0]!.sort((x, y) => x.path.localeCompare(y.path))).toEqual(["a.txt", "b.txt", "c.txt"].map((path) => ({ path, etag: etags[path] })));
  });

  it("a batch that reaches maxItems goes at once, without waiting for the hold", async () => {
    // A 30 s hold: the test would time out if only the hold released the batch.
    const h = heldApp({ holdMs: 30_000, maxItems: 4 });
    const t = await newTenant(h.app);
    for (let i = 0; i < 4; i++) ok(await h.call(t, "write", { file_path: `f${i}.txt`, content: `file ${i}\n` }));
    await h.settle();
    const segs = await segmentsOf(t);
    expect(segs.map((s) => s.length)).toEqual([4]);
  }, 10_000);

  it("a batch that reaches maxBytes goes at once", async () => {
    const h = heldApp({ holdMs: 30_000, maxBytes: 10_000 });
    const t = await newTenant(h.app);
    ok(await h.call(t, "write", { file_path: "big1.txt", content: "x".repeat(6_000) }));
    await heldNow(h, 1);
    ok(await h.call(t, "write", { file_path: "big2.txt", content: "y".repeat(6_000) }));
    await h.settle();
    expect((await segmentsOf(t)).map((s) => s.length)).toEqual([2]);
  }, 10_000);

  it("two tenants writing in the same window get batches of their own", async () => {
    const h = heldApp({ holdMs: 200 });
    const a = await newTenant(h.app);
    const b = await newTenant(h.app);
    ok(await h.call(a, "write", { file_path: "same.txt", content: "from a\n" }));
    ok(await h.call(b, "write", { file_path: "same.txt", content: "from b\n" }));
    ok(await h.call(a, "write", { file_path: "only-a.txt", content: "a\n" }));
    await heldNow(h, 2);
    await h.settle();
    expect((await segmentsOf(a)).map((s) => s.map((f) => f.path).sort())).toEqual([["only-a.txt", "same.txt"]]);
    expect((await segmentsOf(b)).map((s) => s.map((f) => f.path))).toEqual([["same.txt"]]);
    const fromB = ok(await h.call(b, "grep", { pattern: "from", output_mode: "content" }));
    expect(JSON.stringify(fromB)).toContain("from b");
    expect(JSON.stringify(fromB)).not.toContain("from a");
  });

  it("the MCP and compat doors hold their calls' upkeep after the answer too", async () => {
    const h = heldApp({ holdMs: 300 });
    const t = await newTenant(h.app);
    const rpc = await h.app.request(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "write", arguments: { file_path: "m.txt", content: "via mcp\n" } } }) }, {}, h.ctx);
    expect(rpc.status).toBe(200);
    expect(((await rpc.json()) as any).result.isError ?? false).toBe(false);
    const compat = await h.app.request(`/v1/workspaces/${t.ws}/compat/anthropic/str_replace_based_edit_tool`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ command: "create", path: "/c.txt", file_text: "via compat\n" }) }, {}, h.ctx);
    expect(compat.status).toBe(200);
    await compat.arrayBuffer();
    await heldNow(h, 1);
    expect(await segmentsOf(t)).toEqual([]);
    await h.settle();
    expect((await segmentsOf(t)).map((s) => s.map((f) => f.path).sort())).toEqual([["c.txt", "m.txt"]]);
  });

  it("one trigram collector (its 2 MB bitset) per indexer, not one per segment", async () => {
    const h = heldApp({ holdMs: 20 });
    const t = await newTenant(h.app);
    const used = new Set<unknown>();
    const collect = vi.spyOn(TrigramCollector.prototype, "collect").mockImplementation(function (this: TrigramCollector, bytes: Uint8Array) {
      used.add(this);
      return original.call(this, bytes);
    });
    try {
      for (const name of ["a.txt", "b.txt", "c.txt"]) {
        ok(await h.call(t, "write", { file_path: name, content: `needle in ${name}\n` }));
        await heldNow(h, 1);
        await h.settle(); // each write its own segment
      }
      expect((await segmentsOf(t)).length).toBeGreaterThanOrEqual(1);
      expect(collect.mock.calls.length).toBeGreaterThanOrEqual(3);
      expect(used.size).toBe(1);
    } finally {
      collect.mockRestore();
    }
  });
});
