/**
 * The conditional manifest's bucket digests over a layered workspace (lib/sync/manifest.ts,
 * mergedDigests): the lower manifest's digests made once, the buckets the upper layer touches
 * hashed again. They must equal the digests of the whole merged view for any upper layer.
 */
import { describe, expect, it } from "vitest";
import { bucketDigests, bucketOf, mergedBuckets, mergedDigests } from "../../../lib/sync/buckets.js";
import { Manifest, sortEntries, type ManifestEntry } from "../../../lib/layers/manifest.js";
import { mergeAll } from "../../../lib/layers/merge-list.js";
import { WHITEOUT_CONTENT_TYPE, WHITEOUT_SIZE, Whiteouts } from "../../../lib/layers/whiteout.js";

/** Whiteouts as a listing with content types shows them (the memory driver's). */
const WO = Whiteouts.of({}, {});
import type { ObjectInfo } from "../../../lib/storage/types.js";
import { compareKeys } from "../../../lib/layout/key-order.js";
import { answerManifest } from "../../../lib/sync/manifest.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";

const PREFIX = "t/acme/w/main/files/";

function rng(seed: number) {
  let s = seed >>> 0;
  return (n: number) => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32) * n | 0;
}

const names = ["a", "b", "ü", "dir/", "src/x.ts", "src/y.ts", "src/deep/z.ts", "é/f", "k", "lib/"];
const pathOf = (r: (n: number) => number) => `${names[r(names.length)]}${r(40)}${r(3) === 0 ? "/" : ""}`;

function lowerOf(r: (n: number) => number, n: number): Manifest {
  const entries: ManifestEntry[] = [];
  for (let i = 0; i < n; i++) entries.push({ path: pathOf(r), etag: `l${r(1e6)}`, size: r(100), modified: 0, pack: 0, offset: 0 });
  return new Manifest(`m${r(1e6)}`, ["p"], sortEntries(entries));
}

function upperOf(r: (n: number) => number, m: Manifest, n: number): ObjectInfo[] {
  const byKey = new Map<string, ObjectInfo>();
  for (let i = 0; i < n; i++) {
    // Over a lower path (replaced or hidden) or a new one.
    const path = r(2) && m.entries.length ? m.entries[r(m.entries.length)]!.path : pathOf(r);
    const whiteout = r(4) === 0;
    byKey.set(PREFIX + path, { key: PREFIX + path, size: whiteout ? WHITEOUT_SIZE : r(100), etag: `u${r(1e6)}`, modified: new Date(0), ...(whiteout ? { contentType: WHITEOUT_CONTENT_TYPE } : {}) });
  }
  return [...byKey.values()].sort((a, b) => compareKeys(a.key, b.key));
}

describe("mergedDigests", () => {
  it("equals the digests of the whole merged view, for random lower and upper layers and bucket counts", async () => {
    const r = rng(7);
    for (let round = 0; round < 60; round++) {
      const m = lowerOf(r, r(3) === 0 ? 0 : 1 + r(600));
      const buckets = [1, 2, 8, 64][r(4)]!;
      for (const n of [0, 1, 1 + r(5), r(200)]) {
        const upper = upperOf(r, m, n);
        const whole = await bucketDigests(mergeAll(upper, m, PREFIX, WO), buckets);
        expect(await mergedDigests(upper, m, PREFIX, buckets, WO), `round ${round}, ${n} upper objects, ${buckets} buckets`).toEqual(whole);
      }
    }
  });

  it("the lower manifest's buckets are made once per manifest and bucket count, and never changed by an answer", async () => {
    const r = rng(3);
    const m = lowerOf(r, 300);
    const first = await mergedDigests([], m, PREFIX, 8, WO);
    expect(first).toEqual(await bucketDigests(m.entries, 8));
    const made = m.derive("bucket-digests:8", () => {
      throw new Error("made again");
    });
    // Kept as values (no promise another request would wait on): Manifest.derive.
    expect((made as { digests?: string[] }).digests).toEqual(first);
    // An answer over an upper layer changes its own copy, not the kept digests.
    await mergedDigests(upperOf(r, m, 20), m, PREFIX, 8, WO);
    expect(await mergedDigests([], m, PREFIX, 8, WO)).toEqual(first);
  });

  it("a manifest keeps no promise: one would be awaited by later requests, which the Workers runtime cancels as hung once its maker is gone", async () => {
    const m = new Manifest("x", [], []);
    expect(() => m.derive("k", () => Promise.resolve(2))).toThrow(/keep values only/);
    // Nothing was kept: a value made next is.
    expect(m.derive("k", () => 2)).toBe(2);
    expect(m.derive("k", () => 3)).toBe(2);
  });
});

const pick = (e: { path: string; etag: string; size: number }) => ({ path: e.path, etag: e.etag, size: e.size });

describe("mergedBuckets: the merged view by bucket", () => {
  it("each bucket's entries (in storage order) and the count are the whole merged view's, for random layers", async () => {
    const r = rng(11);
    for (let round = 0; round < 40; round++) {
      const m = lowerOf(r, r(3) === 0 ? 0 : 1 + r(600));
      const buckets = [1, 2, 8, 64][r(4)]!;
      for (const n of [0, 1, 1 + r(5), r(200)]) {
        const upper = upperOf(r, m, n);
        const whole = mergeAll(upper, m, PREFIX, WO);
        const view = await mergedBuckets(upper, m, PREFIX, buckets, WO);
        expect(view.count, `round ${round}`).toBe(whole.length);
        for (let b = 0; b < buckets; b++) expect(view.entriesOf(b).map(pick), `round ${round}, bucket ${b}`).toEqual(whole.filter((e) => bucketOf(e.path, buckets) === b).map(pick));
      }
    }
  });

  it("an answer to a runner's digests sends the buckets that differ, as the whole view has them, without going through the whole lower manifest", async () => {
    // 10,000 lower files, 10 of them rewritten in the upper layer (a tool's edits between two live commands).
    const entries: ManifestEntry[] = Array.from({ length: 10_000 }, (_, i) => ({ path: `src/d${i % 50}/f${i}.ts`, etag: `l${i}`, size: 100, modified: 0, pack: 0, offset: 0 }));
    let reads = 0;
    const counted = new Proxy(sortEntries(entries), { get: (t, k, rcv) => (typeof k === "string" && /^\d+$/.test(k) ? (reads++, Reflect.get(t, k, rcv)) : Reflect.get(t, k, rcv)) });
    const m = new Manifest("m1", ["p"], counted);
    const storage = memoryDriver({ s3Like: true });
    const edited = entries.filter((_, i) => i % 1000 === 7).map((e) => e.path);
    for (const p of edited) await storage.put(PREFIX + p, `edited ${p}`);
    const src = { storage, prefix: PREFIX, layer: { base: m.id, seq: 1, manifest: m }, whiteouts: WO, modes: async () => ({ etag: "", modes: {} }) as never };
    const buckets = 128;
    const theirs = await bucketDigests(m.entries, buckets); // the runner's view: the lower manifest as it was
    const answer = (await answerManifest(src, { buckets, digests: theirs }))!;
    const whole = mergeAll(await storage.list({ prefix: PREFIX }).then((l) => l.objects), m, PREFIX, WO);
    const differ = new Set(edited.map((p) => bucketOf(p, buckets)));
    expect(answer.count).toBe(10_000);
    expect(answer.same).toEqual(Array.from({ length: buckets }, (_, i) => i).filter((i) => !differ.has(i)));
    expect(answer.files).toEqual(whole.filter((e) => differ.has(bucketOf(e.path, buckets))).map(pick));
    expect(answer.files.filter((f) => f.etag.startsWith("l")).length).toBeGreaterThan(0); // the lower entries of those buckets too
    // Once the manifest's buckets are made (kept with it, per isolate), the next answer reads none of its entries.
    reads = 0;
    await answerManifest(src, { buckets, digests: theirs });
    expect(reads).toBe(0);
  });
});
