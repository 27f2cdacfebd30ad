/**
 * The record of a workspace (meta.json) in raw storage, for tests that drive the sync API without
 * the app: the sync API answers NOT_FOUND for a workspace without one (lib/sync/server.ts).
 * Made once; a second call leaves it as it is.
 */
import { isToolError } from "../../lib/shared/errors.js";
import type { StorageDriver } from "../../lib/storage/types.js";
import { createWorkspace } from "../../lib/workspace/registry.js";

export async function workspaceRecord(driver: StorageDriver, tenant: string, id: string): Promise<void> {
  try {
    await createWorkspace(driver, tenant, { id });
  } catch (e) {
    if (!(isToolError(e) && e.code === "ALREADY_EXISTS")) throw e;
  }
}
