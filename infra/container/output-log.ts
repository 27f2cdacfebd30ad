/** The whole output of a run whose output was cut, kept outside the workspace's files for the agent to read (lib/sync/output-logs.ts). */
import { createReadStream, promises as fs } from "node:fs";
import { Readable } from "node:stream";
import type { SyncClient } from "../../lib/sync/types.js";

/**
 * Uploads the whole merged output of a run whose output was cut (the API keeps it beside the
 * workspace's internal objects, never in its tree, and prunes old ones). Returns its name, or
 * undefined when it could not be saved (the note then says the full output was not saved).
 */
export async function keepFullOutput(sync: SyncClient, runId: string, logPath: string): Promise<string | undefined> {
  if (!sync.putOutputLog) return undefined;
  const st = await fs.stat(logPath);
  const body = Readable.toWeb(createReadStream(logPath)) as unknown as ReadableStream<Uint8Array>;
  return sync.putOutputLog(runId, body, st.size).catch(() => undefined);
}
