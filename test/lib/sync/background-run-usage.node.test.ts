/**
 * A background run's sandbox time is billed where its result is stored (PUT /v1/sync/run/result),
 * once, whether or not anyone reads the result (docs/usage.md, route "background run"): over the real
 * app with the real sandbox (local executor, bubblewrap) and a usage store read back through
 * GET /v1/usage and its export. Tenant, workspace and key come from the signed sync token only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryUsageStore } from "../../../lib/run/metering/memory-store.js";
import { heldUsageStore } from "../../../lib/run/metering/held-store.js";
import type { StoredRecord } from "../../../lib/run/metering/store.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { bytesToBase64Url } from "../../../lib/shared/text.js";
import { ADMIN, sandboxApp, type Tenant } from "../doors/sandbox-app.js";

const SYNC_SECRET = "sync-secret-for-tests-0123456789"; // sandboxApp's
const usageStore = new MemoryUsageStore();
const { app, post, tenant, close } = sandboxApp({ usageStore, onUsage: heldUsageStore(usageStore, { log: false }) });

let acme: Tenant;
let manage: string;
let other: Tenant;
beforeAll(async () => {
  acme = await tenant("acme");
  manage = (await post("/v1/admin/tenants/acme/keys", { name: "billing", scopes: ["read", "manage"] }, ADMIN)).body.key as string;
  other = await tenant("other");
});
afterAll(close);

const keyIdOf = (key: string) => key.split("_")[1]!;
const bash = (args: Record<string, unknown>) => post("/v1/workspaces/main/tools/bash", args, acme.key);

/** The tenant's raw usage records, as a billing pipeline pages them out (GET /v1/usage/export). */
async function exported(tenantId = "acme"): Promise<StoredRecord[]> {
  // `to` past now: the default (now, exclusive) leaves out a record stored in this very millisecond.
  const res = await app.request(`/v1/admin/tenants/${tenantId}/usage/export?limit=1000&to=${Date.now() + 60_000}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  expect(res.status).toBe(200);
  return (await res.text()).split("\n").filter(Boolean).map((l) => JSON.parse(l) as StoredRecord);
}

/** Reads the export until `found` holds (a poll every 100 ms, at most `ms`): the run ends on its own time. */
async function exportedUntil(found: (records: StoredRecord[]) => boolean, ms = 60_000): Promise<StoredRecord[]> {
  const until = Date.now() + ms;
  for (;;) {
    const records = await exported();
    if (found(records) || Date.now() > until) return records;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const backgroundRuns = (records: StoredRecord[]) => records.filter((r) => r.route === "background run");

/** A sync token as the API mints one for a run (lib/exec/tool-support.ts runRequest). */
const tokenFor = (claims: { t: string; w: string; r: string; m?: { k: string } }) => mintSyncToken(SYNC_SECRET, claims, 900);

async function sync(token: string, method: string, path: string, body?: unknown): Promise<Response> {
  return app.request(`/v1/sync/run${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
}

const finished = (duration_ms: number, extra: Record<string, unknown> = {}) => ({ ok: true, result: { run_id: "x", exit_code: 0, duration_ms, timed_out: false, killed: false, ...extra } });

describe("a background run is billed where its result is stored", () => {
  it("a background bash nobody polls is billed with its sandbox time once its runner finishes, to the key that started it", async () => {
    const started = await bash({ command: "sleep 1; echo done > bg.txt", run_in_background: true });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body.data.status).toBe("running");
    // Nobody calls bash_output: the run's end alone makes its record.
    const records = await exportedUntil((rs) => backgroundRuns(rs).length > 0);
    const runs = backgroundRuns(records);
    expect(runs).toHaveLength(1);
    // The file it wrote back is its record's bytes_written ("done\n": 5 bytes), as a foreground run's call counts it (before: 0).
    expect(runs[0]).toMatchObject({ tenant: "acme", workspace: "main", key: keyIdOf(acme.key), ok: true, bytes_read: 0, bytes_written: 5 });
    expect(runs[0]!.sandbox_ms).toBeGreaterThanOrEqual(1000); // its sleep 1
    expect(runs[0]!.ms).toBe(runs[0]!.sandbox_ms);
    // The call itself is billed when it starts, without sandbox time (it had none yet).
    const calls = records.filter((r) => r.tool === "bash");
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ ok: true, key: keyIdOf(acme.key) });
    expect(calls[0]!.sandbox_ms).toBeUndefined();
    // The tenant's own usage route sums it with the rest.
    const res = await app.request("/v1/usage?group_by=tool", { headers: { authorization: `Bearer ${manage}` } });
    const rows = ((await res.json()) as { rows: { route?: string; calls: number; sandbox_ms: number }[] }).rows;
    expect(rows.find((r) => r.route === "background run")).toMatchObject({ calls: 1, sandbox_ms: runs[0]!.sandbox_ms });
    // Reading the result afterwards bills no more sandbox time.
    const read = await post("/v1/workspaces/main/tools/bash_output", { task_id: started.body.data.task_id, wait: true }, acme.key);
    expect(read.body.data.status).toBe("completed");
    expect(backgroundRuns(await exported())).toHaveLength(1);
  });

  it("a foreground bash makes one record with its sandbox time: its own (its runner's stored result bills nothing more)", async () => {
    const before = (await exported()).length;
    const r = await bash({ command: "echo hi" });
    expect(r.status).toBe(200);
    const fresh = (await exported()).slice(before);
    expect(fresh.filter((u) => u.sandbox_ms !== undefined)).toEqual([expect.objectContaining({ tool: "bash", sandbox_ms: r.body.data.duration_ms })]);
  });

  it("a result PUT twice bills once: the first result stays, and only the PUT that stored it meters", async () => {
    const before = backgroundRuns(await exported()).length;
    const token = await tokenFor({ t: "acme", w: "main", r: "run_put_twice", m: { k: "k1" } });
    expect((await sync(token, "POST", "/claim", { task: true })).status).toBe(200);
    expect((await sync(token, "PUT", "/result", finished(1234))).status).toBe(204);
    expect((await sync(token, "PUT", "/result", finished(1234))).status).toBe(204);
    expect((await sync(token, "PUT", "/result", finished(9999))).status).toBe(204);
    const state = (await (await sync(token, "GET", "")).json()) as { result: { result: { duration_ms: number } } };
    expect(state.result.result.duration_ms).toBe(1234);
    const runs = backgroundRuns(await exported()).slice(before);
    expect(runs).toEqual([expect.objectContaining({ tenant: "acme", workspace: "main", key: "k1", ok: true, sandbox_ms: 1234 })]);
  });

  it("what the run's egress proxy carried (its result's net_bytes_in / net_bytes_out) is in its record; a run without network has none", async () => {
    const before = backgroundRuns(await exported()).length;
    const online = await tokenFor({ t: "acme", w: "main", r: "run_online", m: { k: "k1" } });
    expect((await sync(online, "PUT", "/result", finished(80, { net_bytes_in: 2_097_450, net_bytes_out: 312 }))).status).toBe(204);
    const offline = await tokenFor({ t: "acme", w: "main", r: "run_offline", m: { k: "k1" } });
    expect((await sync(offline, "PUT", "/result", finished(90))).status).toBe(204);
    const runs = backgroundRuns(await exported()).slice(before);
    expect(runs.map((r) => [r.sandbox_ms, r.net_bytes_in, r.net_bytes_out])).toEqual([[80, 2_097_450, 312], [90, undefined, undefined]]);
  });

  it("how the run ended is the record's outcome; a run that reported no time is billed from its claim to its result", async () => {
    const before = backgroundRuns(await exported()).length;
    // The failed run is claimed first; the other two runs' PUTs pass while it "runs".
    const failed = await tokenFor({ t: "acme", w: "main", r: "run_failed", m: { k: "k1" } });
    const claimedAt = Date.now();
    expect((await sync(failed, "POST", "/claim", { task: true })).status).toBe(200);
    const afterClaim = Date.now();
    const killed = await tokenFor({ t: "acme", w: "main", r: "run_killed", m: { k: "k1" } });
    await sync(killed, "PUT", "/result", finished(50, { killed: true, exit_code: null }));
    const timedOut = await tokenFor({ t: "acme", w: "main", r: "run_timed_out", m: { k: "k1" } });
    await sync(timedOut, "PUT", "/result", finished(60, { timed_out: true, exit_code: null }));
    const beforePut = Date.now();
    expect(beforePut).toBeGreaterThan(afterClaim);
    const put = await sync(failed, "PUT", "/result", { ok: false, error: { code: "INTERNAL", message: "the runner failed" } });
    expect(put.status, await put.clone().text()).toBe(204);
    const repliedAt = Date.now();
    const runs = backgroundRuns(await exported()).slice(before);
    expect(runs.map((r) => [r.ok, r.code, r.key])).toEqual([
      [false, "CANCELLED", "k1"],
      [false, "TIMEOUT", "k1"],
      [false, "INTERNAL", "k1"],
    ]);
    expect(runs.slice(0, 2).map((r) => r.sandbox_ms)).toEqual([50, 60]);
    // The runner's error reports no time: from its claim to its stored result, by the API's clock.
    expect(runs[2]!.sandbox_ms).toBeGreaterThanOrEqual(beforePut - afterClaim);
    expect(runs[2]!.sandbox_ms).toBeLessThanOrEqual(repliedAt - claimedAt);
  });

  it("a token bills only the tenant, workspace and key it names: another tenant's token cannot make a record for acme", async () => {
    const acmeBefore = (await exported("acme")).length;
    const otherBefore = backgroundRuns(await exported("other")).length;
    // Other's own token: its result, even one that names acme in its body, bills other.
    const otherToken = await tokenFor({ t: "other", w: "main", r: "run_other", m: { k: keyIdOf(other.key) } });
    expect((await sync(otherToken, "PUT", "/result", { ...finished(10), tenant: "acme", workspace: "main", key: keyIdOf(acme.key) })).status).toBe(204);
    // Other's token with its claims rewritten to name acme keeps other's signature: refused.
    const [, mac] = otherToken.split(".");
    const forged = `${bytesToBase64Url(new TextEncoder().encode(JSON.stringify({ t: "acme", w: "main", r: "run_forged", m: { k: keyIdOf(acme.key) }, exp: Math.floor(Date.now() / 1000) + 900 })))}.${mac}`;
    expect((await sync(forged, "PUT", "/result", finished(10))).status).toBe(401);
    // A token signed with another secret: refused.
    const stranger = await mintSyncToken("another-secret-0123456789abcdef", { t: "acme", w: "main", r: "run_stranger", m: { k: "k1" } }, 900);
    expect((await sync(stranger, "PUT", "/result", finished(10))).status).toBe(401);
    // A foreground run's token (no meter claim) bills nothing at its result.
    const foreground = await tokenFor({ t: "acme", w: "main", r: "run_foreground" });
    expect((await sync(foreground, "PUT", "/result", finished(10))).status).toBe(204);

    expect((await exported("acme")).slice(acmeBefore)).toEqual([]);
    expect(backgroundRuns(await exported("other")).slice(otherBefore)).toEqual([expect.objectContaining({ tenant: "other", workspace: "main", key: keyIdOf(other.key), sandbox_ms: 10 })]);
  });
});
