/**
 * What is left of a workspace, a key and a tenant's data after they are deleted (docs/storage.md
 * "What deletion keeps"): the Worker as deployed (infra/cloudflare.ts: R2, KV, the LIMITS and USAGE
 * Durable Objects) uses every route and tool that stores something (bash and its records: the Node
 * twin, lifecycle-inventory-bash.node.test.ts), the workspace is deleted, the scheduled tick runs with
 * its clock past GC's grace, and then every key in R2 and KV, and what the Durable Objects hold, that
 * names the tenant is listed. Each survivor must match the allowlist below, which says why it is kept.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../../infra/cloudflare.js";
import { housekeepingTick } from "../../../lib/runtime/housekeeping.js";
import { randomId } from "../../../lib/shared/hash.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { workersKeyValue } from "../../../lib/storage/kv-workers.js";
import { ADMIN, executionContext } from "../../helpers.js";
import { kvKeys, r2Keys } from "../../support/local-storage-keys.js";
import { tar } from "../archive/archives.js";
import { KEY_REVOKE_KEEPS, survivorsOf, WORKSPACE_DELETE_KEEPS, type Kept } from "./lifecycle-allowlist.js";

const workersEnv = env as unknown as Parameters<typeof worker.fetch>[1];
const { ctx, settle } = executionContext();
const deps = { storage: r2Driver(env.FILES), kv: workersKeyValue(env.KV) };
const LATER = () => Date.now() + 2 * 3600 * 1000; // past GC's grace (1 h)

async function send(path: string, init: RequestInit & { key?: string; /** false: leave the call's work after the answer running */ settled?: boolean } = {}): Promise<{ status: number; body: any }> {
  const { key, settled = true, ...rest } = init;
  const headers = { authorization: `Bearer ${key ?? ADMIN}`, ...(rest.headers as Record<string, string> | undefined) };
  const res = await worker.fetch(new Request(`http://toolshed.test${path}`, { ...rest, headers }) as never, workersEnv, ctx);
  const text = await res.text();
  if (settled) await settle(); // what each call leaves to waitUntil (audit entries, index upkeep, usage) lands before the next
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}
const json = (body: unknown, headers: Record<string, string> = {}) => ({ method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

/** What the tenant's LIMITS object keeps in its storage (`do:limits/<key>`; its held allowances `do:limits/allowances/<ws>`), and the USAGE object's rows naming `ws` (`do:usage/<table>/<ws>`). */
async function durableKeys(tenant: string, ws: string): Promise<string[]> {
  const out: string[] = [];
  const limits = env.LIMITS.get(env.LIMITS.idFromName(tenant));
  await runInDurableObject(limits, async (_o, state: DurableObjectState) => {
    for (const [k, v] of await state.storage.list()) {
      // The room held ahead of writes: one entry per allowance, each naming its workspace (lib/limits/held-room.ts).
      if (k === "allowances") out.push(...(v as { ws: string }[]).map((a) => `do:limits/allowances/${a.ws}`));
      else out.push(`do:limits/${k}`);
    }
  });
  const usage = env.USAGE.get(env.USAGE.idFromName(tenant));
  await runInDurableObject(usage, (_o, state: DurableObjectState) => {
    const tables = state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'").toArray() as { name: string }[];
    for (const { name } of tables) {
      const cols = state.storage.sql.exec(`PRAGMA table_info(${name})`).toArray() as { name: string }[];
      if (!cols.some((c) => c.name === "workspace")) continue;
      const n = (state.storage.sql.exec(`SELECT COUNT(*) AS n FROM ${name} WHERE workspace = ?`, ws).one() as { n: number }).n;
      if (n > 0) out.push(`do:usage/${name}/${ws}`);
    }
  });
  return out;
}

/** Everything that names the tenant, in R2, KV and the Durable Objects. */
async function inventory(tenant: string, ws: string): Promise<string[]> {
  const kv = (await kvKeys()).filter((k) => k.includes(tenant) || k.startsWith("apikey/"));
  return [...(await r2Keys(`t/${tenant}/`)), ...kv.map((k) => `kv:${k}`), ...(await durableKeys(tenant, ws))];
}

const expectOnlyKept = (left: string[], keeps: readonly Kept[], vars: Record<string, string>) => {
  const { unexplained } = survivorsOf(left, keeps, vars);
  expect(unexplained, `survivors no allowlist entry explains:\n${unexplained.join("\n")}`).toEqual([]);
};

describe("storage inventory after deletion", () => {
  it("a deleted workspace leaves only what the allowlist names, with its reason", async () => {
    const tenant = `inv-${randomId(6)}`;
    expect((await send("/v1/admin/tenants", json({ id: tenant }))).status).toBe(201);
    const key = (await send(`/v1/admin/tenants/${tenant}/keys`, json({ scopes: ["read", "write", "execute", "approve", "manage"] }))).body.key as string;
    const ws = "inv";
    const as = (init: RequestInit = {}) => ({ ...init, key });
    const call = (tool: string, args: unknown, session = "s1", headers: Record<string, string> = {}) => send(`/v1/workspaces/${ws}/tools/${tool}`, as(json(args, { "x-session-id": session, ...headers })));
    expect((await send("/v1/workspaces", as(json({ id: ws })))).status).toBe(201);

    // Raw files, an explicit directory, a batch upload, an import.
    expect((await send(`/v1/workspaces/${ws}/files/raw.txt`, as({ method: "PUT", body: "raw\n", headers: { "content-length": "4" } }))).status).toBeLessThan(300);
    expect((await send(`/v1/workspaces/${ws}/files/empty/`, as({ method: "PUT", body: "" }))).status).toBeLessThan(300);
    const ndjson = `${JSON.stringify({ path: "batch/a.txt", content: "a\n" })}\n${JSON.stringify({ path: "batch/b.txt", content: "b\n" })}\n`;
    expect((await send(`/v1/workspaces/${ws}/uploads`, as({ method: "POST", body: ndjson, headers: { "content-type": "application/x-ndjson" } }))).status).toBe(200);
    const archive = tar([{ name: "imported/x.txt", body: "x\n" }]);
    expect((await send(`/v1/workspaces/${ws}/import?mode=merge`, as({ method: "POST", body: archive, headers: { "content-type": "application/octet-stream", "content-length": String(archive.length) } }))).status).toBe(200);

    // Tools: session records (read), writes and edits (undo journals, the search index, audit entries), a
    // directory move (its journal), todos, an idempotent call (its kept answer), a question and a held call (pending).
    expect((await call("read", { file_path: "raw.txt" })).status).toBe(200);
    expect((await call("write", { file_path: "src/a.ts", content: "export const a = 1;\n" })).status).toBe(200);
    expect((await call("edit", { file_path: "raw.txt", old_string: "raw", new_string: "cooked" })).status).toBe(200);
    expect((await call("grep", { pattern: "cooked" })).status).toBe(200);
    expect((await call("move", { from: "batch", to: "moved" })).status).toBe(200);
    expect((await call("todo_write", { todos: [{ content: "Check", activeForm: "Checking", status: "pending" }] })).status).toBe(200);
    expect((await call("write", { file_path: "idem.txt", content: "once\n" }, "s1", { "idempotency-key": "inv-1" })).status).toBe(200);
    expect((await call("ask_user", { question: "Go on?" })).status).toBe(202);
    const held = await call("delete", { path: "src", recursive: true });
    expect(held.status, JSON.stringify(held.body)).toBe(202);

    // Versions: a checkpoint, a restore, an undo.
    const cp = await send(`/v1/workspaces/${ws}/checkpoints`, as(json({ name: "one" })));
    expect(cp.status, JSON.stringify(cp.body)).toBe(201);
    expect((await call("write", { file_path: "after.txt", content: "after\n" })).status).toBe(200);
    expect((await send(`/v1/workspaces/${ws}/checkpoints/${cp.body.id}/restore`, as(json({})))).status).toBe(200);
    const w = await call("write", { file_path: "undone.txt", content: "u\n" });
    expect((await send(`/v1/workspaces/${ws}/undo`, as(json({ call_id: w.body.call_id }, { "x-session-id": "s1" })))).status).toBe(200);
    expect((await send(`/v1/workspaces/${ws}/files/last.txt`, as({ method: "PUT", body: "last\n", headers: { "content-length": "5" } }))).status).toBeLessThan(300); // the restore left every file in the lower layer

    const before = await inventory(tenant, ws);
    for (const kind of [`t/${tenant}/w/${ws}/f/`, `t/${tenant}/w/${ws}/x/undo/`, `t/${tenant}/w/${ws}/x/audit/`, `t/${tenant}/w/${ws}/x/todos/`, `t/${tenant}/w/${ws}/x/pending/`, `t/${tenant}/w/${ws}/x/checkpoints/`, `t/${tenant}/packs/`, `t/${tenant}/manifests/`, `t/${tenant}/idem/`, `kv:rec/${tenant}/${ws}/`, "do:limits/usage/", `do:usage/`]) {
      expect(before.some((k) => k.startsWith(kind)), `nothing stored under ${kind} before the delete: the inventory would prove nothing there\n${before.join("\n")}`).toBe(true);
    }

    expect((await send(`/v1/workspaces/${ws}`, as({ method: "DELETE" }))).status).toBe(200);
    await housekeepingTick(deps, {}, { now: LATER, maxTenants: 10_000, log: () => {} });
    expectOnlyKept(await inventory(tenant, ws), WORKSPACE_DELETE_KEEPS, { tenant, ws });
  }, 120_000);

  it("work a call left for after its answer that lands after the workspace's delete leaves nothing behind once the tick ran", async () => {
    const tenant = `inv-${randomId(6)}`;
    expect((await send("/v1/admin/tenants", json({ id: tenant }))).status).toBe(201);
    const key = (await send(`/v1/admin/tenants/${tenant}/keys`, json({}))).body.key as string;
    const ws = "late";
    expect((await send("/v1/workspaces", { ...json({ id: ws }), key })).status).toBe(201);
    const w = await send(`/v1/workspaces/${ws}/tools/write`, { ...json({ file_path: "a.ts", content: "export const a = 1;\n" }, { "x-session-id": "s1" }), key, settled: false });
    expect(w.status).toBe(200);
    expect((await send(`/v1/workspaces/${ws}`, { method: "DELETE", key, settled: false })).status).toBe(200);
    await settle(); // the write's audit entry, index upkeep and usage land now, after the delete
    const orphans = await r2Keys(`t/${tenant}/w/${ws}/`);
    await housekeepingTick(deps, {}, { now: LATER, maxTenants: 10_000, log: () => {} });
    const left = await inventory(tenant, ws);
    expectOnlyKept(left, WORKSPACE_DELETE_KEEPS, { tenant, ws });
    console.log(`objects under the deleted prefix before the tick: ${orphans.join(" ")}; after: ${(await r2Keys(`t/${tenant}/w/${ws}/`)).join(" ")}`);
  }, 60_000);

  it("a revoked key leaves under its id only what the allowlist names", async () => {
    const tenant = `inv-${randomId(6)}`;
    expect((await send("/v1/admin/tenants", json({ id: tenant }))).status).toBe(201);
    const made = (await send(`/v1/admin/tenants/${tenant}/keys`, json({ scopes: ["read", "write", "execute", "manage"] }))).body;
    const key = made.key as string;
    const id = made.key_id as string;
    const ws = "keyed";
    expect((await send("/v1/workspaces", { ...json({ id: ws }), key })).status).toBe(201);
    const call = (tool: string, args: unknown, headers: Record<string, string> = {}) => send(`/v1/workspaces/${ws}/tools/${tool}`, { ...json(args, { "x-session-id": "s1", ...headers }), key });
    expect((await call("write", { file_path: "a.txt", content: "a\n" })).status).toBe(200);
    expect((await call("write", { file_path: "b.txt", content: "b\n" }, { "idempotency-key": "key-inv-1" })).status).toBe(200);
    const child = await send("/v1/keys", { ...json({ name: "child", scopes: ["read"] }), key });
    expect(child.status, JSON.stringify(child.body)).toBe(201);

    /** Everything that names the key: R2 and KV keys with its id, LIMITS entries whose value names it, USAGE rows of it. */
    const named = async () => {
      const out = [...(await r2Keys(`t/${tenant}/`)).filter((k) => k.includes(id)), ...(await kvKeys()).filter((k) => k.includes(id)).map((k) => `kv:${k}`)];
      await runInDurableObject(env.LIMITS.get(env.LIMITS.idFromName(tenant)), async (_o, state: DurableObjectState) => {
        for (const [k, v] of await state.storage.list()) if (JSON.stringify(v).includes(id)) out.push(`do:limits/${k}`);
      });
      await runInDurableObject(env.USAGE.get(env.USAGE.idFromName(tenant)), (_o, state: DurableObjectState) => {
        const n = (state.storage.sql.exec("SELECT COUNT(*) AS n FROM hourly WHERE key = ?", id).one() as { n: number }).n;
        if (n > 0) out.push(`do:usage/hourly/${id}`);
      });
      return out;
    };
    const before = await named();
    for (const kind of [`kv:keyid/${tenant}/${id}`, "do:usage/"]) expect(before.some((k) => k.startsWith(kind)), `nothing under ${kind}:\n${before.join("\n")}`).toBe(true);

    expect((await send(`/v1/admin/tenants/${tenant}/keys/${id}`, { method: "DELETE" })).status).toBeLessThan(300);
    await housekeepingTick(deps, {}, { now: LATER, maxTenants: 10_000, log: () => {} });
    expectOnlyKept(await named(), KEY_REVOKE_KEEPS, { tenant, ws, key: id });
    expect(await env.KV.get(`keyid/${tenant}/${id}`)).toBeNull();
  }, 60_000);
});
