/**
 * The usage store's conformance suite (lib/run/metering/store.ts): every implementation runs it
 * (memory-store.node.test.ts, durable-store.test.ts through the Durable Object in workerd). Each
 * test uses its own tenants, so stores that persist across tests still see only its records.
 */
import { describe, expect, it } from "vitest";
import { GROUP_BY, HOUR_MS, type GroupBy, type StoredRecord, type UsageRow, type UsageStore } from "../../../../lib/run/metering/store.js";

/** 22:00 UTC yesterday: the day turns two hours in (recent, so within raw retention). */
const T0 = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 2 * HOUR_MS;
let n = 0;
const tenantName = (what: string) => `${what}-${Date.now().toString(36)}-${(n++).toString(36)}`;

/** A record of `tool` (or a route, when it has a space) at T0 + `minutes`. */
function rec(tenant: string, at: number, name: string, extra: Partial<StoredRecord> = {}): StoredRecord {
  return { tenant, workspace: "w1", key: "k1", ...(name.includes(" ") ? { route: name } : { tool: name }), ok: true, ms: 5, bytes_read: 10, bytes_written: 1, at, ...extra };
}

/** The rows a correct store answers, computed from the records themselves. */
function expected(records: StoredRecord[], groupBy: GroupBy[], filter: { workspace?: string; key?: string; from: number; to: number }): Omit<UsageRow, never>[] {
  const first = Math.floor(filter.from / HOUR_MS) * HOUR_MS;
  const end = Math.ceil(filter.to / HOUR_MS) * HOUR_MS;
  const groups = new Map<string, UsageRow>();
  for (const r of records) {
    const hour = Math.floor(r.at / HOUR_MS) * HOUR_MS;
    if (hour < first || hour >= end) continue;
    if (filter.workspace !== undefined && r.workspace !== filter.workspace) continue;
    if (filter.key !== undefined && r.key !== filter.key) continue;
    const dims: Partial<UsageRow> = {};
    for (const g of groupBy) {
      if (g === "tool") Object.assign(dims, r.tool !== undefined ? { tool: r.tool } : { route: r.route });
      if (g === "workspace") dims.workspace = r.workspace;
      if (g === "key") dims.key = r.key ?? "";
      if (g === "hour") dims.hour = new Date(hour).toISOString();
      if (g === "day") dims.day = new Date(Math.floor(hour / 86_400_000) * 86_400_000).toISOString();
    }
    const id = JSON.stringify(Object.entries(dims).sort());
    const row = groups.get(id) ?? { ...dims, calls: 0, ok: 0, errors: 0, ms: 0, bytes_read: 0, bytes_written: 0, sandbox_ms: 0, net_bytes_in: 0, net_bytes_out: 0 };
    row.calls++;
    row[r.ok ? "ok" : "errors"]++;
    row.ms += r.ms;
    row.bytes_read += r.bytes_read;
    row.bytes_written += r.bytes_written;
    row.sandbox_ms += r.sandbox_ms ?? 0;
    row.net_bytes_in += r.net_bytes_in ?? 0;
    row.net_bytes_out += r.net_bytes_out ?? 0;
    groups.set(id, row);
  }
  return [...groups.values()];
}

/** Rows in one order whatever their keys' order (the stores' own order is checked by sortRows' users). */
const canonical = (r: UsageRow) => JSON.stringify(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)));
const sorted = (rows: UsageRow[]) => [...rows].sort((a, b) => (canonical(a) < canonical(b) ? -1 : 1));

export function describeUsageStore(name: string, make: () => UsageStore) {
  // A busy machine starts workerd's Durable Objects slowly; nothing here waits on time.
  describe(`usage store conformance: ${name}`, { timeout: 120_000 }, () => {
    it("aggregates equal the records, for every group_by, filter and combination; tenants never mix", async () => {
      const store = make();
      const a = tenantName("a");
      const b = tenantName("b");
      const records: StoredRecord[] = [];
      const tools = ["read", "write", "bash", "PUT files", "POST import"];
      for (let i = 0; i < 60; i++) {
        records.push(rec(i % 7 === 0 ? b : a, T0 + i * 4 * 60_000, tools[i % tools.length]!, {
          workspace: `w${i % 3}`, key: `k${i % 2}`, ok: i % 5 !== 0, ms: i, bytes_read: i * 3, bytes_written: i % 4,
          ...(i % 5 === 0 ? { code: "NOT_FOUND" } : {}), ...(tools[i % tools.length] === "bash" ? { sandbox_ms: 100 + i } : {}),
          // Network bytes on some records (a web tool's), absent on the rest, as calls make them.
          ...(i % 3 === 0 ? { net_bytes_in: 1_000 + i * 17, net_bytes_out: 200 + i } : {}),
        }));
      }
      await store.record(records.slice(0, 25));
      await store.record(records.slice(25));
      const mine = records.filter((r) => r.tenant === a);
      const range = { from: T0, to: T0 + 4 * HOUR_MS };
      const groupings: GroupBy[][] = [[], ...GROUP_BY.map((g) => [g]), ["tool", "key"], ["workspace", "hour"], ["day", "tool", "workspace", "key"]];
      for (const groupBy of groupings) {
        const rows = await store.query(a, { ...range, groupBy });
        expect(sorted(rows), groupBy.join(",")).toEqual(sorted(expected(mine, groupBy, range)));
      }
      // Filters: a key, a workspace, both.
      for (const filter of [{ key: "k1" }, { workspace: "w2" }, { key: "k0", workspace: "w1" }, { key: "nobody" }]) {
        const rows = await store.query(a, { ...range, ...filter, groupBy: ["tool"] });
        expect(sorted(rows), JSON.stringify(filter)).toEqual(sorted(expected(mine, ["tool"], { ...range, ...filter })));
      }
      // Tenant b sees exactly its own.
      const rowsB = await store.query(b, { ...range, groupBy: ["tool", "workspace", "key"] });
      expect(sorted(rowsB)).toEqual(sorted(expected(records.filter((r) => r.tenant === b), ["tool", "workspace", "key"], range)));
      expect(rowsB.reduce((s, r) => s + r.calls, 0)).toBe(records.filter((r) => r.tenant === b).length);
      // A tenant with no records: nothing.
      expect(await store.query(tenantName("none"), { ...range, groupBy: [] })).toEqual([]);
    });

    it("the hours a range covers: from and to widen to whole hours, to is exclusive on an hour", async () => {
      const store = make();
      const t = tenantName("h");
      await store.record([rec(t, T0 + 10, "read"), rec(t, T0 + HOUR_MS + 59 * 60_000, "read"), rec(t, T0 + 2 * HOUR_MS, "read")]);
      const calls = async (from: number, to: number) => (await store.query(t, { from, to, groupBy: [] }))[0]?.calls ?? 0;
      expect(await calls(T0, T0 + 2 * HOUR_MS)).toBe(2);
      expect(await calls(T0 + 30 * 60_000, T0 + HOUR_MS + 1)).toBe(2);
      expect(await calls(T0 + HOUR_MS, T0 + 3 * HOUR_MS)).toBe(2);
      expect(await calls(T0 - HOUR_MS, T0)).toBe(0);
      const byHour = await store.query(t, { from: T0, to: T0 + 3 * HOUR_MS, groupBy: ["hour"] });
      expect(byHour.map((r) => [r.hour, r.calls])).toEqual([0, 1, 2].map((h) => [new Date(T0 + h * HOUR_MS).toISOString(), 1]));
      const byDay = await store.query(t, { from: T0, to: T0 + 3 * HOUR_MS, groupBy: ["day"] });
      expect(byDay.map((r) => [r.day, r.calls])).toEqual([[new Date(T0 - 22 * HOUR_MS).toISOString(), 2], [new Date(T0 + 2 * HOUR_MS).toISOString(), 1]]);
    });

    it("concurrent batches add up exactly", async () => {
      const store = make();
      const t = tenantName("c");
      const batches = Array.from({ length: 20 }, (_, i) => Array.from({ length: 10 }, (_, j) => rec(t, T0 + j * 60_000, j % 2 ? "read" : "web_fetch", { ms: i + j, bytes_read: 1, ok: (i + j) % 3 !== 0, ...(j % 2 ? {} : { net_bytes_in: 5_000 + i, net_bytes_out: 300 + j }) })));
      await Promise.all(batches.map((b) => store.record(b)));
      const all = batches.flat();
      const rows = await store.query(t, { from: T0, to: T0 + HOUR_MS, groupBy: ["tool"] });
      expect(sorted(rows)).toEqual(sorted(expected(all, ["tool"], { from: T0, to: T0 + HOUR_MS })));
      expect(rows.reduce((s, r) => s + r.calls, 0)).toBe(200);
      expect(rows.reduce((s, r) => s + r.net_bytes_in, 0)).toBe(all.reduce((s, r) => s + (r.net_bytes_in ?? 0), 0));
    });

    it("export: every record once, in order, a page at a time, within the range, one tenant's", async () => {
      const store = make();
      const t = tenantName("e");
      const other = tenantName("o");
      const records = Array.from({ length: 23 }, (_, i) => rec(t, T0 + i * 60_000, "read", { ms: i }));
      await store.record(records.slice(0, 10));
      await store.record([rec(other, T0, "write")]);
      await store.record(records.slice(10));
      const seen: number[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.exportRecords(t, { from: T0, to: T0 + HOUR_MS, limit: 5, ...(cursor ? { cursor } : {}) });
        pages++;
        expect(page.records.length).toBeLessThanOrEqual(5);
        for (const r of page.records) {
          expect(r.tenant).toBe(t);
          seen.push(r.ms);
        }
        cursor = page.next_cursor;
      } while (cursor && pages < 20);
      expect(seen).toEqual(records.map((r) => r.ms));
      expect(pages).toBe(5);
      // The range: records at minutes 5..9.
      const part = await store.exportRecords(t, { from: T0 + 5 * 60_000, to: T0 + 10 * 60_000 });
      expect(part.records.map((r) => r.ms)).toEqual([5, 6, 7, 8, 9]);
      expect(part.next_cursor).toBeUndefined();
      const full = (await store.exportRecords(t, { from: T0, to: T0 + HOUR_MS })).records[0]!;
      expect(full).toMatchObject({ tenant: t, workspace: "w1", key: "k1", tool: "read", ok: true, at: T0, seq: expect.any(Number) });
      // A record's network bytes are exported as recorded; a record without them has none.
      const net = tenantName("n");
      await store.record([rec(net, T0, "web_fetch", { net_bytes_in: 12_345, net_bytes_out: 321 }), rec(net, T0 + 1, "read")]);
      const exported = (await store.exportRecords(net, { from: T0, to: T0 + HOUR_MS })).records;
      expect(exported.map((r) => [r.tool, r.net_bytes_in, r.net_bytes_out])).toEqual([["web_fetch", 12_345, 321], ["read", undefined, undefined]]);
    });
  });
}
