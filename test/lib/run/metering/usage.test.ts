import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { UsageRecord } from "../../../../lib/run/metering/record.js";
import { heldUsageLog, logUsage } from "../../../../lib/run/metering/usage.js";
import { ADMIN, executionContext, newTenant, testApp, upload } from "../../../helpers.js";

describe("usage records", () => {
  it("one record per tool call, for successes and failures, with the tenant and the cost", async () => {
    const records: UsageRecord[] = [];
    const t = await newTenant(testApp({ onUsage: (u) => void (u.tool !== undefined && records.push(u)) }));
    await upload(t, "a.txt", "hello\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    expect((await t.call("read", { file_path: "missing.txt" })).status).toBe(404);
    expect(records).toHaveLength(2);
    expect(records[0]).toMatchObject({ tenant: t.tenant, workspace: "main", tool: "read", ok: true, bytes_read: expect.any(Number) });
    expect(records[0]!.bytes_read).toBeGreaterThan(0);
    expect(records[1]).toMatchObject({ tenant: t.tenant, tool: "read", ok: false, code: "NOT_FOUND" });
    // Calls refused before the tool runs (bad key) are not billed to anyone.
    const bad = await t.app.request("/v1/workspaces/main/tools/read", { method: "POST", headers: { authorization: "Bearer tsk_nope", "content-type": "application/json" }, body: "{}" });
    expect(bad.status).toBe(401);
    expect(records).toHaveLength(2);
  });

  it("every response of a tool route carries usage; a call with a valid key emits exactly one record, whatever failed", async () => {
    const records: UsageRecord[] = [];
    const app = testApp({ onUsage: (u) => void (u.tool !== undefined && records.push(u)) });
    const t = await newTenant(app);
    const readOnly = (await (await app.request(`/v1/admin/tenants/${t.tenant}/keys`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ scopes: ["read"] }) })).json()) as any;
    await upload(t, "a.txt", "hello\n");
    const post = async (path: string, body: string, key = t.key) => {
      const res = await app.request(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
      return { status: res.status, body: (await res.json()) as any };
    };
    const cases: [string, () => Promise<{ status: number; body: any }>, number, Partial<UsageRecord> | null][] = [
      ["success", () => post("/v1/workspaces/main/tools/read", '{"file_path":"a.txt"}'), 200, { tool: "read", ok: true }],
      ["the tool fails", () => post("/v1/workspaces/main/tools/read", '{"file_path":"nope.txt"}'), 404, { tool: "read", ok: false, code: "NOT_FOUND" }],
      ["invalid arguments", () => post("/v1/workspaces/main/tools/read", '{"file_path":"a.txt","ofset":1}'), 400, { tool: "read", ok: false, code: "INVALID_ARGUMENT" }],
      ["not JSON", () => post("/v1/workspaces/main/tools/read", "{nope"), 400, { tool: "read", ok: false, code: "INVALID_ARGUMENT" }],
      ["a scope the key lacks", () => post("/v1/workspaces/main/tools/write", '{"file_path":"b.txt","content":"x"}', readOnly.key), 403, { tool: "write", ok: false, code: "PERMISSION_DENIED" }],
      ["an unknown workspace", () => post("/v1/workspaces/nope/tools/read", '{"file_path":"a.txt"}'), 404, { tool: "read", workspace: "nope", ok: false, code: "NOT_FOUND" }],
      ["an unknown tool", () => post("/v1/workspaces/main/tools/raed", '{"file_path":"a.txt"}'), 404, { tool: "raed", ok: false, code: "NOT_FOUND" }],
      ["a bad key (no tenant: no record)", () => post("/v1/workspaces/main/tools/read", '{"file_path":"a.txt"}', "tsk_bogus"), 401, null],
      ["no key", () => post("/v1/workspaces/main/tools/nope", "{}", ""), 401, null],
    ];
    for (const [what, run, status, record] of cases) {
      const before = records.length;
      const r = await run();
      expect(r.status, what).toBe(status);
      expect(r.body.usage, what).toEqual({ ms: expect.any(Number), bytes_read: expect.any(Number), bytes_written: expect.any(Number) });
      if (status !== 200) expect(r.body.tool, what).toBeTruthy();
      if (!record) {
        expect(records.length, what).toBe(before);
        continue;
      }
      expect(records.length, what).toBe(before + 1);
      expect(records.at(-1), what).toMatchObject({ tenant: t.tenant, workspace: "main", ...record });
      if (record.ok === false) expect(records.at(-1)!.code, what).toBe(r.body.error.code);
    }
    // A failure after reading reports what it read.
    expect(records[0]!.bytes_read).toBeGreaterThan(0);
  });

  it("logs one JSON line without arguments or content", () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    logUsage({ tenant: "acme", workspace: "w", tool: "grep", ok: true, ms: 3, bytes_read: 10, bytes_written: 0 });
    expect(log).toHaveBeenCalledTimes(1);
    const line = JSON.parse(log.mock.calls[0]![0] as string);
    expect(line).toMatchObject({ type: "toolshed.usage", tenant: "acme", tool: "grep", ok: true, ms: 3 });
    expect(Object.keys(line).sort()).toEqual(["at", "bytes_read", "bytes_written", "ms", "ok", "tenant", "tool", "type", "workspace"]);
    log.mockRestore();
  });
});

describe("usage records where the runtime has waitUntil (Workers)", () => {
  it("the record is logged after the response, within the request's waitUntil, exactly once, success or failure", async () => {
    const records: UsageRecord[] = [];
    const t = await newTenant(testApp({ onUsage: (u) => void (u.tool !== undefined && records.push(u)) }));
    await upload(t, "a.txt", "hello\n");
    const { ctx, later } = executionContext();
    for (const [file, status, ok] of [["a.txt", 200, true], ["missing.txt", 404, false]] as const) {
      const before = records.length;
      const res = await t.app.request(`/v1/workspaces/main/tools/read`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ file_path: file }) }, env, ctx);
      expect(res.status).toBe(status);
      const body = (await res.json()) as any;
      // Answered: the record is not logged yet, it waits in waitUntil.
      expect(records.length).toBe(before);
      await Promise.all(later.splice(0));
      expect(records.length).toBe(before + 1);
      expect(records.at(-1)).toMatchObject({ tenant: t.tenant, workspace: "main", tool: "read", ok });
      expect(records.at(-1)!.bytes_read).toBe(body.usage.bytes_read);
    }
  });
});

describe("the Workers sink (heldUsageLog): an isolate's records of a second as one log message", () => {
  it("calls answered with waitUntil: held, then one console.log with one JSON line per call; each request waits for its line", async () => {
    const t = await newTenant(testApp({ onUsage: heldUsageLog({ holdMs: 200 }) }));
    await upload(t, "a.txt", "hello\n");
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    try {
      const { ctx, settle } = executionContext();
      for (const file of ["a.txt", "missing.txt", "a.txt"]) {
        const res = await t.app.request(`/v1/workspaces/main/tools/read`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ file_path: file }) }, env, ctx);
        await res.arrayBuffer();
      }
      const usageCalls = () => log.mock.calls.filter((c) => String(c[0]).includes('"toolshed.usage"'));
      expect(usageCalls()).toHaveLength(0);
      await settle();
      expect(usageCalls()).toHaveLength(1);
      const lines = String(usageCalls()[0]![0]).split("\n").map((l) => JSON.parse(l));
      expect(lines.map((l) => [l.type, l.tenant, l.tool, l.ok, l.code ?? null])).toEqual([
        ["toolshed.usage", t.tenant, "read", true, null],
        ["toolshed.usage", t.tenant, "read", false, "NOT_FOUND"],
        ["toolshed.usage", t.tenant, "read", true, null],
      ]);
    } finally {
      log.mockRestore();
    }
  });

  it("100 records go at once without waiting for the hold; calls without waitUntil log at once, one line each", async () => {
    const sink = heldUsageLog({ holdMs: 60_000 });
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    try {
      const rec = { tenant: "acme", workspace: "w", tool: "read", ok: true, ms: 1, bytes_read: 0, bytes_written: 0 };
      const waits = Array.from({ length: 100 }, () => sink.held!(rec));
      await Promise.all(waits); // a 60 s hold: only the 100-record cap can have released them
      expect(log).toHaveBeenCalledTimes(1);
      expect(String(log.mock.calls[0]![0]).split("\n")).toHaveLength(100);
      sink(rec);
      expect(log).toHaveBeenCalledTimes(2);
      expect(JSON.parse(String(log.mock.calls[1]![0]))).toMatchObject({ type: "toolshed.usage", tenant: "acme" });
    } finally {
      log.mockRestore();
    }
  }, 10_000);
});
