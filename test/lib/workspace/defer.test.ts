/** Workspace `deferChanges`: listeners hear nothing per file, then one batch per flush (what bulk imports rely on). */
import { describe, expect, it } from "vitest";
import { RecordStore } from "../../../lib/workspace/records.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { Workspace, type WorkspaceListener } from "../../../lib/workspace/workspace.js";
import type { FileChange } from "../../../lib/layout/files.js";

const kv = { get: async () => null, put: async () => {}, delete: async () => {}, list: async () => ({ keys: [] }) };

function recorder() {
  const calls: string[] = [];
  const batches: FileChange[][] = [];
  const batching: WorkspaceListener = { changed: async (_ws, path) => void calls.push(path), changedBatch: async (_ws, changes) => void batches.push(changes) };
  const plain: WorkspaceListener = { changed: async (_ws, path, info) => void calls.push(`plain:${path}:${info ? "w" : "d"}`) };
  return { calls, batches, listeners: [batching, plain] };
}

const ws = (listeners: WorkspaceListener[], deferChanges: boolean) =>
  new Workspace({ driver: memoryDriver(), records: new RecordStore(kv, "t/w", "s"), tenant: "t1", id: "w1", listeners, deferChanges });

describe("deferChanges", () => {
  it("queues changes, then hands them over as one batch (or one by one to a listener without changedBatch)", async () => {
    const r = recorder();
    const w = ws(r.listeners, true);
    await w.put("a.txt", "aaa");
    await w.put("b.txt", new Uint8Array([1, 2]));
    await w.delete("a.txt", null);
    expect(r.calls).toEqual([]);
    expect(w.pendingChanges).toEqual({ files: 3, bytes: 5 });
    await w.flushChanges();
    expect(r.batches.length).toBe(1);
    expect(r.batches[0]!.map((c) => [c.path, c.info ? "w" : "d", c.content?.length ?? null])).toEqual([["a.txt", "w", 3], ["b.txt", "w", 2], ["a.txt", "d", null]]);
    expect(r.calls).toEqual(["plain:a.txt:w", "plain:b.txt:w", "plain:a.txt:d"]);
    expect(w.pendingChanges).toEqual({ files: 0, bytes: 0 });
    await w.flushChanges();
    expect(r.batches.length).toBe(1);
  });

  it("without it, every change is told at once, one by one", async () => {
    const r = recorder();
    const w = ws(r.listeners, false);
    await w.put("a.txt", "aaa");
    expect(r.calls).toEqual(["a.txt", "plain:a.txt:w"]);
    expect(r.batches).toEqual([]);
  });
});
