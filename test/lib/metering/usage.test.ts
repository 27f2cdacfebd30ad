import { describe, expect, it, vi } from "vitest";
import type { UsageRecord } from "../../../lib/deps.js";
import { logUsage } from "../../../lib/metering/usage.js";
import { newTenant, testApp, upload } from "../../helpers.js";

describe("usage records", () => {
  it("one record per tool call, for successes and failures, with the tenant and the cost", async () => {
    const records: UsageRecord[] = [];
    const t = await newTenant(testApp({ onUsage: (u) => records.push(u) }));
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
