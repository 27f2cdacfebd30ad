/**
 * The server side of POST /v1/sync/fetch (frames: sync-batch.ts). Two request forms:
 *
 *   {paths}          every file read through the merged view, one by one (HEAD + GET of a lower file);
 *   {paths, etags}   the etags the runner listed, one per path. Files still at that version in the
 *                    lower layer (a packed workspace: after an import or checkpoint) come from their
 *                    packs in a few coalesced range reads, after one LIST of the upper layer over the
 *                    batch's key range (lib/layers/layered-driver.ts stillLower / readMany); every
 *                    other file is read as in the first form.
 *
 * Each frame carries the etag of the bytes it holds, never the one asked for: a file changed or
 * deleted after the listing comes as it is now (or missing). A write landing between that LIST and
 * the range read is sent as the lower version under the lower etag, which is safe: a write-back
 * of it is If-Match that etag, which the newer upper object refuses (a conflict, never a lost write).
 * Keys are built from the token's tenant and workspace only (fileKey) and read through that
 * workspace's own manifest; pack ids never leave the server.
 */
import { ToolError } from "../errors.js";
import { fileKey } from "../paths.js";
import type { StorageDriver } from "../storage/types.js";
import { hasReadMany } from "../layers/layered-driver.js";
import { BATCH_MAX_FILE_BYTES, BATCH_TARGET_BYTES, batchStream, parseBatchRequest, readBatchFile, type BatchFile } from "./sync-batch.js";

/** Bytes of one batch read from packs at once (the rest of the batch is read file by file). */
const PACKED_BUDGET = 2 * BATCH_TARGET_BYTES;

export interface FetchRequest {
  paths: string[];
  /** The etags the runner listed, one per path; null in the old form. */
  etags: string[] | null;
}

/** A fetch request from the wire, checked. Throws INVALID_ARGUMENT. */
export function parseFetchRequest(body: unknown): FetchRequest {
  const paths = parseBatchRequest(body);
  const etags = (body as { etags?: unknown }).etags;
  if (etags === undefined) return { paths, etags: null };
  if (!Array.isArray(etags) || etags.length !== paths.length || !etags.every((e) => typeof e === "string" && e.length <= 256)) {
    throw new ToolError("INVALID_ARGUMENT", `etags must be an array of ${paths.length} strings (the etag listed for each path, "" when unknown), or left out.`);
  }
  return { paths, etags };
}

/** The frames of one fetch, from workspace (tenant, ws)'s files as `driver` sees them. */
export async function fetchBatch(driver: StorageDriver, tenant: string, ws: string, req: FetchRequest): Promise<ReadableStream<Uint8Array>> {
  const keys = req.paths.map((p) => fileKey(tenant, ws, p));
  const readOne = (i: number) => readBatchFile(driver, keys[i]!, req.paths[i]!);
  const packed = new Map<number, BatchFile>();
  if (req.etags && hasReadMany(driver)) {
    const items = keys.map((key, i) => ({ key, etag: req.etags![i]! }));
    const sizes = await driver.stillLower(items);
    const chosen: number[] = [];
    let budget = PACKED_BUDGET;
    sizes.forEach((size, i) => {
      if (size === null || size > BATCH_MAX_FILE_BYTES || size > budget) return;
      budget -= size;
      chosen.push(i);
    });
    const bytes = await driver.readMany(chosen.map((i) => items[i]!));
    chosen.forEach((i, j) => {
      const b = bytes[j];
      if (b) packed.set(i, { path: req.paths[i]!, etag: items[i]!.etag, size: b.length, bytes: b });
    });
  }
  return batchStream(req.paths, async (_p, i) => packed.get(i) ?? readOne(i));
}
