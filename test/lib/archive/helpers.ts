/** Shared by the archive tests: requests, and what a workspace holds in storage. */
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { Tenant } from "../../helpers.js";
import { readTarGz } from "../../support/tar-entries.js";

export async function importReq(t: Tenant, body: Uint8Array | ReadableStream<Uint8Array>, query = "", headers: Record<string, string> = {}, ws = t.ws) {
  const res = await t.req(`/v1/workspaces/${ws}/import${query}`, { method: "POST", headers: { "content-type": "application/octet-stream", ...(body instanceof Uint8Array ? { "content-length": String(body.length) } : {}), ...headers }, body });
  return { status: res.status, body: (await res.json()) as any };
}

export async function exportReq(t: Tenant, query = "", headers: Record<string, string> = {}, ws = t.ws) {
  return t.req(`/v1/workspaces/${ws}/export${query}`, { headers });
}

/** path → bytes of every file of a workspace, read straight from R2. */
export async function files(tenant: string, ws: string): Promise<Map<string, Uint8Array>> {
  const prefix = `t/${tenant}/w/${ws}/f/`;
  const out = new Map<string, Uint8Array>();
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) {
      const r = await env.FILES.get(o.key);
      out.set(o.key.slice(prefix.length), new Uint8Array(await r!.arrayBuffer()));
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out;
}

/** A workspace's files as the API exports them: path → bytes (the import writes packs, so storage holds no object per file). */
export const workspaceFiles = async (t: Tenant, ws = t.ws) => untarGz(await exportReq(t, "", {}, ws));

/** Every object key (with etag) under a tenant: storage as a whole, for "unchanged" checks. A refused call's audit entry (docs/audit.md) is left out: it is the one write a refusal makes. */
export async function snapshot(tenant: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix: `t/${tenant}/`, ...(cursor ? { cursor } : {}) });
    out.push(...page.objects.filter((o) => !/\/audit\//.test(o.key)).map((o) => `${o.key} ${o.etag}`));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out.sort();
}

export async function countObjects(prefix: string): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix, ...(cursor ? { cursor } : {}) });
    n += page.objects.filter((o) => !/\/audit\//.test(o.key)).length; // audit entries are not what these counts are about
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return n;
}

export const text = (b: Uint8Array | undefined) => (b ? new TextDecoder().decode(b) : undefined);

/** Reads a tar.gz response into name → bytes of its files with the library's own reader. */
export async function untarGz(res: Response): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for (const e of await tarEntries(res)) if (e.kind === "file") out.set(e.name, e.bytes);
  return out;
}

export type { TarListing } from "../../support/tar-entries.js";

/** Every entry of a tar.gz response in archive order: name, kind, mode, link target, bytes. */
export const tarEntries = (res: Response) => readTarGz(res.body!);

/** Text files of 800 KB each: six of them pass the pack import's 4 MiB batch, so an index segment is written before the archive ends. */
export const bigText = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `big/t${i}.txt`, body: `line ${i} needle\n`.padEnd(16, "-").repeat(50_000) }));

/** Imports `body`, expects `status`, and expects every object of the tenant (with its etag) as before: no pack, manifest, segment or spool left. */
export async function expectRefusedUnchanged(t: Tenant, body: Uint8Array | ReadableStream<Uint8Array>, status: number) {
  const before = await snapshot(t.tenant);
  const r = await importReq(t, body);
  expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(status);
  expect(await snapshot(t.tenant)).toEqual(before);
  return r.body.error as { code: string; message: string; details: Record<string, unknown> };
}
