/**
 * Live sessions through the API (docs/live-sessions.md) on the real app with local R2/KV and the
 * LIVE Durable Object, with a fake live runner (test/support/fake-live-runner.ts) speaking the HTTP
 * protocol of /v1/sync/live/*: keep_alive calls, serialization and BUSY, the lost-runner paths with
 * their note and transparent restart, GET/DELETE .../sandbox, tenants apart, the sync routes' token
 * checks, the concurrent_runs lease. The end-to-end test with the real runner is separate.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { mintSyncToken } from "../../../../lib/sync/token.js";
import { listAudit } from "../../../../lib/run/audit/store.js";
import type { UsageRecord } from "../../../../lib/run/metering/record.js";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import { ADMIN, admin, newTenant, testApp, UNGATED, type Tenant } from "../../../helpers.js";
import { FAST } from "./coordinator-conformance.js";
import { liveApp, okOutput, SECRET } from "./live-app.js";

/** The coordinator's clocks: STEADY, but FAST's for the tests whose subject is a lost or absent runner (LOSS). */
const LOSS = { timings: FAST };

const setup = liveApp;

const bash = (t: Tenant, command: string, session = "chat-1", more: Record<string, unknown> = {}) => t.call("bash", { command, keep_alive: true, timeout: 2, ...more }, session);
const sandbox = (t: Tenant, session: string, method = "GET") => t.req(`/v1/workspaces/${t.ws}/sessions/${session}/sandbox`, { method });

describe("keep_alive through the API (fake live runner)", () => {
  it("keep_alive needs a named session: without X-Session-Id it is refused, naming the header; nothing starts", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    const r = await t.req(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ command: "true", keep_alive: true }) });
    const body = (await r.json()) as any;
    expect(r.status).toBe(400);
    expect(body.error.code).toBe("INVALID_ARGUMENT");
    expect(body.error.message).toContain("X-Session-Id");
    expect(runner.generations).toHaveLength(0);
  });

  it("idle_timeout_s sent to a session whose sandbox runs changes nothing, and the output says so (bash and run_code); a call without it says nothing", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    const KEPT = "[idle_timeout_s applies when a live sandbox starts: this call ran in the session's running one, whose idle timeout is unchanged";
    expect(okOutput(await bash(t, "true", "chat-i", { idle_timeout_s: 30 }))).toContain("until 30 s without a command");
    const g = runner.generations[0]!.generation;
    const again = okOutput(await bash(t, "true", "chat-i", { idle_timeout_s: 600 }));
    expect(again).toContain(KEPT);
    expect(again).toContain(`gen=${g} n=2`);
    expect(okOutput(await t.call("run_code", { language: "bash", code: "true", keep_alive: true, idle_timeout_s: 600, timeout: 2 }, "chat-i"))).toContain(KEPT);
    expect(okOutput(await bash(t, "true", "chat-i"))).not.toContain("idle_timeout_s");
    // Without keep_alive: true (a join of the running sandbox), idle_timeout_s is not used, and said so, by bash and run_code.
    const UNUSED = "[idle_timeout_s was not used: it applies with keep_alive: true, when a live sandbox starts]";
    expect(okOutput(await t.call("bash", { command: "true", idle_timeout_s: 600, timeout: 2 }, "chat-i"))).toContain(UNUSED);
    expect(okOutput(await t.call("run_code", { language: "bash", code: "true", idle_timeout_s: 600, timeout: 2 }, "chat-i"))).toContain(UNUSED);
    expect(runner.generations).toHaveLength(1);
    await sandbox(t, "chat-i", "DELETE");
  });

  it("the first call starts a live sandbox (and says so); the session's next call runs in the same one; GET shows it", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    const first = okOutput(await bash(t, "cd sub"));
    expect(runner.generations).toHaveLength(1);
    const g = runner.generations[0]!;
    expect(g.start.live).toMatchObject({ generation: g.generation, idle_ms: 300_000 });
    expect(g.start.command).toBe("");
    expect(first).toContain("[live sandbox started for this session");
    expect(first).toContain(`gen=${g.generation} n=1 cmd=cd sub`);
    const second = okOutput(await bash(t, "pwd"));
    expect(second).toBe(`gen=${g.generation} n=2 cmd=pwd\n`);
    expect(runner.generations).toHaveLength(1);
    const s = await sandbox(t, "chat-1");
    expect(s.status).toBe(200);
    expect(await s.json()).toMatchObject({ session: "chat-1", generation: g.generation, state: "idle", processes: [{ pid: 5 }], ports: [8123], cpu_ms: 7 });
    // run_code keeps alive in the same sandbox; another session gets its own.
    const rc = await t.call("run_code", { language: "python", code: "print(1)", keep_alive: true }, "chat-1");
    expect(okOutput(rc)).toContain(`gen=${g.generation} n=3`);
    okOutput(await bash(t, "pwd", "chat-2"));
    expect(runner.generations).toHaveLength(2);
    const none = await sandbox(t, "chat-3");
    expect(none.status).toBe(404);
    // The refusal says how one is started.
    expect(((await none.json()) as any).error.message).toBe("Session chat-3 has no live sandbox in this workspace (none was started with keep_alive, or it ended). A bash or run_code call with keep_alive: true and the header X-Session-Id: chat-3 starts one.");
    await sandbox(t, "chat-1", "DELETE");
    await sandbox(t, "chat-2", "DELETE");
  });

  it("one command at a time per session: a second call waits, then BUSY with Retry-After; with a longer wait it runs after the first", async () => {
    const { app, runner, deps } = setup();
    const t = await newTenant(app, UNGATED);
    okOutput(await bash(t, "warm up"));
    const a = bash(t, "__block");
    await runner.blockedOne();
    const busy = await t.req(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "chat-1" }, body: JSON.stringify({ command: "echo", keep_alive: true }) });
    expect(busy.status).toBe(409);
    // A hint of seconds (most commands end in seconds, and a retry waits for the turn itself), not the command's whole timeout.
    expect(Number(busy.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(busy.headers.get("retry-after"))).toBeLessThanOrEqual(5);
    expect(((await busy.json()) as any).error).toMatchObject({ code: "BUSY" });
    // The same tenant through an app that waits longer: queued behind the blocked one.
    const patient = testApp({ ...deps, liveBusyWaitMs: 20_000 });
    const b = patient.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "chat-1" }, body: JSON.stringify({ command: "after", keep_alive: true, timeout: 2 }) });
    runner.release();
    expect(okOutput(await a)).toContain("n=2 cmd=__block");
    const rb = await b;
    expect(rb.status).toBe(200);
    expect(((await rb.json()) as any).output).toContain("n=3 cmd=after");
    await sandbox(t, "chat-1", "DELETE");
  });

  it("a runner that ends under a command: the call runs it again in a new sandbox, its output says what was lost and that files are safe", async () => {
    const usage: UsageRecord[] = [];
    const { app, runner } = setup({}, { onUsage: (u) => void usage.push(u) });
    const t = await newTenant(app, UNGATED);
    okOutput(await bash(t, "start"));
    const out = okOutput(await bash(t, "__end"));
    expect(await runner.generations[0]!.done).toBe("ended");
    expect(runner.generations).toHaveLength(2);
    expect(out).toContain("[live sandbox lost: it stopped answering");
    expect(out).toContain("1 process (python3 -m http.server 8123)");
    expect(out).toContain("Files are safe");
    // What its end wrote back, and what it could not (a conflict), are in the text the model reads.
    expect(out).toContain("what background processes did since was written back: changed bg.txt.");
    expect(out).toContain("NOT written back, changed in the workspace meanwhile (the workspace's version was kept, the sandbox's saved under .toolshed/conflicts/): clash.txt.");
    expect(out).toContain("ran again from the start in a new sandbox");
    expect(out).toContain("[live sandbox started");
    expect(out).toContain(`gen=${runner.generations[1]!.generation} n=1 cmd=__end`);
    // Its end's usage record has the network bytes no command took (its background processes').
    expect(usage.filter((u) => u.route === "live sandbox")).toEqual([expect.objectContaining({ cpu_ms: 7, net_bytes_in: 300, net_bytes_out: 40 })]);
    await sandbox(t, "chat-1", "DELETE");
  });

  it("a runner that goes silent under a command is taken for lost once the command's timeout has passed: the call restarts it", async () => {
    const { app, runner } = setup(LOSS);
    const t = await newTenant(app, UNGATED);
    okOutput(await bash(t, "start"));
    const out = okOutput(await bash(t, "__die", "chat-1", { timeout: 1 }));
    expect(out).toContain("[live sandbox lost: it stopped answering");
    expect(out).toContain(`gen=${runner.generations[1]!.generation} n=1 cmd=__die`);
    await sandbox(t, "chat-1", "DELETE");
  });

  it("DELETE ends it at once: the runner is told ended, GET is 404, the next call starts anew and says plainly that it was ended on request, what went, and that files are safe", async () => {
    const usage: UsageRecord[] = [];
    const { app, runner } = setup({}, { onUsage: (u) => void usage.push(u) });
    const t = await newTenant(app, UNGATED);
    okOutput(await bash(t, "start"));
    const g = runner.generations[0]!;
    const d = await sandbox(t, "chat-1", "DELETE");
    expect(d.status).toBe(200);
    expect(await d.json()).toMatchObject({ generation: g.generation, processes: [{ pid: 5 }] });
    expect(await g.done).toBe("end:ended");
    expect((await sandbox(t, "chat-1")).status).toBe(404);
    expect((await sandbox(t, "chat-1", "DELETE")).status).toBe(404);
    const out = okOutput(await bash(t, "again"));
    expect(out).toContain("[live sandbox ended: you or the app you run in ended it on purpose (DELETE /v1/workspaces/{ws}/sessions/{session}/sandbox), not a fault. Gone with it: its shell state (variables, functions, cwd beyond the saved one), 1 process (");
    expect(out).toContain("/tmp and HOME. Files are safe: every call's changes were written back to the workspace when it answered.]");
    expect(out).not.toContain("lost");
    expect(out).toContain(`gen=${runner.generations[1]!.generation} n=1`);
    // Its start and end are in the audit log.
    const audit = await listAudit(r2Driver(env.FILES), { tenant: t.tenant, workspace: t.ws }, { limit: 200 });
    const live = audit.entries.filter((e) => e.door === "runner");
    expect(live.map((e) => e.route)).toEqual(["live sandbox start", "live sandbox end", "live sandbox start"]);
    expect(live[1]).toMatchObject({ session: "chat-1", args: { generation: g.generation, reason: "ended", processes_lost: 1 } });
    // One usage record for the sandbox's life, named by the key that started it.
    const records = usage.filter((u) => u.route === "live sandbox");
    expect(records).toEqual([expect.objectContaining({ tenant: t.tenant, workspace: t.ws, ok: true, cpu_ms: 7, key: expect.any(String) })]);
    expect(records[0]!.sandbox_ms).toBeGreaterThanOrEqual(0);
    await sandbox(t, "chat-1", "DELETE");
  });

  it("two tenants never reach each other's session: GET/DELETE answer 404, a live token of tenant A reaches only A's session", async () => {
    const { app, runner } = setup();
    const a = await newTenant(app, UNGATED);
    const b = await newTenant(app, UNGATED);
    okOutput(await bash(b, "b's", "shared-name"));
    const gb = runner.generations[0]!;
    expect((await sandbox(a, "shared-name")).status).toBe(404);
    expect((await sandbox(a, "shared-name", "DELETE")).status).toBe(404);
    expect((await sandbox(b, "shared-name")).status).toBe(200);
    // A token of tenant A naming B's session and generation: its polls land in A's (empty) session.
    const forged = await mintSyncToken(SECRET, { t: a.tenant, w: a.ws, r: "x", l: { s: "shared-name", g: gb.generation } }, 60);
    const st = { generation: gb.generation, started_at: 1, last_used_at: 1, processes: [], ports: [], wall_ms: 1 };
    const r = await app.request("/v1/sync/live/next", { method: "POST", headers: { authorization: `Bearer ${forged}` }, body: JSON.stringify(st) });
    expect(await r.json()).toEqual({ end: "replaced" });
    expect(okOutput(await bash(b, "still b's", "shared-name"))).toContain(`gen=${gb.generation} n=2`);
    await sandbox(b, "shared-name", "DELETE");
  });

  it("a call with other access (network) than its session's sandbox was started with gets a sandbox of its own", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, { ...UNGATED, scopes: ["read", "write", "execute", "network"] });
    okOutput(await bash(t, "with network"));
    expect(runner.generations[0]!.start.network).toBe(true);
    const k = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute"] });
    const res = await app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json", "x-session-id": "chat-1" }, body: JSON.stringify({ command: "without", keep_alive: true, timeout: 2 }) });
    const out = ((await res.json()) as any).output as string;
    expect(runner.generations).toHaveLength(2);
    expect(runner.generations[1]!.start.network).toBe(false);
    expect(out).toContain("network access, web domain lists or secrets differ");
    expect(out).toContain(`gen=${runner.generations[1]!.generation} n=1 cmd=without`);
    expect(await runner.generations[0]!.done).toBe("end:replaced");
    await sandbox(t, "chat-1", "DELETE");
  });

  it("a secret whose value was replaced (a leaked token rotated) replaces the sandbox whose egress proxy holds the old one; the same value reuses it", async () => {
    const { app, runner } = setup({}, { secretsKey: "k".repeat(40) });
    const t = await newTenant(app, { ...UNGATED, scopes: ["read", "write", "execute", "network", "manage"] });
    const setSecret = async (value: string) => {
      const r = await app.request("/v1/secrets/NPM_TOKEN", { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ value, destinations: [{ host: "npm.example.com", header: "Authorization", format: "Bearer {value}" }] }) });
      expect([200, 201], await r.clone().text()).toContain(r.status);
    };
    await setSecret("old-token-0123456789");
    okOutput(await bash(t, "first"));
    expect(runner.generations[0]!.start.egress_secrets).toEqual([expect.objectContaining({ name: "NPM_TOKEN", value: "Bearer old-token-0123456789" })]);
    await setSecret("old-token-0123456789"); // written again, the same value: the same sandbox
    expect(okOutput(await bash(t, "again"))).toContain(`gen=${runner.generations[0]!.generation} n=2`);
    await setSecret("new-token-9876543210");
    const out = okOutput(await bash(t, "after the rotation"));
    expect(runner.generations).toHaveLength(2);
    expect(runner.generations[1]!.start.egress_secrets).toEqual([expect.objectContaining({ value: "Bearer new-token-9876543210" })]);
    expect(out).toContain("network access, web domain lists or secrets differ");
    expect(await runner.generations[0]!.done).toBe("end:replaced");
    // The session's state names the secrets by name, host and header, never their values.
    expect(JSON.stringify((await sandbox(t, "chat-1")).body)).not.toContain("token-");
    await sandbox(t, "chat-1", "DELETE");
  });

  it("the tenant's web domain lists go with a live sandbox's start; the same lists reuse it, changed lists replace it at the session's next command", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, { ...UNGATED, scopes: ["read", "write", "execute", "network"] });
    const setWeb = async (web: Record<string, string[]>) => expect((await admin(app, `/v1/admin/tenants/${t.tenant}/policy`, { ...UNGATED.policy, web }, "PUT")).status).toBe(200);
    await setWeb({ blocked_domains: ["ads.example.com"] });
    okOutput(await bash(t, "first"));
    expect(runner.generations[0]!.start.egress_domains).toEqual({ blocked_domains: ["ads.example.com"] });
    await setWeb({ blocked_domains: ["ads.example.com"] }); // written again, the same lists: the same sandbox
    expect(okOutput(await bash(t, "again"))).toContain(`gen=${runner.generations[0]!.generation} n=2`);
    await setWeb({ allowed_domains: ["docs.example.com"], blocked_domains: ["ads.example.com"] });
    const out = okOutput(await bash(t, "after the change"));
    expect(runner.generations).toHaveLength(2);
    expect(runner.generations[1]!.start.egress_domains).toEqual({ allowed_domains: ["docs.example.com"], blocked_domains: ["ads.example.com"] });
    expect(out).toContain("network access, web domain lists or secrets differ");
    expect(await runner.generations[0]!.done).toBe("end:replaced");
    await sandbox(t, "chat-1", "DELETE");
  });

  it("a sandbox whose starting key is revoked ends at its next poll (told revoked, its processes lost), and the session's next call is told why", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    const made = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute"] })).body as { key: string; key_id: string };
    const first = await app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${made.key}`, "content-type": "application/json", "x-session-id": "chat-1" }, body: JSON.stringify({ command: "server &", keep_alive: true, timeout: 2 }) });
    expect(first.status).toBe(200);
    expect(runner.generations).toHaveLength(1);
    const revoked = await app.request(`/v1/admin/tenants/${t.tenant}/keys/${made.key_id}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN}` } });
    expect(revoked.status).toBeLessThan(300);
    expect(await runner.generations[0]!.done).toBe("end:revoked"); // at its next poll (300 ms here; LIVE_POLL_MS in production)
    expect((await sandbox(t, "chat-1")).status).toBe(404);
    // Another key of the tenant, same session: a fresh sandbox, told what went and why.
    const out = okOutput(await bash(t, "after"));
    expect(out).toContain("the API key that started it was revoked or expired");
    expect(runner.generations).toHaveLength(2);
    await sandbox(t, "chat-1", "DELETE");
  });

  it("the sync routes: a token without a live claim is refused; a body naming another generation is refused", async () => {
    const { app } = setup();
    const st = (g: string) => JSON.stringify({ generation: g, started_at: 1, last_used_at: 1, processes: [], ports: [], wall_ms: 1 });
    const plain = await mintSyncToken(SECRET, { t: "t", w: "w", r: "run_x" }, 60);
    const r1 = await app.request("/v1/sync/live/next", { method: "POST", headers: { authorization: `Bearer ${plain}` }, body: st("g") });
    expect(r1.status).toBe(403);
    const live = await mintSyncToken(SECRET, { t: "t", w: "w", r: "live_g1", l: { s: "s", g: "g1" } }, 60);
    const r2 = await app.request("/v1/sync/live/next", { method: "POST", headers: { authorization: `Bearer ${live}` }, body: st("g2") });
    expect(r2.status).toBe(403);
    const r3 = await app.request("/v1/sync/live/next", { method: "POST", headers: { authorization: "Bearer nope" }, body: st("g1") });
    expect(r3.status).toBe(401);
    const r4 = await app.request("/v1/sync/live/next", { method: "POST", headers: { authorization: `Bearer ${live}` }, body: st("g1") });
    expect(await r4.json()).toEqual({ end: "replaced" }); // no such generation in that session
  });

  it("a live runner that cannot start, or never comes: UNAVAILABLE in bounded time, with what to do", async () => {
    for (const opts of [{ failStart: true, ...LOSS }, { neverPoll: true, ...LOSS }]) {
      const { app } = setup(opts);
      const t = await newTenant(app, UNGATED);
      const r = await bash(t, "x");
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe("UNAVAILABLE");
      expect(r.body.error.message).toContain("without keep_alive");
      expect((await sandbox(t, "chat-1")).status).toBe(404);
    }
  });

  it("a live sandbox holds a concurrent_runs slot for its life: over the limit a new one is refused; its end frees the slot", async () => {
    const limits = memoryLimits();
    const { app } = setup({}, { limits });
    const t = await newTenant(app, UNGATED);
    await limits.set(t.tenant, { concurrent_runs: 1 });
    okOutput(await bash(t, "one", "s-1"));
    const refused = await bash(t, "two", "s-2");
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: "RATE_LIMITED", details: { limit: "concurrent_runs" } });
    // A fresh run is refused the same way, and told the same: an idle live sandbox may hold the slot, and how to end it.
    const fresh = await bash(t, "three", "s-3", { keep_alive: false });
    expect(fresh.status).toBe(429);
    expect(fresh.body.error.message).toBe(refused.body.error.message);
    expect(fresh.body.error.message).toBe("This tenant already runs 1 command or live sandbox at once (concurrent_runs: 1; a live sandbox holds one for its life, idle or not). Retry in 5 s, when one has finished, or end an idle live sandbox (DELETE /v1/workspaces/{ws}/sessions/{session}/sandbox). A live sandbox's slot frees when it ends: its idle timeout, that DELETE, or its runner gone (a restart, a crash), found by the next call past the limit at most 55 s after the runner's last poll.");
    expect((await sandbox(t, "s-1", "DELETE")).status).toBe(200);
    okOutput(await bash(t, "two", "s-2"));
    await sandbox(t, "s-2", "DELETE");
  });

  it("a key's own concurrent_runs counts its live sandboxes: past it that key is refused, another key of the tenant is not", async () => {
    const limits = memoryLimits();
    const { app } = setup({}, { limits });
    const t = await newTenant(app, UNGATED);
    await limits.set(t.tenant, { concurrent_runs: 4 });
    const k = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "one-run", limits: { concurrent_runs: 1 } });
    expect(k.status).toBe(201);
    const withKey = (command: string, session: string) =>
      app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify({ command, keep_alive: true, timeout: 2 }) });
    expect((await withKey("one", "k-1")).status).toBe(200);
    const refused = await withKey("two", "k-2");
    expect(refused.status).toBe(429);
    const error = ((await refused.json()) as any).error;
    expect(error).toMatchObject({ code: "RATE_LIMITED", details: { limit: "concurrent_runs", running: 1, quota: 1, by: "key" } });
    // Whose limit it is, in words: the key's own, not the tenant's (which has 3 to spare).
    expect(error.message).toMatch(/^This API key already runs 1 command or live sandbox at once \(the key's own concurrent_runs: 1;/);
    okOutput(await bash(t, "other key", "t-1")); // the tenant's other key: 2 of its 4
    expect((await sandbox(t, "k-1", "DELETE")).status).toBe(200);
    expect((await withKey("two", "k-2")).status).toBe(200);
    await sandbox(t, "k-2", "DELETE");
    await sandbox(t, "t-1", "DELETE");
  });

  it("a live sandbox never outlives the key that starts it: its life ends at the key's expiry (after it, its processes would go on, network and all, with nobody able to call)", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    const expires = Date.now() + 60_000;
    const k = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "expiring", expires_at: new Date(expires).toISOString() });
    expect(k.status).toBe(201);
    const before = Date.now();
    const r = await app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json", "x-session-id": "exp-1" }, body: JSON.stringify({ command: "true", keep_alive: true, timeout: 2 }) });
    expect(r.status, await r.clone().text()).toBe(200);
    const start = runner.generations[0]!.start;
    const keyLeft = Date.parse(k.body.expires_at) - before;
    expect(start.live!.max_life_ms).toBeLessThanOrEqual(keyLeft);
    expect(start.live!.max_life_ms).toBeGreaterThan(keyLeft - 30_000);
    expect(start.timeout_ms).toBe(start.live!.max_life_ms);
    // A key without an expiry: the whole maximum life; so too its old secret in a rotation's grace (the key lives on).
    okOutput(await bash(t, "true", "plain-1"));
    expect(runner.generations[1]!.start.live!.max_life_ms).toBe(840_000);
    // (A key rotates itself or the keys it made: this one rotates itself, and its old secret starts the sandbox in its grace.)
    const manage = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute", "manage"] });
    const rotated = await app.request(`/v1/keys/${manage.body.key_id}/rotate`, { method: "POST", headers: { authorization: `Bearer ${manage.body.key}`, "content-type": "application/json" }, body: JSON.stringify({ grace_seconds: 60 }) });
    expect(rotated.status).toBe(200);
    const old = await app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${manage.body.key}`, "content-type": "application/json", "x-session-id": "grace-1" }, body: JSON.stringify({ command: "true", keep_alive: true, timeout: 2 }) });
    expect(old.status, await old.clone().text()).toBe(200);
    expect(runner.generations[2]!.start.live!.max_life_ms).toBe(840_000);
    await sandbox(t, "exp-1", "DELETE");
    await sandbox(t, "plain-1", "DELETE");
    await sandbox(t, "grace-1", "DELETE");
  });
});
