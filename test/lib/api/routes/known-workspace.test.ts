/**
 * A plain workspace's record known to an isolate (lib/api/routes/known-workspace.ts): `read` runs on it
 * without reading meta.json when the file's GET finds the file; a stale record never gives a wrong
 * answer. Two apps over the same R2 and KV stand for two isolates.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fileKey } from "../../../../lib/layout/paths.js";
import { newTenant, testApp, upload, type Tenant } from "../../../helpers.js";

type App = ReturnType<typeof testApp>;
const req = (t: Tenant, app: App) => (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });

describe("a known workspace record (read)", () => {
  it("a checkpoint through another isolate moves the files into a lower layer: this isolate's plain record misses, reads meta.json, and reads the file right", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    await upload(t, "b.txt", "bee\n");
    expect((await t.call("read", { file_path: "a.txt" })).body.output).toContain("one"); // this isolate knows the plain record
    const other = testApp();
    const cp = await req(t, other)(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", body: JSON.stringify({ name: "c1" }) });
    expect(cp.status).toBe(201);
    // The upper objects were sealed into a pack and deleted: a.txt lives only in the lower layer now.
    for (const f of ["a.txt", "b.txt"]) {
      const r = await t.call("read", { file_path: f });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.output).toContain(f === "a.txt" ? "one" : "bee");
    }
  });

  it("a missing file on a known record: NOT_FOUND, as on a fresh one", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    const r = await t.call("read", { file_path: "nope.txt" });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("NOT_FOUND");
    expect(r.body.error.details.path).toBe("nope.txt");
  });

  it("a workspace deleted and made again through this isolate: its new record (tools) holds at once", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
    expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: t.ws, tools: ["write"] }) })).status).toBe(201);
    // The file comes back through another isolate: this one's read finds it, under the new record's tools.
    const other = testApp();
    await upload({ ...t, app: other, req: async (path, init) => req(t, other)(path, init) }, "a.txt", "two\n");
    const r = await t.call("read", { file_path: "a.txt" });
    expect(r.status, JSON.stringify(r.body)).toBe(403);
    expect(r.body.error.code).toBe("PERMISSION_DENIED");
  });

  it("another tenant's workspace of the same id is never answered from this tenant's known record", async () => {
    const a = await newTenant();
    const b = await newTenant(a.app); // same isolate, both have "main"
    await upload(a, "secret.txt", "a's secret\n");
    expect((await a.call("read", { file_path: "secret.txt" })).status).toBe(200);
    const r = await b.call("read", { file_path: "secret.txt" });
    expect(r.status).toBe(404);
    expect(JSON.stringify(r.body)).not.toContain("a's secret");
  });

  it("a streamed read (SSE) on a known record reads meta.json first and answers the same", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    const res = await t.req(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify({ file_path: "a.txt" }) });
    const text = await res.text();
    expect(text).toContain("event: result");
    expect(text).toContain('"ok":true');
  });

  it("is the tenant's own: another tenant's record of a workspace with the same id never binds this tenant's calls (its tool list holds)", async () => {
    const app = testApp();
    const [a, b] = [await newTenant(app), await newTenant(app)];
    const make = (t: Tenant, body: Record<string, unknown>) => t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const call = (t: Tenant, tool: string, args: unknown) => t.req(`/v1/workspaces/ro/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    expect((await make(b, { id: "ro", tools: "readonly" })).status).toBe(201);
    expect((await make(a, { id: "ro" })).status).toBe(201);
    await env.FILES.put(fileKey(b.tenant, "ro", "f.txt"), "b's\n"); // no route writes to a readonly workspace
    const written = await a.req("/v1/workspaces/ro/files/f.txt", { method: "PUT", body: "a's\n", headers: { "content-length": "4" } });
    expect(written.status).toBe(201);
    expect((await call(b, "read", { file_path: "f.txt" })).status).toBe(200); // this isolate knows B's record and file
    expect((await call(a, "read", { file_path: "f.txt" })).status).toBe(200); // ... then A's, of the same id
    const e = await call(b, "edit", { file_path: "f.txt", old_string: "b's", new_string: "changed" });
    expect({ status: e.status, code: e.body.error?.code }, JSON.stringify(e.body)).toEqual({ status: 403, code: "PERMISSION_DENIED" });
    expect(await (await env.FILES.get(fileKey(b.tenant, "ro", "f.txt")))!.text()).toBe("b's\n");
  });
});
