/**
 * The undo journal (lib/workspace/undo-journal.ts): small before-images go into the record, larger ones into
 * blobs written beside the call's own write (commit() waits for them and tries a failed one once
 * more, refused() waits before deleting); a record written beside the call's last write
 * (writeBeside) is kept, replaced or deleted by what the write did. Memory driver: the rules are
 * the journal's, whatever the storage.
 */
import { describe, expect, it } from "vitest";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { PutBody, PutOptions, StorageDriver } from "../../../lib/storage/types.js";
import { INLINE_BYTES, UndoJournal } from "../../../lib/workspace/undo-journal.js";
import type { UndoRecord } from "../../../lib/workspace/undo-record.js";

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
/** A before-image too large for the record: it goes to a blob. */
const OLD = "old\n".repeat(INLINE_BYTES / 4 + 1);

async function records(storage: StorageDriver): Promise<UndoRecord[]> {
  const list = await storage.list({ prefix: "t/a/w/main/x/undo/" });
  const out: UndoRecord[] = [];
  for (const o of list.objects.filter((o) => /\/r-[^/]+\.json$/.test(o.key))) out.push(JSON.parse(await new Response((await storage.get(o.key))!.body).text()));
  return out;
}
const blobText = async (storage: StorageDriver, key: string) => new Response((await storage.get(key))!.body).text();

describe("undo journal: before-image blobs (over INLINE_BYTES) beside the write", () => {
  it("the blob write runs beside the call's write; commit waits for it, and the record names a blob holding the old bytes", async () => {
    const s = steeredStorage();
    const old = await s.storage.put(FILE, bytes(OLD));
    const j = new UndoJournal(s.storage, "a", "main", "s1");
    j.noteRead("a.txt", old.etag, bytes(OLD));
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
    expect(await blobText(s.storage, before.blob)).toBe(OLD);
  });

  it("a blob PUT that failed is tried once more by commit; failing twice, commit throws and writes no record", async () => {
    for (const [fails, ok] of [[1, true], [2, false]] as const) {
      const s = steeredStorage();
      const old = await s.storage.put(FILE, bytes(OLD));
      const j = new UndoJournal(s.storage, "a", "main", "s1");
      s.failNext(fails);
      expect(await j.capture(s.storage, FILE, "a.txt", old.etag)).toBe(true); // bytes fetched, blob written beside
      j.landed("a.txt", (await s.storage.put(FILE, bytes("new\n"), { ifMatch: old.etag })).etag);
      if (ok) {
        expect(await j.commit()).toBe(j.callId);
        const before = (await records(s.storage))[0]!.changes[0]!.before as { blob: string };
        expect(await blobText(s.storage, before.blob)).toBe(OLD);
      } else {
        await expect(j.commit()).rejects.toThrow("blob PUT failed");
        expect(await records(s.storage)).toEqual([]);
      }
    }
  });

  it("a refused write deletes its blob only after the blob PUT has finished (no blob left behind)", async () => {
    const s = steeredStorage();
    const old = await s.storage.put(FILE, bytes(OLD));
    const j = new UndoJournal(s.storage, "a", "main", "s1");
    j.noteRead("a.txt", old.etag, bytes(OLD));
    const open = s.hold();
    expect(await j.capture(s.storage, FILE, "a.txt", old.etag)).toBe(true);
    const refused = j.refused("a.txt");
    setTimeout(open, 20);
    await refused;
    expect((await s.storage.list({ prefix: "t/a/w/main/x/undo/" })).objects).toEqual([]);
    expect(await j.commit()).toBeNull();
  });
});

/** Every object under the undo prefix. */
const undoKeys = async (storage: StorageDriver) => (await storage.list({ prefix: "t/a/w/main/x/undo/" })).objects.map((o) => o.key);
const decode = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

describe("undo journal: small before-images inline in the record", () => {
  it("binary, CRLF and empty before-images up to INLINE_BYTES are kept in the record, exactly; no blob", async () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const max = new Uint8Array(INLINE_BYTES).fill(0x0d);
    for (const old of [all, bytes("a\r\nb\r\n"), new Uint8Array(0), max]) {
      const s = steeredStorage();
      const o = await s.storage.put(FILE, old);
      const j = new UndoJournal(s.storage, "a", "main", "s1");
      expect(await j.capture(s.storage, FILE, "a.txt", o.etag)).toBe(true);
      j.landed("a.txt", (await s.storage.put(FILE, bytes("new\n"), { ifMatch: o.etag })).etag);
      expect(await j.commit()).toBe(j.callId);
      expect((await undoKeys(s.storage)).filter((k) => k.includes("/b-"))).toEqual([]);
      const before = (await records(s.storage))[0]!.changes[0]!.before as { inline: string; size: number; etag: string };
      expect(before).toMatchObject({ etag: o.etag, size: old.length });
      expect(decode(before.inline)).toEqual(old);
    }
  });

  it("a record holds at most 256 KB of inline before-images; the rest go to blobs", async () => {
    const s = steeredStorage();
    const j = new UndoJournal(s.storage, "a", "main", "s1");
    for (let i = 0; i < 6; i++) {
      const key = `t/a/w/main/f/f${i}.txt`;
      const o = await s.storage.put(key, new Uint8Array(INLINE_BYTES).fill(65 + i));
      expect(await j.capture(s.storage, key, `f${i}.txt`, o.etag)).toBe(true);
      j.landed(`f${i}.txt`, (await s.storage.put(key, bytes("new\n"), { ifMatch: o.etag })).etag);
    }
    await j.commit();
    const kinds = (await records(s.storage))[0]!.changes.map((c) => (c.before && "inline" in c.before ? "inline" : "blob"));
    expect(kinds).toEqual(["inline", "inline", "inline", "inline", "blob", "blob"]);
  });
});

describe("undo journal: the record written beside the call's last write (writeBeside)", () => {
  /** A journal that captured a.txt at `old` (inline), its storage counting record PUTs and deletes. */
  async function setup() {
    const s = steeredStorage();
    const ops: string[] = [];
    const counted: StorageDriver = {
      ...s.storage,
      put: (k, b, o) => (k.includes("/x/undo/") && ops.push(`put ${k.includes("/r-") ? "record" : "blob"}`), s.storage.put(k, b, o)),
      delete: (k) => (ops.push("delete"), s.storage.delete(k)),
    };
    const old = await s.storage.put(FILE, bytes("old\n"));
    const j = new UndoJournal(counted, "a", "main", "s1");
    j.noteRead("a.txt", old.etag, bytes("old\n"));
    expect(await j.capture(counted, FILE, "a.txt", old.etag)).toBe(true);
    return { s, j, ops, old };
  }

  it("the write landed at the etag given: the record written beside is the call's record; commit writes nothing more", async () => {
    const { s, j, ops, old } = await setup();
    const now = await s.storage.put(FILE, bytes("new\n"), { ifMatch: old.etag });
    j.writeBeside("a.txt", now.etag);
    j.landed("a.txt", now.etag);
    expect(await j.commit()).toBe(j.callId);
    expect(ops).toEqual(["put record"]);
    const recs = await records(s.storage);
    expect(recs).toHaveLength(1);
    expect(recs[0]!.changes).toEqual([{ path: "a.txt", before: { etag: old.etag, size: 4, inline: btoa("old\n") }, after: now.etag }]);
  });

  it("the write was refused: commit deletes the record written beside (never listed) and writes none", async () => {
    const { s, j, ops } = await setup();
    j.writeBeside("a.txt", "predicted-etag");
    await j.refused("a.txt");
    expect(await j.commit()).toBeNull();
    expect(await undoKeys(s.storage)).toEqual([]);
    expect(ops).toEqual(["put record", "delete"]);
  });

  it("the write landed at another etag than given: commit replaces the record with one naming the real version", async () => {
    const { s, j, old } = await setup();
    j.writeBeside("a.txt", "predicted-etag");
    const now = await s.storage.put(FILE, bytes("new\n"), { ifMatch: old.etag });
    j.landed("a.txt", now.etag);
    expect(await j.commit()).toBe(j.callId);
    const recs = await records(s.storage);
    expect(recs.map((r) => r.changes.map((c) => c.after))).toEqual([[now.etag]]);
  });

  it("the call changed another file after it: commit replaces the record with one naming both", async () => {
    const { s, j, old } = await setup();
    const now = await s.storage.put(FILE, bytes("new\n"), { ifMatch: old.etag });
    j.writeBeside("a.txt", now.etag);
    j.landed("a.txt", now.etag);
    expect(await j.capture(s.storage, "t/a/w/main/f/b.txt", "b.txt", null)).toBe(true);
    const b = await s.storage.put("t/a/w/main/f/b.txt", bytes("b\n"), { ifNoneMatch: "*" });
    j.landed("b.txt", b.etag);
    await j.commit();
    const recs = await records(s.storage);
    expect(recs.map((r) => r.changes.map((c) => [c.path, c.after]))).toEqual([[["a.txt", now.etag], ["b.txt", b.etag]]]);
  });

  it("a blob that cannot be written: the record written beside (naming it) is deleted, commit throws", async () => {
    const s = steeredStorage();
    const old = await s.storage.put(FILE, bytes(OLD));
    const j = new UndoJournal(s.storage, "a", "main", "s1");
    j.noteRead("a.txt", old.etag, bytes(OLD));
    s.failNext(2);
    expect(await j.capture(s.storage, FILE, "a.txt", old.etag)).toBe(true);
    const now = await s.storage.put(FILE, bytes("new\n"), { ifMatch: old.etag });
    j.writeBeside("a.txt", now.etag);
    j.landed("a.txt", now.etag);
    await expect(j.commit()).rejects.toThrow("blob PUT failed");
    expect(await records(s.storage)).toEqual([]);
  });
});
