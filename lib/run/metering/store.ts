/**
 * The usage store (#28 §1): every usage record (lib/run/metering/usage.ts) kept durably, as
 * aggregates per tenant × key × workspace × tool (or route) × hour, and raw for RAW_RETENTION_MS
 * (the export a billing pipeline pages through). One interface, one implementation per engine:
 * memory (tests, a single process), a Durable Object per tenant on Workers
 * (lib/runtime/usage-object.ts, reached through durable-store.ts). Every implementation passes
 * test/lib/run/metering/store-conformance.ts. docs/usage.md says why these engines.
 *
 * Records reach a store in batches, after the answer (held-store.ts): recording never adds a
 * storage round trip to a call.
 */
import type { UsageRecord } from "./record.js";

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
/** How long raw records are kept for the export (aggregates are kept for good). */
export const RAW_RETENTION_MS = 35 * DAY_MS;
/** Most raw records in one export page (and the default). */
export const EXPORT_PAGE_MAX = 1_000;
export const GROUP_BY = ["tool", "workspace", "key", "hour", "day"] as const;
export type GroupBy = (typeof GROUP_BY)[number];

/** A usage record as stored: when it was made (epoch ms). */
export type StoredRecord = UsageRecord & { at: number };

export interface UsageQuery {
  /** Epoch ms, inclusive; aggregates are hourly, so the hour it falls in counts whole. */
  from: number;
  /** Epoch ms, exclusive; the hour it falls in counts whole when it does not start it. */
  to: number;
  workspace?: string;
  key?: string;
  /** The dimensions of each row, in order (none: one row of totals). */
  groupBy: GroupBy[];
}

/** One row of a report: the group's dimensions, then its sums. */
export interface UsageRow {
  tool?: string;
  route?: string;
  workspace?: string;
  key?: string;
  /** ISO time of the hour or day (UTC) the row counts. */
  hour?: string;
  day?: string;
  calls: number;
  ok: number;
  errors: number;
  ms: number;
  bytes_read: number;
  bytes_written: number;
  /** Wall time of the sandbox (bash, run_code), where the run reported it. */
  sandbox_ms: number;
  /** Bytes the calls' tools received from and sent to hosts outside Toolshed (UsageRecord.net_bytes_in / net_bytes_out). */
  net_bytes_in: number;
  net_bytes_out: number;
}

export interface ExportQuery {
  from: number;
  to: number;
  /** Where the previous page ended (ExportPage.next_cursor); absent: the first page. */
  cursor?: string;
  /** At most EXPORT_PAGE_MAX. */
  limit?: number;
}

/** A raw record as exported: `seq` orders a tenant's records and never repeats. */
export type ExportedRecord = StoredRecord & { seq: number };

export interface ExportPage {
  records: ExportedRecord[];
  /** Pass as `cursor` for the next page; absent on the last. */
  next_cursor?: string;
}

export interface UsageStore {
  /** Adds records (any tenants); resolves once they are durable. */
  record(records: StoredRecord[]): Promise<void>;
  /** One tenant's aggregates over [from, to), filtered and grouped. Rows are ordered by their dimensions. */
  query(tenant: string, q: UsageQuery): Promise<UsageRow[]>;
  /** One tenant's raw records made in [from, to), in the order they were stored, a page at a time. */
  exportRecords(tenant: string, q: ExportQuery): Promise<ExportPage>;
}

export const hourOf = (at: number) => Math.floor(at / HOUR_MS) * HOUR_MS;
export const dayOf = (at: number) => Math.floor(at / DAY_MS) * DAY_MS;

/** The hours [from, to) covers, as aggregates see it: [hour of from, hour of to rounded up). */
export function hourRange(q: { from: number; to: number }): { first: number; end: number } {
  return { first: hourOf(q.from), end: hourOf(q.to) === q.to ? q.to : hourOf(q.to) + HOUR_MS };
}

/** What the record counts for: a tool's name, or a route's ("PUT files"). */
export const nameOf = (r: UsageRecord): { kind: "tool" | "route"; name: string } => (r.tool !== undefined ? { kind: "tool", name: r.tool } : { kind: "route", name: r.route ?? "" });

export const clampLimit = (limit: number | undefined) => Math.max(1, Math.min(EXPORT_PAGE_MAX, Math.floor(limit ?? EXPORT_PAGE_MAX)));

/** Records sorted by their group's dimensions (tool rows before route rows; then the name), the same order for every store. */
export function sortRows(rows: UsageRow[], groupBy: readonly GroupBy[]): UsageRow[] {
  const keyOf = (r: UsageRow) =>
    groupBy.map((g) => (g === "tool" ? `${r.tool !== undefined ? 0 : 1}\u0000${r.tool ?? r.route ?? ""}` : String(r[g] ?? "")));
  return rows.sort((a, b) => {
    const ka = keyOf(a);
    const kb = keyOf(b);
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
    return 0;
  });
}

/** An empty row's sums. */
export const zeroSums = () => ({ calls: 0, ok: 0, errors: 0, ms: 0, bytes_read: 0, bytes_written: 0, sandbox_ms: 0, net_bytes_in: 0, net_bytes_out: 0 });
/** The names of a row's sums (zeroSums' keys): the columns and attributes the durable stores keep. */
export const SUM_NAMES = ["calls", "ok", "errors", "ms", "bytes_read", "bytes_written", "sandbox_ms", "net_bytes_in", "net_bytes_out"] as const satisfies readonly (keyof ReturnType<typeof zeroSums>)[];
