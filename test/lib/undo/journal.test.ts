/**
 * The undo journal's before-image blobs are written beside the call's own write (lib/undo/journal.ts):
 * commit() waits for them and tries a failed one once more, refused() waits before deleting. Memory
 * driver: the rule is the journal's, whatever the storage.
 */
import { describe, expect, it } from "vitest";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { PutBody, PutOptions, StorageDriver } from "../../../lib/storage/types.js";
import { UndoJournal, type UndoRecord } from "../../../lib/undo/journal.js";

/** The memory driver, with blob PUTs that can be held open or made to fail. */
function steeredStorage() {
  const base = memoryDriver();
  let failures = 0;
  let gate: Promise<void> | null = null;
  const storage: StorageDriver = {
    ...base,
    async put(key: string, body: PutBody, opts?: PutOptions) {
      if (key.includes("/b-")) {
        if (gate) await gate;
        if (failures > 0) {
          failures--;
          throw new Error("blob PUT failed");
        }
      }
      return base.put(key, body, opts);
    },
  };
  return {
    storage,
    failNext: (n: number) => void (failures = n),
    hold: () => {
      let open!: () => void;
      gate = new Promise((r) => (open = r));
      return () => {
        gate = null;
        open();
      };
    },
  };
}

const FILE = "t/a/w/main/f/a.txt";
const bytes = (s: string) => new TextEncoder().encode(s);

async function records(storage: StorageDriver): Promise<UndoRecord[]> {
  const list = await storage.list({ prefix: "t/a/w/main/x/undo/" });
  const out: UndoRecord[] = [];
  for (const o of list.objects.filter((o) => /\/r-[^/]+\.json$/.test(o.key))) out.push(JSON.parse(await new Response((await storage.get(o.key))!.body).text()));
  return out;
}
const blobText = async (storage: StorageDriver, key: string) => new Response((await storage.get(key))!.body).text();

describe("undo journal: before-image blobs beside the write", () => {
  it("the blob write runs beside the call's write; commit waits for it, and the record names a blob holding the old bytes", async () => {
    const s = steeredStorage();
    const old = await s.storage.put(FILE, bytes("old\n"));
    const j = new UndoJournal(s.storage, "a", "main", "s1");
    j.noteRead("a.txt", old.etag, bytes("old\n"));
    const open = s.hold(); // the blob PUT cannot finish yet
    expect(await j.capture(s.storage, FILE, "a.txt", old.etag)).toBe(true); // returned without waiting for it
    const now = await s.storage.put(FILE, bytes("new\n"), { ifMatch: old.etag });
    j.landed("a.txt", now.etag);
    let committed = false;
    const commit = j.commit().then((id) => ((committed = true), id));
    await new Promise((r) => setTimeout(r, 20));
    expect(committed).toBe(false); // the record waits for its blob
    open();
    expect(await commit).toBe(j.callId);
    const [rec] = await records(s.storage);
    const before = rec!.changes[0]!.before as { blob: string; etag: string };
    expect(before.etag).toBe(old.etag);
    expect(await blobText(s.storage, before.blob)).toBe("old\n");
  });

  it("a blob PUT that failed is tried once more by commit; failing twice, commit throws and writes no record", async () => {
    for (const [fails, ok] of [[1, true], [2, false]] as const) {
      const s = steeredStorage();
      const old = await s.storage.put(FILE, bytes("old\n"));
      const j = new UndoJournal(s.storage, "a", "main", "s1");
      s.failNext(fails);
      expect(await j.capture(s.storage, FILE, "a.txt", old.etag)).toBe(true); // bytes fetched, blob written beside
      j.landed("a.txt", (await s.storage.put(FILE, bytes("new\n"), { ifMatch: old.etag })).etag);
      if (ok) {
        expect(await j.commit()).toBe(j.callId);
        const before = (await records(s.storage))[0]!.changes[0]!.before as { blob: string };
        expect(await blobText(s.storage, before.blob)).toBe("old\n");
      } else {
        await expect(j.commit()).rejects.toThrow("blob PUT failed");
        expect(await records(s.storage)).toEqual([]);
      }
    }
  });

  it("a refused write deletes its blob only after the blob PUT has finished (no blob left behind)", async () => {
    const s = steeredStorage();
    const old = await s.storage.put(FILE, bytes("old\n"));
    const j = new UndoJournal(s.storage, "a", "main", "s1");
    j.noteRead("a.txt", old.etag, bytes("old\n"));
    const open = s.hold();
    expect(await j.capture(s.storage, FILE, "a.txt", old.etag)).toBe(true);
    const refused = j.refused("a.txt");
    setTimeout(open, 20);
    await refused;
    expect((await s.storage.list({ prefix: "t/a/w/main/x/undo/" })).objects).toEqual([]);
    expect(await j.commit()).toBeNull();
  });
});
