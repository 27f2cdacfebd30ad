import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { WorkersEnv } from "../../../lib/runtime/workers.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { SUSPECT_HEADS } from "../../../lib/storage/drivers/r2-list.js";
import { TOMBSTONE_BYTES, tombstoneBody } from "../../../lib/storage/drivers/r2-tombstones.js";
import { isConditionFailed } from "../../../lib/storage/types.js";
import { describeStorageConformance } from "./conformance.js";

const bucket = () => (env as unknown as WorkersEnv).FILES;

describeStorageConformance("r2 binding", () => r2Driver(bucket()));

/** A tombstone left by a deleter that died between its two steps (lib/storage/drivers/r2-tombstones.ts). */
const leaveTombstone = (key: string) => bucket().put(key, tombstoneBody(), { customMetadata: { "toolshed-tombstone": new Date().toISOString() } });

describe("r2: a tombstone left by a crashed conditional delete", () => {
  const fresh = () => `r2-tomb/${crypto.randomUUID()}/`;
  const text = async (d: ReturnType<typeof r2Driver>, key: string) => {
    const g = await d.get(key);
    return g ? new Response(g.body).text() : null;
  };

  it("is invisible: head, get, ranged get and listings (limit 1 finds the next live key)", async () => {
    const d = r2Driver(bucket());
    const p = fresh();
    await leaveTombstone(`${p}a`);
    await leaveTombstone(`${p}b`);
    await d.put(`${p}c`, "live");
    expect(await d.head(`${p}a`)).toBeNull();
    expect(await d.get(`${p}a`)).toBeNull();
    expect(await d.get(`${p}a`, { range: { offset: 0, length: 0 } })).toBeNull();
    expect(await d.get(`${p}a`, { range: { offset: 2 } })).toBeNull();
    const one = await d.list({ prefix: p, limit: 1 });
    expect(one.objects.map((o) => o.key)).toEqual([`${p}c`]);
    expect((await d.list({ prefix: p })).objects.map((o) => o.key)).toEqual([`${p}c`]);
    expect((await d.list({ prefix: p, delimiter: "/" })).objects.map((o) => o.key)).toEqual([`${p}c`]);
  });

  it("does not block creates (bytes or stream), refuses If-Match writers, yields to plain puts", async () => {
    const d = r2Driver(bucket());
    const p = fresh();
    for (const k of ["bytes", "stream", "ifmatch", "plain"]) await leaveTombstone(`${p}${k}`);
    const t0 = Date.now();
    await d.put(`${p}bytes`, "created", { ifNoneMatch: "*" });
    const stream = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new TextEncoder().encode("streamed")), c.close()) });
    await d.put(`${p}stream`, stream, { ifNoneMatch: "*", length: 8 });
    expect(Date.now() - t0).toBeLessThan(5000); // a creator waits ~0.5 s for a deleter, then replaces the tombstone
    expect(await text(d, `${p}bytes`)).toBe("created");
    expect(await text(d, `${p}stream`)).toBe("streamed");
    const raw = await bucket().head(`${p}ifmatch`);
    const refused = await d.put(`${p}ifmatch`, "x", { ifMatch: "00000000000000000000000000000000" }).catch((e: unknown) => e);
    expect(isConditionFailed(refused)).toBe(true);
    expect((await bucket().head(`${p}ifmatch`))!.etag).toBe(raw!.etag);
    await d.put(`${p}plain`, "plain");
    expect(await text(d, `${p}plain`)).toBe("plain");
    // A second create over a live object is still refused.
    expect(isConditionFailed(await d.put(`${p}bytes`, "again", { ifNoneMatch: "*" }).catch((e: unknown) => e))).toBe(true);
  });

  it("a conditional delete leaves no tombstone behind when it completes", async () => {
    const d = r2Driver(bucket());
    const p = fresh();
    const v = await d.put(`${p}f`, "x");
    await d.delete([{ key: `${p}f`, ifMatch: v.etag }]);
    expect(await bucket().head(`${p}f`)).toBeNull();
  });
});

/** The bucket, counting its list calls (and those with metadata) and HEADs. */
function counted(b: R2Bucket) {
  const n = { list: 0, listMeta: 0, head: 0 };
  const wrapped = new Proxy(b, {
    get(t, prop) {
      if (prop === "list") return (o?: R2ListOptions) => (n.list++, o?.include?.length && n.listMeta++, t.list(o));
      if (prop === "head") return (k: string) => (n.head++, t.head(k));
      const v = Reflect.get(t, prop) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
  return { bucket: wrapped, n };
}

describe("r2: listings are taken without metadata, tombstones found by their size", () => {
  const fresh = () => `r2-list/${crypto.randomUUID()}/`;
  const keys = (r: { objects: { key: string }[] }) => r.objects.map((o) => o.key);
  const sameSize = "x".repeat(TOMBSTONE_BYTES);

  it("every tombstone is TOMBSTONE_BYTES long", () => {
    for (let i = 0; i < 20; i++) expect(new TextEncoder().encode(tombstoneBody()).length).toBe(TOMBSTONE_BYTES);
  });

  it("lists 2,500 keys in 3 requests (with metadata R2 gives 100 a page: 25), no HEAD when no object has a tombstone's size", async () => {
    const p = fresh();
    const names = Array.from({ length: 2500 }, (_, i) => `${p}${String(i).padStart(5, "0")}`);
    for (let i = 0; i < names.length; i += 100) await Promise.all(names.slice(i, i + 100).map((k) => bucket().put(k, "v")));
    const { bucket: b, n } = counted(bucket());
    const d = r2Driver(b);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const r = await d.list({ prefix: p, ...(cursor ? { cursor } : {}) });
      seen.push(...keys(r));
      cursor = r.cursor;
    } while (cursor);
    expect(seen).toEqual(names);
    expect(n).toEqual({ list: 3, listMeta: 0, head: 0 });
  });

  it("a live file of a tombstone's size stays listed; tombstones among a few suspects go by HEAD", async () => {
    const p = fresh();
    await bucket().put(`${p}a-live`, sameSize);
    await leaveTombstone(`${p}b-tomb`);
    await bucket().put(`${p}c-other`, "other");
    const { bucket: b, n } = counted(bucket());
    const d = r2Driver(b);
    expect(keys(await d.list({ prefix: p }))).toEqual([`${p}a-live`, `${p}c-other`]);
    expect(n).toEqual({ list: 1, listMeta: 0, head: 2 });
    const limited = await d.list({ prefix: p, limit: 2 });
    expect(keys(limited)).toEqual([`${p}a-live`, `${p}c-other`]);
    const delimited = await d.list({ prefix: p, delimiter: "/" });
    expect(keys(delimited)).toEqual([`${p}a-live`, `${p}c-other`]);
  });

  it(`more than ${SUSPECT_HEADS} suspects in a page: the range is listed again with metadata, not one HEAD each`, async () => {
    const p = fresh();
    const live = Array.from({ length: 150 }, (_, i) => `${p}${String(i).padStart(4, "0")}-live`);
    const tombs = Array.from({ length: 130 }, (_, i) => `${p}${String(i).padStart(4, "0")}-tomb`);
    await Promise.all([...live.map((k) => bucket().put(k, sameSize)), ...tombs.map(leaveTombstone)]);
    const { bucket: b, n } = counted(bucket());
    const d = r2Driver(b);
    expect(keys(await d.list({ prefix: p }))).toEqual(live);
    expect(n.head).toBe(0);
    expect(n.listMeta).toBeGreaterThan(0);
    // From a startAfter in the middle, and page by page with a small limit: the same live keys.
    expect(keys(await d.list({ prefix: p, startAfter: live[99]! }))).toEqual(live.slice(100));
    const paged: string[] = [];
    let cursor: string | undefined;
    do {
      const r = await d.list({ prefix: p, limit: 40, ...(cursor ? { cursor } : {}) });
      paged.push(...keys(r));
      cursor = r.cursor;
    } while (cursor);
    expect(paged).toEqual(live);
  });
  it("a suspect deleted between the bare page and its check is left out, and the check stops past the page's window", async () => {
    const p = fresh();
    const suspects = Array.from({ length: 20 }, (_, i) => `${p}a${String(i).padStart(3, "0")}`);
    const others = Array.from({ length: 2400 }, (_, i) => `${p}b${String(i).padStart(5, "0")}`);
    for (const group of [suspects, others]) for (let i = 0; i < group.length; i += 100) await Promise.all(group.slice(i, i + 100).map((k) => bucket().put(k, group === suspects ? sameSize : "v")));
    const { bucket: counting, n } = counted(bucket());
    let deleted = false;
    const racing = new Proxy(counting, {
      get(t, prop) {
        if (prop === "list")
          return async (o?: R2ListOptions) => {
            const r = await t.list(o);
            if (!deleted && !o?.include?.length) {
              deleted = true;
              await bucket().delete(suspects[7]!); // gone after the bare page listed it
            }
            return r;
          };
        const v = Reflect.get(t, prop) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
    const r = await r2Driver(racing).list({ prefix: p });
    // 999 live keys in the page, topped up with the next one.
    expect(keys(r)).toEqual([...suspects.filter((_, i) => i !== 7), ...others.slice(0, 1000 - suspects.length + 1)]);
    // The window was 1,000 keys: the check lists at most 2,000 with metadata (local R2: 100 a page), not all 2,420.
    expect(n.listMeta).toBeLessThanOrEqual(20);
    expect(n.listMeta).toBeGreaterThan(10);
  });
});
