/** The isolate's versions of files (lib/workspace/version-cache.ts) and the recording of a read (chunks.ts recordingChunks). */
import { describe, expect, it } from "vitest";
import { IsolateMemory } from "../../../lib/shared/isolate-memory.js";
import { MAX_ENTRY_BYTES, VersionCache } from "../../../lib/workspace/version-cache.js";
import { recordingChunks, type Chunks } from "../../../lib/shared/chunks.js";

const info = (size: number, etag = "e1") => ({ etag, size, modified: new Date(0), writer: "s1" });
const bytes = (n: number, fill = 97) => new Uint8Array(n).fill(fill);

describe("VersionCache", () => {
  it("keeps a whole version and gives it back with its info", () => {
    const c = new VersionCache();
    c.remember("k", info(3), bytes(3));
    expect(c.peek("k")?.info).toEqual({ etag: "e1", size: 3, modified: new Date(0), writer: "s1" });
    expect([...c.peek("k")!.bytes]).toEqual([97, 97, 97]);
  });

  it("bytes that are not the whole version, or too large, forget the key instead", () => {
    const c = new VersionCache();
    c.remember("k", info(3), bytes(3));
    c.remember("k", info(4, "e2"), bytes(3)); // a part of the new version
    expect(c.peek("k")).toBeUndefined();
    c.remember("k", info(3), bytes(3));
    c.remember("k", info(MAX_ENTRY_BYTES + 1, "e3"), bytes(MAX_ENTRY_BYTES + 1));
    expect(c.peek("k")).toBeUndefined();
    c.remember("k", info(3), bytes(3));
    c.remember("k", info(3, "e4"), undefined); // written from a stream: bytes unknown
    expect(c.peek("k")).toBeUndefined();
  });

  it("a view into a larger buffer is copied (the buffer is not kept alive)", () => {
    const c = new VersionCache();
    const big = bytes(1000);
    c.remember("k", info(10), big.subarray(5, 15));
    expect(c.peek("k")!.bytes.buffer.byteLength).toBe(10);
  });

  it("is bounded by bytes, least recently used dropped first", () => {
    const c = new VersionCache(new IsolateMemory(4 * 1024)); // each entry weighs its bytes + 200
    for (const k of ["a", "b", "c"]) c.remember(k, info(900), bytes(900));
    c.peek("a"); // a is now the most recently used
    c.remember("d", info(900), bytes(900));
    expect(c.peek("b")).toBeUndefined();
    expect(c.peek("a")).toBeDefined();
    expect(c.peek("d")).toBeDefined();
    expect(c.bytes).toBeLessThanOrEqual(4 * 1024);
    c.forget("a");
    expect(c.peek("a")).toBeUndefined();
  });
});

function chunksOf(parts: Uint8Array[]): Chunks & { cancelled: boolean } {
  const queue = [...parts];
  const out = { cancelled: false, next: async () => queue.shift() ?? null, cancel: async () => void (out.cancelled = true) };
  return out;
}

describe("recordingChunks", () => {
  it("gives every byte once the stream was read to its end", async () => {
    const r = recordingChunks(chunksOf([bytes(2, 1), bytes(3, 2)]), 10);
    expect(r.whole()).toBeNull(); // not read yet
    while (await r.chunks.next());
    expect([...r.whole()!]).toEqual([1, 1, 2, 2, 2]);
  });

  it("nothing when cancelled midway or past its bound", async () => {
    const cut = recordingChunks(chunksOf([bytes(2), bytes(3)]), 10);
    await cut.chunks.next();
    await cut.chunks.cancel();
    expect(cut.whole()).toBeNull();
    const big = recordingChunks(chunksOf([bytes(6), bytes(6)]), 10);
    while (await big.chunks.next());
    expect(big.whole()).toBeNull();
  });

  it("keeps copies: a reused chunk buffer changing later does not change what was recorded", async () => {
    const buf = bytes(3, 7);
    const r = recordingChunks(chunksOf([buf]), 10);
    while (await r.chunks.next());
    buf.fill(0);
    expect([...r.whole()!]).toEqual([7, 7, 7]);
  });
});
