/**
 * The audit log (issue #28 §4, docs/audit.md), with real (local) R2 and KV: an entry for every
 * mutating call kind and door, no file content in any entry, restore keeps the log and is an
 * entry, another tenant gets 404, paging by since and cursor.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { tools as allTools } from "../../../../functions/index.js";
import { SCOPES } from "../../../../lib/contract/caller.js";
import { docPathOf, servedRoutes } from "../../../../lib/api/routes/served-routes.js";
import { randomId } from "../../../../lib/shared/hash.js";
import { routeRequest } from "../../../support/route-request.js";
import { ADMIN, admin, newTenant, testApp, upload, type Tenant, type TestApp } from "../../../helpers.js";
import { tar } from "../../archive/archives.js";
import { importReq } from "../../archive/helpers.js";
import { answer, approverKey, held, setPolicy } from "../../run/pending/approval-helpers.js";
import { compat } from "./compat-helpers.js";

type Entry = { id: string; at: string; tenant: string; workspace?: string; key_id: string; session?: string; door: string; tool?: string; route?: string; args: Record<string, unknown>; outcome: { ok: boolean; status: number; code?: string; replayed?: true }; files?: string[]; call_id?: string };

/** A key that may read the log (manage) besides the agent's. */
async function auditorKey(app: TestApp, tenant: string): Promise<string> {
  const k = await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name: "auditor", scopes: ["read", "manage"] });
  expect(k.status).toBe(201);
  return k.body.key as string;
}

async function page(t: Tenant, key: string, path: string) {
  const res = await t.app.request(path, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as any };
}

/** The whole log, page by page. */
async function wholeLog(t: Tenant, key: string, base = `/v1/workspaces/${t.ws}/audit`): Promise<Entry[]> {
  const all: Entry[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 50; i++) {
    const r = await page(t, key, `${base}?limit=7${cursor ? `&cursor=${cursor}` : ""}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    all.push(...r.body.entries);
    cursor = r.body.next_cursor;
    if (!cursor) return all;
  }
  throw new Error("log did not end");
}

const find = (log: Entry[], what: Partial<Pick<Entry, "tool" | "route" | "door">>) => log.filter((e) => Object.entries(what).every(([k, v]) => (e as any)[k] === v));

describe("the audit log", () => {
  it("records every mutating call kind by every door, and no entry holds a file's content", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const auditor = await auditorKey(app, t.tenant);
    const CONTENT = `TOP-SECRET-${randomId(12)}`;
    const json = { "content-type": "application/json" };

    expect((await t.call("write", { file_path: "a.txt", content: `${CONTENT}\n` })).status).toBe(200);
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200); // read-only: no entry
    const edit = await t.call("edit", { file_path: "a.txt", old_string: CONTENT, new_string: `${CONTENT}-2` });
    expect(edit.status).toBe(200);
    expect((await t.call("write", { file_path: "b.txt", content: CONTENT })).status).toBe(200);
    expect((await t.call("move", { from: "b.txt", to: "c.txt" })).status).toBe(200);
    expect((await t.call("delete", { path: "c.txt" })).status).toBe(200);
    expect((await t.call("edit", { file_path: "nope.txt", old_string: CONTENT, new_string: "x" })).status).toBe(404); // a failure is recorded too
    await upload(t, "raw.txt", CONTENT);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/raw.txt`, { method: "DELETE" })).status).toBe(200);
    expect((await importReq(t, tar([{ name: "imported.txt", body: CONTENT }]))).status).toBe(200);
    const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: json, body: JSON.stringify({ name: "cp1" }) });
    expect(cp.status).toBe(201);
    const cpId = ((await cp.json()) as any).id as string;
    const badCp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: json, body: JSON.stringify({ name: 5 }) });
    expect(badCp.status).toBe(400); // refused by the route's validation: recorded with the answer's code
    const undo = await t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: json, body: JSON.stringify({ call_id: edit.body.call_id }) });
    expect(undo.status, await undo.clone().text()).toBe(200);
    expect((await t.req(`/v1/workspaces/${t.ws}/checkpoints/${cpId}/restore`, { method: "POST", headers: json, body: "{}" })).status).toBe(200);
    expect((await compat(t, "anthropic", "str_replace_based_edit_tool", { command: "create", path: "compat.txt", file_text: CONTENT })).status).toBe(200);
    // The approval gate: the held call, the human's answer, the approved call.
    const approver = await approverKey(app, t.tenant);
    await setPolicy(app, t.tenant, { gate: [{ tool: "write", when: "overwrite" }] });
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200); // the restore changed it: read anew before overwriting
    const pending = held(await t.call("write", { file_path: "a.txt", content: CONTENT }));
    expect((await answer(t, approver, pending.pending_id, { approved: true, note: CONTENT })).status).toBe(200);
    // Keys: made and revoked by the operator.
    const made = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "temp" });
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/keys/${made.body.key_id}`, undefined, "DELETE")).status).toBe(200);

    const log = await wholeLog(t, auditor);
    const tenantLog = await wholeLog(t, auditor, "/v1/audit");
    for (const e of [...log, ...tenantLog]) expect(JSON.stringify(e), "an entry holds content").not.toContain(CONTENT);
    expect(find(log, { tool: "read" })).toEqual([]);

    const write = find(log, { tool: "write", door: "http" })[0]!;
    expect(write).toMatchObject({ tenant: t.tenant, workspace: t.ws, session: "s1", args: { file_path: "a.txt", content_bytes: CONTENT.length + 1 }, outcome: { ok: true, status: 200 }, files: ["a.txt"] });
    expect(write.key_id).toMatch(/\S/);
    expect(write.call_id).toMatch(/\S/);
    expect(find(log, { tool: "edit" })[0]).toMatchObject({ call_id: edit.body.call_id, args: { file_path: "a.txt", old_string_bytes: CONTENT.length }, files: ["a.txt"] });
    expect(find(log, { tool: "edit" })[1]).toMatchObject({ outcome: { ok: false, status: 404, code: "NOT_FOUND" } });
    expect(find(log, { tool: "move" })[0]).toMatchObject({ args: { from: "b.txt", to: "c.txt" } });
    expect(find(log, { tool: "move" })[0]!.files).toEqual(expect.arrayContaining(["b.txt", "c.txt"]));
    expect(find(log, { tool: "delete" })[0]).toMatchObject({ args: { path: "c.txt" }, files: ["c.txt"] });
    expect(find(log, { route: "PUT /v1/workspaces/{ws}/files/{path}" })[0]).toMatchObject({ door: "http", args: { path: "raw.txt", body_bytes: CONTENT.length }, files: ["raw.txt"], outcome: { ok: true } });
    expect(find(log, { route: "DELETE /v1/workspaces/{ws}/files/{path}" })[0]).toMatchObject({ files: ["raw.txt"] });
    expect(find(log, { route: "POST /v1/workspaces/{ws}/import" })).toHaveLength(1);
    expect(find(log, { route: "POST /v1/workspaces/{ws}/checkpoints" })[0]).toMatchObject({ args: { name: "cp1" } });
    expect(find(log, { route: "POST /v1/workspaces/{ws}/checkpoints" })[1]).toMatchObject({ outcome: { ok: false, status: 400, code: "INVALID_ARGUMENT" } });
    expect(find(log, { route: "POST /v1/workspaces/{ws}/undo" })[0]).toMatchObject({ call_id: edit.body.call_id, files: ["a.txt"] });
    expect(find(log, { route: "POST /v1/workspaces/{ws}/checkpoints/{id}/restore" })[0]).toMatchObject({ args: { id: cpId }, outcome: { ok: true } });
    expect(find(log, { tool: "str_replace_based_edit_tool" }).concat(find(log, { door: "compat-anthropic" }))[0]).toMatchObject({ door: "compat-anthropic", files: ["compat.txt"] });
    expect(find(log, { tool: "write" }).map((e) => e.outcome.code ?? "ok")).toEqual(["ok", "ok", "NEEDS_APPROVAL", "ok"]);
    expect(find(log, { route: "POST /v1/workspaces/{ws}/pending/{id}" })[0]).toMatchObject({ args: { id: pending.pending_id, approved: true, note_bytes: CONTENT.length } });
    expect(find(log, { door: "pending-approval" })[0]).toMatchObject({ tool: "write", files: ["a.txt"] });
    // Oldest first.
    expect(log.map((e) => e.id)).toEqual([...log.map((e) => e.id)].sort());

    // The tenant's log: its workspace made, the policy, the keys.
    expect(find(tenantLog, { route: "POST /v1/workspaces" })[0]).toMatchObject({ args: { id: "main" } });
    expect(find(tenantLog, { route: "PUT /v1/admin/tenants/{tenant}/policy" })[0]).toMatchObject({ key_id: "admin", door: "admin", outcome: { ok: true } });
    expect(find(tenantLog, { route: "POST /v1/admin/tenants/{tenant}/keys" }).map((e) => e.args.key_id)).toContain(made.body.key_id);
    expect(find(tenantLog, { route: "DELETE /v1/admin/tenants/{tenant}/keys/{key_id}" })[0]).toMatchObject({ args: { key_id: made.body.key_id } });
    expect(find(tenantLog, { route: "POST /v1/admin/tenants" })).toHaveLength(1);
  });

  it("a restore keeps the log and adds its entry; deleting the workspace deletes its log", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const auditor = await auditorKey(app, t.tenant);
    const json = { "content-type": "application/json" };
    const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: json, body: "{}" });
    const cpId = ((await cp.json()) as any).id as string;
    expect((await t.call("write", { file_path: "later.txt", content: "x" })).status).toBe(200);
    const before = await wholeLog(t, auditor);
    expect((await t.req(`/v1/workspaces/${t.ws}/checkpoints/${cpId}/restore`, { method: "POST", headers: json, body: "{}" })).status).toBe(200);
    const after = await wholeLog(t, auditor);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.slice(before.length).map((e) => e.route)).toEqual(["POST /v1/workspaces/{ws}/checkpoints/{id}/restore"]);

    expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
    const left = await env.FILES.list({ prefix: `t/${t.tenant}/w/${t.ws}/` });
    expect(left.objects.map((o) => o.key)).toEqual([]);
    const gone = (await wholeLog(t, auditor, "/v1/audit")).filter((e) => e.route === "DELETE /v1/workspaces/{ws}");
    expect(gone).toHaveLength(1);
    expect(gone[0]).toMatchObject({ args: { ws: t.ws }, outcome: { ok: true } });
    expect(gone[0]!.workspace).toBeUndefined();
  });

  it("another tenant's key: 404 on the workspace's log, and its own tenant log shows none of it; an agent's key: 403", async () => {
    const app = testApp();
    const a = await newTenant(app);
    const b = await newTenant(app);
    expect((await a.call("write", { file_path: "a.txt", content: "a" })).status).toBe(200);
    const bAuditor = await auditorKey(app, b.tenant);
    const r = await page(b, bAuditor, `/v1/workspaces/${a.ws}/audit`); // both name their workspace "main": B sees its own
    expect(r.body.entries.map((e: Entry) => e.tenant)).not.toContain(a.tenant);
    const other = await newTenantWorkspace(a, "a-only");
    const hidden = await page(b, bAuditor, `/v1/workspaces/${other}/audit`);
    expect(hidden.status).toBe(404);
    expect(JSON.stringify(hidden.body)).not.toContain(a.tenant);
    const own = await page(b, bAuditor, "/v1/audit");
    expect(JSON.stringify(own.body)).not.toContain(a.tenant);
    expect((await page(a, a.key, `/v1/workspaces/${a.ws}/audit`)).status).toBe(403);
  });

  it("names what a call made: the id in the query (a workspace made with an archive) or given by the answer (a random id, a checkpoint)", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const auditor = await auditorKey(app, t.tenant);
    const made = await t.req("/v1/workspaces?id=loaded&tools=readonly", { method: "POST", headers: { "content-type": "application/x-tar" }, body: tar([{ name: "a.txt", body: "a" }]) });
    expect(made.status, await made.clone().text()).toBe(201);
    const prefixed = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "one user", workspaces: ["u7-*"] });
    const random = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${prefixed.body.key}`, "content-type": "application/json" }, body: "{}" });
    expect(random.status).toBe(201);
    const randomId = ((await random.json()) as any).id as string;
    const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(cp.status).toBe(201);
    const cpId = ((await cp.json()) as any).id as string;

    const creates = find(await wholeLog(t, auditor, "/v1/audit"), { route: "POST /v1/workspaces" }).map((e) => e.args);
    expect(creates).toContainEqual(expect.objectContaining({ id: "loaded", tools_bytes: "readonly".length }));
    expect(creates).toContainEqual(expect.objectContaining({ id: randomId }));
    expect(find(await wholeLog(t, auditor), { route: "POST /v1/workspaces/{ws}/checkpoints" })[0]).toMatchObject({ args: { id: cpId } });
  });

  it("a batch upload's entry reads as a single upload's: its mode as given, the files it wrote (not those refused), its body's size", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const auditor = await auditorKey(app, t.tenant);
    await upload(t, "single.txt", "one");
    const lines = [{ path: "ok.txt", content: "fine" }, { path: "taken.txt", content: "x", if_match: "no-such-etag" }].map((l) => JSON.stringify(l)).join("\n") + "\n";
    const batch = await t.req(`/v1/workspaces/${t.ws}/uploads?mode=each`, { method: "POST", headers: { "content-type": "application/x-ndjson", "content-length": String(lines.length) }, body: lines });
    expect(batch.status, await batch.clone().text()).toBe(200);
    expect(((await batch.json()) as any).files.map((f: any) => [f.path, f.ok])).toEqual([["ok.txt", true], ["taken.txt", false]]);

    const log = await wholeLog(t, auditor);
    expect(find(log, { route: "PUT /v1/workspaces/{ws}/files/{path}" })[0]).toMatchObject({ args: { ws: t.ws, path: "single.txt", body_bytes: 3 }, files: ["single.txt"] });
    const entry = find(log, { route: "POST /v1/workspaces/{ws}/uploads" })[0]!;
    expect(entry.args).toEqual({ ws: t.ws, mode: "each", body_bytes: lines.length });
    expect(entry.files).toEqual(["ok.txt"]);
  });

  it("a replayed answer (Idempotency-Key) is an entry that says so, never a second run", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const auditor = await auditorKey(app, t.tenant);
    const send = () => t.req(`/v1/workspaces/${t.ws}/tools/write`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": "k-1" }, body: JSON.stringify({ file_path: "once.txt", content: "once\n" }) });
    expect((await send()).status).toBe(200);
    const again = await send();
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const writes = find(await wholeLog(t, auditor), { tool: "write" });
    expect(writes.map((e) => e.outcome)).toEqual([{ ok: true, status: 200 }, { ok: true, status: 200, replayed: true }]);
    expect(writes[1]!.files).toBeUndefined();
  });

  it("pages oldest first, from a time (since) and from an entry (cursor)", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const auditor = await auditorKey(app, t.tenant);
    for (let i = 0; i < 5; i++) expect((await t.call("write", { file_path: `f${i}.txt`, content: "x" })).status).toBe(200);
    const log = await wholeLog(t, auditor);
    expect(log.map((e) => e.args.file_path)).toEqual(["f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt"]);
    const first = await page(t, auditor, `/v1/workspaces/${t.ws}/audit?limit=2`);
    expect(first.body.entries.map((e: Entry) => e.id)).toEqual(log.slice(0, 2).map((e) => e.id));
    const second = await page(t, auditor, `/v1/workspaces/${t.ws}/audit?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.entries.map((e: Entry) => e.id)).toEqual(log.slice(2, 4).map((e) => e.id));
    const since = await page(t, auditor, `/v1/workspaces/${t.ws}/audit?since=${encodeURIComponent(log[3]!.at)}`);
    expect(since.body.entries.map((e: Entry) => e.id)).toEqual(expect.arrayContaining(log.slice(3).map((e) => e.id)));
    expect(since.body.entries.every((e: Entry) => e.at >= log[3]!.at)).toBe(true);
    const later = await page(t, auditor, `/v1/workspaces/${t.ws}/audit?since=2999-01-01T00:00:00Z`);
    expect(later.body).toEqual({ entries: [] });
    expect((await page(t, auditor, `/v1/workspaces/${t.ws}/audit?cursor=bogus`)).status).toBe(400);
    expect((await page(t, auditor, `/v1/workspaces/${t.ws}/audit?since=yesterday`)).status).toBe(400);
  });
});

async function newTenantWorkspace(t: Tenant, id: string): Promise<string> {
  const r = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id }) });
  expect(r.status).toBe(201);
  return id;
}

describe("no route forgets the audit log", () => {
  it("every mutating route the app serves (read from the app) leaves an entry, whatever its outcome", async () => {
    const app = testApp();
    const t = await newTenant(app, { scopes: [...SCOPES] });
    const auditor = await auditorKey(app, t.tenant);
    const spare = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "spare" });
    await newTenantWorkspace(t, "doomed");
    const doc = await (await app.request("/openapi.json")).json();
    const count = async () => (await wholeLog(t, auditor)).length + (await wholeLog(t, auditor, "/v1/audit")).length;
    const byName = new Map(allTools.map((tool) => [tool.name, tool]));
    const walked: string[] = [];
    for (const route of servedRoutes(app)) {
      const access = route.policy!.access;
      const name = `${route.method} ${docPathOf(route)}`;
      if (!["POST", "PUT", "PATCH", "DELETE"].includes(route.method) || access.auth === "public" || access.auth === "sync") continue;
      if (name === "POST /v1/admin/tenants") continue; // its entry opens the new tenant's log: the first test reads it
      if (access.auth === "tenant" && access.runsTools) {
        // A door that runs tools: its tool calls are recorded where they run (executeTool), tested by door above.
        const tool = route.path.match(/\/tools\/([a-z_]+)$/)?.[1];
        expect(tool !== undefined || /\/(compat\/(anthropic|openai)\/|mcp$|tools\/\*$)/.test(route.path), `${name} runs tools by a door this test does not know: test its audit entries`).toBe(true);
        if (!tool || byName.get(tool)!.permission === "read") continue;
      }
      const ws = name === "DELETE /v1/workspaces/{ws}" ? "doomed" : t.ws;
      const r = routeRequest(doc, route, { ws, tenant: t.tenant, key_id: spare.body.key_id, id: "probe", path: "walk.txt", tool: "nope", session: "s1" });
      const before = await count();
      const res = await app.request(r.url, { method: r.method, headers: { ...r.headers, authorization: `Bearer ${access.auth === "admin" ? ADMIN : t.key}`, "x-session-id": "s1" }, ...(r.body !== undefined ? { body: r.body } : {}) });
      await res.arrayBuffer();
      expect(await count(), `${name} (${res.status}) left no audit entry`).toBeGreaterThan(before);
      walked.push(name);
    }
    for (const k of ["PUT /v1/workspaces/{ws}/files/{path}", "DELETE /v1/workspaces/{ws}", "POST /v1/workspaces/{ws}/undo", "POST /v1/workspaces/{ws}/pending/{id}", "PUT /v1/admin/tenants/{tenant}/policy", "POST /v1/workspaces/{ws}/tools/write", "POST /v1/workspaces/{ws}/tools/bash"]) expect(walked, k).toContain(k);
  });
});
