import { describe, expect, it } from "vitest";
import { IsolateMemory } from "../../../lib/shared/isolate-memory.js";
import { SegmentCache } from "../../../lib/search/segment-cache.js";
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
