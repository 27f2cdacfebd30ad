/**
 * The server side of POST /v1/sync/fetch (frames: lib/sync/batch.ts). Two request forms:
 *
 *   {paths}          every file read through the merged view, one by one (HEAD + GET of a lower file);
 *   {paths, etags}   the etags the runner listed, one per path. Files still at that version in the
 *                    lower layer (a packed workspace: after an import or checkpoint) come from their
 *                    packs, runs of neighbours in one range read each, after one LIST of the upper
 *                    layer over the batch's key range (lib/layers/layered-driver.ts stillLower /
 *                    lowerReads); every other file is read as in the first form.
 *
 * The answer streams: frames go out as their reads complete, in the order asked, or (`order: "any"`,
 * what the runner sends) packed files first by pack and offset, so that neighbours in a pack make
 * one range read whatever the order of their paths (an archive's order need not be the paths'),
 * then the rest as asked. Reads are
 * started only while the bytes read and not yet taken by the connection stay within a budget
 * (FETCH_BUFFER_BYTES), so a batch of 1,000 files never sits whole in a Worker's memory. At most
 * FETCH_MAX_SINGLE files are read one by one per answer; the others of that kind come back
 * `later` (the runner asks for them again), so a request's storage calls stay bounded.
 *
 * Each frame carries the etag of the bytes it holds, never the one asked for: a file changed or
 * deleted after the listing comes as it is now (or missing). A write landing between that LIST and
 * the range read is sent as the lower version under the lower etag, which is safe: a write-back
 * of it is If-Match that etag, which the newer upper object refuses (a conflict, never a lost write).
 * Keys are built from the token's tenant and workspace only (fileKey) and read through that
 * workspace's own manifest; pack ids never leave the server.
 */
import { ToolError } from "../shared/errors.js";
import { fileKey } from "../layout/paths.js";
import type { StorageDriver } from "../storage/types.js";
import { hasLowerRef, hasReadMany } from "../layers/layered-driver.js";
import { BATCH_MAX_FILE_BYTES, FETCH_MAX_SINGLE, encodeFrame, parseBatchRequest, readBatchFile, type BatchFile } from "./batch.js";

/**
 * Bytes an answer holds at most: read from storage and not yet taken by the connection. A runner
 * keeps 6 answers in flight (infra/container/download.ts): 48 MiB if one isolate serves them all,
 * well within a Worker's 128 MB.
 */
export const FETCH_BUFFER_BYTES = 8 * 1024 * 1024;
/** Reads in flight per answer. */
const PARALLEL = 6;

export interface FetchRequest {
  paths: string[];
  /** The etags the runner listed, one per path; null in the old form. */
  etags: string[] | null;
  /** The asker takes frames in any order (`order: "any"`): packed files then go in pack order. */
  anyOrder?: boolean;
}

/** A fetch request from the wire, checked. Throws INVALID_ARGUMENT. */
export function parseFetchRequest(body: unknown): FetchRequest {
  const paths = parseBatchRequest(body);
  const etags = (body as { etags?: unknown }).etags;
  const anyOrder = (body as { order?: unknown }).order === "any";
  if (etags === undefined) return { paths, etags: null, anyOrder };
  if (!Array.isArray(etags) || etags.length !== paths.length || !etags.every((e) => typeof e === "string" && e.length <= 256)) {
    throw new ToolError("INVALID_ARGUMENT", `etags must be an array of ${paths.length} strings (the etag listed for each path, "" when unknown), or left out.`);
  }
  return { paths, etags, anyOrder };
}

/** A consecutive run of the request's frames and what reading them holds in memory (at most). */
interface Job {
  bytes: number;
  run(): Promise<BatchFile[]>;
}

/** The frames of one fetch, from workspace (tenant, ws)'s files as `driver` sees them, holding at most `bufferBytes` at once. */
export async function fetchBatch(driver: StorageDriver, tenant: string, ws: string, req: FetchRequest, bufferBytes = FETCH_BUFFER_BYTES): Promise<ReadableStream<Uint8Array>> {
  const keys = req.paths.map((p) => fileKey(tenant, ws, p));
  const n = keys.length;
  // The order frames go out in (indices into the request): as asked, or packed files by pack and offset first.
  let order = req.paths.map((_, i) => i);
  const packedAt = new Map<number, Job & { count: number }>(); // position in `order` → the read starting there
  if (req.etags && hasReadMany(driver)) {
    const items = keys.map((key, i) => ({ key, etag: req.etags![i]! }));
    const sizes = await driver.stillLower(items);
    const wanted = items.map((it, i) => (sizes[i] !== null && sizes[i]! <= BATCH_MAX_FILE_BYTES ? it : null));
    if (req.anyOrder && hasLowerRef(driver)) order = packOrder(wanted.map((it) => it && driver.lowerRef(it.key)));
    // Several reads in flight within the budget: each spans at most a quarter of it.
    for (const r of driver.lowerReads(order.map((i) => wanted[i]!), Math.max(1, Math.floor(bufferBytes / 4)))) {
      const idx = r.items.map((pos) => order[pos]!);
      packedAt.set(r.items[0]!, {
        count: r.items.length,
        bytes: r.bytes,
        run: async () => (await r.read()).map((bytes, j) => ({ path: req.paths[idx[j]!]!, etag: items[idx[j]!]!.etag, size: bytes.length, bytes })),
      });
    }
  }
  const jobs: Job[] = [];
  let singles = 0;
  for (let pos = 0; pos < n; ) {
    const packed = packedAt.get(pos);
    if (packed) {
      jobs.push(packed);
      pos += packed.count;
      continue;
    }
    const i = order[pos++]!;
    const path = req.paths[i]!;
    if (++singles > FETCH_MAX_SINGLE) jobs.push({ bytes: 0, run: async () => [{ path, later: true }] });
    else jobs.push({ bytes: BATCH_MAX_FILE_BYTES, run: async () => [await readBatchFile(driver, keys[i]!, path)] });
  }
  return frameStream(jobs, bufferBytes);
}

/** Indices with a lower place first, by pack (in order of first appearance) and offset; the rest after, as asked. */
function packOrder(refs: ({ pack: string | null; offset: number } | null)[]): number[] {
  const packs = new Map<string | null, number>();
  for (const r of refs) if (r && !packs.has(r.pack)) packs.set(r.pack, packs.size);
  const rank = (i: number) => (refs[i] ? packs.get(refs[i]!.pack)! : packs.size);
  return refs.map((_, i) => i).sort((a, b) => rank(a) - rank(b) || (refs[a] && refs[b] ? refs[a]!.offset - refs[b]!.offset : a - b));
}

/**
 * Frames of the jobs in order. A job starts only while the bytes of jobs started and not yet
 * taken by the reader stay within `budget` (one job always may start). With the stream's
 * high-water mark of one chunk, pull runs only once the reader took what was queued before.
 */
function frameStream(jobs: Job[], budget: number): ReadableStream<Uint8Array> {
  const started: { bytes: number; files: Promise<BatchFile[]> }[] = [];
  let next = 0;
  let held = 0;
  let queued = 0;
  const top = () => {
    while (next < jobs.length && started.length < PARALLEL && (held === 0 || held + jobs[next]!.bytes <= budget)) {
      const job = jobs[next++]!;
      held += job.bytes;
      const files = job.run();
      files.catch(() => {}); // awaited in order below; an answer cut short must not leave it unhandled
      started.push({ bytes: job.bytes, files });
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      held -= queued; // the reader took what was queued
      queued = 0;
      top();
      const job = started.shift();
      if (!job) return controller.close();
      const files = await job.files;
      queued = job.bytes;
      for (const f of files) controller.enqueue(encodeFrame(f));
      top();
    },
  });
}
