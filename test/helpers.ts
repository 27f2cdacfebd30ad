/** Test helpers for the Workers project: the real app over the real (local) R2 and KV. */
import { env } from "cloudflare:workers";
import { tools as allTools } from "../functions/index.js";
import { createApp } from "../lib/api/app.js";
import type { AppDeps } from "../lib/api/deps.js";
import { randomId } from "../lib/shared/hash.js";
import { searchIndexer } from "../lib/search/indexer.js";
import { r2Driver } from "../lib/storage/drivers/r2.js";
import { workersKeyValue } from "../lib/storage/kv-workers.js";
import type { Tool } from "../lib/contract/tool.js";
import { checkOutputs } from "./support/output-check.js";

export const ADMIN = "test-admin-token";

export function testDeps(extra: Partial<AppDeps> = {}): AppDeps {
  return { storage: r2Driver(env.FILES), kv: workersKeyValue(env.KV), adminToken: ADMIN, listeners: [searchIndexer()], ...extra };
}

export type TestApp = ReturnType<typeof createApp>;

export function testApp(extra: Partial<AppDeps> = {}, tools: readonly Tool[] = allTools): TestApp {
  // Every 200 tool response is checked against its tool's output schema (test/support/output-check.ts).
  return checkOutputs(createApp(testDeps(extra), tools), tools);
}

export interface Tenant {
  app: TestApp;
  tenant: string;
  key: string;
  ws: string;
  call: (tool: string, args: unknown, session?: string) => Promise<{ status: number; body: any }>;
  /** Raw request with this tenant's key. */
  req: (path: string, init?: RequestInit) => Promise<Response>;
}

export async function admin(app: TestApp, path: string, body?: unknown, method = "POST") {
  const res = await app.request(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json()) as any };
}

/**
 * A tenant policy whose gate holds nothing: for tests of what a tool does, not of the approval gate
 * (which holds destructive calls by default: test/lib/run/pending/).
 */
export const UNGATED = { policy: { gate: [] } } as const;

/** A fresh tenant with an API key and one workspace; `policy`: the tenant's policy (PUT /v1/admin/tenants/{t}/policy). */
export async function newTenant(app: TestApp = testApp(), opts: { scopes?: string[]; policy?: Record<string, unknown> } = {}): Promise<Tenant> {
  const tenant = `t-${randomId(8)}`;
  const t = await admin(app, "/v1/admin/tenants", { id: tenant });
  if (t.status !== 201) throw new Error(`tenant: ${JSON.stringify(t.body)}`);
  if (opts.policy) {
    const p = await admin(app, `/v1/admin/tenants/${tenant}/policy`, opts.policy, "PUT");
    if (p.status !== 200) throw new Error(`policy: ${JSON.stringify(p.body)}`);
  }
  const k = await admin(app, `/v1/admin/tenants/${tenant}/keys`, opts.scopes ? { scopes: opts.scopes } : {});
  if (k.status !== 201) throw new Error(`key: ${JSON.stringify(k.body)}`);
  const key = k.body.key as string;
  const as = (key: string) => async (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string> | undefined) } });
  const req = as(key);
  // Creating a workspace needs 'write': a key without it gets its workspace from a setup key of the same tenant.
  const setupKey = opts.scopes && !opts.scopes.includes("write") ? ((await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name: "setup" })).body.key as string) : key;
  const w = await as(setupKey)("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  if (w.status !== 201) throw new Error(`workspace: ${await w.text()}`);
  const ws = "main";
  const call = async (tool: string, args: unknown, session = "s1") => {
    const res = await req(`/v1/workspaces/${ws}/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
    return { status: res.status, body: (await res.json()) as any };
  };
  return { app, tenant, key, ws, call, req };
}

/** Uploads a file through the raw files route (no session record). */
export async function upload(t: Tenant, path: string, body: string | Uint8Array): Promise<string> {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const res = await t.req(`/v1/workspaces/${t.ws}/files/${path}`, { method: "PUT", headers: { "content-length": String(bytes.length) }, body: bytes });
  if (res.status !== 200 && res.status !== 201) throw new Error(`upload ${path}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { etag: string }).etag;
}

/**
 * An execution context like the Workers runtime's: what a request hands to waitUntil is kept in
 * `later`; `settle` awaits it (and whatever that work hands on) as the runtime would after the answer.
 */
export function executionContext() {
  const later: Promise<unknown>[] = [];
  const ctx = { waitUntil: (p: Promise<unknown>) => void later.push(p), passThroughOnException: () => {}, props: {} } as unknown as ExecutionContext;
  const settle = async () => {
    while (later.length) await Promise.all(later.splice(0));
  };
  return { ctx, later, settle };
}

/** Tool calls on `app` answered as on Workers (with an execution context): the work after each answer waits in `later`. */
export function workersCalls(app: TestApp) {
  const { ctx, later, settle } = executionContext();
  const call = async (t: Tenant, tool: string, args: unknown, session = "s1") => {
    const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) }, {}, ctx);
    return { status: res.status, body: (await res.json()) as any };
  };
  return { call, later, settle, ctx };
}
