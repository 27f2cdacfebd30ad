/** One small KeyValueStore conformance, run against Workers KV, KV over R2, and KV over memory. */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { WorkersEnv } from "../../../lib/runtime/workers.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { decodeKvKey, encodeKvKey, storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { workersKeyValue } from "../../../lib/storage/kv-workers.js";
import { KV_METADATA_MAX, type KeyValueStore } from "../../../lib/storage/types.js";

const bindings = env as unknown as WorkersEnv;

interface KvConformanceOptions {
  /** Moves the store's clock forward, so expiry can be tested without waiting. */
  advanceClock?: (ms: number) => void;
}

async function listAll(kv: KeyValueStore, prefix: string, limit?: number): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const r = await kv.list({ prefix, ...(cursor ? { cursor } : {}), ...(limit ? { limit } : {}) });
    pages.push(r.keys);
    cursor = r.cursor;
    if (pages.length > 50) throw new Error("listing does not end");
  } while (cursor);
  return pages;
}

function describeKvConformance(name: string, make: () => KeyValueStore, opts: KvConformanceOptions = {}): void {
  describe(`kv conformance: ${name}`, () => {
    let kv: KeyValueStore;
    const fresh = () => `t/${crypto.randomUUID()}/`;
    beforeAll(() => {
      kv = make();
    });

    it("get of a missing key is null", async () => {
      expect(await kv.get(`${fresh()}missing`)).toBeNull();
    });

    it("puts, gets and overwrites", async () => {
      const key = `${fresh()}k`;
      await kv.put(key, "one");
      expect(await kv.get(key)).toBe("one");
      await kv.put(key, '{"json":"two ☃"}');
      expect(await kv.get(key)).toBe('{"json":"two ☃"}');
      await kv.put(key, "");
      expect(await kv.get(key)).toBe("");
    });

    it("keeps keys with special characters apart", async () => {
      const p = fresh();
      const keys = ["a/b", "a%2Fb", "..", ".", "é名", "with space", "%41", "A", "x?y#z"];
      for (const k of keys) await kv.put(`${p}${k}`, `value of ${k}`);
      for (const k of keys) expect(await kv.get(`${p}${k}`)).toBe(`value of ${k}`);
      expect((await listAll(kv, p)).flat().sort()).toEqual(keys.map((k) => `${p}${k}`).sort());
    });

    it("deletes, and deleting a missing key is fine", async () => {
      const key = `${fresh()}k`;
      await kv.put(key, "x");
      await kv.delete(key);
      expect(await kv.get(key)).toBeNull();
      await kv.delete(key);
    });

    it("lists by prefix only", async () => {
      const p = fresh();
      for (const k of ["p/a", "p/b", "p/c/d", "pq", "q/a"]) await kv.put(`${p}${k}`, "x");
      const r = await kv.list({ prefix: `${p}p/` });
      expect(r.keys.sort()).toEqual([`${p}p/a`, `${p}p/b`, `${p}p/c/d`]);
      expect(r.cursor).toBeUndefined();
      expect(await kv.list({ prefix: `${p}nothing` })).toEqual({ keys: [] });
    });

    it("hands back a key's metadata with its listing when asked, and only then", async () => {
      const p = fresh();
      await kv.put(`${p}a`, "1", { metadata: '{"scopes":["read"]}' });
      await kv.put(`${p}b`, "2");
      await kv.put(`${p}c`, "3", { metadata: "x".repeat(KV_METADATA_MAX) });
      expect(await kv.list({ prefix: p, metadata: true })).toEqual({ keys: [`${p}a`, `${p}b`, `${p}c`], metadata: ['{"scopes":["read"]}', undefined, "x".repeat(KV_METADATA_MAX)] });
      expect(await kv.list({ prefix: p })).toEqual({ keys: [`${p}a`, `${p}b`, `${p}c`] });
      expect(await kv.get(`${p}a`)).toBe("1");
    });

    it("pages a listing with limit and cursor (12 keys, limit 5)", async () => {
      const p = fresh();
      const keys = Array.from({ length: 12 }, (_, i) => `${p}k${String(i).padStart(2, "0")}`);
      await Promise.all(keys.map((k) => kv.put(k, "x")));
      const pages = await listAll(kv, p, 5);
      expect(pages.length).toBeGreaterThanOrEqual(3);
      for (const page of pages) expect(page.length).toBeLessThanOrEqual(5);
      const all = pages.flat();
      expect(new Set(all).size).toBe(all.length);
      expect(all.sort()).toEqual(keys);
    });

    it("accepts an expirationTtl and the value is there before it expires", async () => {
      const key = `${fresh()}ttl`;
      await kv.put(key, "short-lived", { expirationTtl: 3600 });
      expect(await kv.get(key)).toBe("short-lived");
    });

    it.runIf(opts.advanceClock)("treats an expired entry as missing in get and list", async () => {
      const p = fresh();
      await kv.put(`${p}dies`, "x", { expirationTtl: 60 });
      await kv.put(`${p}lives`, "y", { expirationTtl: 3600 });
      await kv.put(`${p}forever`, "z");
      opts.advanceClock!(61_000);
      expect(await kv.get(`${p}dies`)).toBeNull();
      expect(await kv.get(`${p}lives`)).toBe("y");
      expect((await kv.list({ prefix: p })).keys.sort()).toEqual([`${p}forever`, `${p}lives`]);
      await kv.put(`${p}dies`, "again");
      expect(await kv.get(`${p}dies`)).toBe("again");
    });
  });
}

describeKvConformance("workers KV binding", () => workersKeyValue(bindings.KV));

let r2Clock = Date.now();
describeKvConformance("storage (r2) under kv/", () => storageKeyValue(r2Driver(bindings.FILES), "kv/", { now: () => r2Clock }), {
  advanceClock: (ms) => (r2Clock += ms),
});

let memClock = Date.now();
describeKvConformance("storage (memory) under kv/", () => storageKeyValue(memoryDriver(), "kv/", { now: () => memClock }), {
  advanceClock: (ms) => (memClock += ms),
});

describe("storageKeyValue key encoding", () => {
  it("stores each key as one flat object under the prefix", async () => {
    const driver = memoryDriver();
    const kv = storageKeyValue(driver, "kv/");
    await kv.put("tenant/../x é", "v");
    const listed = await driver.list({ prefix: "" });
    expect(listed.objects.map((o) => o.key)).toEqual(["kv/tenant%2F%2E%2E%2Fx%20%C3%A9"]);
    expect(await new Response((await driver.get("kv/tenant%2F%2E%2E%2Fx%20%C3%A9"))!.body).json()).toEqual({ v: "v" });
  });

  it("roundtrips and keeps prefixes as prefixes", () => {
    for (const k of ["", "a", "a/b", "..", "%", "%25", "é名☃", "😀 emoji", "A-Z_0-9", "line\nbreak"]) {
      const e = encodeKvKey(k);
      expect(e).toMatch(/^[A-Za-z0-9_%-]*$/);
      expect(decodeKvKey(e)).toBe(k);
      expect(encodeKvKey(`${k}tail/é`).startsWith(e)).toBe(true);
    }
  });

  it("ignores an object that is not a KV envelope", async () => {
    const driver = memoryDriver();
    await driver.put("kv/junk", "not json");
    await driver.put("kv/other", '{"x":1}');
    const kv = storageKeyValue(driver, "kv/");
    expect(await kv.get("junk")).toBeNull();
    expect(await kv.get("other")).toBeNull();
    expect((await kv.list({ prefix: "" })).keys).toEqual([]);
  });
});
