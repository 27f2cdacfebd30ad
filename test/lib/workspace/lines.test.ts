/**
 * readLinePage over streams cut into tiny chunks: the page must not depend on where chunks end,
 * nor on whether the chunks are views of one reused buffer (a byte stream read BYOB, chunks.ts).
 */
import { describe, expect, it } from "vitest";
import { reusedChunks } from "../../../lib/shared/chunks.js";
import { collect, peekBytes, readLinePage, type LinePageOptions } from "../../../lib/workspace/lines.js";

const enc = new TextEncoder();

/** A stream of `bytes` in chunks of `size` bytes (and records whether it was cancelled). */
function chunked(bytes: Uint8Array, size: number, extraEmpty = false) {
  const state = { cancelled: false, pulled: 0 };
  let at = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (extraEmpty && state.pulled % 2 === 1) {
        state.pulled++;
        c.enqueue(new Uint8Array(0));
        return;
      }
      state.pulled++;
      if (at >= bytes.length) {
        c.close();
        return;
      }
      c.enqueue(bytes.slice(at, at + size));
      at += size;
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

/** A byte stream of `bytes`: read through reusedChunks, every chunk lands in the same buffer. */
function byteStream(bytes: Uint8Array) {
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(c) {
      if (at >= bytes.length) {
        c.close();
        c.byobRequest?.respond(0);
        return;
      }
      const n = Math.min(1 + (at % 5), bytes.length - at); // uneven pieces
      c.enqueue(bytes.slice(at, at + n));
      at += n;
    },
  }) as ReadableStream<Uint8Array>;
}

const defaults = (size: number): LinePageOptions => ({ offset: 1, limit: 2000, maxBytes: 50 * 1024, maxLineChars: 2000, countBelowBytes: Infinity, size });

async function page(text: string | Uint8Array, chunk: number, o: Partial<LinePageOptions> = {}) {
  const bytes = typeof text === "string" ? enc.encode(text) : text;
  const { stream, state } = chunked(bytes, chunk);
  const p = await readLinePage(reusedChunks(stream), { ...defaults(bytes.length), ...o });
  return { ...p, cancelled: state.cancelled };
}

/** The reference: what a page of `text` must be. */
function expected(text: string, offset: number, limit: number) {
  const all = text.split("\n");
  if (all[all.length - 1] === "") all.pop();
  const lines = all.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  return { lines: lines.slice(offset - 1, offset - 1 + limit), total: lines.length };
}

/** Random integers below n from a seed (mulberry32: a small PRNG with usable low bits). */
function randomInts(seed: number): (n: number) => number {
  return (n) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
}

describe("readLinePage", () => {
  it("reads lines with a trailing newline", async () => {
    for (const chunk of [1, 2, 3, 1000]) {
      const p = await page("a\nbb\nccc\n", chunk);
      expect(p.lines).toEqual(["a", "bb", "ccc"]);
      expect(p.start).toBe(1);
      expect(p.totalLines).toBe(3);
      expect(p.stoppedBy).toBe("eof");
      expect(p.cutLines).toBe(0);
    }
  });

  it("reads a last line without a newline", async () => {
    for (const chunk of [1, 2, 5]) {
      const p = await page("a\nlast", chunk);
      expect(p.lines).toEqual(["a", "last"]);
      expect(p.totalLines).toBe(2);
      expect(p.stoppedBy).toBe("eof");
    }
  });

  it("joins a line split across many chunks", async () => {
    const line = "x".repeat(100);
    const p = await page(`${line}\n${line}y\n`, 7);
    expect(p.lines).toEqual([line, `${line}y`]);
  });

  it("strips CR of CRLF even when CR and LF are in different chunks", async () => {
    // "a\r" | "\nb\r" | "\n"
    for (const chunk of [1, 2, 3]) {
      const p = await page("a\r\nb\r\nc", chunk);
      expect(p.lines).toEqual(["a", "b", "c"]);
      expect(p.lines.join("")).not.toContain("\r");
      expect(p.totalLines).toBe(3);
    }
  });

  it("keeps a CR that is not before a line feed", async () => {
    const p = await page("a\rb\n", 1);
    expect(p.lines).toEqual(["a\rb"]);
  });

  it("decodes multi-byte characters cut across chunks", async () => {
    const text = "héllo wörld\n日本語のテキスト\n😀🎉 emoji\nend";
    for (const chunk of [1, 2, 3, 5]) {
      const p = await page(text, chunk);
      expect(p.lines).toEqual(["héllo wörld", "日本語のテキスト", "😀🎉 emoji", "end"]);
    }
  });

  it("counts lines: empty stream, lone newlines, blank lines", async () => {
    expect((await page("", 1)).totalLines).toBe(0);
    expect((await page("", 1)).lines).toEqual([]);
    const one = await page("\n", 1);
    expect(one.lines).toEqual([""]);
    expect(one.totalLines).toBe(1);
    const two = await page("\n\n", 1);
    expect(two.lines).toEqual(["", ""]);
    expect(two.totalLines).toBe(2);
    const blanks = await page("a\n\n\nb", 2);
    expect(blanks.lines).toEqual(["a", "", "", "b"]);
    expect(blanks.totalLines).toBe(4);
  });

  it("tolerates empty chunks in the stream", async () => {
    const bytes = enc.encode("one\ntwo\nthree");
    const { stream } = chunked(bytes, 2, true);
    const p = await readLinePage(reusedChunks(stream), defaults(bytes.length));
    expect(p.lines).toEqual(["one", "two", "three"]);
    expect(p.totalLines).toBe(3);
  });

  it("pages with offset and limit, counting the total when the file is small", async () => {
    const text = "l1\nl2\nl3\nl4\nl5\n";
    const p = await page(text, 1, { offset: 2, limit: 2 });
    expect(p.lines).toEqual(["l2", "l3"]);
    expect(p.start).toBe(2);
    expect(p.stoppedBy).toBe("limit");
    expect(p.totalLines).toBe(5);
    expect(p.cancelled).toBe(false);
  });

  it("a page that ends exactly at the last line stopped at eof", async () => {
    const p = await page("l1\nl2\nl3\n", 2, { offset: 2, limit: 2 });
    expect(p.lines).toEqual(["l2", "l3"]);
    expect(p.stoppedBy).toBe("eof");
    expect(p.totalLines).toBe(3);
  });

  it("cancels the stream once the page is full when the file is too big to count", async () => {
    const text = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join("\n");
    const p = await page(text, 3, { offset: 10, limit: 5, countBelowBytes: 0 });
    expect(p.lines).toEqual(["line 10", "line 11", "line 12", "line 13", "line 14"]);
    expect(p.stoppedBy).toBe("limit");
    expect(p.totalLines).toBeUndefined();
    expect(p.cancelled).toBe(true);
  });

  it("a big file's page that ends at the last line is eof, not 'more to come'", async () => {
    // Without counting to the end, the reader must still notice that nothing follows the page.
    const text = "a\nb\nc\nd\n";
    for (const chunk of [1, 3, 100]) {
      const p = await page(text, chunk, { offset: 3, limit: 2, countBelowBytes: 0 });
      expect(p.lines).toEqual(["c", "d"]);
      expect(p.stoppedBy).toBe("eof");
      expect(p.totalLines).toBe(4);
    }
    // A last line without a newline is still a line to come.
    const p = await page("a\nb\nc", 1, { offset: 1, limit: 2, countBelowBytes: 0 });
    expect(p.lines).toEqual(["a", "b"]);
    expect(p.stoppedBy).toBe("limit");
  });

  it("stops before maxBytes (counted in UTF-8 bytes), but always returns one line", async () => {
    const line = "y".repeat(92); // 92 + 8 per line = 100
    const text = Array.from({ length: 50 }, () => line).join("\n");
    const p = await page(text, 13, { maxBytes: 1000 });
    expect(p.lines.length).toBe(10);
    expect(p.stoppedBy).toBe("bytes");
    expect(p.totalLines).toBe(50);

    const cjk = "日".repeat(92); // 276 bytes + 8
    const q = await page(Array.from({ length: 50 }, () => cjk).join("\n"), 13, { maxBytes: 1000 });
    expect(q.lines.length).toBe(3);
    expect(q.stoppedBy).toBe("bytes");

    const big = await page(`${"z".repeat(5000)}\nsmall\n`, 64, { maxBytes: 100, maxLineChars: 10_000 });
    expect(big.lines).toEqual(["z".repeat(5000)]);
    expect(big.stoppedBy).toBe("bytes");
  });

  it("cuts lines longer than maxLineChars with a marker", async () => {
    const p = await page(`${"a".repeat(50)}\nshort\n${"b".repeat(11)}\n`, 4, { maxLineChars: 10 });
    expect(p.lines).toEqual([`${"a".repeat(10)}… [line cut: 50 characters]`, "short", `${"b".repeat(10)}… [line cut: 11 characters]`]);
    expect(p.cutLines).toBe(2);
  });

  it("the cut marker counts characters exactly, for multi-byte and CRLF lines split across chunks", async () => {
    const p = await page(`${"é".repeat(5000)}\n${"😀".repeat(3000)}\r\n${"x".repeat(100)}\r\nok\r\n`, 7, { maxLineChars: 10 });
    expect(p.lines).toEqual([
      `${"é".repeat(10)}… [line cut: 5000 characters]`,
      `${"😀".repeat(5)}… [line cut: 6000 characters]`,
      `${"x".repeat(10)}… [line cut: 100 characters]`,
      "ok",
    ]);
    expect(p.cutLines).toBe(3);
  });

  it("does not buffer a huge line: a 600 MB line without a newline is cut, not held", async () => {
    // 600 chunks of the same 1 MB buffer: cheap to produce; holding them (and decoding the
    // line as one string) would take 600 MB and exceed the engine's longest string.
    const mb = new Uint8Array(1024 * 1024).fill(0x61);
    const n = 600;
    let i = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (i < n) c.enqueue(mb);
        else if (i === n) c.enqueue(enc.encode("\nnext\n"));
        else c.close();
        i++;
      },
    });
    const p = await readLinePage(reusedChunks(stream), { ...defaults(n * mb.length + 6), maxLineChars: 2000 });
    expect(p.lines).toEqual([`${"a".repeat(2000)}… [line cut: ${n * mb.length} characters]`, "next"]);
    expect(p.totalLines).toBe(2);
  }, 60_000);

  it("an offset past the end returns no lines and the total", async () => {
    const p = await page("a\nb\nc\n", 1, { offset: 10 });
    expect(p.lines).toEqual([]);
    expect(p.totalLines).toBe(3);
    expect(p.stoppedBy).toBe("eof");
    const q = await page("a\nb\nc\n", 1, { offset: 4, countBelowBytes: 0 });
    expect(q.lines).toEqual([]);
    expect(q.totalLines).toBe(3);
  });

  it("does not decode the lines before the offset (invalid UTF-8 there is fine)", async () => {
    const bytes = new Uint8Array([0xff, 0xfe, 0x0a, 0x6f, 0x6b, 0x0a]);
    const p = await page(bytes, 1, { offset: 2 });
    expect(p.lines).toEqual(["ok"]);
  });

  it("matches a reference implementation on random text, chunking and pages", async () => {
    const rand = randomInts(12345);
    const pieces = ["a", "bc", " ", "\t", "\n", "\r\n", "é", "日", "😀", "\n\n", "xyz"];
    for (let round = 0; round < 500; round++) {
      let text = "";
      const n = rand(40);
      for (let i = 0; i < n; i++) text += pieces[rand(pieces.length)];
      const ref0 = expected(text, 1, Infinity);
      const offset = 1 + rand(ref0.total + 2);
      const limit = 1 + rand(6);
      const chunk = 1 + rand(7);
      const count = rand(2) === 0 ? Infinity : 0;
      const p = await page(text, chunk, { offset, limit, countBelowBytes: count });
      const ref = expected(text, offset, limit);
      const ctx = JSON.stringify({ text, offset, limit, chunk, count });
      expect(p.lines, ctx).toEqual(ref.lines);
      const last = offset + ref.lines.length - 1;
      expect(p.stoppedBy === "eof", ctx).toBe(last >= ref.total);
      if (count === Infinity) expect(p.totalLines, ctx).toBe(ref.total);
      // The same page from a byte stream read into one reused buffer of `chunk` bytes, behind a sniff.
      const bytes = enc.encode(text);
      const peeked = await peekBytes(byteStream(bytes), 1 + rand(4), chunk);
      const q = await readLinePage(peeked.rest, { ...defaults(bytes.length), offset, limit, countBelowBytes: count });
      expect(q.lines, `${ctx} reused buffer`).toEqual(ref.lines);
      if (count === Infinity) expect(q.totalLines, ctx).toBe(ref.total);
    }
  });

  it("matches a reference with bounds too (maxBytes, maxLineChars) on chunks that hold many lines (the batch path)", async () => {
    const rand = randomInts(777);
    /** What the page must be: lines in order, CR of CRLF removed, cut past maxLineChars, stopped before maxBytes (one line at least). */
    const reference = (text: string, o: { offset: number; limit: number; maxBytes: number; maxLineChars: number }) => {
      const all = expected(text, 1, Infinity);
      const lines: string[] = [];
      let bytes = 0;
      let stopped: "eof" | "limit" | "bytes" = "eof";
      for (const raw of all.lines.slice(o.offset - 1)) {
        const line = raw.length > o.maxLineChars ? `${raw.slice(0, o.maxLineChars)}… [line cut: ${raw.length} characters]` : raw;
        const cost = enc.encode(line).length + 8;
        if (lines.length > 0 && bytes + cost > o.maxBytes) {
          stopped = "bytes";
          break;
        }
        bytes += cost;
        lines.push(line);
        if (lines.length >= o.limit) {
          stopped = o.offset - 1 + lines.length >= all.total ? "eof" : "limit";
          break;
        }
      }
      return { lines, stopped };
    };
    // No lone surrogates: a cut inside a surrogate pair is counted the same by both, but kept halves differ.
    const pieces = ["a", "bc", " ", "\t", "\n", "\r\n", "é", "日", "\n\n", "xyz", "0123456789", "\r"];
    for (let round = 0; round < 400; round++) {
      let text = "";
      const n = rand(120);
      for (let i = 0; i < n; i++) text += pieces[rand(pieces.length)];
      const total = expected(text, 1, Infinity).total;
      const o = { offset: 1 + rand(Math.max(1, total)), limit: 1 + rand(40), maxBytes: 20 + rand(300), maxLineChars: 3 + rand(20) };
      const chunk = 8 + rand(200);
      const p = await page(text, chunk, { ...o, countBelowBytes: Infinity });
      const ref = reference(text, o);
      const ctx = JSON.stringify({ text, ...o, chunk });
      expect(p.lines, ctx).toEqual(ref.lines);
      expect(p.stoppedBy, ctx).toBe(ref.stopped);
      expect(p.totalLines, ctx).toBe(total);
    }
  });

  it("reads a byte stream into one reused buffer: every chunk is a view of the same memory", async () => {
    const bytes = enc.encode("alpha\nbeta\ngamma\n".repeat(50));
    const chunks = reusedChunks(byteStream(bytes), 16);
    const buffers = new Set<number>();
    let total = 0;
    const copies: Uint8Array[] = [];
    for (let c = await chunks.next(); c; c = await chunks.next()) {
      buffers.add(c.buffer.byteLength);
      total += c.length;
      copies.push(c.slice());
    }
    expect(total).toBe(bytes.length);
    expect(Buffer.concat(copies).equals(Buffer.from(bytes))).toBe(true);
    // Every chunk is a view of the 16-byte buffer handed to the reader, not memory the stream
    // allocated: walking 200 MB this way leaves no spent chunks for the GC.
    expect([...buffers]).toEqual([16]);
    const again = await peekBytes(byteStream(bytes), 8, 16);
    expect(again.head.length).toBeGreaterThanOrEqual(8);
    const whole = await collect(again.rest);
    expect(Buffer.from(whole).equals(Buffer.from(bytes))).toBe(true);
  });
});
