/**
 * The usage store in memory: one process's (tests, a single Node server). Same aggregates and
 * export as the durable stores (test/lib/run/metering/store-conformance.ts), kept nowhere.
 */
import { clampLimit, dayOf, hourOf, hourRange, nameOf, RAW_RETENTION_MS, sortRows, zeroSums, type ExportPage, type ExportQuery, type ExportedRecord, type StoredRecord, type UsageQuery, type UsageRow, type UsageStore } from "./store.js";

/** One hour × tool-or-route × workspace × key's sums (the DynamoDB store reads them back as these). */
export interface Aggregate {
  hour: number;
  kind: "tool" | "route";
  name: string;
  workspace: string;
  key: string;
  sums: ReturnType<typeof zeroSums>;
}

interface TenantUsage {
  aggregates: Map<string, Aggregate>;
  raw: ExportedRecord[];
  seq: number;
}

export class MemoryUsageStore implements UsageStore {
  private readonly tenants = new Map<string, TenantUsage>();

  constructor(private readonly now: () => number = Date.now) {}

  async record(records: StoredRecord[]): Promise<void> {
    for (const r of records) {
      let t = this.tenants.get(r.tenant);
      if (!t) this.tenants.set(r.tenant, (t = { aggregates: new Map(), raw: [], seq: 0 }));
      addToAggregate(t.aggregates, r);
      t.raw.push({ ...r, seq: ++t.seq });
    }
    const cutoff = this.now() - RAW_RETENTION_MS;
    for (const t of this.tenants.values()) if (t.raw.length && t.raw[0]!.at < cutoff) t.raw = t.raw.filter((r) => r.at >= cutoff);
  }

  async query(tenant: string, q: UsageQuery): Promise<UsageRow[]> {
    return groupRows(this.tenants.get(tenant)?.aggregates.values() ?? [], q);
  }

  async exportRecords(tenant: string, q: ExportQuery): Promise<ExportPage> {
    const after = q.cursor === undefined ? 0 : Number(q.cursor);
    const limit = clampLimit(q.limit);
    const out: ExportedRecord[] = [];
    for (const r of this.tenants.get(tenant)?.raw ?? []) {
      if (r.seq <= after || r.at < q.from || r.at >= q.to) continue;
      if (out.length === limit) return { records: out, next_cursor: String(out.at(-1)!.seq) };
      out.push(r);
    }
    return { records: out };
  }
}

/** A query's rows from a tenant's hourly aggregates: those in its hours and filters, grouped and summed. */
export function groupRows(aggregates: Iterable<Aggregate>, q: UsageQuery): UsageRow[] {
  const { first, end } = hourRange(q);
  const groups = new Map<string, UsageRow>();
  for (const a of aggregates) {
    if (a.hour < first || a.hour >= end) continue;
    if (q.workspace !== undefined && a.workspace !== q.workspace) continue;
    if (q.key !== undefined && a.key !== q.key) continue;
    const dims: Partial<UsageRow> = {};
    for (const g of q.groupBy) {
      if (g === "tool") dims[a.kind] = a.name;
      else if (g === "workspace") dims.workspace = a.workspace;
      else if (g === "key") dims.key = a.key;
      else if (g === "hour") dims.hour = new Date(a.hour).toISOString();
      else dims.day = new Date(dayOf(a.hour)).toISOString();
    }
    const id = JSON.stringify(dims);
    let row = groups.get(id);
    if (!row) groups.set(id, (row = { ...dims, ...zeroSums() }));
    for (const k of Object.keys(a.sums) as (keyof Aggregate["sums"])[]) row[k] += a.sums[k];
  }
  return sortRows([...groups.values()], q.groupBy);
}

/** Adds one record to its hour × tool-or-route × workspace × key aggregate in `aggregates` (made when it is the first). */
export function addToAggregate(aggregates: Map<string, Aggregate>, r: StoredRecord): void {
  const { kind, name } = nameOf(r);
  const hour = hourOf(r.at);
  const key = r.key ?? "";
  const id = JSON.stringify([hour, kind, name, r.workspace, key]);
  let agg = aggregates.get(id);
  if (!agg) aggregates.set(id, (agg = { hour, kind, name, workspace: r.workspace, key, sums: zeroSums() }));
  addTo(agg.sums, r);
}

/** Adds one record to a group's sums. */
export function addTo(sums: ReturnType<typeof zeroSums>, r: StoredRecord): void {
  sums.calls += 1;
  if (r.ok) sums.ok += 1;
  else sums.errors += 1;
  sums.ms += r.ms;
  sums.bytes_read += r.bytes_read;
  sums.bytes_written += r.bytes_written;
  sums.sandbox_ms += r.sandbox_ms ?? 0;
  sums.net_bytes_in += r.net_bytes_in ?? 0;
  sums.net_bytes_out += r.net_bytes_out ?? 0;
}
