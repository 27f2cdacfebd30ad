/**
 * The Workers usage store's Durable Object: one per tenant (idFromName(tenant)), SQLite-backed
 * (wrangler.toml: new_sqlite_classes). Its methods are called over RPC by
 * lib/run/metering/durable-store.ts; the SQL is lib/run/metering/sql-ledger.ts. A Durable Object
 * runs one call at a time per tenant, so concurrent batches from many isolates add up exactly.
 */
import { DurableObject } from "cloudflare:workers";
import { SqlUsageLedger } from "../run/metering/sql-ledger.js";
import type { ExportPage, ExportQuery, StoredRecord, UsageQuery, UsageRow } from "../run/metering/store.js";

export class UsageObject extends DurableObject {
  private readonly ledger: SqlUsageLedger;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.ledger = new SqlUsageLedger(ctx.storage.sql);
  }

  record(records: StoredRecord[]): void {
    this.ctx.storage.transactionSync(() => this.ledger.record(records));
  }

  query(q: UsageQuery): UsageRow[] {
    return this.ledger.query(q);
  }

  exportRecords(q: ExportQuery): ExportPage {
    return this.ledger.exportRecords(q);
  }
}
