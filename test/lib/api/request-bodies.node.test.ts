/**
 * A JSON body field a route does not know is refused (400 INVALID_ARGUMENT, "Unknown field 'x'"),
 * never dropped: a dropped field does the default silently, and the defaults of these routes are
 * the dangerous ones (a policy of `{"blocked_domains": [...]}` stored as `{}`, a key asked with
 * `"scope": ["read"]` made with read, write and execute, an undo of `{"callId"}` undoing the
 * session's newest call). The rule is each body schema's `.strict()`, checked here over the whole
 * OpenAPI document (every object of every JSON request body, nested ones included) so a new route
 * cannot leave it out. Tool routes are outside it: their arguments have their own rule
 * (lib/contract/tool-args.ts: unknown arguments named with the closest known one), and the compat
 * routes take the providers' shapes. The refusal names the closest known field and the fields that
 * object takes (the route's schema, which the guard hands the validation hook).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const ADMIN = "admin-token-request-bodies";
const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, tools);

async function call(path: string, token: string, body?: unknown, method = "POST") {
  const r = await app.request(path, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: r.status, body: (await r.json()) as any };
}

type Schema = { $ref?: string; type?: string | string[]; properties?: Record<string, Schema>; additionalProperties?: unknown; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[] };

/** The places under `schema` where an object takes fields it does not name (additionalProperties absent or true). */
function openObjects(doc: { components: { schemas: Record<string, Schema> } }, schema: Schema | undefined, at: string, seen = new Set<string>()): string[] {
  if (!schema) return [];
  if (schema.$ref) {
    const name = schema.$ref.split("/").pop()!;
    if (seen.has(name)) return [];
    return openObjects(doc, doc.components.schemas[name], at, new Set([...seen, name]));
  }
  const out: string[] = [];
  if (schema.properties) {
    if (schema.additionalProperties === undefined || schema.additionalProperties === true) out.push(at);
    for (const [k, v] of Object.entries(schema.properties)) out.push(...openObjects(doc, v, `${at}.${k}`, seen));
  }
  if (schema.items) out.push(...openObjects(doc, schema.items, `${at}[]`, seen));
  for (const s of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) out.push(...openObjects(doc, s, at, seen));
  return out;
}

let key: string;

beforeAll(async () => {
  expect((await call("/v1/admin/tenants", ADMIN, { id: "acme" })).status).toBe(201);
  key = (await call("/v1/admin/tenants/acme/keys", ADMIN, { name: "agent" })).body.key;
  expect((await call("/v1/workspaces", key, { id: "w" })).status).toBe(201);
});

describe("JSON request bodies refuse the fields they do not know", () => {
  it("every object of every JSON request body in /openapi.json is closed (tool and compat routes aside)", async () => {
    const doc = (await (await app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, Schema> } };
    const open: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (path.startsWith("/v1/workspaces/{ws}/tools/") || path.startsWith("/v1/workspaces/{ws}/compat/")) continue;
      for (const [method, op] of Object.entries(ops)) open.push(...openObjects(doc, op?.requestBody?.content?.["application/json"]?.schema, `${method.toUpperCase()} ${path}`));
    }
    expect(open).toEqual([]);
  });

  it("every such body's refusal of an unknown field names the fields it takes, by every route (its schema reaches the validation hook)", async () => {
    const doc = (await (await app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, any>> };
    const manage = (await call("/v1/admin/tenants/acme/keys", ADMIN, { name: "all", scopes: ["read", "write", "execute", "network", "approve", "manage"] })).body.key;
    const params: Record<string, string> = { tenant: "acme", ws: "w" };
    const unnamed: string[] = [];
    let walked = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (path.startsWith("/v1/workspaces/{ws}/tools/") || path.startsWith("/v1/workspaces/{ws}/compat/")) continue;
      for (const [method, op] of Object.entries(ops)) {
        if (!op?.requestBody?.content?.["application/json"]) continue;
        const url = path.replace(/\{(\w+)\}/g, (_, p: string) => params[p] ?? "x");
        const r = await call(url, path.startsWith("/v1/admin/") ? ADMIN : manage, { zz_unknown: 1 }, method.toUpperCase());
        walked++;
        if (!(r.status === 400 && /Unknown field 'zz_unknown' \(known: \w/.test(r.body?.error?.message ?? ""))) unnamed.push(`${method.toUpperCase()} ${path}: ${r.status} ${r.body?.error?.message ?? ""}`);
      }
    }
    expect(walked).toBeGreaterThan(15);
    expect(unnamed).toEqual([]);
  });

  it("a policy with the web domains at the top level is refused, naming the field; the stored policy is unchanged", async () => {
    expect((await call("/v1/admin/tenants/acme/policy", ADMIN, { web: { blocked_domains: ["a.example"] } }, "PUT")).status).toBe(200);
    const r = await call("/v1/admin/tenants/acme/policy", ADMIN, { blocked_domains: ["b.example"] }, "PUT");
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    expect(r.body.error.message).toContain("Unknown field 'blocked_domains'");
    const nested = await call("/v1/admin/tenants/acme/policy", ADMIN, { web: { blocked_domain: ["b.example"] } }, "PUT");
    expect(nested.status).toBe(400);
    expect(nested.body.error.message).toContain("Unknown field 'web.blocked_domain' (did you mean 'blocked_domains'? known: ");
    expect((await call("/v1/admin/tenants/acme/policy", ADMIN, undefined, "GET")).body).toEqual({ web: { blocked_domains: ["a.example"] } });
  });

  it("a key asked with a misspelt field is not made with the defaults", async () => {
    const before = (await call("/v1/admin/tenants/acme/keys", ADMIN, undefined, "GET")).body.keys.length;
    const r = await call("/v1/admin/tenants/acme/keys", ADMIN, { name: "reader", scope: ["read"] });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain("Unknown field 'scope' (did you mean 'scopes'? known: name, scopes,");
    expect(r.body.key).toBeUndefined();
    expect((await call("/v1/admin/tenants/acme/keys", ADMIN, undefined, "GET")).body.keys.length).toBe(before);
  });

  it("an undo with a misspelt call_id undoes nothing", async () => {
    expect((await call("/v1/workspaces/w/tools/write", key, { file_path: "keep.txt", content: "kept\n" })).body.ok).toBe(true);
    const r = await call("/v1/workspaces/w/undo", key, { callId: "nope" });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain("Unknown field 'callId' (did you mean 'call_id'?");
    expect((await call("/v1/workspaces/w/tools/read", key, { file_path: "keep.txt" })).body.output).toContain("kept");
  });

  it("a custom tool with a misspelt backend field is not saved with the default", async () => {
    const manage = (await call("/v1/admin/tenants/acme/keys", ADMIN, { name: "manager", scopes: ["read", "write", "execute", "manage"] })).body.key;
    const r = await call("/v1/tools/custom", manage, { name: "acme_echo", description: "Echo.", input_schema: { type: "object" }, backend: { type: "plugin", command: "true", timout: 5 } });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain("Unknown field 'backend.timout' (did you mean 'timeout'?");
    expect((await call("/v1/tools/custom", manage, undefined, "GET")).body.tools).toEqual([]);
    // GET's answer sent back with one field changed is a definition: its times are the server's, ignored.
    expect((await call("/v1/tools/custom", manage, { name: "acme_echo", description: "Echo.", input_schema: { type: "object" }, backend: { type: "plugin", command: "true" } })).status).toBe(201);
    const got = (await call("/v1/tools/custom/acme_echo", manage, undefined, "GET")).body;
    const put = await call("/v1/tools/custom/acme_echo", manage, { ...got, description: "Echo, again.", created_at: "1999-01-01T00:00:00.000Z" }, "PUT");
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ description: "Echo, again.", created_at: got.created_at });
  });

  it("a body its handler validates itself names the closest field too (a key's rotation)", async () => {
    const made = (await call("/v1/admin/tenants/acme/keys", ADMIN, { name: "rotated", scopes: ["read", "manage"] })).body;
    const r = await call(`/v1/keys/${made.key_id}/rotate`, made.key, { grace_second: 60 });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error.message).toContain("Unknown field 'grace_second' (did you mean 'grace_seconds'? known: grace_seconds)");
  });

  it("a workspace asked with a misspelt field is not made", async () => {
    const r = await call("/v1/workspaces", key, { id: "w2", tool: ["read"] });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain("Unknown field 'tool' (did you mean 'tools'? known: id,");
    expect((await call("/v1/workspaces/w2", key, undefined, "GET")).status).toBe(404);
  });
});
