import { describe, expect, it } from "vitest";
import { inputFromBytes, mergeHeads, tierOf } from "../../../lib/search/indexer.js";
import { buildSegment, decodePostings, FLAG_BINARY, FLAG_LARGE, parseFileTable, SegmentHead } from "../../../lib/search/segment.js";
import { foldBytes, literalTrigrams, TrigramCollector } from "../../../lib/search/trigrams.js";

const enc = new TextEncoder();
const collector = new TrigramCollector();
const file = (path: string, text: string, modified = 1) => inputFromBytes(path, `etag-${path}-${modified}`, modified, enc.encode(text));

function postingsOf(head: SegmentHead, word: string): number[] {
  const [t] = literalTrigrams(word);
  const r = head.lookup(t!);
  if (!r) return [];
  if ("inline" in r) return decodePostings(r.inline);
  return decodePostings(head.postingBytes(r.off, r.end)!);
}

describe("segment", () => {
  it("round-trips files, posting lists (inline and out of line) and contents", () => {
    const inputs = [];
    for (let i = 0; i < 300; i++) inputs.push(file(`src/f${i}.ts`, `common words ${i % 2 ? "oddity" : "evenness"} ${i === 7 ? "uniqueword" : ""}\n`));
    inputs.push(inputFromBytes("img.png", "e-img", 1, new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2])));
    const built = buildSegment(inputs, collector);
    expect(built.files).toBe(301);
    const head = new SegmentHead(built.bytes, true);
    expect(head.files).toHaveLength(301);
    expect(head.files[300]).toMatchObject({ path: "img.png", flags: FLAG_BINARY, len: 0 });
    expect(new TextDecoder().decode(head.content(head.files[7]!)!)).toBe("common words oddity uniqueword\n");
    expect(postingsOf(head, "uni")).toEqual([7]);
    expect(postingsOf(head, "odd")).toEqual(Array.from({ length: 150 }, (_, i) => 2 * i + 1));
    expect(postingsOf(head, "com")).toHaveLength(300);
    expect(postingsOf(head, "zzz")).toEqual([]);
    // A reader of [0, dictEnd) alone gets the same dictionary.
    const partial = new SegmentHead(built.bytes.slice(0, built.dictEnd), false);
    expect(partial.whole).toBeNull();
    expect(partial.lookup(literalTrigrams("uni")[0]!)).toEqual(head.lookup(literalTrigrams("uni")[0]!));
    expect(parseFileTable(built.bytes.slice(0, built.headerEnd)).map((f) => f.path)).toEqual(head.files.map((f) => f.path));
    expect(() => new SegmentHead(built.bytes.slice(0, built.dictEnd - 1), false)).toThrow();
  });

  it("lists each trigram's files exactly: every posting list against one computed from the folded bytes", () => {
    // Seeded bytes over a small alphabet (case, CRLF, the Kelvin sign, long s) so trigrams repeat
    // across files; 700 files so ids and deltas take 2 varint bytes; a binary file every 50th leaves
    // gaps in the ids; some lists are inline (≤ 4 bytes), most are not.
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / (1 << 24);
    const pieces = [[0x61], [0x41], [0x62], [0x42], [0x63], [0x0d], [0x0a], [0x0d, 0x0a], [0xe2, 0x84, 0xaa], [0xc5, 0xbf], [0x6b], [0x73], [0x20]];
    const inputs = [];
    const expected = new Map<number, number[]>();
    for (let id = 0; id < 700; id++) {
      if (id % 50 === 49) {
        inputs.push(inputFromBytes(`bin${id}`, "e", 1, new Uint8Array([0x61, 0, 0x62, 0x63])));
        continue;
      }
      const bytes: number[] = [];
      const n = 1 + Math.floor(rnd() * 60);
      for (let i = 0; i < n; i++) bytes.push(...pieces[Math.floor(rnd() * pieces.length)]!);
      const input = inputFromBytes(`f${id}`, "e", 1, new Uint8Array(bytes));
      inputs.push(input);
      const f = foldBytes(new Uint8Array(bytes));
      const seen = new Set<number>();
      for (let i = 0; i + 2 < f.length; i++) seen.add((f[i]! << 16) | (f[i + 1]! << 8) | f[i + 2]!);
      for (const t of seen) expected.set(t, [...(expected.get(t) ?? []), id]);
    }
    const head = new SegmentHead(buildSegment(inputs, collector).bytes, true);
    expect(head.trigrams).toBe(expected.size);
    let inline = 0;
    for (const [t, ids] of expected) {
      const r = head.lookup(t);
      expect(r).not.toBeNull();
      if ("inline" in r!) inline++;
      expect("inline" in r! ? decodePostings(r.inline) : decodePostings(head.postingBytes(r!.off, r!.end)!)).toEqual(ids);
    }
    expect(inline).toBeGreaterThan(0);
    expect(inline).toBeLessThan(expected.size);
  });

  it("builds an empty dictionary for files without trigrams", () => {
    const head = new SegmentHead(buildSegment([file("a", "ab"), file("b", "")], collector).bytes, true);
    expect(head.trigrams).toBe(0);
    expect(head.postingsLen).toBe(0);
    expect(head.lookup(literalTrigrams("abc")[0]!)).toBeNull();
  });

  it("classifies inputs: text, binary, too large to pack", () => {
    expect(file("a.txt", "hello").flags).toBe(0);
    expect(inputFromBytes("b", "e", 1, new Uint8Array([0x61, 0, 0x62])).flags).toBe(FLAG_BINARY);
    expect(inputFromBytes("c", "e", 1, new Uint8Array([0xff, 0xfe, 0x41])).flags).toBe(FLAG_BINARY);
    const big = inputFromBytes("d", "e", 1, enc.encode("x".repeat(1024 * 1024 + 1)));
    expect(big.flags).toBe(FLAG_LARGE);
    expect(big.content).toBeUndefined();
  });

  it("merges keep the newest version of each path and can drop dead entries", () => {
    const a = new SegmentHead(buildSegment([file("x.ts", "old version", 1), file("y.ts", "why", 1)], collector).bytes, true);
    const b = new SegmentHead(buildSegment([file("x.ts", "new version", 2)], collector).bytes, true);
    const merged = mergeHeads([b, a]);
    expect(merged.map((m) => [m.path, new TextDecoder().decode(m.content)])).toEqual([
      ["x.ts", "new version"],
      ["y.ts", "why"],
    ]);
    expect(mergeHeads([a, b], (p) => p !== "y.ts").map((m) => m.path)).toEqual(["x.ts"]);
  });

  it("puts segments in size tiers", () => {
    expect(tierOf({ contentBytes: 100, files: 1 })).toBe(0);
    expect(tierOf({ contentBytes: 100_000, files: 10 })).toBe(1);
    expect(tierOf({ contentBytes: 1_000_000, files: 10 })).toBe(2);
    expect(tierOf({ contentBytes: 5_000_000, files: 10 })).toBe(-1);
    expect(tierOf({ contentBytes: 0, files: 10_000 })).toBe(-1);
  });
});
