/**
 * The two workspace shapes of issue #31 over one app (memory storage, the search index kept on
 * every write as in production), holding the same files: "raw" (every file PUT through the raw
 * files route: one object per file) and "imported" (a tar through the import route: packs and a
 * manifest, then an upper layer: files PUT after it, files overwritten, a file deleted).
 */
import { expect } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import type { AppDeps } from "../../../../lib/api/deps.js";
import { searchIndexer } from "../../../../lib/search/indexer.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { checkOutputs } from "../../../support/output-check.js";
import { tarOf, type Corpus, type Rng } from "./corpus.js";

const ADMIN = "differential-admin";
export type Shape = "raw" | "imported";

export interface SearchApp {
  /** Calls a tool on a workspace: status and JSON body. */
  call(ws: Shape, tool: string, args: unknown): Promise<{ status: number; body: any }>;
  /** path → modified (ms) as the workspace lists its files (the order grep and glob promise: newest first). */
  times: Record<Shape, Map<string, number>>;
}

const urlPath = (p: string) => p.split("/").map(encodeURIComponent).join("/");

export async function searchApp(corpus: Corpus, r: Rng): Promise<SearchApp> {
  const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, listeners: [searchIndexer()] } as AppDeps;
  const app = checkOutputs(createApp(deps, tools), tools);
  const req = async (path: string, init: RequestInit, auth: string) => {
    const res = await app.request(path, { ...init, headers: { authorization: `Bearer ${auth}`, ...(init.headers as Record<string, string> | undefined) } });
    return { status: res.status, body: (await res.json()) as any };
  };
  const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect((await req("/v1/admin/tenants", json({ id: "diff" }), ADMIN)).status).toBe(201);
  const key = (await req("/v1/admin/tenants/diff/keys", json({}), ADMIN)).body.key as string;
  for (const ws of ["raw", "imported"]) expect((await req("/v1/workspaces", json({ id: ws }), key)).status).toBe(201);
  const put = async (ws: Shape, path: string, bytes: Uint8Array) => {
    const res = await req(`/v1/workspaces/${ws}/files/${urlPath(path)}`, { method: "PUT", headers: { "content-length": String(bytes.length) }, body: bytes }, key);
    expect(res.status, `${ws} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
  };

  // raw: every file uploaded, in a random order (the order sets the times).
  const entries = [...corpus.files];
  const shuffled = entries.map((e) => [r.next(), e] as const).sort((a, b) => a[0] - b[0]).map(([, e]) => e);
  for (const [p, b] of shuffled) await put("raw", p, b);

  // imported: most files in the tar (some with older contents), the rest written over it; one file deleted.
  const later = new Set(shuffled.filter(() => r.next() < 0.12).map(([p]) => p));
  const stale = new Set(shuffled.filter(([p]) => !later.has(p) && r.next() < 0.05).map(([p]) => p));
  const inTar: [string, Uint8Array][] = entries.filter(([p]) => !later.has(p)).map(([p, b]) => [p, stale.has(p) ? new TextEncoder().encode("stale needle42 const\n") : b]);
  inTar.push(["gone/deleted.ts", new TextEncoder().encode("const needle42 = value;\n")]);
  const imp = await req("/v1/workspaces/imported/import", { method: "POST", headers: { "content-type": "application/octet-stream" }, body: tarOf(inTar) }, key);
  expect(imp.status, JSON.stringify(imp.body)).toBe(200);
  for (const [p, b] of shuffled) if (later.has(p) || stale.has(p)) await put("imported", p, b);
  expect((await req("/v1/workspaces/imported/files/gone/deleted.ts", { method: "DELETE" }, key)).status).toBe(200);

  const listTimes = async (ws: Shape) => {
    const times = new Map<string, number>();
    let cursor: string | undefined;
    do {
      const page = await req(`/v1/workspaces/${ws}/files/?recursive=true${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {}, key);
      for (const e of page.body.entries) if (e.type === "file") times.set(e.path, Date.parse(e.modified));
      cursor = page.body.cursor;
    } while (cursor);
    expect(times.size, ws).toBe(corpus.files.size);
    return times;
  };
  const times = { raw: await listTimes("raw"), imported: await listTimes("imported") };
  const call = (ws: Shape, tool: string, args: unknown) => req(`/v1/workspaces/${ws}/tools/${tool}`, { ...json(args), headers: { "content-type": "application/json", "x-session-id": "s1" } }, key);
  return { call, times };
}
