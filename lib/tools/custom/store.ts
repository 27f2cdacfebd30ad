/**
 * Custom tools of a tenant: one object `t/<tenant>/custom-tools.json` in object storage, every
 * change a conditional write over the version read (If-Match; If-None-Match: * for the first),
 * so two concurrent changes never lose one another (the loser gets CONFLICT and retries).
 */
import { ToolError } from "../../shared/errors.js";
import { customToolsKey } from "../../layout/paths.js";
import { isConditionFailed, type StorageDriver } from "../../storage/types.js";
import type { StoredCustomTool } from "./definition.js";

const keyOf = customToolsKey;

export interface CustomToolDoc {
  tools: StoredCustomTool[];
  etag: string | null;
}

export async function readCustomTools(storage: StorageDriver, tenant: string): Promise<CustomToolDoc> {
  const got = await storage.get(keyOf(tenant));
  if (!got) return { tools: [], etag: null };
  const parsed = JSON.parse(await new Response(got.body).text()) as { tools?: StoredCustomTool[] };
  return { tools: parsed.tools ?? [], etag: got.etag };
}

/**
 * Applies `change` to the list as stored and writes it back only over that version. `cache` (the
 * isolate's cache of built custom tools, lib/tools/custom/tool.ts) forgets the tenant once the write is
 * tried, so this isolate sees the change at once.
 */
export async function updateCustomTools<T>(storage: StorageDriver, tenant: string, change: (tools: StoredCustomTool[]) => { tools: StoredCustomTool[]; result: T }, cache?: { forget(tenant: string): void }): Promise<T> {
  const doc = await readCustomTools(storage, tenant);
  const { tools, result } = change(doc.tools.slice());
  try {
    await storage.put(keyOf(tenant), JSON.stringify({ tools }), { contentType: "application/json", ...(doc.etag ? { ifMatch: doc.etag } : { ifNoneMatch: "*" }) });
  } catch (e) {
    if (isConditionFailed(e)) throw new ToolError("CONFLICT", "The tenant's custom tools changed during this call (another change won); nothing was written. Read them again and retry.");
    throw e;
  } finally {
    cache?.forget(tenant);
  }
  return result;
}
