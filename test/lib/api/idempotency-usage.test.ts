/**
 * A request the Idempotency-Key layer answered without running it is no call, by every door that
 * takes the key (docs/usage.md, "Not recorded"; lib/api/idempotency.ts answeredByKey): the tool
 * routes, the compat routes, the raw file routes (meterRoute) and MCP. Its kept answer replayed, or
 * refused: the first still running (CONFLICT), the same key for a different request
 * (INVALID_ARGUMENT), a kept answer too large to keep or that can no longer be read (CONFLICT). Each
 * such request still takes its calls_per_minute token. Before (2026-12-02), every refusal was
 * recorded as a failed call on the tool and raw file routes: 8 concurrent keyed bash calls billed
 * `calls: 8, errors: 7` for one command run.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { keyIdOf } from "../../../lib/api/auth/keys.js";
import { scopedKeyHash } from "../../../lib/api/idempotency.js";
import type { Executor, RunRequest, RunResult } from "../../../lib/exec/types.js";
import { idempotencyRecordKey } from "../../../lib/layout/paths.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { durableUsageStore, type UsageObjects } from "../../../lib/run/metering/durable-store.js";
import { heldUsageStore } from "../../../lib/run/metering/held-store.js";
import type { UsageRecord } from "../../../lib/run/metering/record.js";
import { admin, newTenant, testApp, UNGATED, type Tenant } from "../../helpers.js";

const SYNC = { syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://sync.invalid" };
const SCOPES = ["read", "write", "execute", "manage"];

/** The runner's answer to a command (the runner itself is tested in Node); the command waits for `open`. */
function gatedExecutor() {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let entered!: () => void;
  const running = new Promise<void>((r) => (entered = r));
  const runs: RunRequest[] = [];
  const executor: Executor = {
    run: async (req) => {
      runs.push(req);
      entered();
      await gate;
      return {
        run_id: req.idempotency_key, stdout: "ran\n", stderr: "", output: "ran\n", exit_code: 0, duration_ms: 1234, timed_out: false, killed: false, truncated: false,
        files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [],
        sync: { cache: "warm", manifest_files: 0, downloaded_files: 0, downloaded_bytes: 0, uploaded_files: 0, uploaded_bytes: 0, deleted_files: 0, sync_in_ms: 0, sync_out_ms: 0 },
      } as RunResult;
    },
    start: async () => {},
  };
  return { executor, runs, running, open };
}

describe("8 concurrent bash calls with one Idempotency-Key (the outside check's case)", { timeout: 120_000 }, () => {
  it("one runs and is the one record; the 7 refused while it runs and their 7 retries (replays) record nothing, and all 16 take calls_per_minute", async () => {
    const store = durableUsageStore(env.USAGE as unknown as UsageObjects);
    const sink = heldUsageStore(store, { log: false });
    const { executor, runs, running, open } = gatedExecutor();
    // The key held by the tenant's limits store, as deployed (npm start, Workers: its Durable Object); its clock
    // stopped, so that no token comes back while the test runs.
    const stopped = Date.now();
    const app = testApp({ usageStore: store, onUsage: sink, executor, limits: memoryLimits(() => stopped), ...SYNC });
    const t = await newTenant(app, { scopes: SCOPES, policy: UNGATED.policy });
    // A key of its own with 16 calls a minute (a key's limits are in its record: no cache to wait out).
    const key = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: SCOPES, limits: { calls_per_minute: 16 } })).body.key as string;
    const bash = (idem = "one-command") => app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s1", "idempotency-key": idem }, body: JSON.stringify({ command: "echo ran" }) });
    const first = bash();
    await running; // the command is running: every other request with the key meets it
    const refused = await Promise.all(Array.from({ length: 7 }, () => bash()));
    const bodies = await Promise.all(refused.map(async (r) => [r.status, ((await r.json()) as any).error.code]));
    expect(bodies).toEqual(Array.from({ length: 7 }, () => [409, "CONFLICT"]));
    open();
    const ran = await first;
    expect(ran.status).toBe(200);
    const answer = await ran.text();
    // Retried after Retry-After: the kept answer, 7 times.
    const retried = await Promise.all(Array.from({ length: 7 }, () => bash()));
    for (const r of retried) {
      expect([r.status, r.headers.get("idempotent-replayed"), await r.text()]).toEqual([200, "true", answer]);
    }
    expect(runs).toHaveLength(1);
    // Rate limiting counts every one of them: 1 + 7 + 7 = 15 of 16; the 16th passes, the 17th is refused.
    expect((await bash("another")).status).toBe(200);
    const over = await bash("a-third");
    expect([over.status, ((await over.json()) as any).error.code]).toEqual([429, "RATE_LIMITED"]);
    await sink.settled();
    const rows = ((await (await t.req("/v1/usage?group_by=tool")).json()) as any).rows.filter((r: any) => r.tool === "bash");
    // The command that ran, "another", and "a-third" refused by the rate limit (a request the key layer did not answer):
    // 3 calls, 1 error (before: 10 calls, 8 errors: each CONFLICT billed as a failed call).
    expect(rows.map((r: any) => [r.tool, r.calls, r.ok, r.errors, r.sandbox_ms])).toEqual([["bash", 3, 2, 1, 2 * 1234]]);
  });
});

/** One door that takes Idempotency-Key: a request that writes `name`, sent with `key`; `other` a different request. */
interface Door {
  name: string;
  send: (t: Tenant, key: string, file: string) => Promise<Response>;
  /** The record its run makes. */
  record: string;
}

const json = (body: unknown, extra: Record<string, string> = {}) => ({ method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1", ...extra }, body: JSON.stringify(body) });
const DOORS: Door[] = [
  { name: "tool route", record: "write", send: (t, key, file) => t.req(`/v1/workspaces/${t.ws}/tools/write`, withKey(json({ file_path: file, content: "x\n" }), key)) },
  { name: "raw file route", record: "PUT files", send: (t, key, file) => t.req(`/v1/workspaces/${t.ws}/files/${file}`, withKey({ method: "PUT", headers: { "content-length": "2" }, body: "x\n" }, key)) },
  { name: "compat route", record: "edit", send: (t, key, file) => t.req(`/v1/workspaces/${t.ws}/compat/anthropic/str_replace_based_edit_tool`, withKey(json({ command: "create", path: file, file_text: "x\n" }), key)) },
  {
    name: "MCP",
    record: "write",
    send: (t, key, file) => t.req(`/v1/workspaces/${t.ws}/mcp`, withKey(json({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "write", arguments: { file_path: file, content: "x\n" } } }, { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-03-26" }), key)),
  },
];
function withKey(init: RequestInit, key: string): RequestInit {
  return { ...init, headers: { ...(init.headers as Record<string, string>), "idempotency-key": key } };
}
const nameOf = (u: UsageRecord) => u.tool ?? u.route;

describe("every refusal of the Idempotency-Key layer, by every door that takes the key", { timeout: 120_000 }, () => {
  it.each(DOORS)("$name: the run is the one record; a replay, CONFLICT while running, a different request, a kept answer too large or unreadable record nothing", async (door) => {
    const usage: UsageRecord[] = [];
    // The key held by the bucket's records (no limits object), so that each refusal's state can be set up exactly.
    const app = testApp({ onUsage: (u) => void usage.push(u), ...SYNC });
    const t = await newTenant(app, { scopes: SCOPES, policy: UNGATED.policy });
    const recordOf = async (key: string) => idempotencyRecordKey(t.tenant, await scopedKeyHash({ tenant: t.tenant, keyId: keyIdOf(t.key)! }, key));
    const mine = () => usage.filter((u) => u.tenant === t.tenant && u.workspace === t.ws);
    const codeOf = async (r: Response) => {
      const e = ((await r.json()) as any).error;
      return typeof e?.code === "string" ? e.code : (e?.message?.split(":")[0] ?? null); // MCP: a JSON-RPC error, "CODE: message"
    };
    const ran = await door.send(t, "k1", "a.txt");
    expect(ran.status, await ran.clone().text()).toBeLessThan(300);
    expect(mine().map(nameOf)).toEqual([door.record]);
    // The kept answer.
    const replay = await door.send(t, "k1", "a.txt");
    expect([replay.status, replay.headers.get("idempotent-replayed")]).toEqual([ran.status, "true"]);
    // The same key for a different request.
    const different = await door.send(t, "k1", "b.txt");
    expect([different.status, await codeOf(different)]).toEqual([400, "INVALID_ARGUMENT"]);
    // The first still running (a record another isolate's run holds).
    const now = Date.now();
    await env.FILES.put(await recordOf("k2"), JSON.stringify({ state: "running", started: now, lease_until: now + 60_000, expires: now + 3600_000 }));
    const running = await door.send(t, "k2", "c.txt");
    expect([running.status, await codeOf(running)]).toEqual([409, "CONFLICT"]);
    // Its kept answer unreadable: the deployment's sync secret changed since.
    const rotated = testApp({ onUsage: (u) => void usage.push(u), syncSecret: "another-sync-secret-0123456789abc", syncUrl: SYNC.syncUrl });
    const unreadable = await door.send({ ...t, req: async (path, init = {}) => rotated.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, ...(init.headers as Record<string, string>) } }) }, "k1", "a.txt");
    expect([unreadable.status, await codeOf(unreadable)]).toEqual([409, "CONFLICT"]);
    // Its answer too large to keep.
    const k1 = await recordOf("k1");
    const kept = JSON.parse(await (await env.FILES.get(k1))!.text());
    await env.FILES.put(k1, JSON.stringify({ ...kept, body: undefined, sealed: undefined, too_large: true }));
    const tooLarge = await door.send(t, "k1", "a.txt");
    expect([tooLarge.status, await codeOf(tooLarge)]).toEqual([409, "CONFLICT"]);
    // Nothing ran but the first: one record (before: one more per refusal on the tool and raw file routes).
    expect(mine().map(nameOf)).toEqual([door.record]);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/b.txt`)).status).toBe(404);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/c.txt`)).status).toBe(404);
  });
});
