/**
 * An approved call runs with the key that made it, as that key is now (lib/run/pending/approve.ts):
 * its scopes and tools, and also its other bounds: its own limits (storage_bytes, concurrent_runs,
 * ...) and its expiry. A narrowed key whose call waited for a human gets no more through the
 * approval door than through its own requests. Real local R2/KV, the limits in memory.
 */
import { describe, expect, it } from "vitest";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { admin, newTenant, testApp, type Tenant } from "../../../helpers.js";
import { answer, approverKey, held, readFile, setPolicy } from "./approval-helpers.js";

describe("an approved call keeps its key's bounds", () => {
  it("a key with its own storage_bytes: an overwrite held for approval and approved is refused past that limit, as the same call without the gate is", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app);
    const approver = await approverKey(app, t.tenant);
    const made = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write"], tools: "coding", limits: { storage_bytes: 100 } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const narrow: Tenant = {
      ...t,
      key: made.body.key,
      req: async (path, init = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${made.body.key}`, ...(init.headers as Record<string, string> | undefined) } }),
      call: async (tool, args, session = "s1") => {
        const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${made.body.key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
        return { status: res.status, body: (await res.json()) as any };
      },
    };
    const big = "x".repeat(400);
    // Without the gate: refused by the key's own limit.
    const direct = await narrow.call("write", { file_path: "direct.txt", content: big });
    expect(direct.body.error?.code, JSON.stringify(direct.body)).toBe("QUOTA_EXCEEDED");
    // With it: held, approved, and still refused.
    await setPolicy(app, t.tenant, { gate: [{ tool: "write", when: "overwrite" }] });
    expect((await narrow.call("write", { file_path: "a.txt", content: "one" })).status).toBe(200);
    await narrow.call("read", { file_path: "a.txt" });
    const d = held(await narrow.call("write", { file_path: "a.txt", content: big }));
    const a = await answer(t, approver, d.pending_id, { approved: true });
    expect(a.status).toBe(200);
    expect(a.body.outcome, JSON.stringify(a.body)).toMatchObject({ ok: false, code: "QUOTA_EXCEEDED" });
    expect(await readFile(t, "a.txt")).toBe("one");
  });
});
