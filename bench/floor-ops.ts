/**
 * The floor: each benchmarked operation done directly on the R2 binding, in the same runtime
 * and on the same files as Toolshed, with no auth, records, index, paths or envelope.
 * Runs inside the Worker (bench/worker.ts).
 *
 * The floor keeps its own copy of the files, one object per file under FLOOR_ROOT (`seed`), as a
 * plain object store would: Toolshed folds raw uploads into packs after their answers
 * (lib/layers/background-seal.ts), so its per-file objects are gone by the time the rows run
 * (until 2026-11-28 the floor read those, and every floor cell on 1,000 and 10,000 files failed
 * or searched what was left of them).
 */

export interface FloorRequest {
  op: "seed" | "read" | "write" | "edit" | "ls" | "glob" | "grep";
  tenant: string;
  ws: string;
  path?: string;
  content?: string;
  old_string?: string;
  new_string?: string;
  /** glob: a RegExp source the relative path must match. grep: the pattern (RegExp source unless literal). */
  pattern?: string;
  literal?: boolean;
  /** grep: "files" (matching files) or "content" (matching lines); either stops after `limit` of them. */
  mode?: "files" | "content";
  limit?: number;
  /** seed: files to put (one object each). */
  files?: { path: string; text: string }[];
}

/** Where the floor's copy of a workspace's files lives in the bucket (outside every tenant's keys). */
export const FLOOR_ROOT = "bench-floor/";
const floorPrefix = (tenant: string, ws: string) => `${FLOOR_ROOT}${tenant}/${ws}/`;

/** Simultaneous R2 reads of one grep scan (Workers allow 6 open connections per request). */
const SCAN_CONCURRENCY = 6;

async function listAll(bucket: R2Bucket, prefix: string, delimiter?: string) {
  const objects: R2Object[] = [];
  const prefixes: string[] = [];
  let cursor: string | undefined;
  do {
    const r = await bucket.list({ prefix, limit: 1000, ...(delimiter ? { delimiter } : {}), ...(cursor ? { cursor } : {}) });
    objects.push(...r.objects);
    prefixes.push(...r.delimitedPrefixes);
    cursor = r.truncated ? r.cursor : undefined;
  } while (cursor);
  return { objects, prefixes };
}

export async function floorOp(bucket: R2Bucket, req: FloorRequest): Promise<Record<string, unknown>> {
  const prefix = floorPrefix(req.tenant, req.ws);
  switch (req.op) {
    case "seed": {
      const files = req.files ?? [];
      let next = 0;
      const put = async () => {
        while (next < files.length) {
          const f = files[next++]!;
          await bucket.put(prefix + f.path, f.text);
        }
      };
      await Promise.all(Array.from({ length: SCAN_CONCURRENCY }, put));
      return { put: files.length };
    }
    case "read": {
      const o = await bucket.get(prefix + req.path);
      if (!o) throw new Error(`no object ${req.path}`);
      return { bytes: (await o.text()).length };
    }
    case "write": {
      const o = await bucket.put(prefix + req.path, req.content ?? "");
      return { etag: o?.etag };
    }
    case "edit": {
      const o = await bucket.get(prefix + req.path);
      if (!o) throw new Error(`no object ${req.path}`);
      const text = await o.text();
      if (!text.includes(req.old_string!)) throw new Error("old_string not found");
      const put = await bucket.put(prefix + req.path, text.replace(req.old_string!, req.new_string!), { onlyIf: { etagMatches: o.etag } });
      if (!put) throw new Error("etag changed");
      return { etag: put.etag };
    }
    case "ls": {
      const { objects, prefixes } = await listAll(bucket, prefix + (req.path ? `${req.path}/` : ""), "/");
      return { entries: objects.length + prefixes.length };
    }
    case "glob": {
      const re = new RegExp(req.pattern!);
      const { objects } = await listAll(bucket, prefix);
      const found = objects.filter((o) => re.test(o.key.slice(prefix.length)));
      found.sort((a, b) => b.uploaded.getTime() - a.uploaded.getTime());
      return { total: found.length, first: found.slice(0, req.limit ?? 100).map((o) => o.key.slice(prefix.length)) };
    }
    case "grep":
      return grepScan(bucket, prefix, req);
  }
}

/** List every file, read each one (SCAN_CONCURRENCY reads in flight), test it; stops at `limit` lines (content) or files. */
async function grepScan(bucket: R2Bucket, prefix: string, req: FloorRequest) {
  const { objects } = await listAll(bucket, prefix);
  const re = req.literal ? null : new RegExp(req.pattern!);
  const lineMatches = (line: string) => (re ? re.test(line) : line.includes(req.pattern!));
  const limit = req.limit ?? Infinity;
  const files: string[] = [];
  let lines = 0;
  let read = 0;
  let bytes = 0;
  let next = 0;
  const worker = async () => {
    while (next < objects.length && lines < limit && (req.mode === "content" || files.length < limit)) {
      const o = objects[next++]!;
      const text = (await (await bucket.get(o.key))?.text()) ?? "";
      read++;
      bytes += text.length;
      if (req.mode === "content") {
        let hit = false;
        for (const line of text.split("\n")) {
          if (lines >= limit) break;
          if (lineMatches(line)) {
            hit = true;
            lines++;
          }
        }
        if (hit) files.push(o.key.slice(prefix.length));
      } else if (files.length < limit && (re ? text.split("\n").some((l) => re.test(l)) : text.includes(req.pattern!))) {
        files.push(o.key.slice(prefix.length));
      }
    }
  };
  await Promise.all(Array.from({ length: SCAN_CONCURRENCY }, worker));
  return { files: files.length, lines, read, bytes, ...(files.length <= 10 ? { paths: files.sort() } : {}) };
}
