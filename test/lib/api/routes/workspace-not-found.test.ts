/**
 * "Workspace not found" is one answer (lib/layout/workspace-meta.ts workspaceNotFound), whichever door or layer finds
 * the workspace missing or not the caller's: the route guard (a key limited to other workspaces), the tool route's
 * record read, the workspace's own route, a fork's origin (not the key's, or missing) and a checkpoint listing. The
 * same text and details each time, so no answer tells a missing workspace from one the caller may not see.
 */
import { describe, expect, it } from "vitest";
import { admin, newTenant, testApp } from "../../../helpers.js";

const text = (ws: string) => `Workspace not found: ${ws}. List your workspaces with GET /v1/workspaces.`;

describe("Workspace not found, by every door the same", () => {
  it("a missing workspace and one the key may not name answer the same 404, text and details", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const other = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "other" }) });
    expect(other.status).toBe(201);
    const limited = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { workspaces: ["main", "fork-*"] })).body.key as string;
    const as = (key: string) => (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
    const post = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });
    const answers: [string, Response, string][] = [
      // The route guard: a key limited to other workspaces (lib/api/routes/access.ts).
      ["guard", await as(limited)("/v1/workspaces/other/tools/read", post({ file_path: "a.txt" })), "other"],
      // The tool route's read of the record (lib/api/routes/common.ts).
      ["tool route", await as(t.key)("/v1/workspaces/nope/tools/read", post({ file_path: "a.txt" })), "nope"],
      // The workspace's own route (lib/workspace/registry.ts).
      ["GET workspace", await as(t.key)("/v1/workspaces/nope"), "nope"],
      // A fork whose origin the key may not name (lib/api/routes/workspaces.ts), and one whose origin is missing (lib/layers/).
      ["fork, not the key's", await as(limited)("/v1/workspaces", post({ id: "fork-1", from_workspace: "other" })), "other"],
      ["fork, missing", await as(t.key)("/v1/workspaces", post({ id: "fork-2", from_workspace: "nope" })), "nope"],
      // A checkpoint listing of a missing workspace.
      ["checkpoints", await as(t.key)("/v1/workspaces/nope/checkpoints"), "nope"],
    ];
    for (const [door, res, ws] of answers) {
      const body = (await res.json()) as any;
      expect(res.status, `${door}: ${JSON.stringify(body)}`).toBe(404);
      expect(body.error, door).toEqual({ code: "NOT_FOUND", message: text(ws), details: { workspace: ws } });
    }
  });
});
