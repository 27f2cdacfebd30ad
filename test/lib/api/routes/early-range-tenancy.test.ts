/**
 * The layered read's early range (lib/workspace/early.ts LowerRange, knownLowerRange in
 * lib/api/routes/tools.ts): a guess from the isolate's known record and manifest, read beside
 * meta.json. Attacked where a guess could answer bytes that are not the caller's current file: two
 * tenants with the same workspace id and path, both layered, read in turn in one isolate; a
 * workspace deleted and made again under the same id; a restore and a fork between two reads; a
 * checkpoint made through another isolate (a second app over the same stores). Each read must
 * answer the current content of the caller's own file. Real local R2 and KV in workerd.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant, type TestApp } from "../../../helpers.js";

const PATH = "src/a.ts";
const json = { "content-type": "application/json" };

async function checkpoint(t: Pick<Tenant, "req">, ws: string, name: string): Promise<string> {
  const r = await t.req(`/v1/workspaces/${ws}/checkpoints`, { method: "POST", headers: json, body: JSON.stringify({ name }) });
  expect(r.status, await r.clone().text()).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

/** The read tool through `app` (this isolate: its known records and manifests), as tenant `t`. */
async function read(app: TestApp, t: Tenant, ws = t.ws): Promise<string> {
  const r = await app.request(`/v1/workspaces/${ws}/tools/read`, { method: "POST", headers: { ...json, authorization: `Bearer ${t.key}`, "x-session-id": "s1" }, body: JSON.stringify({ file_path: PATH }) }, env);
  const body = (await r.json()) as { ok: boolean; output: string };
  expect(body.ok, JSON.stringify(body)).toBe(true);
  return body.output;
}

/** `t` as seen through another app (another isolate: caches of its own) over the same stores. */
const through = (app: TestApp, t: Tenant): Tenant => ({ ...t, app, req: async (path, init = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, ...(init.headers as Record<string, string> | undefined) } }, env) });

const body = (who: string) => `export const who = "${who}";\n`.repeat(20);

describe("the early pack range answers only the caller's current file", () => {
  it("two tenants, the same workspace id and path, both layered: read in turn in one isolate, each gets its own, then each its new version", async () => {
    const app = testApp();
    const [a, b] = [await newTenant(app), await newTenant(app)];
    await upload(a, PATH, body("tenant a"));
    await upload(b, PATH, body("tenant b"));
    await checkpoint(a, a.ws, "a1");
    await checkpoint(b, b.ws, "b1");
    for (let i = 0; i < 3; i++) {
      expect(await read(app, a)).toContain("tenant a");
      expect(await read(app, b)).toContain("tenant b");
    }
    // Both move on through another isolate: this one's known records and manifests are the old ones.
    const other = testApp();
    await upload(through(other, a), PATH, body("tenant a, v2"));
    await checkpoint(through(other, a), a.ws, "a2");
    await upload(through(other, b), PATH, body("tenant b, v2 longer than before"));
    await checkpoint(through(other, b), b.ws, "b2");
    for (let i = 0; i < 2; i++) {
      expect(await read(app, b)).toContain("tenant b, v2 longer than before");
      expect(await read(app, a)).toContain("tenant a, v2");
    }
  });

  it("a workspace deleted and made again under the same id (through another isolate), layered anew: the read answers the new file, never the old pack's bytes", async () => {
    const app = testApp();
    const t = await newTenant(app);
    await upload(t, PATH, body("first life"));
    await checkpoint(t, t.ws, "one");
    expect(await read(app, t)).toContain("first life");
    const other = through(testApp(), t);
    expect((await other.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
    expect((await other.req("/v1/workspaces", { method: "POST", headers: json, body: JSON.stringify({ id: t.ws }) })).status).toBe(201);
    await upload(other, PATH, body("second life"));
    await checkpoint(other, t.ws, "two");
    const out = await read(app, t);
    expect(out).toContain("second life");
    expect(out).not.toContain("first life");
  });

  it("a restore and a fork between two reads: each read answers the workspace's current version", async () => {
    const app = testApp();
    const t = await newTenant(app);
    await upload(t, PATH, body("v1"));
    const c1 = await checkpoint(t, t.ws, "c1");
    await upload(t, PATH, body("v2 v2"));
    await checkpoint(t, t.ws, "c2");
    expect(await read(app, t)).toContain("v2 v2");
    // Restored through another isolate: this one's guess is c2's range.
    const other = through(testApp(), t);
    expect((await other.req(`/v1/workspaces/${t.ws}/checkpoints/${c1}/restore`, { method: "POST" })).status).toBe(200);
    let out = await read(app, t);
    expect(out).toContain("v1");
    expect(out).not.toContain("v2 v2");
    // A fork of c1, then the origin and the fork part ways.
    expect((await other.req("/v1/workspaces", { method: "POST", headers: json, body: JSON.stringify({ id: "forked", from_workspace: t.ws }) })).status).toBe(201);
    expect(await read(app, t, "forked")).toContain("v1");
    await upload({ ...other, ws: "forked" }, PATH, body("fork's own"));
    await checkpoint(other, "forked", "f1");
    await upload(other, PATH, body("origin's own"));
    await checkpoint(other, t.ws, "o1");
    out = await read(app, t, "forked");
    expect(out).toContain("fork's own");
    expect(out).not.toContain("origin's own");
    out = await read(app, t);
    expect(out).toContain("origin's own");
    expect(out).not.toContain("fork's own");
  });
});
