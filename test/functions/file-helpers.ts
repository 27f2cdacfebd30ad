/** Helpers shared by the read / write / edit / multi_edit suites (raw routes, keys, broken storage). */
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { r2Driver } from "../../lib/storage/drivers/r2.js";
import type { StorageDriver } from "../../lib/storage/types.js";
import { admin, newTenant, testApp, upload, type Tenant } from "../helpers.js";

export type CallResult = { status: number; body: any };

/** Asserts an error envelope: HTTP status, ok:false, the tool's name and the code. */
export function expectError(r: CallResult, status: number, code: string, tool?: string): any {
  expect({ status: r.status, code: r.body?.error?.code }, JSON.stringify(r.body)).toEqual({ status, code });
  expect(r.body.ok).toBe(false);
  expect(typeof r.body.error.message).toBe("string");
  expect(r.body.error.message.length).toBeGreaterThan(10);
  if (tool) expect(r.body.tool).toBe(tool);
  return r.body.error;
}

export function expectOk(r: CallResult): any {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.ok).toBe(true);
  return r.body.data;
}

/** A tool call with an explicit Authorization header (or none). */
export async function callAs(t: Tenant, auth: string | null, tool: string, args: unknown, ws = t.ws): Promise<CallResult> {
  const headers: Record<string, string> = { "content-type": "application/json", "x-session-id": "s1" };
  if (auth !== null) headers.authorization = auth;
  const res = await t.app.request(`/v1/workspaces/${ws}/tools/${tool}`, { method: "POST", headers, body: JSON.stringify(args) });
  return { status: res.status, body: await res.json() };
}

/** A tool call with a raw (possibly non-JSON) body. */
export async function callRaw(t: Tenant, tool: string, body: string, session = "s1"): Promise<CallResult> {
  const res = await t.req(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session }, body });
  return { status: res.status, body: await res.json() };
}

/** A second API key of the tenant, with the given scopes. */
export async function keyWithScopes(t: Tenant, scopes: string[]): Promise<string> {
  const k = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes });
  expect(k.status).toBe(201);
  return k.body.key as string;
}

/** The file's bytes and etag, through the raw files route. */
export async function rawGet(t: Tenant, path: string): Promise<{ status: number; bytes: Uint8Array; etag: string | null }> {
  const res = await t.req(`/v1/workspaces/${t.ws}/files/${path}`);
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()), etag: res.headers.get("etag") };
}

export async function rawText(t: Tenant, path: string): Promise<string> {
  const r = await rawGet(t, path);
  expect(r.status).toBe(200);
  return new TextDecoder().decode(r.bytes);
}

export const enc = new TextEncoder();

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A PNG-looking binary blob (signature, then a NUL-filled header). */
export function pngBytes(size = 64): Uint8Array {
  const b = new Uint8Array(size);
  b.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52]);
  for (let i = 16; i < size; i++) b[i] = (i * 37) & 0xff;
  return b;
}

const realR2 = () => r2Driver(env.FILES);
/** Keys of workspace files (t/<tenant>/w/<ws>/f/<path>), not workspace records. */
const isFileKey = (key: string) => /^t\/[^/]+\/w\/[^/]+\/f\//.test(key);

/** A tenant whose storage throws on any access to a file named boom.txt (for INTERNAL). */
export async function tenantWithBrokenFile(): Promise<Tenant> {
  const r2 = realR2();
  const broken = (key: string) => {
    if (key.endsWith("/boom.txt")) throw new Error("storage exploded: secret-detail-xyz");
  };
  const storage: StorageDriver = {
    ...r2,
    head: async (key) => (broken(key), r2.head(key)),
    get: async (key, opts) => (broken(key), r2.get(key, opts)),
    put: async (key, body, opts) => (broken(key), r2.put(key, body, opts)),
  };
  return newTenant(testApp({ storage }));
}

/**
 * A tenant whose storage lets another writer create the file first whenever a create-only
 * write reaches it: the deterministic form of "a concurrent creator won the race".
 */
export async function tenantWithCreateRace(intruder = "created by someone else\n"): Promise<Tenant> {
  const r2 = realR2();
  const storage: StorageDriver = {
    ...r2,
    put: async (key, body, opts) => {
      if (opts?.ifNoneMatch === "*" && isFileKey(key)) await r2.put(key, intruder);
      return r2.put(key, body, opts);
    },
  };
  return newTenant(testApp({ storage }));
}

/**
 * A tenant whose storage lets another writer change the file just before a conditional
 * overwrite reaches it (between the tool's checks and its write).
 */
export async function tenantWithOverwriteRace(intruder = "changed by someone else\n"): Promise<Tenant> {
  const r2 = realR2();
  const storage: StorageDriver = {
    ...r2,
    put: async (key, body, opts) => {
      if (opts?.ifMatch !== undefined && isFileKey(key)) await r2.put(key, intruder);
      return r2.put(key, body, opts);
    },
  };
  return newTenant(testApp({ storage }));
}

/** Every API key problem a tool call can have: no key, a malformed one, an unknown one. */
export async function expectAuthErrors(t: Tenant, tool: string, args: unknown): Promise<void> {
  expectError(await callAs(t, null, tool, args), 401, "UNAUTHORIZED");
  expectError(await callAs(t, "Bearer tsk_nope_0000000000000000", tool, args), 401, "UNAUTHORIZED");
  expectError(await callAs(t, `Basic ${btoa("user:pass")}`, tool, args), 401, "UNAUTHORIZED");
  // A revoked key is refused too.
  const k = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, {});
  const before = await t.app.request("/v1/workspaces", { headers: { authorization: `Bearer ${k.body.key}` } });
  expect(before.status).toBe(200);
  expect((await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys/${k.body.key_id}`, undefined, "DELETE")).status).toBe(200);
  expectError(await callAs(t, `Bearer ${k.body.key}`, tool, args), 401, "UNAUTHORIZED");
}

/** A workspace that does not exist (or is another tenant's) is NOT_FOUND. */
export async function expectMissingWorkspace(t: Tenant, tool: string, args: unknown): Promise<void> {
  const e = expectError(await callAs(t, `Bearer ${t.key}`, tool, args, "no-such-ws"), 404, "NOT_FOUND", tool);
  expect(e.message).toContain("Workspace not found");
}

/** A tenant with `path` uploaded and read in session s1 (so it may be edited). */
export async function withFile(path: string, content: string | Uint8Array, t?: Tenant): Promise<Tenant> {
  t ??= await newTenant();
  await upload(t, path, content);
  const r = await t.call("read", typeof content === "string" ? { file_path: path } : { file_path: path, encoding: "base64" });
  expect(r.status).toBe(200);
  return t;
}
