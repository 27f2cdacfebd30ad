/**
 * One tenant's usage in SQLite: the body of the Workers store's Durable Object
 * (lib/runtime/usage-object.ts), kept apart from the runtime's class so that it reads as SQL
 * against the store's contract (store.ts). Two tables:
 *
 *   hourly  one row per hour × tool-or-route × workspace × key: counts and sums, upserted
 *   raw     one row per record (JSON), for the export; rows older than RAW_RETENTION_MS are deleted
 *
 * A batch is aggregated in memory first, so it costs one upsert per distinct group plus one insert
 * per record, all in one transaction (a batch is durable whole or not at all).
 */
import { addToAggregate, type Aggregate } from "./memory-store.js";
import { clampLimit, dayOf, DAY_MS, hourRange, RAW_RETENTION_MS, sortRows, SUM_NAMES, zeroSums, type ExportPage, type ExportQuery, type ExportedRecord, type StoredRecord, type UsageQuery, type UsageRow } from "./store.js";

/** The part of the Durable Object's SqlStorage this uses. */
export interface Sql {
  exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, unknown>[] };
}

/** A sum's column: every sum of SUM_NAMES is one, so a sum added there is a column here (added to an existing table by ensureSumColumns). */
const sumColumn = (s: string) => `${s} INTEGER NOT NULL DEFAULT 0`;

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS hourly (hour INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, workspace TEXT NOT NULL, key TEXT NOT NULL,
    ${SUM_NAMES.map(sumColumn).join(", ")},
    PRIMARY KEY (hour, kind, name, workspace, key)) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS raw (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, record TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS raw_at ON raw (at)`,
];

/**
 * The sums an `hourly` table made before them lacks (net_bytes_in, net_bytes_out came after the
 * first objects), added as columns of 0: one read of the table's columns when the object starts.
 */
function ensureSumColumns(sql: Sql): void {
  const have = new Set(sql.exec("SELECT name FROM pragma_table_info('hourly')").toArray().map((r) => String(r.name)));
  for (const s of SUM_NAMES) if (!have.has(s)) sql.exec(`ALTER TABLE hourly ADD COLUMN ${sumColumn(s)}`);
}


export class SqlUsageLedger {
  constructor(private readonly sql: Sql, private readonly now: () => number = Date.now) {
    for (const s of SCHEMA) sql.exec(s);
    ensureSumColumns(sql);
  }

  /** Call inside one transaction (the object's transactionSync). */
  record(records: StoredRecord[]): void {
    const groups = new Map<string, Aggregate>();
    for (const r of records) {
      addToAggregate(groups, r);
      this.sql.exec("INSERT INTO raw (at, record) VALUES (?, ?)", r.at, JSON.stringify(r));
    }
    for (const g of groups.values()) {
      this.sql.exec(
        `INSERT INTO hourly (hour, kind, name, workspace, key, ${SUM_NAMES.join(", ")}) VALUES (?, ?, ?, ?, ?, ${SUM_NAMES.map(() => "?").join(", ")})
         ON CONFLICT (hour, kind, name, workspace, key) DO UPDATE SET ${SUM_NAMES.map((s) => `${s} = ${s} + excluded.${s}`).join(", ")}`,
        g.hour, g.kind, g.name, g.workspace, g.key, ...SUM_NAMES.map((s) => g.sums[s]),
      );
    }
    this.sql.exec("DELETE FROM raw WHERE at < ?", this.now() - RAW_RETENTION_MS);
  }

  query(q: UsageQuery): UsageRow[] {
    const { first, end } = hourRange(q);
    const dims: string[] = [];
    for (const g of q.groupBy) {
      if (g === "tool") dims.push("kind", "name");
      else if (g === "workspace") dims.push("workspace");
      else if (g === "key") dims.push("key");
      else if (g === "hour") dims.push("hour");
      else dims.push(`(hour / ${DAY_MS}) * ${DAY_MS} AS day`);
    }
    const where = ["hour >= ?", "hour < ?"];
    const args: unknown[] = [first, end];
    if (q.workspace !== undefined) where.push("workspace = ?"), args.push(q.workspace);
    if (q.key !== undefined) where.push("key = ?"), args.push(q.key);
    const groupCols = dims.map((d) => (d.endsWith(" AS day") ? "day" : d));
    const rows = this.sql
      .exec(`SELECT ${[...dims, ...SUM_NAMES.map((s) => `SUM(${s}) AS ${s}`)].join(", ")} FROM hourly WHERE ${where.join(" AND ")}${groupCols.length ? ` GROUP BY ${groupCols.join(", ")}` : ""}`, ...args)
      .toArray();
    const out: UsageRow[] = [];
    for (const r of rows) {
      if (r.calls === null) continue; // no rows at all: SUM over nothing
      const row = {} as UsageRow;
      if (r.kind !== undefined) row[r.kind as "tool" | "route"] = String(r.name);
      if (r.workspace !== undefined) row.workspace = String(r.workspace);
      if (r.key !== undefined) row.key = String(r.key);
      if (r.hour !== undefined) row.hour = new Date(Number(r.hour)).toISOString();
      if (r.day !== undefined) row.day = new Date(dayOf(Number(r.day))).toISOString();
      Object.assign(row, zeroSums());
      for (const s of SUM_NAMES) row[s] = Number(r[s]);
      out.push(row);
    }
    return sortRows(out, q.groupBy);
  }

  exportRecords(q: ExportQuery): ExportPage {
    const limit = clampLimit(q.limit);
    const after = q.cursor === undefined ? 0 : Number(q.cursor);
    const rows = this.sql.exec("SELECT seq, record FROM raw WHERE seq > ? AND at >= ? AND at < ? ORDER BY seq LIMIT ?", after, q.from, q.to, limit + 1).toArray();
    const records = rows.slice(0, limit).map((r) => ({ ...(JSON.parse(String(r.record)) as StoredRecord), seq: Number(r.seq) }) as ExportedRecord);
    return rows.length > limit ? { records, next_cursor: String(records.at(-1)!.seq) } : { records };
  }
}
