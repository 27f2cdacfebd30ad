/** The whole output of a run whose output was cut, kept in the workspace for the agent to read. */
import { createReadStream, promises as fs } from "node:fs";
import { Readable } from "node:stream";
import type { SyncClient } from "../../lib/exec/sync-types.js";
import type { Slot } from "./tree.js";

/** Full logs of cut output kept in the workspace: the newest ones, the older deleted. */
export const KEEP_OUTPUT_LOGS = 20;
const OUTPUT_DIR = ".toolshed/output/";
const OUTPUT_LOG = /^\.toolshed\/output\/\d{8}T\d{9}Z-r[0-9a-f]{15}\.log$/;

/**
 * Uploads the whole merged output of a run whose output was cut, as
 * `.toolshed/output/<UTC time to the millisecond>-<run>.log`, and deletes (conditionally) the logs beyond the
 * newest KEEP_OUTPUT_LOGS. Returns its path, or undefined when the upload failed.
 */
export async function keepFullOutput(slot: Slot, sync: SyncClient, runId: string, logPath: string): Promise<string | undefined> {
  const stamp = new Date().toISOString().replace(/[-:.]/g, ""); // 20261123T015959123Z
  const path = `${OUTPUT_DIR}${stamp}-${runId}.log`;
  const st = await fs.stat(logPath);
  const body = Readable.toWeb(createReadStream(logPath)) as unknown as ReadableStream<Uint8Array>;
  const r = await sync.put(path, body, { size: st.size }).catch(() => null);
  if (!r?.ok) return undefined;
  slot.view.set({ path, etag: r.etag, size: st.size });
  slot.synced = null; // storage has a file the slot lacks: the next run downloads it
  const logs = [...slot.view.values()].filter((e) => OUTPUT_LOG.test(e.path)).sort((a, b) => (a.path < b.path ? 1 : -1));
  for (const old of logs.filter((e) => e.path !== path).slice(KEEP_OUTPUT_LOGS - 1)) {
    const d = await sync.delete(old.path, { ifMatch: old.etag }).catch(() => null);
    if (d?.ok) slot.view.delete(old.path);
  }
  return path;
}
