/**
 * A tenant that wants sandbox time without paying for it, or past its concurrent_runs: attacks run
 * over the real app with the real sandbox (local executor, bubblewrap) and a memory limits store.
 * Every command's sandbox time is billed whichever way it ends (answered, timed out, stopped by its
 * disk limit, or left by a client that went away), and every foreground command holds a concurrent_runs
 * slot whichever door it came by (JSON, SSE).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryLimits } from "../../../../lib/limits/store.js";
import type { UsageRecord } from "../../../../lib/run/metering/record.js";
import { runPrefix } from "../../../../lib/layout/paths.js";
import { runIdFor } from "../../../../lib/sync/run-records.js";
import { mintSyncToken } from "../../../../lib/sync/token.js";
import { ADMIN, sandboxApp, type Tenant } from "../../doors/sandbox-app.js";

const usage: UsageRecord[] = [];
const { app, deps, post, tenant, close } = sandboxApp({ limits: memoryLimits(), onUsage: (u: UsageRecord) => void usage.push(u) });

let acme: Tenant;
beforeAll(async () => {
  acme = await tenant("acme");
});
afterAll(close);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits until `found` holds (a poll every 100 ms, at most `ms`). */
async function until(found: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!found() && Date.now() < end) await sleep(100);
}
const billedMs = (rs: UsageRecord[]) => rs.reduce((s, r) => s + (r.sandbox_ms ?? 0), 0);

/** A tool call with Accept: text/event-stream: its result event's envelope. */
async function streamed(tool: string, args: unknown, signal?: AbortSignal): Promise<any> {
  const res = await app.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${acme.key}`, "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify(args), ...(signal ? { signal } : {}) });
  const text = await res.text();
  const result = /event: result\ndata: (.*)\n/.exec(text);
  return result ? JSON.parse(result[1]!) : { status: res.status, text };
}

async function mcpCall(name: string, args: unknown): Promise<any> {
  const res = await app.request("/v1/workspaces/main/mcp", { method: "POST", headers: { authorization: `Bearer ${acme.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }) });
  return res.json();
}

describe("a command stopped by its timeout is billed its sandbox time", () => {
  it("by every door: JSON, SSE and MCP", async () => {
    const before = usage.length;
    const json = await post("/v1/workspaces/main/tools/bash", { command: "sleep 30", timeout: 1 }, acme.key);
    expect(json.body.error?.code).toBe("TIMEOUT");
    const sse = await streamed("bash", { command: "sleep 30", timeout: 1 });
    expect(sse.error?.code).toBe("TIMEOUT");
    const mcp = await mcpCall("bash", { command: "sleep 30", timeout: 1 });
    expect(JSON.stringify(mcp)).toContain("TIMEOUT");
    await until(() => usage.slice(before).filter((u) => u.tool === "bash").length >= 3);
    const calls = usage.slice(before).filter((u) => u.tool === "bash");
    expect(calls.map((u) => u.code)).toEqual(["TIMEOUT", "TIMEOUT", "TIMEOUT"]);
    // Each ran its whole second in the sandbox before it was stopped.
    for (const u of calls) expect(u.sandbox_ms, JSON.stringify(u)).toBeGreaterThanOrEqual(900);
  });
});

describe("a streamed command whose client went away is billed the sandbox time it had", () => {
  it("SSE bash left after 2 s of a busy loop: billed about 2 s, once", async () => {
    const before = usage.length;
    const ctrl = new AbortController();
    const call = streamed("bash", { command: "while :; do :; done", timeout: 60 }, ctrl.signal).catch(() => null);
    await sleep(2500);
    ctrl.abort();
    await call;
    // The runner sees the kill flag within a few hundred ms and stores its result.
    await until(() => billedMs(usage.slice(before)) >= 1000, 20_000);
    await sleep(1500); // nothing more comes
    const fresh = usage.slice(before);
    expect(billedMs(fresh), JSON.stringify(fresh)).toBeGreaterThanOrEqual(1000);
    expect(fresh.filter((u) => (u.sandbox_ms ?? 0) > 0)).toHaveLength(1);
  });
});

describe("a streamed run is billed once", () => {
  it("answered to its caller: the call's own record, nothing at its runner's end", async () => {
    const before = usage.length;
    const r = await streamed("bash", { command: "sleep 1; echo ok" });
    expect(r.ok).toBe(true);
    await sleep(1000); // the runner's result PUT is long done: nothing more comes
    const billed = usage.slice(before).filter((u) => u.sandbox_ms !== undefined);
    expect(billed).toEqual([expect.objectContaining({ tool: "bash", ok: true, sandbox_ms: r.data.duration_ms })]);
  });

  it("its runner's stored result bills only when the caller left (its kill flag), and only once (the billing marker)", async () => {
    const sync = async (token: string, method: string, path: string, body?: unknown) =>
      app.request(`/v1/sync/run${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const result = { ok: true, result: { run_id: "x", exit_code: null, duration_ms: 4321, timed_out: false, killed: true } };
    const tokenFor = (r: string) => mintSyncToken("sync-secret-for-tests-0123456789", { t: "acme", w: "main", r, m: { k: "k1", s: 1 } }, 900);
    const before = usage.length;
    // Followed to its end: the call took it (no flag): nothing here.
    const taken = await tokenFor("run_streamed_taken");
    expect((await sync(taken, "PUT", "/result", result)).status).toBe(204);
    // Its caller left (the flag), and the result came after: billed here.
    const left = await tokenFor("run_streamed_left");
    await deps.storage.put(`${runPrefix("acme", "main", await runIdFor("acme", "main", "run_streamed_left"))}kill`, "kill");
    expect((await sync(left, "PUT", "/result", result)).status).toBe(204);
    // Its caller left and took the result first (it holds the billing marker): nothing here.
    const first = await tokenFor("run_streamed_first");
    const prefix = runPrefix("acme", "main", await runIdFor("acme", "main", "run_streamed_first"));
    await deps.storage.put(`${prefix}kill`, "kill");
    await deps.storage.put(`${prefix}billed`, "");
    expect((await sync(first, "PUT", "/result", result)).status).toBe(204);
    await sleep(100);
    expect(usage.slice(before)).toEqual([expect.objectContaining({ tenant: "acme", workspace: "main", key: "k1", route: "background run", sandbox_ms: 4321, code: "CANCELLED" })]);
  });
});

describe("concurrent_runs holds by every door", () => {
  it("3 concurrent streamed commands under concurrent_runs 1: one runs, two are refused", async () => {
    expect((await post("/v1/admin/tenants/acme/limits", { concurrent_runs: 1 }, ADMIN, "PUT")).status).toBe(200);
    try {
      const outs = await Promise.all([1, 2, 3].map(() => streamed("bash", { command: "sleep 2; echo done" })));
      const codes = outs.map((o) => (o.ok ? "ok" : o.error?.code ?? `HTTP_${o.status}`));
      expect(codes.sort()).toEqual(["RATE_LIMITED", "RATE_LIMITED", "ok"]);
      // The slot is given back when the streamed command ends: the next one runs.
      expect((await streamed("bash", { command: "echo again" })).ok).toBe(true);
    } finally {
      await post("/v1/admin/tenants/acme/limits", {}, ADMIN, "PUT");
    }
  });
});

describe("a key's own concurrent_runs holds for fresh commands", () => {
  it("3 concurrent commands of a key limited to 1 (the tenant to 8), by JSON and SSE: one runs, two are refused naming the key; another key is not", async () => {
    const one = (await post("/v1/admin/tenants/acme/keys", { name: "one-run", limits: { concurrent_runs: 1 } }, ADMIN)).body.key as string;
    const json = async (): Promise<any> => (await post("/v1/workspaces/main/tools/bash", { command: "sleep 2; echo done" }, one)).body;
    const sse = async (): Promise<any> => {
      const res = await app.request("/v1/workspaces/main/tools/bash", { method: "POST", headers: { authorization: `Bearer ${one}`, "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify({ command: "sleep 2; echo done" }) });
      return JSON.parse(/event: result\ndata: (.*)\n/.exec(await res.text())![1]!);
    };
    const other = post("/v1/workspaces/main/tools/bash", { command: "sleep 1; echo other" }, acme.key);
    const outs = await Promise.all([json(), json(), sse()]);
    expect(outs.map((o) => (o.ok ? "ok" : o.error.code)).sort()).toEqual(["RATE_LIMITED", "RATE_LIMITED", "ok"]);
    for (const o of outs.filter((o) => !o.ok)) expect(o.error.details).toMatchObject({ limit: "concurrent_runs", by: "key", quota: 1 });
    expect((await other).body.ok).toBe(true);
  });
});

describe("a key's own storage_bytes holds for what its commands write back", () => {
  it("a key limited to 200 KB (the tenant to its default) writes 1 MB by bash: refused, nothing of it lands; a raw PUT of it is refused too", async () => {
    const small = (await post("/v1/admin/tenants/acme/keys", { name: "small-disk", limits: { storage_bytes: 200_000 } }, ADMIN)).body.key as string;
    const put = await app.request("/v1/workspaces/main/files/direct.bin", { method: "PUT", headers: { authorization: `Bearer ${small}`, "content-length": "1000000" }, body: new Uint8Array(1_000_000) });
    expect(put.status).toBe(413);
    const r = await post("/v1/workspaces/main/tools/bash", { command: "head -c 1000000 /dev/urandom > by-bash.bin; echo wrote" }, small);
    expect(JSON.stringify(r.body)).toContain("storage_bytes");
    const got = await app.request("/v1/workspaces/main/files/by-bash.bin", { headers: { authorization: `Bearer ${acme.key}` } });
    expect(got.status).toBe(404);
  });
});

describe("a background run whose result is too large to store is billed all the same", () => {
  it("24,000 changed paths of 750 bytes (an 18 MB result past the sync server's 16 MB): billed its sandbox time", async () => {
    const before = usage.length;
    const make = `import os\nd='A'*250+'/'+'B'*250\nos.makedirs(d)\nfor i in range(24000): open(d+'/'+'C'*240+str(i),'w').close()`;
    const started = await post("/v1/workspaces/main/tools/bash", { command: `python3 -c "${make}" && sleep 100`, timeout: 8, run_in_background: true }, acme.key);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await until(() => usage.slice(before).some((u) => u.route === "background run"), 90_000);
    const runs = usage.slice(before).filter((u) => u.route === "background run");
    const read = await post("/v1/workspaces/main/tools/bash_output", { task_id: started.body.data.task_id }, acme.key);
    expect(runs, JSON.stringify(read.body).slice(0, 2000)).toHaveLength(1);
    expect(runs[0]!.sandbox_ms).toBeGreaterThanOrEqual(7000);
    // Its result is stored (its lists cut to fit): the task ended, not "running" until its deadline 15 minutes on.
    expect(read.body.data.status, JSON.stringify(read.body).slice(0, 2000)).toBe("timed_out");
  }, 120_000);
});
