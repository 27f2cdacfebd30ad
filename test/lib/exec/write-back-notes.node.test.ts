/**
 * The reason of a write-back refused by a quota, as the model reads it (lib/exec/write-back-notes.ts):
 * whole (the runner bounds it at 600 characters), as data.skipped has it; a reason cut for room ends at
 * a word, never mid-word. Before (2026-12-02) one refused file's reason was cut at its 200th character.
 */
import { describe, expect, it } from "vitest";
import { writeBackNotes } from "../../../lib/exec/write-back-notes.js";
import { cutAtWord } from "../../../lib/shared/text.js";

const QUOTA =
  "QUOTA_EXCEEDED: This tenant's storage quota (storage_bytes) is 10485760 bytes and 10485700 of them are used; this write-back adds 4096 bytes, which would pass it, so none of its changes was written. Delete files you no longer need (delete, or rm in bash), or ask the operator for a larger storage_bytes, then run the command again.";
const base = { conflicts: [], unsynced: undefined, lists_cut: undefined } as const;

describe("a refused write-back's reason in the model's output", () => {
  it("one file refused by the quota: its reason whole, as data.skipped has it", () => {
    expect(QUOTA.length).toBeGreaterThan(200);
    const text = writeBackNotes({ ...base, skipped: [{ path: "out.bin", reason: "error", detail: QUOTA }] } as never);
    expect(text).toContain(QUOTA);
  });

  it("files refused for different reasons: each reason cut at a word, never mid-word", () => {
    const other = `${"storage error while writing the object, retried ".repeat(6)}end`;
    const text = writeBackNotes({ ...base, skipped: [{ path: "a.bin", reason: "error", detail: QUOTA }, { path: "b.bin", reason: "error", detail: other }] } as never);
    const shown = /a\.bin: (.*?); b\.bin: (.*?)\)\. These/.exec(text)!;
    for (const [i, full] of [[1, QUOTA], [2, other]] as const) {
      const s = shown[i]!;
      expect(s.endsWith("…")).toBe(true);
      const kept = s.slice(0, -1);
      expect(full.startsWith(kept)).toBe(true);
      expect(full[kept.length]).toMatch(/\s/); // the cut falls between words
    }
  });

  it("cutAtWord: whole when it fits; else at the last space or line break before the bound", () => {
    expect(cutAtWord("short reason", 200)).toBe("short reason");
    expect(cutAtWord("alpha beta gamma", 12)).toBe("alpha beta…");
    expect(cutAtWord("line one\nline two", 12)).toBe("line one…");
    expect(cutAtWord("x".repeat(30), 10)).toBe(`${"x".repeat(10)}…`); // no boundary: cut where it must
  });
});
