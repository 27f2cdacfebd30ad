/**
 * A live sandbox belongs to the API key that started it (docs/live-sessions.md, "Access: the key, network and secrets"): another key
 * of the tenant, in the same workspace and session, with the same network access and secrets, never
 * runs in it. Before, such a key joined it, so what it left running there outlived the key: revoked
 * or past its expiry, its processes went on (network and all) in the first key's sandbox, whose polls
 * check only the key that started it (found by an adversary round on `npm start`: a loop planted by a
 * second key still ran 30 s after that key's revocation). The real app with local R2/KV and the LIVE
 * Durable Object, the fake live runner (test/support/fake-live-runner.ts).
 */
import { describe, expect, it } from "vitest";
import { ADMIN, admin, newTenant, UNGATED, type Tenant } from "../../../helpers.js";
import { liveApp, okOutput } from "./live-app.js";

const sandbox = (t: Tenant, session: string, method = "GET") => t.req(`/v1/workspaces/${t.ws}/sessions/${session}/sandbox`, { method });

describe("a live sandbox is its starting key's alone", () => {
  it("another key's keep_alive call gets a sandbox of its own, which its revocation ends at the next poll", async () => {
    const { app, runner } = liveApp();
    const t = await newTenant(app, UNGATED);
    okOutput(await t.call("bash", { command: "first key", keep_alive: true, timeout: 2 }, "shared"));
    const first = runner.generations[0]!;
    const other = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute"] })).body as { key: string; key_id: string };
    const call = (command: string, more: Record<string, unknown>) =>
      app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${other.key}`, "content-type": "application/json", "x-session-id": "shared" }, body: JSON.stringify({ command, timeout: 2, ...more }) });
    const planted = await call("loop &", { keep_alive: true });
    const out = ((await planted.json()) as any).output as string;
    expect(runner.generations).toHaveLength(2); // not the first key's sandbox (before: gen 0, n=2)
    const own = runner.generations[1]!;
    expect(out).toContain(`gen=${own.generation} n=1 cmd=loop &`);
    // What the first key's sandbox ran is its own: the replacing call is told it ended, not its processes.
    expect(out).not.toContain("http.server");
    expect(out).toMatch(/^\[the session's live sandbox, started by another API key, ended: it was replaced.*not shown here/);
    // The first key hears it at its next call (once), beside the other key's sandbox it leaves alone.
    const told = okOutput(await t.call("bash", { command: "pwd", timeout: 2 }, "shared"));
    expect(told).toMatch(/^\[live sandbox lost: it was replaced.*1 process \(python3 -m http\.server 8123\).*\]\n\[this session's live sandbox was started by another API key.*left alone/s);
    expect(okOutput(await t.call("bash", { command: "pwd", timeout: 2 }, "shared"))).not.toContain("live sandbox lost");
    expect(((await (await call("again", {})).json()) as any).output).toBe(`gen=${own.generation} n=2 cmd=again\n`); // told once, not at each of its calls
    expect(await first.done).toBe("end:replaced");
    const revoked = await app.request(`/v1/admin/tenants/${t.tenant}/keys/${other.key_id}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN}` } });
    expect(revoked.status).toBeLessThan(300);
    expect(await own.done).toBe("end:revoked"); // what the revoked key left running goes with it
    expect((await sandbox(t, "shared")).status).toBe(404);
  });

  it("another key's call without keep_alive leaves the first key's sandbox alone and runs fresh, saying so", async () => {
    const { app, runner } = liveApp();
    const t = await newTenant(app, UNGATED);
    okOutput(await t.call("bash", { command: "first key", keep_alive: true, timeout: 2 }, "shared"));
    const g = runner.generations[0]!.generation;
    const other = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute"] });
    const r = await app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${other.body.key}`, "content-type": "application/json", "x-session-id": "shared" }, body: JSON.stringify({ command: "pwd", timeout: 2 }) });
    expect(((await r.json()) as any).output).toMatch(/^\[this session's live sandbox was started by another API key or with other network access.*it was left alone.*\]\nfresh cmd=pwd\n$/);
    expect(runner.generations).toHaveLength(1);
    // The first key's sandbox is untouched: its next command is its second.
    expect(okOutput(await t.call("bash", { command: "again", timeout: 2 }, "shared"))).toBe(`gen=${g} n=2 cmd=again\n`);
    await sandbox(t, "shared", "DELETE");
  });

  it("a loss is told to the key whose sandbox it was, never to another key's call in the session (it listed the first key's processes to it)", async () => {
    const { app } = liveApp();
    const t = await newTenant(app, UNGATED);
    okOutput(await t.call("bash", { command: "first key", keep_alive: true, timeout: 2 }, "ended"));
    expect((await sandbox(t, "ended", "DELETE")).status).toBe(200);
    const other = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute"] });
    const r = await app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${other.body.key}`, "content-type": "application/json", "x-session-id": "ended" }, body: JSON.stringify({ command: "pwd", timeout: 2 }) });
    expect(((await r.json()) as any).output).toBe("fresh cmd=pwd\n"); // before: [live sandbox ended: ... 1 process (python3 -m http.server 8123) ...]
    const own = okOutput(await t.call("bash", { command: "pwd", timeout: 2 }, "ended"));
    expect(own).toMatch(/^\[live sandbox ended: you or the app you run in ended it on purpose.*1 process \(python3 -m http\.server 8123\)/);
  });

  it("GET and DELETE of the session's sandbox show its processes' command lines to the key that started it alone", async () => {
    const { app } = liveApp();
    const t = await newTenant(app, UNGATED);
    okOutput(await t.call("bash", { command: "first key", keep_alive: true, timeout: 2 }, "seen"));
    const own = (await (await sandbox(t, "seen")).json()) as { processes: unknown };
    expect(own.processes).toEqual([{ pid: 5, command: "python3 -m http.server 8123" }]);
    const other = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute"] });
    const asOther = async (method: string) => {
      const r = await app.request(`/v1/workspaces/${t.ws}/sessions/seen/sandbox`, { method, headers: { authorization: `Bearer ${other.body.key}` } });
      return { status: r.status, text: await r.text() };
    };
    for (const method of ["GET", "DELETE"]) {
      const r = await asOther(method);
      expect(r.status, r.text).toBe(200);
      expect(r.text).not.toContain("http.server"); // before: the first key's command line
      expect(JSON.parse(r.text)).toMatchObject({ processes: [{ pid: 5, command: "(started by another API key: not shown)" }], ports: [8123] });
    }
  });
});
