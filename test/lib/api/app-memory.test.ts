/**
 * createApp's caches that hold bytes (manifests, index segments, files' versions, search walks) draw from the one
 * budget of AppDeps.memory (lib/shared/isolate-memory.ts): after reads, a grep and a read of a sealed
 * file, each region holds something, and together never more than the budget.
 */
import { describe, expect, it } from "vitest";
import { IsolateMemory } from "../../../lib/shared/isolate-memory.js";
import { newTenant, testApp, upload } from "../../helpers.js";
import { ok, sleep, sourceText } from "../search/helpers.js";

async function exercise(memory: IsolateMemory) {
  const app = testApp({ memory });
  const t = await newTenant(app);
  for (let i = 0; i < 30; i++) await upload(t, `src/f${i}.ts`, sourceText(i));
  const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "base" }) });
  expect(cp.status).toBe(201); // the files are now in a pack, listed by a manifest
  for (let i = 0; i < 30; i++) await upload(t, `src/g${i}.ts`, sourceText(100 + i) + "// memoryNeedle\n");
  await sleep(1200); // the index upkeep writes its segment after holding changes up to a second
  let peak = 0;
  for (let i = 0; i < 30; i++) {
    ok(await t.call("read", { file_path: `src/f${i}.ts` })); // from the lower layer: the manifest
    ok(await t.call("read", { file_path: `src/g${i}.ts` })); // kept whole: a version
    peak = Math.max(peak, memory.bytes);
  }
  expect(ok(await t.call("grep", { pattern: "memoryNeedle", output_mode: "count" })).stats.segments).toBeGreaterThan(0);
  return Math.max(peak, memory.bytes);
}

describe("the app's caches share AppDeps.memory", { timeout: 60_000 }, () => {
  it("manifests, segments, versions and search walks all count toward it", async () => {
    const memory = new IsolateMemory(8 * 1024 * 1024);
    await exercise(memory);
    const regions = ["manifests", "segments", "versions", "listings"];
    for (const region of regions) expect(memory.bytesOf(region), region).toBeGreaterThan(0);
    expect(memory.bytes).toBe(regions.reduce((sum, r) => sum + memory.bytesOf(r), 0));
  });

  it("a small budget holds: the calls still answer, from storage when the cache let go", async () => {
    const memory = new IsolateMemory(48 * 1024);
    expect(await exercise(memory)).toBeLessThanOrEqual(48 * 1024);
  });
});
