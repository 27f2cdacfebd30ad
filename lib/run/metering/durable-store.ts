/**
 * The Workers usage store: a Durable Object per tenant (lib/runtime/usage-object.ts), reached by
 * RPC. A batch of many tenants' records costs one RPC per tenant in it.
 */
import type { ExportPage, ExportQuery, StoredRecord, UsageQuery, UsageRow, UsageStore } from "./store.js";

/** What this needs of the Durable Object namespace (the USAGE binding): typed here, so the run path never sees the runtime's class. */
export interface UsageObjects {
  idFromName(name: string): unknown;
  get(id: never): { record(r: StoredRecord[]): Promise<void>; query(q: UsageQuery): Promise<UsageRow[]>; exportRecords(q: ExportQuery): Promise<ExportPage> };
}

export function durableUsageStore(objects: UsageObjects): UsageStore {
  const of = (tenant: string) => objects.get(objects.idFromName(tenant) as never);
  return {
    async record(records) {
      const byTenant = new Map<string, StoredRecord[]>();
      for (const r of records) {
        const list = byTenant.get(r.tenant);
        if (list) list.push(r);
        else byTenant.set(r.tenant, [r]);
      }
      await Promise.all([...byTenant].map(([tenant, list]) => of(tenant).record(list)));
    },
    query: (tenant, q) => of(tenant).query(q),
    exportRecords: (tenant, q) => of(tenant).exportRecords(q),
  };
}
