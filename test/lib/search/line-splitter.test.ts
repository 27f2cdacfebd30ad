/** The one line splitter of every search path: nothing lost, nothing repeated, every segment bounded. */
import { describe, expect, it } from "vitest";
import { BLOCK_BYTES, charBoundary, LineSplitter, MAX_LINE_BYTES, OVERLAP_BYTES, utf16Length, WINDOW_BYTES, type Segment } from "../../../lib/search/line-splitter.js";
import { expectScaling } from "../../support/scaling.js";

const enc = new TextEncoder();

function rng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A text of lines of the given lengths (in characters, some multi-byte). */
function textOf(lengths: number[], r: () => number): Uint8Array {
  const alphabet = ["a", "b", " ", "é", "€", "😀"];
  const parts: string[] = [];
  for (const n of lengths) {
    const c = alphabet[Math.floor(r() * alphabet.length)]!;
    parts.push(c.repeat(Math.max(0, Math.floor(n / c.length))));
  }
  return enc.encode(parts.join("\n"));
}

function split(bytes: Uint8Array, chunk: (i: number) => number): Segment[] {
  const s = new LineSplitter();
  const out: Segment[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const n = Math.max(1, chunk(i));
    out.push(...s.push(bytes.subarray(at, at + n)));
    at += n;
  }
  out.push(...s.end());
  return out;
}

/**
 * As split, with reusedInput: every chunk is copied into one buffer that is poisoned after its
 * push (as a stream read into one reused buffer would overwrite it), so a view the splitter kept
 * across pushes shows up as wrong bytes. Segments are copied as soon as the push returns them.
 */
function splitReused(bytes: Uint8Array, chunk: (i: number) => number): Segment[] {
  const s = new LineSplitter(0, undefined, { reusedInput: true });
  const buffer = new Uint8Array(bytes.length + 1);
  const out: Segment[] = [];
  const take = (segs: Segment[]) => out.push(...segs.map((g) => ({ ...g, bytes: g.bytes.slice() })));
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const n = Math.min(Math.max(1, chunk(i)), bytes.length - at);
    buffer.set(bytes.subarray(at, at + n));
    take(s.push(buffer.subarray(0, n)));
    buffer.fill(0xff);
    at += n;
  }
  take(s.end());
  return out;
}

/** Checks the segments against the input: new bytes in order cover it exactly, bounds hold, lines are whole. */
function check(bytes: Uint8Array, segs: Segment[]): void {
  let at = 0;
  let inLong = false;
  for (const seg of segs) {
    expect(seg.start).toBe(at);
    if (seg.kind === "lines") {
      expect(inLong).toBe(false);
      expect(seg.bytes.length).toBeLessThanOrEqual(Math.max(BLOCK_BYTES, MAX_LINE_BYTES + 1));
      expect(Buffer.from(seg.bytes).equals(Buffer.from(bytes.subarray(at, at + seg.bytes.length)))).toBe(true);
      const end = at + seg.bytes.length;
      if (end < bytes.length) expect(bytes[end - 1]).toBe(10); // ends at a line break
      at = end;
    } else {
      expect(seg.first).toBe(!inLong);
      expect(seg.overlap).toBeLessThanOrEqual(OVERLAP_BYTES);
      expect(seg.bytes.length - seg.overlap).toBeLessThanOrEqual(WINDOW_BYTES + 1);
      expect(Buffer.from(seg.bytes).equals(Buffer.from(bytes.subarray(at - seg.overlap, at - seg.overlap + seg.bytes.length)))).toBe(true);
      // Cuts fall on character boundaries.
      expect(charBoundary(bytes, at - seg.overlap)).toBe(at - seg.overlap);
      at += seg.bytes.length - seg.overlap;
      if (!seg.last) expect(charBoundary(bytes, at)).toBe(at);
      inLong = !seg.last;
      if (seg.last && at < bytes.length) expect(bytes[at - 1]).toBe(10);
      if (!seg.first || !seg.last) expect(at - seg.start).toBeGreaterThan(0);
    }
  }
  expect(at).toBe(bytes.length);
  expect(inLong).toBe(false);
}

describe("line splitter", { timeout: 60_000 }, () => {
  it("covers every byte once, in bounded blocks and windows, whatever the chunking", () => {
    const r = rng(7);
    const shapes: number[][] = [
      [10, 20, 30],
      Array.from({ length: 20_000 }, () => Math.floor(r() * 80)),
      [3 * MAX_LINE_BYTES + 17],
      [5, 2 * MAX_LINE_BYTES, 5, MAX_LINE_BYTES - 3, MAX_LINE_BYTES + 3, 0, 0, BLOCK_BYTES + 1, 7],
      [WINDOW_BYTES * 2 + OVERLAP_BYTES, 1],
    ];
    for (const shape of shapes) {
      const bytes = textOf(shape, r);
      for (const chunking of [() => bytes.length, () => 65_536, () => 1 + Math.floor(r() * 300_000), () => 4093]) {
        check(bytes, split(bytes, chunking));
        check(bytes, splitReused(bytes, chunking));
      }
    }
  });

  it("ends a long line at its break and goes back to blocks", () => {
    const bytes = enc.encode(`${"x".repeat(MAX_LINE_BYTES + 10)}\nshort\nlines\n`);
    const segs = split(bytes, () => 1000);
    check(bytes, segs);
    expect(segs.map((s) => s.kind)).toEqual(["piece", "piece", "lines"]);
    expect(new TextDecoder().decode(segs[2]!.bytes)).toBe("short\nlines\n");
  });

  it("resumes inside a long line with the overlap given", () => {
    const line = "y".repeat(3 * WINDOW_BYTES);
    const bytes = enc.encode(`${line}\nz\n`);
    const start = WINDOW_BYTES + 5;
    const s = new LineSplitter(start - 100, { inLongLine: true, overlap: 100 });
    const segs = [...s.push(bytes.subarray(start - 100)), ...s.end()];
    expect(segs[0]).toMatchObject({ kind: "piece", first: false, overlap: 100, start });
    let at = start;
    for (const seg of segs) {
      expect(seg.start).toBe(at);
      at += seg.kind === "piece" ? seg.bytes.length - seg.overlap : seg.bytes.length;
    }
    expect(at).toBe(bytes.length);
  });

  it("counts UTF-16 units without decoding", () => {
    for (const s of ["", "abc", "é€😀", "a😀b😀"]) expect(utf16Length(enc.encode(s))).toBe(s.length);
  });

  it("scans each byte a bounded number of times: a 64 MB line costs about 4 times a 16 MB one", async () => {
    const small = new Uint8Array(16 * 1024 * 1024).fill(97);
    const large = new Uint8Array(64 * 1024 * 1024).fill(97);
    // Linear: ~4x; the re-scanning loop this replaces was ~16x.
    await expectScaling({
      what: "splitting one line of 16 MB, then 64 MB",
      small: () => split(small, () => 65_536),
      large: () => split(large, () => 65_536),
      bound: (s) => s * 8 + 300,
    });
  });
});
