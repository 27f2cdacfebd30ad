/** Batched download (lib/exec/sync-batch.ts) over the sync API, on the real (local) R2. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BATCH_MAX_FILE_BYTES, BATCH_MAX_FILES, batchesOf, decodeFrames, encodeFrame } from "../../../lib/exec/sync-batch.js";
import { httpSyncClient } from "../../../lib/exec/sync-http.js";
import { handleSync } from "../../../lib/exec/sync-server.js";
import { mintSyncToken } from "../../../lib/exec/sync-token.js";
import { randomId } from "../../../lib/hash.js";
import { fileKey } from "../../../lib/paths.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const driver = r2Driver(env.FILES);
const SECRET = "a-test-secret-of-some-length";
const enc = new TextEncoder();
const text = (b: Uint8Array) => new TextDecoder().decode(b);

async function client(t: string, w: string, requests: string[] = []) {
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
    const got = await c.fetchMany(order);
    expect(requests).toEqual(["POST /v1/sync/fetch"]);
    expect(got!.map((f) => f.path)).toEqual(order);
    for (const f of got!) {
      if ("missing" in f) throw new Error(`${f.path} missing`);
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
    const got = await (await client("acme", w)).fetchMany(["small.txt", "gone.txt", "big.bin", "secret.txt", "theirs.txt"]);
    expect(got!.map((f) => ("missing" in f ? `${f.path}: missing` : `${f.path}: ${text(f.bytes)}`))).toEqual([
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
    await expect(c.fetchMany(Array.from({ length: BATCH_MAX_FILES + 1 }, (_, i) => `f${i}`))).rejects.toThrow(/HTTP 400/);
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

  it("decode what they encode; anything truncated, reordered or extra is refused", () => {
    const a = encodeFrame({ path: "a", etag: "e1", size: 3, bytes: enc.encode("abc") });
    const b = encodeFrame({ path: "b", missing: true });
    const both = frames(a, b);
    const got = decodeFrames(both, ["a", "b"]);
    expect(got).toEqual([{ path: "a", etag: "e1", size: 3, bytes: enc.encode("abc") }, { path: "b", missing: true }]);
    expect(() => decodeFrames(both.subarray(0, both.length - 1), ["a", "b"])).toThrow(/batch fetch/);
    expect(() => decodeFrames(a.subarray(0, a.length - 1), ["a"])).toThrow(/truncated|bad frame/);
    expect(() => decodeFrames(frames(b, a), ["a", "b"])).toThrow(/not "a"/);
    expect(() => decodeFrames(both, ["a"])).toThrow(/not "asked for"/);
    expect(() => decodeFrames(a, ["a", "b"])).toThrow(/1 frames for 2 paths/);
  });

  it("batches: at most BATCH_MAX_FILES files, about 4 MB, every file once and in order", () => {
    const files = Array.from({ length: 300 }, (_, i) => ({ id: i, size: i % 10 === 0 ? 900_000 : 1000 }));
    const bs = batchesOf(files);
    expect(bs.flat().map((f) => f.id)).toEqual(files.map((f) => f.id));
    for (const b of bs) {
      expect(b.length).toBeLessThanOrEqual(BATCH_MAX_FILES);
      expect(b.reduce((n, f) => n + f.size, 0) <= 4 * 1024 * 1024 || b.length === 1).toBe(true);
    }
    expect(batchesOf([])).toEqual([]);
  });
});
