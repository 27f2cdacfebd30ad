/** The quota counters (lib/limits/usage.ts) as pure state: charges, give-backs, first counts, the workspace slots. */
import { describe, expect, it } from "vitest";
import { TenantUsage, WORKSPACE_COUNT_MS } from "../../../lib/limits/usage.js";

const lim = { storage_bytes: 100, files_per_workspace: 3 };

describe("TenantUsage storage", () => {
  it("a workspace never counted asks for its count; a charge that would cross a limit is refused and charges nothing; a give-back is always applied", () => {
    const u = new TenantUsage();
    expect(u.chargeStorage("a", { files: 1, bytes: 10 }, lim)).toEqual({ ok: false, unknown: true });
    expect(u.chargeStorage("a", { files: 1, bytes: 10 }, lim, { init: { files: 2, bytes: 80 } })).toEqual({ ok: true, files: 3, bytes: 90, tenant_bytes: 90 });
    expect(u.chargeStorage("a", { files: 1, bytes: 0 }, lim)).toEqual({ ok: false, quota: "files_per_workspace", usage: 3, limit: 3 });
    expect(u.chargeStorage("a", { files: 0, bytes: 11 }, lim)).toEqual({ ok: false, quota: "storage_bytes", usage: 90, limit: 100 });
    expect(u.chargeStorage("a", { files: 0, bytes: 10 }, lim)).toMatchObject({ ok: true, bytes: 100 });
    // storage_bytes is the tenant's: another workspace's growth is refused too.
    expect(u.chargeStorage("b", { files: 1, bytes: 1 }, lim, { init: { files: 0, bytes: 0 } })).toEqual({ ok: false, quota: "storage_bytes", usage: 100, limit: 100 });
    // A shrinking change always passes; so does one that was already written (force).
    expect(u.chargeStorage("a", { files: -1, bytes: -30 }, lim)).toMatchObject({ ok: true, files: 2, bytes: 70 });
    expect(u.chargeStorage("a", { files: 0, bytes: 50 }, lim, { force: true })).toMatchObject({ ok: true, bytes: 120 });
    u.setStorage("a", null);
    expect(u.bytes).toBe(0);
  });

  it("a count kept before markers counted (no version: the state as the old code kept it) is not current: its first charge, a give-back too, asks for a count; one made from it is kept", () => {
    const u = new TenantUsage();
    // Kept by the old code: 1 file of 10 bytes; storage holds that file and 2 markers (3 entries).
    u.restore({ storage: [["a", { files: 1, bytes: 10 }]], slots: [], tasks: [], seq: 0 });
    expect(u.bytes).toBe(10); // its bytes still count for the tenant
    // A marker's removal gives back an entry the old count never took: changes nothing until counted.
    expect(u.chargeStorage("a", { files: -1, bytes: 0 }, lim, { force: true })).toEqual({ ok: false, unknown: true });
    expect(u.chargeStorage("a", { files: 1, bytes: 0 }, lim)).toEqual({ ok: false, unknown: true });
    // Counted from storage after the removal: 1 file, 1 marker; the marker fits (3), the next is refused.
    expect(u.chargeStorage("a", { files: 1, bytes: 0 }, lim, { init: { files: 2, bytes: 10 } })).toMatchObject({ ok: true, files: 3, bytes: 10 });
    expect(u.chargeStorage("a", { files: 1, bytes: 0 }, lim)).toEqual({ ok: false, quota: "files_per_workspace", usage: 3, limit: 3 });
    // Kept under the current rule: a restarted store takes it up as current, no count asked.
    const again = new TenantUsage();
    again.restore(u.snapshot());
    expect(again.chargeStorage("a", { files: -1, bytes: 0 }, lim, { force: true })).toMatchObject({ ok: true, files: 2 });
  });
});

describe("TenantUsage workspace slots", () => {
  it("each slot sees the others in flight; released or ended slots are gone", () => {
    let now = 0;
    const u = new TenantUsage(() => now);
    const a = u.reserveSlot(1000);
    expect(a.pending).toBe(0);
    expect(u.reserveSlot(1000).pending).toBe(1);
    u.releaseSlot(a.slot);
    expect(u.reserveSlot(1000).pending).toBe(1);
    now = 1000;
    expect(u.reserveSlot(1000).pending).toBe(0);
  });

  it("a lone create's listing is kept with the creates told since, for WORKSPACE_COUNT_MS; a listing beside another create, a delete or an unknown outcome is not trusted", () => {
    let now = 0;
    const u = new TenantUsage(() => now);
    // Beside another create: its listing may have missed that one's workspace, so it is not kept.
    const a = u.reserveSlot(1000);
    const b = u.reserveSlot(1000);
    u.releaseSlot(a.slot, { created: true, listed: 4 });
    u.releaseSlot(b.slot, { created: true, listed: 4 });
    expect(u.reserveSlot(1000).known).toBeUndefined();
    // One taken after another's slot was taken, and released first: not alone either.
    now = 2000;
    const c = u.reserveSlot(1000);
    const d = u.reserveSlot(1000);
    u.releaseSlot(d.slot, { created: false, listed: 6 });
    u.releaseSlot(c.slot, { created: true, listed: 6 });
    now = 4000;
    // Alone from its slot to its release: kept (6 listed + its own), and each create told since adds one.
    const e = u.reserveSlot(1000);
    expect(e.known).toBeUndefined();
    u.releaseSlot(e.slot, { created: true, listed: 7 });
    const f = u.reserveSlot(1000);
    expect(f.known).toBe(8);
    const g = u.reserveSlot(1000);
    expect(g).toMatchObject({ known: 8, pending: 1 });
    u.releaseSlot(f.slot, { created: true });
    u.releaseSlot(g.slot, { created: false });
    expect(u.reserveSlot(1000).known).toBe(9);
    now += WORKSPACE_COUNT_MS;
    expect(u.reserveSlot(1000).known).toBeUndefined();
    // A delete (its count dropped) and an unknown outcome (a fork, an archive) forget it.
    now += 10_000;
    const h = u.reserveSlot(1000);
    u.releaseSlot(h.slot, { created: true, listed: 2 });
    expect(u.reserveSlot(1000).known).toBe(3);
    u.setStorage("gone", null);
    expect(u.reserveSlot(1000).known).toBeUndefined();
    now += 10_000;
    const i = u.reserveSlot(1000);
    u.releaseSlot(i.slot, { created: true, listed: 2 });
    const j = u.reserveSlot(1000);
    u.releaseSlot(j.slot);
    expect(u.reserveSlot(1000).known).toBeUndefined();
  });
});
