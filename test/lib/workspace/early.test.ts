/** EarlyReads (lib/workspace/early.ts): a GET started before the call asks for it, taken once, never stale past the call's own writes. */
import { describe, expect, it } from "vitest";
import { EarlyReads } from "../../../lib/workspace/early.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { StorageDriver } from "../../../lib/storage/types.js";

/** A memory driver that counts GETs and notes which bodies were cancelled. */
function counted() {
  const inner = memoryDriver();
  const gets: string[] = [];
  const cancelled: string[] = [];
  const storage: StorageDriver = {
    name: inner.name,
    head: (k) => inner.head(k),
    put: (k, b, o) => inner.put(k, b, o),
    delete: (k) => inner.delete(k),
    list: (o) => inner.list(o),
    get: async (k, o) => {
      gets.push(o?.range ? `${k}@${o.range.offset}` : k);
      const r = await inner.get(k, o);
      if (!r) return r;
      const reader = r.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        pull: async (c) => {
          const x = await reader.read();
          if (x.done) c.close();
          else c.enqueue(x.value);
        },
        cancel: (why) => {
          cancelled.push(k);
          return reader.cancel(why);
        },
      });
      return { ...r, body };
    },
  };
  return { storage, gets, cancelled };
}
const text = async (r: { body: ReadableStream<Uint8Array> } | null) => (r ? await new Response(r.body).text() : null);

describe("EarlyReads", () => {
  it("the first unranged get of the key takes the early read; later and ranged gets read anew", async () => {
    const s = counted();
    await s.storage.put("k", "v1");
    const early = new EarlyReads(s.storage);
    early.get("k");
    expect(s.gets).toEqual(["k"]);
    expect(await text(await early.storage.get("k", { range: { offset: 1 } }))).toBe("1");
    expect(await text(await early.storage.get("k"))).toBe("v1");
    expect(s.gets).toEqual(["k", "k@1"]);
    expect(await text(await early.storage.get("k"))).toBe("v1");
    expect(s.gets).toEqual(["k", "k@1", "k"]);
  });

  it("a write or delete of the key through its storage drops the early read (no stale version after the call's own write)", async () => {
    const s = counted();
    await s.storage.put("a", "old");
    await s.storage.put("b", "old");
    const early = new EarlyReads(s.storage);
    early.get("a");
    early.get("b");
    await early.storage.put("a", "new");
    await early.storage.delete(["b"]);
    expect(await text(await early.storage.get("a"))).toBe("new");
    expect(await early.storage.get("b")).toBeNull();
    await new Promise((r) => setTimeout(r, 0));
    expect(s.cancelled.sort()).toEqual(["a", "b"]);
  });

  it("discard cancels what nobody took; a missing key is a null early read", async () => {
    const s = counted();
    await s.storage.put("x", "bytes");
    const early = new EarlyReads(s.storage);
    early.get("x");
    early.get("none");
    expect(await early.storage.get("none")).toBeNull();
    await early.discard();
    expect(s.cancelled).toEqual(["x"]);
    expect(await text(await early.storage.get("x"))).toBe("bytes"); // read anew
  });

  it("a driver that throws at once fails the get that takes the read, not the start", async () => {
    const s = counted();
    const early = new EarlyReads({ ...s.storage, get: () => { throw new Error("boom"); } });
    expect(() => early.get("k")).not.toThrow();
    await expect(early.storage.get("k")).rejects.toThrow("boom");
  });
});
