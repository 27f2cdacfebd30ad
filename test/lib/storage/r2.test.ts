import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { WorkersEnv } from "../../../lib/env.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { isConditionFailed } from "../../../lib/storage/types.js";
import { describeStorageConformance } from "./conformance.js";

const bucket = () => (env as unknown as WorkersEnv).FILES;

describeStorageConformance("r2 binding", () => r2Driver(bucket()));

/** A tombstone left by a deleter that died between its two steps (lib/storage/drivers/r2-tombstones.ts). */
const leaveTombstone = (key: string) => bucket().put(key, `deleted ${crypto.randomUUID()}`, { customMetadata: { "toolshed-tombstone": new Date().toISOString() } });

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
