/**
 * The limits store's conformance for a write-back's hold (lib/limits/held-room.ts): the whole charge
 * of a write-back's plan held once, its deletes credited but drawable only once applied, every batch
 * drawing on it, released at the end or when its lease ends. Through two handles on one store: run by
 * memory-limits.node.test.ts, dynamodb-limits.node.test.ts (dynalite) and durable-limits.test.ts (the
 * LIMITS Durable Object in workerd). A lease of 0 ends at once, so no clock is moved.
 */
import { describe, expect, it } from "vitest";
import type { LimitsStore } from "../../../lib/limits/store.js";

let n = 0;

export function describeWriteBackHolds(name: string, make: () => { a: LimitsStore; b: LimitsStore }) {
  describe(`limits store conformance, write-back holds: ${name}`, { timeout: 120_000 }, () => {
    it("a hold takes the plan's charge less its deletes at once; a racer cannot take it, nor the room the deletes free; batches draw on it; the rest is checked as any charge; a release or the lease's end frees what is left", async () => {
      const { a, b } = make();
      const t = `hold-${Date.now().toString(36)}-${(n++).toString(36)}`;
      const k = { key_id: "k" };
      await a.set(t, { storage_bytes: 1000, files_per_workspace: 10 });
      expect(await a.chargeStorage(t, k, "w", { files: 2, bytes: 500 }, { init: { files: 0, bytes: 0 } })).toMatchObject({ ok: true, bytes: 500 });
      // 3 new files of 400 bytes (net of what they replace), deleting 1 file of 200: holds 2 files and 200 bytes now.
      const held = await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { hold: { want: { files: 3, bytes: 400 }, credit: { files: 1, bytes: 200 }, ms: 60_000 } });
      expect(held).toMatchObject({ ok: true, files: 2, bytes: 500, hold: { files: 2, bytes: 200 } });
      const id = held.ok ? held.hold!.id : "";
      // A racer through the other handle sees the hold as used.
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 301 })).toEqual({ ok: false, quota: "storage_bytes", usage: 700, limit: 1000 });
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 300 })).toMatchObject({ ok: true, bytes: 800 });
      // The delete, given back on the hold: what it frees moves into the hold, not to the racer.
      expect(await b.chargeStorage(t, k, "w", { files: -1, bytes: -200 }, { force: true, draw: id })).toMatchObject({ ok: true, files: 1, bytes: 600 });
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: 1 })).toEqual({ ok: false, quota: "storage_bytes", usage: 1000, limit: 1000 });
      // Two batches draw on it through both handles; past it, the rest is checked (refused: nothing taken).
      expect(await a.chargeStorage(t, k, "w", { files: 2, bytes: 250 }, { draw: id })).toMatchObject({ ok: true, files: 3, bytes: 850 });
      expect(await b.chargeStorage(t, k, "w", { files: 1, bytes: 200 }, { draw: id })).toEqual({ ok: false, quota: "storage_bytes", usage: 1000, limit: 1000 });
      expect(await b.chargeStorage(t, k, "w", { files: 1, bytes: 150 }, { draw: id })).toMatchObject({ ok: true, files: 4, bytes: 1000 });
      // Released with a give-back of what a batch did not use: the room is free again.
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: -100 }, { force: true, draw: id, release: true })).toMatchObject({ ok: true, bytes: 900 });
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 100 })).toMatchObject({ ok: true, bytes: 1000 });
      // A hold whose charge less its deletes does not fit is refused, and holds nothing; files too.
      await a.setStorage(t, "w", { files: 1, bytes: 100 });
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { hold: { want: { files: 1, bytes: 1000 }, credit: { files: 0, bytes: 50 }, ms: 60_000 } })).toEqual({ ok: false, quota: "storage_bytes", usage: 100, limit: 1000 });
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { hold: { want: { files: 11, bytes: 0 }, credit: { files: 1, bytes: 0 }, ms: 60_000 } })).toEqual({ ok: false, quota: "files_per_workspace", usage: 1, limit: 10 });
      // Deletes are credited at most what the workspace holds.
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { hold: { want: { files: 0, bytes: 1000 }, credit: { files: 0, bytes: 5000 }, ms: 60_000 } })).toMatchObject({ ok: true, hold: { bytes: 900 } });
    });

    it("fill: what a hold still awaits of a delete that freed nothing is taken from the free room, or refused with nothing changed; where the quotas stand for the hold counts its room as its own", async () => {
      const { a, b } = make();
      const t = `hold-fill-${Date.now().toString(36)}-${(n++).toString(36)}`;
      const k = { key_id: "k" };
      await a.set(t, { storage_bytes: 1000, files_per_workspace: 10 });
      await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { init: { files: 2, bytes: 600 } });
      // 500 bytes of writes, deleting 300: 200 held now, 300 awaited of the delete.
      const held = await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { hold: { want: { files: 0, bytes: 500 }, credit: { files: 1, bytes: 300 }, ms: 60_000 } });
      const id = held.ok ? held.hold!.id : "";
      // Its own standing: the 200 held are its room, not used; another writer's counts them.
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { standing: true, draw: id })).toMatchObject({ ok: true, standing: { storage_bytes: { usage: 600, limit: 1000 } } });
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { standing: true })).toMatchObject({ ok: true, standing: { storage_bytes: { usage: 800, limit: 1000 } } });
      // The delete turned out a conflict (freed nothing); 250 bytes were written meanwhile: 150 free, 300 awaited: refused, nothing changed.
      await b.chargeStorage(t, k, "w", { files: 0, bytes: 50 });
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { draw: id, fill: true })).toEqual({ ok: false, quota: "storage_bytes", usage: 850, limit: 1000 });
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 150 })).toMatchObject({ ok: true, bytes: 800 });
      await b.chargeStorage(t, k, "w", { files: 0, bytes: -150 }, { force: true });
      // Filled: the 300 taken from the free room (no more room for others), all 500 drawable.
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: -150 }, { force: true })).toMatchObject({ ok: true, bytes: 500 });
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { draw: id, fill: true })).toMatchObject({ ok: true, bytes: 500 });
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 1 })).toEqual({ ok: false, quota: "storage_bytes", usage: 1000, limit: 1000 });
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: 500 }, { draw: id, release: true })).toMatchObject({ ok: true, bytes: 1000 });
    });

    it("a hold not released ends with its lease (a runner that died); a draw on an ended hold is checked as any charge", async () => {
      const { a, b } = make();
      const t = `hold-end-${Date.now().toString(36)}-${(n++).toString(36)}`;
      const k = { key_id: "k" };
      await a.set(t, { storage_bytes: 1000 });
      await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { init: { files: 1, bytes: 100 } });
      const held = await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { hold: { want: { files: 1, bytes: 800 }, credit: { files: 0, bytes: 0 }, ms: 0 } });
      expect(held).toMatchObject({ ok: true, hold: { files: 1, bytes: 800 } });
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 900 })).toMatchObject({ ok: true, bytes: 1000 });
      expect(await a.chargeStorage(t, k, "w", { files: 1, bytes: 1 }, { draw: held.ok ? held.hold!.id : "" })).toEqual({ ok: false, quota: "storage_bytes", usage: 1000, limit: 1000 });
    });
  });
}
