/**
 * A key's tool list (preset) and a workspace's bound every route, not only tool calls (DESIGN
 * invariant 12, issue #25): route × scope × preset, read from the app's routes (servedRoutes and
 * the OpenAPI document, as access.test.ts), so a route added later is covered without touching
 * this file. A `readonly` key writes by no route: storage is compared, not just statuses.
 *
 * Keys made today cannot ask for scopes their tools do not need (key creation refuses them), so
 * the route walk uses keys stored before that rule, with every scope, written to KV as the app
 * stores them: the guard must bound them too.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createAuthBackoff } from "../../../../lib/api/auth/backoff.js";
import { SCOPES, type Scope } from "../../../../lib/contract/caller.js";
import { randomId, sha256Hex } from "../../../../lib/shared/hash.js";
import { docPathOf, servedRoutes, type ServedRoute } from "../../../../lib/api/routes/served-routes.js";
import { PRESET_NAMES, scopesOfList } from "../../../../lib/run/toolset.js";
import type { PresetName } from "../../../../lib/layout/workspace-meta.js";
import { admin, testApp, type TestApp } from "../../../helpers.js";
import { routeRequest } from "../../../support/route-request.js";
import { tar } from "../../archive/archives.js";
import { compat } from "./compat-helpers.js";

const app: TestApp = testApp({ authBackoff: createAuthBackoff({ freeFailures: Infinity }) });

/** What each preset lets a key do, by any route (the decision, stated by hand). */
const MAY: Record<PresetName, readonly Scope[]> = {
  readonly: ["read"],
  coding: ["read", "write", "execute"],
  web: ["network"],
  all: SCOPES,
  none: [],
};

let doc: any;
let tenant: string;
/** preset → a key with that tool list and EVERY scope, as stored before key creation refused that. */
const stored = new Map<PresetName, string>();
let unlimited: string;

async function storedKey(tools: PresetName): Promise<string> {
  const keyId = randomId(10);
  const key = `tsk_${keyId}_${randomId(32)}`;
  const record = { key_id: keyId, tenant, name: `stored-${tools}`, scopes: [...SCOPES], tools, created_at: new Date().toISOString() };
  await env.KV.put(`apikey/${await sha256Hex(key)}`, JSON.stringify(record));
  await env.KV.put(`keyid/${tenant}/${keyId}`, await sha256Hex(key));
  return key;
}

/** Everything of the tenant in object storage (key and etag), and KV's names: a write by any route shows here. */
async function snapshot(): Promise<string> {
  const objects: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix: `t/${tenant}/`, ...(cursor ? { cursor } : {}) });
    // A refused call may add its audit entry (lib/run/audit/, test/lib/api/routes/audit.test.ts), nothing else.
    objects.push(...page.objects.filter((o) => !/^t\/[^/]+\/(w\/[^/]+\/x\/)?audit\//.test(o.key)).map((o) => `${o.key} ${o.etag}`));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  const kv: string[] = [];
  let kvCursor: string | undefined;
  do {
    const page = await env.KV.list({ ...(kvCursor ? { cursor: kvCursor } : {}) });
    // Session records (rec/...: which version a session read) are hints every read leaves; a write also changes R2.
    kv.push(...page.keys.map((k) => k.name).filter((n) => !n.startsWith("rec/")));
    kvCursor = page.list_complete ? undefined : page.cursor;
  } while (kvCursor);
  return [...objects.sort(), "--", ...kv.sort()].join("\n");
}

async function call(route: ServedRoute, key: string, ws = "probe") {
  const r = routeRequest(doc, route, { ws, tenant, key_id: "nope", tool: "nope", path: "secret.txt", id: "probe", session: "s1" });
  const res = await app.request(r.url, { method: r.method, headers: { ...r.headers, authorization: `Bearer ${key}` }, ...(r.body !== undefined ? { body: r.body } : {}) });
  const text = await res.text();
  const body = text.startsWith("{") ? (JSON.parse(text) as any) : undefined;
  return { status: res.status, error: body?.error as { code: string; message: string; details: Record<string, unknown> } | undefined, text };
}

/** Workspace "probe" (no tool list) with secret.txt and one checkpoint; "ro" limited to readonly, loaded at creation. */
async function ensureFixture() {
  const h = { authorization: `Bearer ${unlimited}` };
  await app.request("/v1/workspaces", { method: "POST", headers: { ...h, "content-type": "application/json" }, body: JSON.stringify({ id: "probe" }) });
  await app.request("/v1/workspaces/probe/files/secret.txt", { method: "PUT", headers: { ...h, "content-length": "6" }, body: "secret" });
  await app.request("/v1/workspaces?id=ro&tools=readonly", { method: "POST", headers: { ...h, "content-type": "application/x-tar" }, body: tar([{ name: "secret.txt", body: "secret" }]) });
}

const tenantRoutes = () => servedRoutes(app).filter((r) => r.policy?.access.auth === "tenant");
const scopeOf = (r: ServedRoute) => (r.policy!.access as { scope: Scope | "any" }).scope;
const nameOf = (r: ServedRoute) => `${r.method} ${docPathOf(r)}`;
/** The guard refused the route for its scope (not a tool's own refusal further in). */
const refusedForScope = (r: { status: number; error?: { details: Record<string, unknown> } }) => r.status === 403 && r.error?.details.needed !== undefined;

beforeAll(async () => {
  doc = await (await app.request("/openapi.json")).json();
  tenant = `t-kx-${randomId(8)}`;
  expect((await admin(app, "/v1/admin/tenants", { id: tenant })).status).toBe(201);
  unlimited = (await admin(app, `/v1/admin/tenants/${tenant}/keys`, { scopes: [...SCOPES] })).body.key;
  for (const p of PRESET_NAMES) stored.set(p, await storedKey(p));
  await ensureFixture();
});

describe("what each preset may do", () => {
  it("is the scopes its tools need (the table above)", () => {
    for (const p of PRESET_NAMES) expect([...(scopesOfList(p, tools) ?? SCOPES)].sort(), p).toEqual([...MAY[p]].sort());
  });
});

describe("route × scope × preset: a key stored with every scope acts only with its tools' scopes", () => {
  for (const preset of PRESET_NAMES) {
    it(`${preset}: every tenant route the app serves`, async () => {
      const key = stored.get(preset)!;
      const walked: string[] = [];
      for (const route of tenantRoutes()) {
        const scope = scopeOf(route);
        if (scope === "any") continue; // each tool call is checked by itself: below
        await ensureFixture();
        const before = await snapshot();
        const r = await call(route, key);
        walked.push(nameOf(route));
        if (MAY[preset].includes(scope)) {
          expect(refusedForScope(r), `${nameOf(route)} (${scope}) with a ${preset} key: ${r.status} ${r.text.slice(0, 300)}`).toBe(false);
          expect([401, 429], nameOf(route)).not.toContain(r.status);
          continue;
        }
        expect(r.status, `${nameOf(route)} (${scope}) with a ${preset} key: ${r.text.slice(0, 300)}`).toBe(403);
        if (route.method !== "HEAD") {
          expect(r.error!.code).toBe("PERMISSION_DENIED");
          expect(r.error!.details).toMatchObject({ needed: scope, refused_by: "key", key_tools: preset });
          expect(r.error!.message).toContain(`preset '${preset}'`);
        }
        expect(await snapshot(), `${nameOf(route)}: storage after the refused call`).toBe(before);
      }
      // The walk reached the doors of the issue, read from the app.
      for (const k of ["PUT /v1/workspaces/{ws}/files/{path}", "DELETE /v1/workspaces/{ws}/files/{path}", "DELETE /v1/workspaces/{ws}", "POST /v1/workspaces/{ws}/checkpoints", "POST /v1/workspaces/{ws}/checkpoints/{id}/restore", "POST /v1/workspaces/{ws}/undo", "POST /v1/workspaces/{ws}/import", "POST /v1/workspaces/{ws}/pending/{id}", "POST /v1/tools/custom"]) expect(walked, k).toContain(k);
    });
  }
});

describe("a readonly key writes by no route", () => {
  it("every route the app serves (public, tenant and any-key doors) leaves storage as it was, with a stored all-scope readonly key and a made one", async () => {
    const made = await admin(app, `/v1/admin/tenants/${tenant}/keys`, { tools: "readonly" });
    expect(made.body.scopes).toEqual(["read"]);
    await ensureFixture();
    const before = await snapshot();
    for (const key of [stored.get("readonly")!, made.body.key]) {
      for (const route of servedRoutes(app)) {
        const r = await call(route, key);
        expect(await snapshot(), `${nameOf(route)}: ${r.status} ${r.text.slice(0, 200)}`).toBe(before);
      }
    }
  });

  it("and by no tool door: each writing tool over its route, MCP tools/call and the compat routes is refused, nothing stored", async () => {
    const key = stored.get("readonly")!;
    await ensureFixture();
    const before = await snapshot();
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) => app.request(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
    const writes: [string, unknown][] = [["write", { file_path: "w.txt", content: "x" }], ["edit", { file_path: "secret.txt", old_string: "secret", new_string: "x" }], ["delete", { path: "secret.txt" }], ["move", { source: "secret.txt", destination: "m.txt" }], ["apply_patch", { patch: "*** Begin Patch\n*** Add File: p.txt\n+x\n*** End Patch" }], ["todo_write", { todos: [{ content: "x", status: "pending" }] }]];
    for (const [tool, args] of writes) {
      const r = await post(`/v1/workspaces/probe/tools/${tool}`, args);
      expect(r.status, tool).toBe(403);
      const mcp = (await (await post("/v1/workspaces/probe/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: args } }, { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" })).json()) as any;
      expect(mcp.result.content[0].text, tool).toMatch(/^PERMISSION_DENIED/);
    }
    const req = async (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } });
    const door = { req, ws: "probe" };
    expect((await compat(door, "anthropic", "str_replace_based_edit_tool", { command: "create", path: "/c.txt", file_text: "x" })).code).toBe("PERMISSION_DENIED");
    expect((await compat(door, "anthropic", "str_replace_based_edit_tool", { command: "str_replace", path: "/secret.txt", old_str: "secret", new_str: "x" })).code).toBe("PERMISSION_DENIED");
    expect((await compat(door, "openai", "apply_patch", { type: "apply_patch_call", call_id: "c1", operation: { type: "create_file", path: "p.txt", diff: "+x\n" } })).code).toBe("PERMISSION_DENIED");
    expect((await compat(door, "openai", "shell", { type: "shell_call", call_id: "c2", action: { commands: ["touch s.txt"] } })).code).toBe("PERMISSION_DENIED");
    expect(await snapshot()).toBe(before);
  });
});

describe("a workspace's tools bound every route bound to it, for every key", () => {
  it("a readonly workspace: an unlimited key reads it, and writes, checkpoints, restores, undoes and imports by no route", async () => {
    let walked = 0;
    for (const route of tenantRoutes()) {
      const access = route.policy!.access as { scope: Scope | "any"; workspace?: boolean };
      if (!access.workspace || access.scope === "any") continue;
      await ensureFixture();
      const before = await snapshot();
      const r = await call(route, unlimited, "ro");
      walked++;
      // manage on a workspace reads its audit log (lib/api/routes/audit.ts): a readonly workspace has one too.
      if (access.scope === "read" || access.scope === "approve" || access.scope === "manage") {
        expect(refusedForScope(r), `${nameOf(route)}: ${r.status} ${r.text.slice(0, 300)}`).toBe(false);
        continue;
      }
      expect(r.status, `${nameOf(route)} (${access.scope}) on a readonly workspace: ${r.text.slice(0, 300)}`).toBe(403);
      if (route.method !== "HEAD") expect(r.error!.details).toMatchObject({ needed: access.scope, refused_by: "workspace", workspace_tools: "readonly" });
      expect(await snapshot(), `${nameOf(route)}: storage after the refused call`).toBe(before);
    }
    expect(walked).toBeGreaterThan(20);
  });

  it("such a workspace is loaded when it is made: ?tools= with an archive body (a bad name: INVALID_ARGUMENT, nothing made)", async () => {
    const h = { authorization: `Bearer ${unlimited}`, "content-type": "application/x-tar" };
    const made = await app.request("/v1/workspaces?id=ro2&tools=readonly,bash", { method: "POST", headers: h, body: tar([{ name: "a.txt", body: "a" }]) });
    expect(made.status, await made.clone().text()).toBe(201);
    expect(((await made.json()) as any).tools).toEqual(["readonly", "bash"]);
    const got = await app.request("/v1/workspaces/ro2/files/a.txt", { headers: { authorization: `Bearer ${unlimited}` } });
    expect(await got.text()).toBe("a");
    const before = await snapshot();
    const bad = await app.request("/v1/workspaces?id=ro3&tools=redonly", { method: "POST", headers: h, body: tar([{ name: "a.txt", body: "a" }]) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toContain("Did you mean 'readonly'");
    expect(await snapshot()).toBe(before);
  });
});

describe("key creation", () => {
  it("refuses scopes beyond what the key's tools need, naming them and what to do; derives the default; stores nothing when refused", async () => {
    const before = await snapshot();
    const cases: [unknown, Scope[], RegExp][] = [
      ["readonly", ["read", "write"], /'write' exceed.*preset 'readonly'.*\(read\).*Ask for scopes \["read"\]/],
      ["readonly", [...SCOPES], /'write', 'execute', 'network', 'approve', 'manage' exceed/],
      ["coding", ["read", "write", "execute", "network"], /'network' exceed.*"web" for network/],
      ["web", ["read", "network"], /'read' exceed/],
      [["read", "grep"], ["read", "approve"], /'approve' exceed.*only a key with tools "all"/],
    ];
    for (const [tools, scopes, message] of cases) {
      const r = await admin(app, `/v1/admin/tenants/${tenant}/keys`, { tools, scopes });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error.code).toBe("INVALID_ARGUMENT");
      expect(r.body.error.message).toMatch(message);
    }
    const none = await admin(app, `/v1/admin/tenants/${tenant}/keys`, { tools: "web" });
    expect(none.status).toBe(400);
    expect(none.body.error.message).toContain('Give scopes ["network"] explicitly');
    expect(await snapshot()).toBe(before);
    const derived: [unknown, Scope[]][] = [["readonly", ["read"]], ["coding", ["read", "write", "execute"]], [["coding", "web"], ["read", "write", "execute"]], ["all", ["read", "write", "execute"]]];
    for (const [tools, scopes] of derived) expect((await admin(app, `/v1/admin/tenants/${tenant}/keys`, { tools })).body.scopes, JSON.stringify(tools)).toEqual(scopes);
    const fits = await admin(app, `/v1/admin/tenants/${tenant}/keys`, { tools: ["coding", "web"], scopes: ["read", "write", "execute", "network"] });
    expect(fits.status).toBe(201);
    expect((await admin(app, `/v1/admin/tenants/${tenant}/keys`, { scopes: ["read", "approve"] })).status).toBe(201);
  });
});
