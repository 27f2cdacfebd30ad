/**
 * The storage quotas' charge through isolates' allowances (lib/limits/storage-allowance.ts) over
 * one limits store (memoryLimits: the Durable Object's and DynamoDB's state machine): a covered
 * write asks nothing before it is written and is counted after; writers racing through several
 * isolates never pass the quota; a write the allowance cannot cover is decided by the object,
 * whose refusal is QUOTA_EXCEEDED before anything is written; an isolate's own held room never refuses its own write.
 */
import { describe, expect, it } from "vitest";
import { StorageAllowances } from "../../../lib/limits/storage-allowance.js";
import { storageQuota } from "../../../lib/limits/storage-quota.js";
import { ALLOWANCE_MS, allowanceCap } from "../../../lib/limits/held-room.js";
import { memoryLimits, type LimitsStore } from "../../../lib/limits/store.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { clock } from "./store-conformance.js";
import { gatedLimits } from "../../support/gated-limits.js";

function laters() {
  const all: Promise<unknown>[] = [];
  return { later: (p: Promise<unknown>) => void all.push(p), settle: async () => void (await Promise.allSettled(all.splice(0))) };
}

const caller = { key_id: "k" };
const counted = async (store: LimitsStore, t: string, ws = "w") => {
  const d = await store.chargeStorage(t, caller, ws, { files: 0, bytes: 0 });
  return d.ok ? { files: d.files, bytes: d.bytes } : d;
};

describe("storage allowances", () => {
  it("a write the allowance covers asks the object nothing before it is written; what it wrote is counted after its answer", async () => {
    const c = clock();
    const base = memoryLimits(c.now);
    const log: string[] = [];
    const { store, gate } = gatedLimits(base, log, () => true);
    const allowances = new StorageAllowances(store, c.now);
    const { later, settle } = laters();
    const quota = storageQuota({ limits: base, allowances, later }, "t", "w", caller, memoryDriver(), "t/w/files/");
    await quota.charge({ files: 1, bytes: 100 }); // the first: the object's decision (and a first count of the empty workspace), an allowance held
    expect(log).toEqual(["chargeStorage", "chargeStorage"]);
    await settle();
    for (let i = 0; i < 20; i++) {
      log.length = 0;
      gate.closed = true; // the object answers nothing until the charge has
      await quota.charge({ files: 1, bytes: 10 });
      expect(log.filter((n) => !n.startsWith("held:"))).toEqual([]); // nothing asked and awaited before the write
      gate.open();
      await settle(); // the settle, after the answer
      expect(log).toEqual(["held:settle"]); // the allowance settles what it counted (a charge of no change)
    }
    await quota.settle({ files: -1, bytes: -10 }); // a delete: through the allowance too
    await settle();
    expect(await counted(base, "t")).toEqual({ files: 20, bytes: 290 });
  });

  it("writers racing through three isolates never pass storage_bytes, counting the room held for each; what is refused is QUOTA_EXCEEDED", async () => {
    const c = clock();
    const store = memoryLimits(c.now);
    const limit = 640_000;
    await store.set("t", { storage_bytes: limit });
    expect(allowanceCap({ storage_bytes: limit, files_per_workspace: 100_000 }).bytes).toBe(10_000);
    const { later, settle } = laters();
    const isolates = [0, 1, 2].map(() => new StorageAllowances(store, c.now));
    const quotas = isolates.map((a) => storageQuota({ limits: store, allowances: a, later }, "t", "w", caller, memoryDriver(), "t/w/files/"));
    let written = 0;
    let refused = 0;
    for (let wave = 0; wave < 30; wave++) {
      const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => quotas[i % 3]!.charge({ files: 1, bytes: 1000 })));
      for (const r of results) {
        if (r.status === "fulfilled") written += 1000;
        else {
          expect((r.reason as { code?: string }).code).toBe("QUOTA_EXCEEDED");
          refused++;
        }
      }
      expect(written).toBeLessThanOrEqual(limit);
      if (wave % 3 === 0) await settle();
    }
    await settle();
    expect(written).toBeLessThanOrEqual(limit);
    // Refused only once the quota is near: at most one allowance of room per isolate unused.
    expect(refused).toBeGreaterThan(0);
    expect(written).toBeGreaterThanOrEqual(limit - 3 * 10_000 - 1000);
    expect(await counted(store, "t")).toMatchObject({ bytes: written });
  });

  it("an isolate's own held room never refuses its own write; a write past the quota is refused whole with the usage named", async () => {
    const c = clock();
    const store = memoryLimits(c.now);
    await store.set("t", { storage_bytes: 640_000 }); // an allowance holds at most 10,000 bytes
    const { later, settle } = laters();
    const quota = storageQuota({ limits: store, allowances: new StorageAllowances(store, c.now), later }, "t", "w", caller, memoryDriver(), "t/w/files/");
    await quota.charge({ files: 1, bytes: 500 });
    await settle();
    await quota.charge({ files: 0, bytes: 639_500 }); // 500 + 639,500 = the quota: passes although 10,000 bytes were held for this isolate
    await expect(quota.charge({ files: 0, bytes: 1 })).rejects.toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "storage_bytes", usage: 640_000, limit: 640_000 } });
    expect(await counted(store, "t")).toEqual({ files: 1, bytes: 640_000 });
  });

  it("an allowance is spent within ALLOWANCE_MS / 2 of its ask; the object frees its room ALLOWANCE_MS after it gave it", async () => {
    const c = clock();
    const base = memoryLimits(c.now);
    await base.set("t", { storage_bytes: 640_000 });
    const log: string[] = [];
    const a = new StorageAllowances(gatedLimits(base, log, () => true).store, c.now);
    const quota = storageQuota({ limits: base, allowances: a, later: () => {} }, "t", "w", caller, memoryDriver(), "t/w/files/");
    await quota.charge({ files: 1, bytes: 10 }); // an allowance of 10,000 bytes held
    c.advance(ALLOWANCE_MS / 2);
    log.length = 0;
    await quota.charge({ files: 0, bytes: 10 });
    expect(log).toEqual(["chargeStorage"]); // past its time: the object is asked
    c.advance(ALLOWANCE_MS);
    // Every allowance ended: the whole quota less what was written is free for another writer.
    expect(await base.chargeStorage("t", { key_id: "other" }, "w", { files: 0, bytes: 640_000 - 20 })).toMatchObject({ ok: true, bytes: 640_000 });
  });
});
