/** The put batch's framing (lib/sync/put-batch.ts): read as it arrives, whatever the chunking; broken bodies stop where they break. */
import { describe, expect, it } from "vitest";
import { BATCH_MAX_FILE_BYTES, PUT_BATCH_MAX_BYTES, putBatchBody, readPutFrames, type PutManyItem } from "../../../lib/sync/put-batch.js";

const enc = new TextEncoder();
const bytesOf = async (items: PutManyItem[]) => new Uint8Array(await new Response(putBatchBody(items)).arrayBuffer());

/** The same bytes re-cut into chunks of the given sizes (cycled). */
function rechunk(all: Uint8Array, sizes: number[]): ReadableStream<Uint8Array> {
  let at = 0;
  let k = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= all.length) return c.close();
      const n = sizes[k++ % sizes.length]!;
      c.enqueue(all.slice(at, at + n));
      at += n;
    },
  });
}

async function read(body: ReadableStream<Uint8Array>) {
  const got: { path: unknown; ifMatch: unknown; create: unknown; text: string }[] = [];
  let error: unknown = null;
  try {
    for await (const f of readPutFrames(body)) got.push({ path: f.path, ifMatch: f.ifMatch, create: f.create, text: new TextDecoder().decode(f.bytes) });
  } catch (e) {
    error = e;
  }
  return { got, error: error as { code?: string } | null };
}

const items: PutManyItem[] = [
  { path: "a.txt", bytes: enc.encode("alpha\n"), ifNoneMatch: "*" },
  { path: "dir/ünï.ts", bytes: enc.encode("export const x = 1;\r\n"), ifMatch: "etag-1" },
  { path: "empty", bytes: new Uint8Array(0), ifNoneMatch: "*" },
  { path: "big.txt", bytes: enc.encode("z".repeat(70_000)), ifMatch: "etag-2" },
];
const want = items.map((i) => ({ path: i.path, ifMatch: i.ifMatch, create: i.ifNoneMatch ? true : undefined, text: new TextDecoder().decode(i.bytes) }));

describe("put batch frames", () => {
  it("the same frames whatever the chunking: one byte at a time, odd sizes, all at once", async () => {
    const all = await bytesOf(items);
    for (const sizes of [[1], [3, 7, 1], [4], [5000], [all.length]]) expect((await read(rechunk(all, sizes))).got, String(sizes)).toEqual(want);
  });

  it("broken bodies stop at the frame that breaks, with the frames before it read", async () => {
    const all = await bytesOf(items);
    const cut = await read(rechunk(all.slice(0, all.length - 10), [7]));
    expect(cut.got.map((g) => g.path)).toEqual(["a.txt", "dir/ünï.ts", "empty"]);
    expect(cut.error?.code).toBe("INVALID_ARGUMENT");
    const badHeader = new Uint8Array([0, 0, 0, 5, ...enc.encode("{nope")]);
    expect((await read(rechunk(badHeader, [2]))).error?.code).toBe("INVALID_ARGUMENT");
    expect((await read(rechunk(new Uint8Array(0), [1]))).error?.code).toBe("INVALID_ARGUMENT"); // no frame at all
    const huge = new Uint8Array([0xff, 0xff, 0xff, 0xff]);
    expect((await read(rechunk(huge, [4]))).error?.code).toBe("INVALID_ARGUMENT"); // a 4 GB header is refused before reading it
    // Over the limits: refused at the header, before its bytes are read.
    const tooBig = enc.encode(JSON.stringify({ path: "x", size: BATCH_MAX_FILE_BYTES + 1, create: true }));
    const r = await read(rechunk(new Uint8Array([0, 0, 0, tooBig.length, ...tooBig]), [64]));
    expect(r.error?.code).toBe("PAYLOAD_TOO_LARGE");
    const full = Array.from({ length: 9 }, (_, i) => ({ path: `f${i}`, bytes: new Uint8Array(BATCH_MAX_FILE_BYTES), ifNoneMatch: "*" as const }));
    const over = await read(putBatchBody(full));
    expect(over.got).toHaveLength(PUT_BATCH_MAX_BYTES / BATCH_MAX_FILE_BYTES);
    expect(over.error?.code).toBe("PAYLOAD_TOO_LARGE");
  });
});
