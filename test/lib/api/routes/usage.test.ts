/**
 * Usage you can query (#28 §1), end to end: many concurrent clients through two app instances
 * (two isolates, each with its own held batch) sharing the Workers store (a Durable Object per
 * tenant, real, in workerd). Every aggregate must equal the calls made.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { keyIdOf } from "../../../../lib/api/auth/keys.js";
import type { Executor, RunRequest } from "../../../../lib/exec/types.js";
import { durableUsageStore, type UsageObjects } from "../../../../lib/run/metering/durable-store.js";
import { heldUsageStore } from "../../../../lib/run/metering/held-store.js";
import { compat } from "./compat-helpers.js";
import { admin, ADMIN, executionContext, newTenant, testApp, UNGATED, type TestApp } from "../../../helpers.js";

const store = durableUsageStore(env.USAGE as unknown as UsageObjects);
const SCOPES = ["read", "write", "execute", "manage"];

/** One "isolate": an app with its own held sink over the shared store, answering with a waitUntil. */
function isolate(holdMs = 200) {
  const sink = heldUsageStore(store, { log: false, holdMs });
  const app = testApp({ usageStore: store, onUsage: sink });
  const { ctx, settle } = executionContext();
  const settled = async () => {
    await settle();
    await sink.settled();
  };
  return { app, ctx, settled };
}

interface Made { tenant: string; key: string; name: string; ok: boolean; bytes_read: number; bytes_written: number }
const isRoute = (name: string) => name.includes(" ");

/** What GET /v1/usage?group_by=tool must answer for these calls. */
function byTool(made: Made[]) {
  const rows = new Map<string, { name: string; calls: number; ok: number; errors: number; bytes_read: number; bytes_written: number }>();
  for (const m of made) {
    const r = rows.get(m.name) ?? { name: m.name, calls: 0, ok: 0, errors: 0, bytes_read: 0, bytes_written: 0 };
    r.calls++;
    r[m.ok ? "ok" : "errors"]++;
    r.bytes_read += m.bytes_read;
    r.bytes_written += m.bytes_written;
    rows.set(m.name, r);
  }
  return [...rows.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
}

const get = async (app: TestApp, path: string, key: string) => {
  const res = await app.request(path, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as any };
};

const shown = (rows: any[]) =>
  rows.map((r) => ({ name: r.tool ?? r.route, calls: r.calls, ok: r.ok, errors: r.errors, bytes_read: r.bytes_read, bytes_written: r.bytes_written })).sort((a, b) => (a.name < b.name ? -1 : 1));

describe("GET /v1/usage: exact under concurrency, through two isolates sharing the store", { timeout: 180_000 }, () => {
  it("every aggregate equals the calls made; tenants never see each other; key filter; every group_by; export pages", async () => {
    const one = isolate();
    const two = isolate();
    const made: Made[] = [];
    const x = await newTenant(one.app, { scopes: SCOPES, policy: UNGATED.policy });
    const y = await newTenant(two.app, { scopes: SCOPES, policy: UNGATED.policy });
    const x2 = (await admin(one.app, `/v1/admin/tenants/${x.tenant}/keys`, { name: "second" })).body.key as string;
    const id = (key: string) => keyIdOf(key)!;
    // newTenant's own changes: the workspace each key made (its request declares no Content-Length: 0 bytes).
    made.push({ tenant: x.tenant, key: id(x.key), name: "POST workspaces", ok: true, bytes_read: 0, bytes_written: 0 });
    made.push({ tenant: y.tenant, key: id(y.key), name: "POST workspaces", ok: true, bytes_read: 0, bytes_written: 0 });
    const seed = "hello usage\n";
    for (const t of [x, y]) {
      const res = await t.app.request(`/v1/workspaces/main/files/a.txt`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": String(seed.length) }, body: seed });
      expect(res.status).toBe(201);
      made.push({ tenant: t.tenant, key: id(t.key), name: "PUT files", ok: true, bytes_read: 0, bytes_written: seed.length });
    }

    // 30 clients at once, each on one isolate with one key, each making four calls of known kinds.
    const clients = Array.from({ length: 30 }, (_, i) => {
      const at = i % 2 ? two : one;
      const t = i % 3 === 0 ? y : x;
      const key = t === x && i % 2 ? x2 : t.key;
      return { i, at, tenant: t.tenant, key };
    });
    await Promise.all(clients.map(async ({ i, at, tenant, key }) => {
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": `s${i}` };
      const tool = async (name: string, args: unknown) => {
        const res = await at.app.request(`/v1/workspaces/main/tools/${name}`, { method: "POST", headers, body: JSON.stringify(args) }, {}, at.ctx);
        const body = (await res.json()) as any;
        made.push({ tenant, key: id(key), name, ok: body.ok === true, bytes_read: body.usage.bytes_read, bytes_written: body.usage.bytes_written });
        return body;
      };
      expect((await tool("read", { file_path: "a.txt" })).ok).toBe(true);
      expect((await tool("read", { file_path: "missing.txt" })).error.code).toBe("NOT_FOUND");
      expect((await tool("write", { file_path: `w${i}.txt`, content: `client ${i}\n` })).ok).toBe(true);
      const raw = `raw ${i}\n`;
      const put = await at.app.request(`/v1/workspaces/main/files/r${i}.txt`, { method: "PUT", headers: { authorization: `Bearer ${key}`, "content-length": String(raw.length) }, body: raw }, {}, at.ctx);
      expect(put.status).toBe(201);
      made.push({ tenant, key: id(key), name: "PUT files", ok: true, bytes_read: 0, bytes_written: raw.length });
    }));
    await Promise.all([one.settled(), two.settled()]);

    const mine = made.filter((m) => m.tenant === x.tenant);
    const theirs = made.filter((m) => m.tenant === y.tenant);
    // Per tool (and route), on either isolate: exactly the calls made, bytes included.
    for (const at of [one, two]) {
      const r = await get(at.app, "/v1/usage?group_by=tool", x.key);
      expect(r.status).toBe(200);
      expect(shown(r.body.rows)).toEqual(byTool(mine));
      expect(r.body.totals.calls).toBe(mine.length);
    }
    const ry = await get(two.app, "/v1/usage?group_by=tool", y.key);
    expect(shown(ry.body.rows)).toEqual(byTool(theirs));
    // The admin sees the same, for any tenant.
    const ra = await get(one.app, `/v1/admin/tenants/${x.tenant}/usage?group_by=tool`, ADMIN);
    expect(shown(ra.body.rows)).toEqual(byTool(mine));
    // group_by key, and the key filter.
    const rk = await get(one.app, "/v1/usage?group_by=key", x.key);
    expect(rk.body.rows.map((r: any) => [r.key, r.calls]).sort()).toEqual([[id(x.key), mine.filter((m) => m.key === id(x.key)).length], [id(x2), mine.filter((m) => m.key === id(x2)).length]].sort());
    const rf = await get(one.app, `/v1/usage?group_by=tool&key=${id(x2)}`, x.key);
    expect(shown(rf.body.rows)).toEqual(byTool(mine.filter((m) => m.key === id(x2))));
    // Another tenant's key id filters to nothing: its calls are not in this tenant's usage.
    expect((await get(one.app, `/v1/usage?key=${id(y.key)}`, x.key)).body.rows).toEqual([]);
    // group_by workspace, hour, day: one group each here (one workspace, one hour or two), summing to the total.
    for (const g of ["workspace", "hour", "day"]) {
      const r = await get(one.app, `/v1/usage?group_by=${g}`, x.key);
      expect(r.status, g).toBe(200);
      expect(r.body.rows.reduce((s: number, row: any) => s + row.calls, 0), g).toBe(mine.length);
      expect(r.body.rows.every((row: any) => typeof row[g] === "string"), g).toBe(true);
    }
    // Creating a workspace is a tenant-wide route: its record's workspace is "".
    expect((await get(one.app, "/v1/usage?group_by=workspace", x.key)).body.rows.map((r: any) => [r.workspace, r.calls])).toEqual([["", 1], ["main", mine.length - 1]]);
    expect((await get(one.app, "/v1/usage?workspace=other", x.key)).body.rows).toEqual([]);

    // The export: every record once, in pages of 7, in order, this tenant's only.
    const lines: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await one.app.request(`/v1/usage/export?limit=7${cursor ? `&cursor=${cursor}` : ""}`, { headers: { authorization: `Bearer ${x.key}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("application/x-ndjson");
      const text = new TextDecoder().decode(await res.arrayBuffer());
      lines.push(...text.split("\n").filter(Boolean).map((l) => JSON.parse(l)));
      cursor = res.headers.get("x-next-cursor");
      pages++;
    } while (cursor && pages < 100);
    expect(lines).toHaveLength(mine.length);
    expect(pages).toBe(Math.ceil(mine.length / 7) + (mine.length % 7 === 0 ? 1 : 0));
    expect(lines.every((l) => l.tenant === x.tenant)).toBe(true);
    const seqs = lines.map((l) => l.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(lines.filter((l) => l.tool === "write").every((l) => l.ok && l.key && l.bytes_written > 0 && typeof l.at === "string")).toBe(true);
  });
});

describe("the usage routes' access and arguments", { timeout: 120_000 }, () => {
  it("needs the manage scope; refuses unknown group_by and bad times; the admin route 404s an unknown tenant", async () => {
    const { app } = isolate();
    const plain = await newTenant(app);
    expect((await get(app, "/v1/usage", plain.key)).status).toBe(403);
    expect((await get(app, "/v1/usage/export", plain.key)).status).toBe(403);
    const m = await newTenant(app, { scopes: SCOPES });
    expect((await get(app, "/v1/usage?group_by=tool,month", m.key)).body.error.code).toBe("INVALID_ARGUMENT");
    expect((await get(app, "/v1/usage?from=yesterday", m.key)).body.error.code).toBe("INVALID_ARGUMENT");
    expect((await get(app, "/v1/usage?from=2026-01-02&to=2026-01-01", m.key)).body.error.code).toBe("INVALID_ARGUMENT");
    expect((await get(app, "/v1/usage/export?cursor=abc", m.key)).body.error.code).toBe("INVALID_ARGUMENT");
    expect((await get(app, "/v1/admin/tenants/no-such-tenant/usage", ADMIN)).status).toBe(404);
    expect((await get(app, `/v1/admin/tenants/${m.tenant}/usage`, m.key)).status).toBe(401);
    // Without a store: UNAVAILABLE, saying so.
    const bare = await newTenant(testApp(), { scopes: SCOPES });
    expect((await get(bare.app, "/v1/usage", bare.key)).body.error.code).toBe("UNAVAILABLE");
  });

  it("a refused change is recorded with its code; a read is recorded with the bytes it answered; a replay and the account's own reads are not; a bad key records nothing", async () => {
    const { app, settled } = isolate();
    const t = await newTenant(app, { scopes: SCOPES });
    const ro = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read"] })).body.key as string;
    expect((await app.request("/v1/workspaces/main/files/x.txt", { method: "PUT", headers: { authorization: `Bearer ${ro}` }, body: "x" })).status).toBe(403);
    expect((await app.request("/v1/workspaces/nope/files/x.txt", { method: "PUT", headers: { authorization: `Bearer ${t.key}` }, body: "x" })).status).toBe(404);
    expect((await app.request("/v1/workspaces/main/files/x.txt", { method: "PUT", headers: { authorization: "Bearer tsk_nope_nope" }, body: "x" })).status).toBe(401);
    expect((await app.request("/v1/workspaces", { headers: { authorization: `Bearer ${t.key}` } })).status).toBe(200);
    // Refused by the routes' validation (a missing query parameter): its code, as the answer says it.
    const diff = await app.request("/v1/workspaces/main/diff", { headers: { authorization: `Bearer ${t.key}` } });
    expect([diff.status, ((await diff.json()) as any).error.code]).toEqual([400, "INVALID_ARGUMENT"]);
    const put = () => app.request("/v1/workspaces/main/files/a.txt", { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": "6", "idempotency-key": "put-a-once" }, body: "hello\n" });
    expect((await put()).status).toBe(201);
    const again = await put(); // the kept answer: nothing ran, nothing more to bill
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const got = await app.request("/v1/workspaces/main/files/a.txt", { headers: { authorization: `Bearer ${ro}` } });
    expect(await got.text()).toBe("hello\n");
    // The account's own reads (manage scope: usage, audit, keys) are not recorded.
    expect((await app.request("/v1/usage", { headers: { authorization: `Bearer ${t.key}` } })).status).toBe(200);
    expect((await app.request("/v1/workspaces/main/audit", { headers: { authorization: `Bearer ${t.key}` } })).status).toBe(200);
    // A door that meters each tool call itself (compat, MCP) adds its tool's record, no route record.
    expect((await compat(t, "anthropic", "str_replace_based_edit_tool", { command: "view", path: "a.txt" })).status).toBe(200);
    expect((await app.request("/v1/workspaces/main", { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } })).status).toBe(200);
    await settled();
    const lines = new TextDecoder().decode(await (await app.request("/v1/usage/export", { headers: { authorization: `Bearer ${t.key}` } })).arrayBuffer()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const seen = lines.map((l) => [l.route ?? l.tool, l.ok, l.code ?? null, l.key, l.workspace, l.bytes_read, l.bytes_written]);
    expect(seen.sort()).toEqual([
      ["POST workspaces", true, null, keyIdOf(t.key), "", 0, 0],
      ["GET workspaces", true, null, keyIdOf(t.key), "", expect.any(Number), 0],
      ["GET diff", false, "INVALID_ARGUMENT", keyIdOf(t.key), "main", 0, 0],
      ["PUT files", false, "PERMISSION_DENIED", keyIdOf(ro), "main", 0, 0],
      ["PUT files", false, "NOT_FOUND", keyIdOf(t.key), "nope", 0, 0],
      ["PUT files", true, null, keyIdOf(t.key), "main", 0, 6],
      ["GET files", true, null, keyIdOf(ro), "main", 6, 0],
      ["read", true, null, keyIdOf(t.key), "main", expect.any(Number), 0],
      ["DELETE workspace", true, null, keyIdOf(t.key), "main", 0, 0],
    ].sort());
  });
});

describe("sandbox time", { timeout: 120_000 }, () => {
  it("bash and run_code records carry the sandbox's wall time and its egress proxy's bytes as the run reported them; other tools none", async () => {
    const runs: RunRequest[] = [];
    // The runner's answer (the bash runner itself is tested in Node): only duration_ms and net_bytes_* matter here.
    const executor: Executor = {
      run: async (req) => (runs.push(req), {
        run_id: req.idempotency_key, stdout: "hi\n", stderr: "", output: "hi\n", exit_code: 0, duration_ms: 4321, net_bytes_in: 70_000, net_bytes_out: 420, timed_out: false, killed: false, truncated: false,
        files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [],
        sync: { cache: "warm", manifest_files: 0, downloaded_files: 0, downloaded_bytes: 0, uploaded_files: 0, uploaded_bytes: 0, deleted_files: 0, sync_in_ms: 0, sync_out_ms: 0 },
      }),
      start: async () => {},
    };
    const sink = heldUsageStore(store, { log: false });
    const app = testApp({ usageStore: store, onUsage: sink, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://sync.invalid" });
    const t = await newTenant(app, { scopes: SCOPES, policy: UNGATED.policy });
    expect((await t.call("bash", { command: "echo hi" })).status).toBe(200);
    expect((await t.call("run_code", { language: "python", code: "print('hi')" })).status).toBe(200);
    expect((await t.call("read", { file_path: "nope.txt" })).status).toBe(404);
    await sink.settled();
    expect(runs).toHaveLength(2);
    const rows = (await get(app, "/v1/usage?group_by=tool", t.key)).body.rows;
    expect(rows.filter((r: any) => r.tool).map((r: any) => [r.tool, r.calls, r.sandbox_ms, r.net_bytes_in, r.net_bytes_out])).toEqual([["bash", 1, 4321, 70_000, 420], ["read", 1, 0, 0, 0], ["run_code", 1, 4321, 70_000, 420]]);
  });
});

describe("a background run's sandbox time, on Workers", { timeout: 120_000 }, () => {
  it("is stored once from the runner's result PUT (after its answer, in its waitUntil), to the key that started the run; the call itself carries none", async () => {
    const started: RunRequest[] = [];
    // Stands in for the runner's asynchronous Invoke: the test then speaks the runner's sync protocol with the request's own token.
    const executor: Executor = { run: async () => { throw new Error("not in the foreground"); }, start: async (req) => void started.push(req) };
    const { app, ctx, settled } = (() => {
      const sink = heldUsageStore(store, { log: false, holdMs: 3_000 }); // however slow this machine, nothing is out before the first check
      const { ctx, settle } = executionContext();
      return { app: testApp({ usageStore: store, onUsage: sink, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://sync.invalid" }), ctx, settled: async () => (await settle(), await sink.settled()) };
    })();
    const t = await newTenant(app, { scopes: SCOPES, policy: UNGATED.policy });
    expect((await t.call("bash", { command: "sleep 1", run_in_background: true })).status).toBe(200);
    expect(started).toHaveLength(1);
    const result = { ok: true, result: { run_id: "r", stdout: "", stderr: "", output: "", exit_code: 0, duration_ms: 1500, timed_out: false, killed: false } };
    const put = () => app.request("/v1/sync/run/result", { method: "PUT", headers: { authorization: `Bearer ${started[0]!.sync.token}`, "content-type": "application/json" }, body: JSON.stringify(result) }, {}, ctx);
    const runRows = async () => (await store.query(t.tenant, { from: Date.now() - 3_600_000, to: Date.now() + 3_600_000, groupBy: ["tool"] })).filter((r) => r.route === "background run");
    expect((await put()).status).toBe(204);
    expect(await runRows()).toEqual([]); // answered; its record waits in the request's waitUntil
    expect((await put()).status).toBe(204); // the runner's retry: the first result stays, nothing more is billed
    await settled();
    const rows = (await get(app, "/v1/usage?group_by=tool,key", t.key)).body.rows;
    expect(rows.filter((r: any) => r.route === "background run" || r.tool === "bash").map((r: any) => [r.tool ?? r.route, r.key, r.calls, r.sandbox_ms]).sort()).toEqual([
      ["background run", keyIdOf(t.key), 1, 1500],
      ["bash", keyIdOf(t.key), 1, 0],
    ]);
  });
});

describe("recording adds no storage round trip before the answer", { timeout: 120_000 }, () => {
  it("answered: the record is held in the isolate (in waitUntil), stored once the batch is handed over", async () => {
    // A hold of 3 s: however slow this machine, the record cannot be out before the check below.
    const { app, ctx, settled } = isolate(3_000);
    const t = await newTenant(app, { scopes: SCOPES });
    await settled();
    const before = (await store.query(t.tenant, { from: Date.now() - 3_600_000, to: Date.now() + 3_600_000, groupBy: [] }))[0]?.calls ?? 0;
    const res = await app.request("/v1/workspaces/main/tools/read", { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ file_path: "nope.txt" }) }, {}, ctx);
    expect(res.status).toBe(404);
    await res.arrayBuffer();
    // The answer is out; its record is not in the store yet (held for up to 3 s here, 1 s deployed).
    expect((await store.query(t.tenant, { from: Date.now() - 3_600_000, to: Date.now() + 3_600_000, groupBy: [] }))[0]?.calls ?? 0).toBe(before);
    await settled();
    expect((await store.query(t.tenant, { from: Date.now() - 3_600_000, to: Date.now() + 3_600_000, groupBy: [] }))[0]?.calls).toBe(before + 1);
  });
});
