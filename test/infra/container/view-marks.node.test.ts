/**
 * A live runner's view marks (infra/container/view-marks.ts), made as its poll loop makes them: the
 * query, the marks, the command's manifest answer applied, the next query, the marks again. Counted:
 * the marks of 10,000 entries are made once while the entries stay the same, though every answer
 * changes the view's version (which keyed them before, 2026-12-02: made again before every poll).
 */
import { describe, expect, it } from "vitest";
import { heldMarks } from "../../../lib/sync/carried-files.js";
import { ManifestView } from "../../../lib/sync/view.js";
import { viewMarks } from "../../../infra/container/view-marks.js";
import type { SyncEntry } from "../../../lib/sync/types.js";

const entries: SyncEntry[] = Array.from({ length: 10_000 }, (_, i) => ({ path: `d${i % 97}/f${i}.txt`, etag: `e${i}`, size: 10 }));

function counted() {
  let made = 0;
  const marks = viewMarks((e, n) => (made++, heldMarks(e, n)));
  return { marks, made: () => made };
}

/** The answer of a storage that holds exactly the view's entries: every bucket the same. */
const allSame = (view: ManifestView, buckets: number) => ({ count: view.size, buckets, same: Array.from({ length: buckets }, (_, i) => i), files: [] });

describe("a live view's marks", () => {
  it("are made once across no-change commands, each applying its answer", async () => {
    const view = new ManifestView(entries);
    const { marks, made } = counted();
    let first: string | undefined;
    for (let i = 0; i < 5; i++) {
      const q = await view.query();
      const held = marks.of(view, q);
      first ??= held;
      expect(held).toBe(first);
      expect(view.apply(q, allSame(view, q.buckets))).toEqual([]); // the command's answer: nothing changed, the version moves on
    }
    expect(first).toBe(heldMarks(view.values(), view.size));
    expect(made()).toBe(1); // the code before: 5
  });

  it("are made again when an entry changed, was added or removed, and are then the view's", async () => {
    const view = new ManifestView(entries);
    const { marks, made } = counted();
    marks.of(view, await view.query());
    const changes: (() => void)[] = [
      () => view.set({ path: "d1/f1.txt", etag: "other", size: 10 }),
      () => view.set({ path: "new/file.txt", etag: "n1", size: 3 }),
      () => view.delete("d2/f2.txt"),
    ];
    for (const [i, change] of changes.entries()) {
      change();
      const held = marks.of(view, await view.query());
      expect(made()).toBe(i + 2);
      expect(held).toBe(heldMarks(view.values(), view.size));
    }
  });

  it("an empty view, and another view of the same entries, each get their own", async () => {
    const empty = new ManifestView();
    const { marks, made } = counted();
    expect(marks.of(empty, await empty.query())).toBe("");
    const other = new ManifestView(entries.slice(0, 10));
    expect(marks.of(other, await other.query())).toBe(heldMarks(other.values(), other.size));
    expect(made()).toBe(2);
  });
});
