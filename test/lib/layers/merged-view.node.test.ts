/**
 * The merged view against a model: random lower layers (manifest), random upper layers (files,
 * whiteouts, markers), and every listing shape the readers use (flat, "/" delimiter, paged with
 * any limit, startAfter, cursors) must equal the listing of the same tree stored plainly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3Driver } from "../../../lib/storage/drivers/s3.js";
import { startS3Server, type S3Server } from "../../support/s3rver.js";
import { layeredDriver } from "../../../lib/layers/layered-driver.js";
import { mergeAll } from "../../../lib/layers/merge-list.js";
import { Manifest, sortEntries, type ManifestEntry } from "../../../lib/layers/manifest.js";
import { newWhiteoutMark, V1_WHITEOUT_BODY, WHITEOUT_CONTENT_TYPE, WHITEOUT_SIZE, Whiteouts } from "../../../lib/layers/whiteout.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { ListOptions, ObjectInfo, StorageDriver } from "../../../lib/storage/types.js";

const NAMES = ["a", "b", "c", "a.b", "a-b", "é", "z"];
/** s3rver lists "a/x" before "a-b" (not in byte order, unlike S3 and R2) and filters startAfter by that order: no names with bytes below "/". */
const S3RVER_NAMES = ["a", "b", "c", "ab", "é", "z"];

function rng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

function randomPath(r: () => number, names: readonly string[]): string {
  const depth = 1 + Math.floor(r() * 3);
  const parts = Array.from({ length: depth }, () => names[Math.floor(r() * names.length)]!);
  return parts.join("/") + (r() < 0.1 ? "/" : "");
}

/** Keys only: a path and one of its ancestors can't both be files. */
function consistent(paths: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const p of paths) {
    const file = p.endsWith("/") ? p.slice(0, -1) : p;
    const parts = file.split("/");
    let clash = false;
    for (let i = 1; i < parts.length; i++) if (out.has(parts.slice(0, i).join("/"))) clash = true;
    for (const q of out) if (q.startsWith(`${file}/`) && !p.endsWith("/")) clash = true;
    if (!clash) out.add(p);
  }
  return out;
}

async function listAll(d: StorageDriver, opts: Omit<ListOptions, "cursor">): Promise<{ keys: string[]; prefixes: string[] }> {
  const keys: string[] = [];
  const prefixes: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const r = await d.list({ ...opts, ...(cursor ? { cursor } : {}) });
    keys.push(...r.objects.map((o) => o.key));
    prefixes.push(...r.prefixes);
    cursor = r.cursor;
    if (++pages > 10_000) throw new Error("no end");
  } while (cursor);
  return { keys, prefixes: [...new Set(prefixes)].sort() };
}

async function modelCheck(seed: number, inner: StorageDriver, names: readonly string[] = NAMES): Promise<void> {
      const FP = `t/acme/w/s${seed}/f/`;
      const r = rng(seed);
      const lowerPaths = consistent(Array.from({ length: 5 + Math.floor(r() * 60) }, () => randomPath(r, names)));
      const entries: ManifestEntry[] = [...lowerPaths].map((p) => ({ path: p, etag: `l-${p}`, size: 0, modified: 0, pack: -1, offset: 0 }));
      const m = new Manifest("m", [], sortEntries(entries));
      const expected = new Map<string, boolean>(); // path → present
      for (const p of lowerPaths) expected.set(p, true);
      const wo = Whiteouts.of(inner, { whiteout: newWhiteoutMark() });
      // Files a tenant may write that look like whiteouts by size or bytes: they are files.
      const lookalike = () => (r() < 0.5 ? V1_WHITEOUT_BODY : "\u0000toolshed:whiteout:v2:" + "0".repeat(WHITEOUT_SIZE - 22));
      // upper: overwrite some lower files, whiteout some (marked, or v1 as written before marks), add new ones (keeping the tree consistent)
      for (const p of lowerPaths) {
        const x = r();
        if (x < 0.15) {
          await wo.put(inner, FP + p, {});
          expected.delete(p);
        } else if (x < 0.25) {
          await inner.put(FP + p, V1_WHITEOUT_BODY, { contentType: WHITEOUT_CONTENT_TYPE });
          expected.delete(p);
        } else if (x < 0.4 && !p.endsWith("/")) {
          await inner.put(FP + p, x < 0.3 ? lookalike() : "upper");
        }
      }
      const extra = consistent([...expected.keys(), ...Array.from({ length: Math.floor(r() * 20) }, () => randomPath(r, names))]);
      for (const p of extra) {
        if (expected.has(p)) continue;
        // s3rver keeps objects as files on disk: "z" (a whiteout) and "z/a" cannot both exist there (they can on S3).
        if (names === S3RVER_NAMES && [...lowerPaths].some((l) => p.startsWith(`${l.replace(/\/$/, "")}/`) || l.startsWith(`${p.replace(/\/$/, "")}/`))) continue;
        await inner.put(FP + p, p.endsWith("/") || r() < 0.7 ? "new" : lookalike());
        expected.set(p, true);
      }
      // a stale whiteout with nothing under it
      await wo.put(inner, `${FP}zz-stale`, {});
      const view = layeredDriver(inner, { tenant: "acme", filesPrefix: FP, manifest: m, whiteouts: wo, markedWhiteouts: async () => wo, stillCurrent: async () => true });
      const plain = memoryDriver();
      for (const p of expected.keys()) await plain.put(FP + p, "x");

      const prefixes = [FP, ...new Set([...expected.keys()].flatMap((p) => p.split("/").slice(0, -1).map((_, i, a) => `${FP}${a.slice(0, i + 1).join("/")}/`)))];
      for (const prefix of prefixes.slice(0, 6)) {
        for (const delimiter of [undefined, "/"]) {
          for (const limit of [1, 2, 7, 1000]) {
            const opts = { prefix, limit, ...(delimiter ? { delimiter } : {}) };
            expect(await listAll(view, opts), JSON.stringify(opts)).toEqual(await listAll(plain, opts));
          }
        }
        const all = (await listAll(plain, { prefix })).keys;
        const after = all[Math.floor(all.length / 2)];
        if (after) expect(await listAll(view, { prefix, startAfter: after, limit: 3 })).toEqual(await listAll(plain, { prefix, startAfter: after, limit: 3 }));
      }
      for (const p of [...lowerPaths, ...extra]) {
        expect(!!(await view.head(FP + p)), p).toBe(expected.has(p));
      }
      // mergeAll (the conditional manifest's merge of one upper listing in hand) = the merged listing.
      const upper: ObjectInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await inner.list({ prefix: FP, ...(cursor ? { cursor } : {}) });
        upper.push(...(await wo.resolve(inner, page.objects)));
        cursor = page.cursor;
      } while (cursor);
      const whole = mergeAll(upper, m, FP, wo).map((e) => FP + e.path);
      expect(whole).toEqual((await listAll(view, { prefix: FP })).keys);
}

describe("merged view = plain view (model check)", () => {
  for (let seed = 1; seed <= 40; seed++) it(`memory, seed ${seed}`, () => modelCheck(seed, memoryDriver()));
});

// S3 lists no metadata: marked whiteouts are recognised by size and ETag (the MD5 of the workspace's mark) alone, v1 ones and their lookalikes by a HEAD.
describe("merged view over S3 (s3rver)", () => {
  let server: S3Server;
  beforeAll(async () => {
    server = await startS3Server();
    await server.createBucket("layers");
  });
  afterAll(async () => {
    await server?.stop();
  });
  for (let seed = 1; seed <= 8; seed++) it(`s3, seed ${seed}`, () => modelCheck(seed, s3Driver({ client: server.client(), bucket: "layers" }), S3RVER_NAMES), 60_000);
});

// "Is anything below this prefix?" (isDirectory: limit 1, the place check of every write) asks the upper layer for
// 2 keys (the one returned and the one that says a cursor follows), not a page of 1,000; whiteouts page on.
describe("merged view: a flat listing's upper page is its limit + 1", () => {
  it("limit 1 over 300 upper files lists 2 keys; a delimited listing keeps pages of 1,000; whiteouts first: pages on to the first file", async () => {
    const FP = "t/acme/w/pages/f/";
    const inner = memoryDriver();
    const asked: { limit: number | undefined; delimiter: string | undefined }[] = [];
    const counting: StorageDriver = { ...inner, list: (o) => (asked.push({ limit: o.limit, delimiter: o.delimiter }), inner.list(o)) };
    const wo = Whiteouts.of(inner, { whiteout: newWhiteoutMark() });
    const m = new Manifest("m", [], sortEntries([{ path: "src/lower.ts", etag: "l", size: 0, modified: 0, pack: -1, offset: 0 }]));
    for (let i = 0; i < 300; i++) await inner.put(`${FP}src/f${String(i).padStart(3, "0")}.ts`, "x");
    for (let i = 0; i < 3; i++) await wo.put(inner, `${FP}gone/a${i}`, {});
    await inner.put(`${FP}gone/b`, "x");
    const view = layeredDriver(counting, { tenant: "acme", filesPrefix: FP, manifest: m, whiteouts: wo, markedWhiteouts: async () => wo, stillCurrent: async () => true });
    const one = await view.list({ prefix: `${FP}src/`, limit: 1 });
    expect(one.objects.map((o) => o.key)).toEqual([`${FP}src/f000.ts`]);
    expect(one.cursor).toBeDefined();
    expect(asked).toEqual([{ limit: 2, delimiter: undefined }]);
    asked.length = 0;
    expect((await view.list({ prefix: `${FP}gone/`, limit: 1 })).objects.map((o) => o.key)).toEqual([`${FP}gone/b`]);
    expect(asked.every((a) => a.limit === 2)).toBe(true);
    asked.length = 0;
    await view.list({ prefix: FP, delimiter: "/", limit: 1 });
    expect(asked).toEqual([{ limit: 1000, delimiter: undefined }]);
  });
});
