/** Batched download (lib/sync/batch.ts) over the sync API, on the real (local) R2. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BATCH_MAX_FILE_BYTES, FETCH_MAX_FILES, FETCH_TARGET_BYTES, allFrames, batchesOf, encodeFrame, readFrames, type BatchFile } from "../../../lib/sync/batch.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { randomId } from "../../../lib/shared/hash.js";
import { fileKey } from "../../../lib/layout/paths.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { workspaceRecord } from "../../support/workspace-record.js";

const driver = r2Driver(env.FILES);
const SECRET = "a-test-secret-of-some-length";
const enc = new TextEncoder();
const text = (b: Uint8Array) => new TextDecoder().decode(b);

async function client(t: string, w: string, requests: string[] = []) {
  await workspaceRecord(driver, t, w);
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    requests.push(`${req.method} ${new URL(req.url).pathname}`);
    return handleSync(req, { driver, kv: storageKeyValue(memoryDriver(), "kv/"), secret: SECRET });
  }) as typeof fetch;
  return httpSyncClient({ url: "https://api.example", token: await mintSyncToken(SECRET, { t, w, r: "run1" }, 60), fetch: fetchFn });
}

describe("batch fetch over the sync API", () => {
  it("brings many files in one request, in the order asked: text, unicode names, empty, binary, CRLF", async () => {
    const w = `b${randomId(8).toLowerCase()}`;
    const binary = new Uint8Array(256).map((_, i) => i);
    const files: Record<string, Uint8Array> = {
      "a.txt": enc.encode("alpha\n"),
      "src/ünïcode/名前.ts": enc.encode("export const 名 = 1;\n"),
      "empty": new Uint8Array(0),
      "bin/blob.bin": binary,
      "crlf.txt": enc.encode("one\r\ntwo\r\n"),
    };
    for (const [p, b] of Object.entries(files)) await driver.put(fileKey("acme", w, p), b);
    const requests: string[] = [];
    const c = await client("acme", w, requests);
    const order = ["crlf.txt", "empty", "a.txt", "bin/blob.bin", "src/ünïcode/名前.ts"];
    const got = await allFrames((await c.fetchMany(order))!);
    expect(requests).toEqual(["POST /v1/sync/fetch"]);
    expect(got.map((f) => f.path)).toEqual(order);
    for (const f of got) {
      if (!("bytes" in f)) throw new Error(`${f.path} missing`);
      expect([...f.bytes]).toEqual([...files[f.path]!]);
      expect(f.size).toBe(files[f.path]!.length);
      expect(f.etag).toBe((await driver.head(fileKey("acme", w, f.path)))!.etag);
    }
  });

  it("a file that is gone, too large for a batch, or of another workspace or tenant is missing", async () => {
    const w = `b${randomId(8).toLowerCase()}`;
    await driver.put(fileKey("acme", w, "small.txt"), "small");
    await driver.put(fileKey("acme", w, "big.bin"), new Uint8Array(BATCH_MAX_FILE_BYTES + 1));
    await driver.put(fileKey("acme", "elsewhere", "secret.txt"), "secret");
    await driver.put(fileKey("evil", w, "theirs.txt"), "theirs");
    const got = await allFrames((await (await client("acme", w)).fetchMany(["small.txt", "gone.txt", "big.bin", "secret.txt", "theirs.txt"]))!);
    expect(got.map((f) => ("bytes" in f ? `${f.path}: ${text(f.bytes)}` : `${f.path}: missing`))).toEqual([
      "small.txt: small",
      "gone.txt: missing",
      "big.bin: missing",
      "secret.txt: missing",
      "theirs.txt: missing",
    ]);
  });

  it("refuses bad batches: a path outside the workspace, none, too many", async () => {
    const c = await client("acme", "main");
    await expect(c.fetchMany(["../other/x"])).rejects.toThrow(/INVALID_PATH|Invalid|400/);
    await expect(c.fetchMany([])).rejects.toThrow(/HTTP 400/);
    await expect(c.fetchMany(Array.from({ length: FETCH_MAX_FILES + 1 }, (_, i) => `f${i}`))).rejects.toThrow(/HTTP 400/);
  });

  it("an API without batches answers null (the runner then fetches files alone)", async () => {
    const old = httpSyncClient({ url: "https://api.example", token: "t", fetch: (async () => new Response("", { status: 404 })) as unknown as typeof fetch });
    expect(await old.fetchMany(["a"])).toBeNull();
  });
});

describe("batch frames", () => {
  const frames = (...parts: Uint8Array[]) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) (out.set(p, at), (at += p.length));
    return out;
  };

  /** A stream of `buf` cut into pieces of `piece` bytes (frames split anywhere). */
  const streamOf = (buf: Uint8Array, piece = buf.length || 1) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        for (let at = 0; at < buf.length; at += piece) c.enqueue(buf.slice(at, at + piece));
        c.close();
      },
    });
  const decode = (buf: Uint8Array, asked: string[], piece?: number) => allFrames(readFrames(streamOf(buf, piece), asked));

  it("decode what they encode, however the stream is cut; anything truncated, reordered or extra is refused", async () => {
    const a = encodeFrame({ path: "a", etag: "e1", size: 3, bytes: enc.encode("abc") });
    const b = encodeFrame({ path: "b", missing: true });
    const c = encodeFrame({ path: "c", later: true });
    const all = frames(a, b, c);
    const want: BatchFile[] = [{ path: "a", etag: "e1", size: 3, bytes: enc.encode("abc") }, { path: "b", missing: true }, { path: "c", later: true }];
    for (const piece of [1, 2, 3, 5, 7, all.length]) expect(await decode(all, ["a", "b", "c"], piece)).toEqual(want);
    await expect(decode(all.subarray(0, all.length - 1), ["a", "b", "c"])).rejects.toThrow(/batch fetch/);
    await expect(decode(a.subarray(0, a.length - 1), ["a"], 2)).rejects.toThrow(/truncated|bad frame/);
    await expect(decode(frames(b, a), ["a", "b"])).rejects.toThrow(/not "a"/);
    await expect(decode(frames(a, b), ["a"])).rejects.toThrow(/not "asked for"/);
    await expect(decode(a, ["a", "b"])).rejects.toThrow(/1 frames for 2 paths/);
    // A frame claiming more than a batch file may hold is refused before its bytes are read.
    const huge = encodeFrame({ path: "a", etag: "e1", size: 1, bytes: new Uint8Array(1) });
    const head = JSON.stringify({ path: "a", etag: "e1", size: BATCH_MAX_FILE_BYTES + 1 });
    const forged = frames(new Uint8Array([0, 0, 0, head.length]), enc.encode(head), huge.subarray(4));
    await expect(decode(forged, ["a"])).rejects.toThrow(/bad frame/);
  });

  it("batches: at most FETCH_MAX_FILES files, about FETCH_TARGET_BYTES, every file once and in order", () => {
    const files = Array.from({ length: 3000 }, (_, i) => ({ id: i, size: i % 10 === 0 ? 900_000 : 1000 }));
    const bs = batchesOf(files);
    expect(bs.flat().map((f) => f.id)).toEqual(files.map((f) => f.id));
    for (const b of bs) {
      expect(b.length).toBeLessThanOrEqual(FETCH_MAX_FILES);
      expect(b.reduce((n, f) => n + f.size, 0) <= FETCH_TARGET_BYTES || b.length === 1).toBe(true);
    }
    expect(batchesOf(Array.from({ length: 2500 }, () => ({ size: 10 }))).map((b) => b.length)).toEqual([1000, 1000, 500]);
    expect(batchesOf([])).toEqual([]);
  });
});
