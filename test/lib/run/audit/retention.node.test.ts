/**
 * The audit log's retention (docs/audit.md "Retention"): the scheduled tick deletes entries older
 * than the retention from the tenant's log and every workspace's, and nothing else; stops at its
 * budget and goes on next tick; 0 keeps everything; another tenant's log is untouched.
 */
import { describe, expect, it } from "vitest";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { auditPrefix, tenantAuditPrefix } from "../../../../lib/layout/paths.js";
import { compactTime } from "../../../../lib/run/audit/entry.js";
import { auditRetentionDays, pruneAudit } from "../../../../lib/run/audit/retention.js";
import { housekeepingTick } from "../../../../lib/runtime/housekeeping.js";
import type { StorageDriver } from "../../../../lib/storage/types.js";

const DAY = 86_400_000;
const NOW = Date.parse("2026-11-28T10:00:00Z");
let n = 0;
const id = (t: number) => `${compactTime(new Date(t))}-${String(n++).padStart(10, "a").replace(/[0-9]/g, (d) => "abcdefghij"[Number(d)]!)}`;

async function entry(storage: StorageDriver, prefix: string, daysAgo: number): Promise<string> {
  const key = `${prefix}${id(NOW - daysAgo * DAY)}.json`;
  await storage.put(key, JSON.stringify({ id: key }), { contentType: "application/json" });
  return key;
}

async function keys(storage: StorageDriver, prefix: string): Promise<string[]> {
  return (await storage.list({ prefix })).objects.map((o) => o.key).sort();
}

describe("audit retention", () => {
  it("deletes the entries older than the retention, in every log of the tenant, and nothing else", async () => {
    const storage = memoryDriver();
    const logs = [tenantAuditPrefix("acme"), auditPrefix("acme", "one"), auditPrefix("acme", "two")];
    const kept: string[] = [];
    const old: string[] = [];
    for (const p of logs) {
      old.push(await entry(storage, p, 400), await entry(storage, p, 31));
      kept.push(await entry(storage, p, 29), await entry(storage, p, 0));
    }
    await storage.put("t/acme/w/one/f/a.txt", "file");
    await storage.put("t/acme/w/one/meta.json", "{}");
    const other = await entry(storage, tenantAuditPrefix("beta"), 400);
    const r = await pruneAudit(storage, "acme", { days: 30, now: NOW });
    expect(r).toEqual({ audit_deleted: old.length, more: false });
    const left = await keys(storage, "t/");
    expect(left).toEqual([...kept, other, "t/acme/w/one/f/a.txt", "t/acme/w/one/meta.json"].sort());
  });

  it("stops at its budget and says more; the next run goes on; 0 days keeps everything", async () => {
    const storage = memoryDriver();
    const p = auditPrefix("acme", "w1");
    for (let i = 0; i < 7; i++) await entry(storage, p, 100 + i);
    const fresh = await entry(storage, p, 1);
    expect(await pruneAudit(storage, "acme", { days: 0, now: NOW })).toEqual({ audit_deleted: 0, more: false });
    expect(await pruneAudit(storage, "acme", { days: 30, now: NOW, maxDeletions: 5 })).toEqual({ audit_deleted: 5, more: true });
    expect(await pruneAudit(storage, "acme", { days: 30, now: NOW, maxDeletions: 5 })).toEqual({ audit_deleted: 2, more: false });
    expect(await keys(storage, p)).toEqual([fresh]);
  });

  it("the setting: a whole number of days, 0 allowed, anything else the default", () => {
    expect(auditRetentionDays(undefined)).toBe(365);
    expect(auditRetentionDays("")).toBe(365);
    expect(auditRetentionDays("90")).toBe(90);
    expect(auditRetentionDays("0")).toBe(0);
    expect(auditRetentionDays("-1")).toBe(365);
    expect(auditRetentionDays("1.5")).toBe(365);
    expect(auditRetentionDays("ninety")).toBe(365);
  });

  it("the scheduled tick prunes each tenant it reaches, with TOOLSHED_AUDIT_RETENTION_DAYS", async () => {
    const storage = memoryDriver();
    const kv = storageKeyValue(memoryDriver(), "kv/");
    for (const t of ["acme", "beta"]) {
      await storage.put(`t/${t}/tenant.json`, "{}");
      await entry(storage, tenantAuditPrefix(t), 10);
      await entry(storage, auditPrefix(t, "ws"), 1);
    }
    const lines: string[] = [];
    const r = await housekeepingTick({ storage, kv }, { TOOLSHED_AUDIT_RETENTION_DAYS: "7" }, { now: () => NOW, log: (l) => lines.push(l) });
    expect(r.tenants.map((t) => t.tenant)).toEqual(["acme", "beta"]);
    expect(lines.map((l) => JSON.parse(l)).map((l) => [l.gc, l.audit_deleted])).toEqual([["acme", 1], ["beta", 1]]);
    expect((await keys(storage, "t/")).filter((k) => k.includes("/audit/")).length).toBe(2);
  });
});
