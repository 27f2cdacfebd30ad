/** Helpers shared by the ls, delete, move and copy tests. */
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { fileKey } from "../../lib/layout/paths.js";
import type { StorageDriver } from "../../lib/storage/types.js";
import { newTenant, upload, type Tenant } from "../helpers.js";

/** Calls a tool in any workspace id with this tenant's key (for isolation tests). */
export async function callIn(t: Tenant, ws: string, tool: string, args: unknown, session = "s1") {
  const res = await t.req(`/v1/workspaces/${ws}/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
  return { status: res.status, body: (await res.json()) as any };
}

/** The raw bytes of a file (GET /files), or null when it does not exist. */
export async function download(t: Tenant, path: string, ws = t.ws): Promise<Uint8Array | null> {
  const res = await t.req(`/v1/workspaces/${ws}/files/${path.split("/").map(encodeURIComponent).join("/")}`);
  if (res.status === 404) {
    await res.arrayBuffer();
    return null;
  }
  expect(res.status).toBe(200);
  return new Uint8Array(await res.arrayBuffer());
}

export async function text(t: Tenant, path: string, ws = t.ws): Promise<string | null> {
  const b = await download(t, path, ws);
  return b === null ? null : new TextDecoder().decode(b);
}

/** Every file of a workspace as path → content (through ls recursive + GET). */
export async function snapshot(t: Tenant, ws = t.ws): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  let cursor: string | undefined;
  do {
    const r = await callIn(t, ws, "ls", { recursive: true, show_hidden: true, ...(cursor ? { cursor } : {}) });
    expect(r.status).toBe(200);
    for (const e of r.body.data.entries) if (e.type === "file") out[e.path] = (await text(t, e.path, ws))!;
    cursor = r.body.data.cursor ?? undefined;
  } while (cursor);
  return out;
}

export async function uploadAll(t: Tenant, files: Record<string, string | Uint8Array>): Promise<void> {
  for (const [p, c] of Object.entries(files)) await upload(t, p, c);
}

/** Tenant A with a second workspace "secret" holding files, and tenant B on the same app. */
export async function twoTenants(files: Record<string, string>) {
  const a = await newTenant();
  const res = await a.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "secret" }) });
  expect(res.status).toBe(201);
  for (const [p, c] of Object.entries(files)) {
    const bytes = new TextEncoder().encode(c);
    const put = await a.req(`/v1/workspaces/secret/files/${p}`, { method: "PUT", headers: { "content-length": String(bytes.length) }, body: bytes });
    expect(put.status).toBe(201);
  }
  const b = await newTenant(a.app);
  return { a, b };
}

export function expectError(r: { status: number; body: any }, code: string, status: number) {
  expect(r.body.ok, JSON.stringify(r.body)).toBe(false);
  expect(r.body.error.code, JSON.stringify(r.body)).toBe(code);
  expect(r.status).toBe(status);
}

/** A storage driver whose put first runs `before(key)` (to fail, or to race a write in). */
export function interceptPuts(base: StorageDriver, before: (key: string) => Promise<void>): StorageDriver {
  return { ...base, put: async (key, body, opts) => { await before(key); return base.put(key, body, opts); } };
}

/** 1,000-odd files written straight to the bucket (uploads through HTTP would be slow). */
export async function seedMany(t: Tenant, dir: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 500) {
    await Promise.all(Array.from({ length: Math.min(500, n - i) }, (_, j) => env.FILES.put(fileKey(t.tenant, t.ws, `${dir}/f${String(i + j).padStart(5, "0")}`), "x")));
  }
}
