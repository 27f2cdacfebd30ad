/**
 * The carried files' pure parts (lib/sync/carried-files.ts): the marks of a view as a poll sends
 * them and as the API reads them back, and the files an answer may carry, within their bounds.
 */
import { describe, expect, it } from "vitest";
import { CARRY_MAX_BYTES, CARRY_MAX_FILES, CARRY_VIEW_MAX, carryable, carriedBody, carriedFilesOf, heldMark, heldMarks, parseHeld } from "../../../lib/sync/carried-files.js";
import type { ManifestAnswer } from "../../../lib/sync/manifest.js";

const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `d${i % 7}/f${i}.ts`, etag: `e${i}`, size: 10 }));
const answer = (files: { path: string; etag: string; size: number }[], modes?: ManifestAnswer["modes"]): ManifestAnswer => ({ count: files.length, buckets: 1, same: [], files, ...(modes !== undefined ? { modes } : {}) });

describe("the view's marks", () => {
  it("round-trip for a view of up to CARRY_VIEW_MAX entries; none past it", () => {
    const view = entries(CARRY_VIEW_MAX);
    const held = parseHeld({ held: heldMarks(view, view.length) })!;
    expect(held.size).toBe(new Set(view.map((e) => heldMark(e.path, e.etag))).size);
    expect(view.every((e) => held.has(heldMark(e.path, e.etag)))).toBe(true);
    expect(heldMarks(entries(CARRY_VIEW_MAX + 1), CARRY_VIEW_MAX + 1)).toBeUndefined();
    for (const bad of [undefined, "", "@@@@", "AAA=", 7]) expect(parseHeld({ held: bad })?.size ?? null).toBe(bad === "" ? 0 : null);
  });
  it("a mark names path and etag both", () => {
    expect(heldMark("a", "bc")).not.toBe(heldMark("ab", "c"));
    expect(heldMark("a", "1")).not.toBe(heldMark("a", "2"));
  });
});

describe("what an answer may carry", () => {
  const view = entries(20);
  const held = parseHeld({ held: heldMarks(view, view.length) })!;
  const edited = (n: number, size = 10) => view.map((e, i) => (i < n ? { ...e, etag: `${e.etag}'`, size } : e));

  it("the entries the view lacks, at most CARRY_MAX_FILES and CARRY_MAX_BYTES in all", () => {
    expect(carryable({ buckets: 1, modes: "m" }, answer(edited(3), "same"), held)!.map((e) => e.path)).toEqual(view.slice(0, 3).map((e) => e.path));
    expect(carryable({ buckets: 1 }, answer(edited(CARRY_MAX_FILES)), held)).toHaveLength(CARRY_MAX_FILES);
    expect(carryable({ buckets: 1 }, answer(edited(CARRY_MAX_FILES + 1)), held)).toBeNull();
    expect(carryable({ buckets: 1 }, answer(edited(2, CARRY_MAX_BYTES / 2)), held)).toHaveLength(2);
    expect(carryable({ buckets: 1 }, answer(edited(2, CARRY_MAX_BYTES / 2 + 1)), held)).toBeNull();
    expect(carryable({ buckets: 1 }, answer(view), held)).toBeNull(); // nothing lacking
  });
  it("nothing when the execute bits or symlinks changed, or a directory's marker is among them", () => {
    expect(carryable({ buckets: 1, modes: "m1" }, answer(edited(1), { etag: "m2", exec: [] }), held)).toBeNull();
    expect(carryable({ buckets: 1, modes: null }, answer(edited(1), { etag: null, exec: [] }), held)).toHaveLength(1); // none ever recorded: unchanged
    expect(carryable({ buckets: 1 }, answer([...view, { path: "new/", etag: "d", size: 0 }]), held)).toBeNull();
  });
  it("from the wire: exactly what was sent; nothing when malformed or past the bounds", () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const got = carriedFilesOf(carriedBody([["a/b.bin", { etag: "e1", bytes }]]));
    expect([...got.keys()]).toEqual(["a/b.bin"]);
    expect(got.get("a/b.bin")).toEqual({ etag: "e1", bytes });
    const file = (p: string, n: number): [string, string, string] => [p, "e", Buffer.alloc(n).toString("base64")];
    expect(carriedFilesOf([file("a", 1), ["b", "e", "not base64!"]]).size).toBe(0);
    expect(carriedFilesOf([file("a", 1), file("a", 1)]).size).toBe(0);
    expect(carriedFilesOf(Array.from({ length: CARRY_MAX_FILES + 1 }, (_, i) => file(`f${i}`, 1))).size).toBe(0);
    expect(carriedFilesOf([file("a", CARRY_MAX_BYTES / 2), file("b", CARRY_MAX_BYTES / 2 + 1)]).size).toBe(0);
    expect(carriedFilesOf("x").size).toBe(0);
  });
});
