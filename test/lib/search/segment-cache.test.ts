import { describe, expect, it } from "vitest";
import { IsolateMemory } from "../../../lib/shared/isolate-memory.js";
import { SegmentCache } from "../../../lib/search/segment-cache.js";
import { buildSegment } from "../../../lib/search/segment.js";
import { Budget, IndexStore } from "../../../lib/search/store.js";
import { TrigramCollector } from "../../../lib/search/trigrams.js";
import { newTenant, testApp, upload } from "../../helpers.js";
import { countingDriver, ok, sleep, sourceText } from "./helpers.js";

describe("SegmentCache", () => {
  it("holds at most maxBytes, drops the least recently used first, never keeps a range over a quarter of the bound", () => {
    const c = new SegmentCache(new IsolateMemory(1000));
    const b = (n: number, v = 1) => new Uint8Array(n).fill(v);
    c.set("a", b(240, 1));
    c.set("b", b(200, 2));
    c.set("c", b(200, 3));
    expect(c.get("a")?.[0]).toBe(1); // a is now the most recently used
    c.set("d", b(250, 4));
    c.set("e", b(150, 5)); // 1040 > 1000: b (least recently used) goes
    expect(c.get("b")).toBeUndefined();
    expect(c.bytes).toBe(840);
    for (const k of ["a", "c", "d", "e"]) expect(c.get(k)).toBeDefined();
    c.set("big", b(251));
    expect(c.get("big")).toBeUndefined();
    expect(SegmentCache.keyOf("k")).not.toBe(SegmentCache.keyOf("k", { offset: 0, length: 10 }));
  });
});

describe("SegmentCache: parsed heads", () => {
  it("keeps a segment's parsed head: read again (by this request or the next), it is the same head, with no request", async () => {
    const memory = new IsolateMemory();
    const cache = new SegmentCache(memory);
    const { driver, counts } = countingDriver();
    const tenant = `t-head-${Date.now()}`;
    const files = Array.from({ length: 50 }, (_, i) => ({ path: `src/f${i}.ts`, etag: `e${i}`, size: 20, modified: i, flags: 0, content: new TextEncoder().encode(`export const v${i} = ${i};\n`) }));
    const ref = await new IndexStore(driver, tenant, "w").putSegment(buildSegment(files, new TrigramCollector()));
    const first = new IndexStore(driver, tenant, "w", new Budget(100), cache);
    const head = await first.readHead(ref);
    expect(head?.files.map((f) => f.path)).toEqual(files.map((f) => f.path));
    expect(first.budget.gets).toBe(1);
    const gets = counts.get;
    expect(await first.readHead(ref)).toBe(head);
    const next = new IndexStore(driver, tenant, "w", new Budget(100), cache);
    expect(await next.readHead(ref)).toBe(head);
    expect(next.budget.gets).toBe(0);
    expect(counts.get).toBe(gets);
    // It counts toward the isolate's budget, in the segments' region; a budget too small for it keeps its bytes only.
    expect(memory.bytesOf("segments")).toBeGreaterThanOrEqual(ref.size);
    const tiny = new SegmentCache(new IsolateMemory(1024));
    const small = new IndexStore(driver, tenant, "w", new Budget(100), tiny);
    const h2 = await small.readHead(ref);
    expect(h2).not.toBe(head);
    expect(tiny.head(ref.key)).toBeUndefined();
  });
});

describe("grep: index segments read once per isolate", { timeout: 60_000 }, () => {
  it("a repeated search reads no segment again, and still sees a file written since", async () => {
    const { driver, counts, snapshot } = countingDriver();
    const app = testApp({ storage: driver });
    const t = await newTenant(app);
    await Promise.all(Array.from({ length: 60 }, (_, i) => upload(t, `src/f${i}.ts`, sourceText(i) + (i === 17 ? "export const rareNeedleQq = 1;\n" : ""))));
    await sleep(1200); // the index upkeep holds changes up to a second, then writes a segment
    const measure = async (pattern: string) => {
      const before = snapshot();
      const d = ok(await t.call("grep", { pattern }));
      return { d, gets: counts.get - before.get };
    };
    const first = await measure("rareNeedleQq");
    expect(first.d.files).toEqual(["src/f17.ts"]);
    expect(first.d.stats.files_unindexed).toBe(0);
    expect(first.d.stats.segments).toBeGreaterThan(0);
    const again = await measure("rareNeedleQq");
    expect(again.d.files).toEqual(["src/f17.ts"]);
    // The second reads at most the candidate and the listing's split points: no segment (60 of them, one per upload here).
    console.log(`segment cache: first ${first.gets} gets (${first.d.stats.storage_reads} index/file reads, ${first.d.stats.segments} segments), again ${again.gets} (${again.d.stats.storage_reads})`);
    expect(first.d.stats.segments).toBeGreaterThanOrEqual(10);
    expect(again.d.stats.storage_reads).toBeLessThanOrEqual(2);
    expect(again.gets).toBeLessThanOrEqual(3);
    // Another isolate (another app) has nothing cached: it reads the segments as the first did.
    const other = ok(await otherIsolate(t)("rareNeedleQq"));
    expect(other.files).toEqual(["src/f17.ts"]);
    // A file written since, with the needle: found (the listing is the truth; cached segments do not cover it).
    ok(await t.call("write", { file_path: "src/new.ts", content: "const rareNeedleQq = 2;\n" }));
    const after = await measure("rareNeedleQq");
    expect([...after.d.files].sort()).toEqual(["src/f17.ts", "src/new.ts"]);
  });
});

/** The same tenant's workspace through a fresh app over the same storage (a new isolate: empty caches). */
function otherIsolate(t: { key: string; ws: string }) {
  const fresh = testApp();
  return async (pattern: string) => {
    const res = await fresh.request(`/v1/workspaces/${t.ws}/tools/grep`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ pattern }) });
    return { status: res.status, body: await res.json() };
  };
}
