/**
 * The storage and KV operations of one read, write and edit through the tool route (issue #11 §4):
 * every operation on the request path is counted with counting wrappers around the real R2 and
 * KV bindings, and the exact list is asserted, so a call that grows fails here.
 *
 * "On the response path" = before the response is returned. Index upkeep handed to the
 * runtime's waitUntil (when the request has an execution context, as on Workers) runs after it
 * and is listed separately.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { countingStores, roundTrips, sorted } from "../../../support/counting-stores.js";
import { admin, executionContext, newTenant, testApp, upload } from "../../../helpers.js";
import { IsolateCache } from "../../../../lib/shared/isolate-cache.js";
import type { AuthInfo } from "../../../../lib/contract/caller.js";
import { cloudflareFetcher } from "../../../../lib/tools/web/transport.js";
import { searchIndexer } from "../../../../lib/search/indexer.js";
import { CLOCK_MARGIN_MS } from "../../../../lib/api/routes/known-workspace.js";

// The index holds a call's changes after the answer up to 1 s by default (lib/shared/held-batches.ts); each
// call here waits for its work after the answer, so a short hold keeps the file fast (the operations are the same).
const listeners = () => [searchIndexer({ hold: { holdMs: 20 } })];


/**
 * What runs after a write's response (waitUntil): the call's audit entry (one create-only PUT:
 * lib/run/audit/) and the search index's upkeep: its segment written, and whatever listing of
 * segments and files its merges need (how many depends on the segments earlier calls left and on
 * timing, so only the kinds are fixed). Nothing else may wait there.
 */
function expectIndexUpkeepOnly(after: string[], opts: { opensRecord?: boolean } = {}): void {
  expect(after).toContain("r2.put index");
  expect(after.filter((o) => o === "r2.put internal:audit")).toEqual(["r2.put internal:audit"]);
  after = after.filter((o) => o !== "r2.put internal:audit");
  // A call on a known record (lib/api/routes/known-workspace.ts) leaves the upkeep to open the workspace from its record (Workspace.upkeepDriver).
  const record = after.filter((o) => o === "r2.get meta.json");
  expect(record).toEqual(opts.opensRecord ? ["r2.get meta.json"] : []);
  expect(after.filter((o) => !/^r2\.(list|get|put|delete) index$/.test(o) && o !== "r2.list file" && o !== "r2.get meta.json")).toEqual([]);
}

/** `waitUntil: false`: called as on Node or Lambda, without an execution context (nothing runs after the answer). */
async function setup(opts: { waitUntil?: boolean } = {}) {
  const stores = countingStores();
  // Undo retention's listing runs on a workspace's 1st and every 16th record commit in an isolate (lib/workspace/undo-retention.ts): off here, so the list is exact.
  const app = testApp({ storage: stores.storage, kv: stores.kv, undoPruneEvery: 0, listeners: listeners() });
  const t = await newTenant(app);
  await upload(t, "src/a.ts", "export const a = 1;\n".repeat(50));
  await upload(t, "src/b.ts", "export const b = 2;\n".repeat(50));
  const { ctx, settle } = executionContext();
  /** One tool call: the ops before its response, and those waitUntil ran after it. */
  const call = async (tool: string, args: unknown) => {
    await settle();
    stores.log.length = 0;
    stores.steps.length = 0;
    stores.hold();
    const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) }, env, opts.waitUntil === false ? undefined : ctx);
    const body = (await res.json()) as any;
    const answered = stores.log.length;
    const onPath = roundTrips(stores, 0, answered);
    stores.release();
    await settle();
    const after = sorted(stores.log.slice(answered));
    expect(body.ok, JSON.stringify(body)).toBe(true);
    return { onPath, after, body };
  };
  return { t, app, stores, call };
}

describe("per-call storage and KV operations and round trips (tool route, plain workspace)", () => {
  it("first read of a file by the session: one GET, as the floor; its record is read and written after the answer", async () => {
    const { call } = await setup();
    await call("read", { file_path: "src/b.ts" }); // the tenant policy (approval gate) is read once per isolate
    const { onPath, after } = await call("read", { file_path: "src/a.ts" });
    // The file's GET starts beside the guard's work (lib/workspace/early.ts). The tenant policy and the API
    // key are cached per isolate (lib/shared/isolate-cache.ts): the upload above read the key.
    // The workspace record is known to this isolate (the uploads' guard read it) and the workspace is
    // plain: the file's GET finding it is enough (lib/api/routes/known-workspace.ts), no meta.json.
    // The session record is not needed for the answer (waitUntil: session-files.ts readRecordOnPath):
    // this isolate knows it at once, and KV is read, then written, after the answer (lib/workspace/records.ts).
    expect(onPath).toEqual([["r2.get file"]]);
    expect(after).toEqual(["kv.get record", "kv.put record"]);
  });

  it("first read without waitUntil (Node, Lambda): its record's read starts beside the file's GET, its write before the answer", async () => {
    const { call } = await setup({ waitUntil: false });
    await call("read", { file_path: "src/b.ts" });
    const { onPath, after } = await call("read", { file_path: "src/a.ts" });
    expect(onPath).toEqual([sorted(["r2.get file", "kv.get record"]), ["kv.put record"]]);
    expect(after).toEqual([]);
  });

  it("read of a file the session read before, in this isolate: one GET, as the floor", async () => {
    const { call } = await setup();
    await call("read", { file_path: "src/a.ts" }); // first read writes the record: this isolate knows it (lib/workspace/records.ts)
    const { onPath, after } = await call("read", { file_path: "src/a.ts" });
    expect(onPath).toEqual([["r2.get file"]]);
    expect(after).toEqual([]);
  });

  it("read of a file the session read before in ANOTHER isolate: its record is read from KV, and not written again", async () => {
    const { t, call, stores } = await setup();
    await call("read", { file_path: "src/a.ts" });
    const other = testApp({ storage: stores.storage, kv: stores.kv, undoPruneEvery: 0, listeners: listeners() }); // its own caches
    stores.log.length = 0;
    stores.steps.length = 0;
    const res = await other.request(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ file_path: "src/a.ts" }) }, env);
    expect(res.status).toBe(200);
    // The other isolate resolves the key once (kv.get apikey), then reads the record beside the file: same version, no write.
    expect(stores.log.filter((l) => l.endsWith(" record"))).toEqual(["kv.get record"]);
  });

  it("read of a file changed since this isolate saw its record: written after the answer, without reading it first", async () => {
    const { t, call } = await setup();
    await call("read", { file_path: "src/a.ts" });
    await upload(t, "src/a.ts", "export const a = 9;\n");
    const { onPath, after } = await call("read", { file_path: "src/a.ts" });
    expect(onPath).toEqual([["r2.get file"]]);
    expect(after).toEqual(["kv.put record"]);
  });

  it("read of a file larger than the sniff (8 KB): still one GET", async () => {
    const { t, call } = await setup();
    await upload(t, "src/big.ts", "export const big = 1;\n".repeat(2000));
    await call("read", { file_path: "src/big.ts" });
    const { onPath } = await call("read", { file_path: "src/big.ts" });
    expect(onPath).toEqual([["r2.get file"]]);
  });

  it("write over a file the session read: one round trip, the PUT and the undo record side by side", async () => {
    const { call } = await setup();
    await call("read", { file_path: "src/a.ts" });
    const { onPath, after } = await call("write", { file_path: "src/a.ts", content: "export const a = 2;\n" });
    // The read left the version it read, whole, in this isolate (lib/workspace/version-cache.ts), and the
    // workspace's plain record is known: the write takes that version instead of a GET, and no meta.json
    // (lib/api/routes/known-workspace.ts, knownFiles). The session record the read wrote is known to this isolate
    // (lib/workspace/records.ts): no KV read. The PUT is If-Match that version: it lands only over exactly those
    // bytes. The new etag is the MD5 of the bytes (StorageDriver.contentEtags), so the call's undo record
    // (the replaced version's bytes inline, no blob: lib/run/undo/) is written BESIDE the file's PUT. No KV PUT:
    // the version carries the session as its writer (lib/workspace/session-files.ts).
    // Index upkeep runs after the response, opening the workspace from its record.
    expect(onPath).toEqual([sorted(["r2.put file", "r2.put internal:undo"])]);
    expectIndexUpkeepOnly(after, { opensRecord: true });
  });

  it("write over a file this isolate does not hold (read through another isolate): its GET starts beside meta.json", async () => {
    const { t, call, stores } = await setup();
    const other = testApp({ storage: stores.storage, kv: stores.kv, undoPruneEvery: 0, listeners: listeners() }); // its own caches
    // Uploaded and read through the other isolate: this one never held src/c.ts (a raw PUT keeps the version it wrote).
    const bytes = new TextEncoder().encode("export const c = 2;\n".repeat(50));
    const put = await other.request(`/v1/workspaces/${t.ws}/files/src/c.ts`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": String(bytes.length) }, body: bytes }, env);
    expect(put.status, await put.clone().text()).toBe(201);
    const res = await other.request(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ file_path: "src/c.ts" }) }, env);
    expect(res.status).toBe(200);
    await call("read", { file_path: "src/a.ts" }); // this isolate knows the workspace record, not src/c.ts's version
    const { onPath, after } = await call("write", { file_path: "src/c.ts", content: "export const c = 3;\n" });
    expect(onPath).toEqual([
      sorted(["r2.get meta.json", "r2.get file", "kv.get record"]),
      sorted(["r2.put file", "r2.put internal:undo"]),
    ]);
    expectIndexUpkeepOnly(after);
  });

  it("write of a new file: the record read is speculative, the write create-only", async () => {
    const { call } = await setup();
    await call("write", { file_path: "src/first.ts", content: "1\n" }); // the tenant policy (approval gate) is read once per isolate
    const { onPath } = await call("write", { file_path: "src/new.ts", content: "export const n = 1;\n" });
    expect(onPath).toEqual([
      sorted(["r2.get meta.json", "r2.get file", "kv.get record"]),
      // The place of a new file (Workspace.checkPlace): not a directory (LIST), no file above it (HEAD src),
      // not a symlink nor below one (the links table, docs/symlinks.md), side by side.
      sorted(["r2.list file", "r2.head file", "r2.get internal:modes.json"]),
      // The undo record (a create: no before-image) beside the PUT.
      sorted(["r2.put file", "r2.put internal:undo"]),
      // A create in a plain workspace re-reads the layer pointer (lib/layers/plain-driver.ts): a packed
      // bash write-back may have made the workspace layered, with this path in its new lower layer.
      ["r2.get meta.json"],
    ]);
  });

  it("write over a version the session wrote itself, through this isolate: no KV read of a record (the version carries its writer)", async () => {
    const { call, stores, t } = await setup();
    await call("write", { file_path: "src/mine.ts", content: "1\n" }); // created by the session: never read, no record in KV
    for (const content of ["2\n", "3\n"]) {
      const { onPath } = await call("write", { file_path: "src/mine.ts", content });
      expect(onPath).toEqual([sorted(["r2.put file", "r2.put internal:undo"])]);
    }
    // Changed since by someone else (a raw PUT through another isolate: this one still holds "3\n"): the
    // write over the held version is refused, the call runs again on storage, where the check reads the
    // record (none: never read) and refuses.
    const other = testApp({ storage: stores.storage, kv: stores.kv, undoPruneEvery: 0, listeners: listeners() });
    await upload({ ...t, req: async (path, init = {}) => other.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, ...(init.headers as Record<string, string> | undefined) } }, env) }, "src/mine.ts", "theirs\n");
    await new Promise((r) => setTimeout(r, CLOCK_MARGIN_MS + 50)); // written before this call, not during it (known-workspace.ts)
    stores.log.length = 0;
    const refused = await t.call("write", { file_path: "src/mine.ts", content: "4\n" }, "s1");
    expect(refused.body.error?.code, JSON.stringify(refused.body)).toBe("NOT_READ");
    expect(stores.log).toContain("kv.get record");
  });

  it("read of a version the session wrote itself: no KV PUT (the version carries its writer)", async () => {
    const { call } = await setup();
    await call("read", { file_path: "src/a.ts" });
    await call("write", { file_path: "src/a.ts", content: "export const a = 3;\n" });
    const { onPath } = await call("read", { file_path: "src/a.ts" });
    // The workspace record and the session's record of the file are known to this isolate: the file's GET alone.
    expect(onPath).toEqual([["r2.get file"]]);
  });

  it("edit of a file the session read", async () => {
    const { call } = await setup();
    await call("read", { file_path: "src/b.ts" });
    const { onPath, after } = await call("edit", { file_path: "src/b.ts", old_string: "export const b = 2;", new_string: "export const b = 3;", replace_all: true });
    // The version the read left in this isolate, no GET (as for write above); its record, known to this
    // isolate, is not read; the PUT If-Match and the undo record (before-image inline) side by side; no KV PUT.
    expect(onPath).toEqual([sorted(["r2.put file", "r2.put internal:undo"])]);
    expectIndexUpkeepOnly(after, { opensRecord: true });
  });
});

describe("undo retention (lib/workspace/undo-retention.ts): its listing runs after the response where the runtime has waitUntil", () => {
  it("a write that prunes: the LIST of the workspace's undo prefix is not on the response path", async () => {
    const stores = countingStores();
    const app = testApp({ storage: stores.storage, kv: stores.kv, undoPruneEvery: 1, listeners: listeners() });
    const t = await newTenant(app);
    await upload(t, "src/a.ts", "export const a = 1;\n");
    const { ctx, settle } = executionContext();
    const send = (tool: string, args: unknown) => app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) }, env, ctx);
    await (await send("read", { file_path: "src/a.ts" })).json();
    await settle();
    stores.log.length = 0;
    const body = (await (await send("write", { file_path: "src/a.ts", content: "export const a = 2;\n" })).json()) as any;
    expect(body.ok, JSON.stringify(body)).toBe(true);
    const onPath = [...stores.log];
    await settle();
    expect(onPath.filter((l) => l.startsWith("r2.list internal:undo"))).toEqual([]);
    expect(stores.log.filter((l) => l.startsWith("r2.list internal:undo"))).toEqual(["r2.list internal:undo"]);
  });
});

describe("the early reads (lib/workspace/early.ts): a layered workspace, a missing one", () => {
  const checkpoint = async (t: { ws: string; req: (path: string, init: RequestInit) => Promise<Response> }, name: string) => {
    const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name }) });
    expect(cp.status).toBe(201);
  };

  it("read of a lower-layer file: the upper GET (a miss) and the pack's range, where the known record and manifest put it, start beside meta.json: one round trip", async () => {
    const { t, call } = await setup();
    await checkpoint(t, "base");
    await call("read", { file_path: "src/a.ts" }); // the manifest is read once per isolate
    const { onPath, body } = await call("read", { file_path: "src/a.ts" });
    expect(body.output).toContain("export const a = 1;");
    expect(onPath).toEqual([sorted(["r2.get meta.json", "r2.get file", "r2.get pack"])]);
  });

  it("a known record gone stale (another isolate wrote and checkpointed the file into a new pack): the early pack read is not taken, the read answers the file as it is now", async () => {
    const { t, call, stores } = await setup();
    await checkpoint(t, "base");
    await call("read", { file_path: "src/a.ts" }); // this isolate now knows the record and its manifest
    // Another isolate: its own caches, so this one's known record and manifest stay as they were.
    const other = testApp({ storage: stores.storage, kv: stores.kv, undoPruneEvery: 0, listeners: listeners() });
    const headers = { authorization: `Bearer ${t.key}`, "content-type": "application/json" };
    const bytes = new TextEncoder().encode("export const a = 2; // moved on\n");
    const put = await other.request(`/v1/workspaces/${t.ws}/files/src/a.ts`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": String(bytes.length) }, body: bytes }, env);
    expect(put.status).toBeLessThan(300);
    const cp = await other.request(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers, body: JSON.stringify({ name: "next" }) }, env);
    expect(cp.status).toBe(201);
    const { onPath, body } = await call("read", { file_path: "src/a.ts" });
    expect(body.output).toContain("export const a = 2; // moved on");
    expect(body.output).not.toContain("export const a = 1;");
    // The guess (the old pack's range) went beside meta.json; the new manifest and pack were read after it.
    expect(onPath[0]).toEqual(sorted(["r2.get meta.json", "r2.get file", "r2.get pack"]));
    expect(onPath.flat().filter((o) => o === "r2.get pack")).toHaveLength(2);
  });

  it("a file the upper layer holds over its packed version: the upper object is the answer, the early pack read one GET more", async () => {
    const { t, call } = await setup();
    await checkpoint(t, "base");
    await call("read", { file_path: "src/a.ts" });
    await upload(t, "src/a.ts", "export const a = 3; // upper\n");
    const { onPath, body } = await call("read", { file_path: "src/a.ts" });
    expect(body.output).toContain("export const a = 3; // upper");
    expect(onPath).toEqual([sorted(["r2.get meta.json", "r2.get file", "r2.get pack"])]);
  });

  it("a workspace that does not exist, or is another tenant's: NOT_FOUND, the early read was of the caller's own keys and is never shown", async () => {
    const { t, app, stores } = await setup();
    const other = await newTenant(app);
    // A workspace only the other tenant has (both have "main").
    expect((await other.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "theirs" }) })).status).toBe(201);
    await upload({ ...other, ws: "theirs" }, "secret.txt", "other tenant's secret\n");
    const keys: string[] = [];
    stores.keys.length = 0;
    for (const ws of ["theirs", "no-such-ws"]) {
      const res = await app.request(`/v1/workspaces/${ws}/tools/read`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ file_path: "secret.txt" }) }, env);
      const text = await res.text();
      expect(res.status).toBe(404);
      expect(JSON.parse(text).error.code).toBe("NOT_FOUND");
      expect(text).not.toContain("secret\n");
      keys.push(...stores.keys.splice(0));
    }
    const files = keys.filter((k) => k.includes("/f/"));
    expect(files, JSON.stringify(keys)).toHaveLength(2); // the speculative GETs
    for (const k of files) expect(k.startsWith(`t/${t.tenant}/`)).toBe(true);
  });
});

describe("API keys: read from KV once per isolate and TTL (lib/shared/isolate-cache.ts)", () => {
  it("a key is read once; revoked through this isolate it stops at once, through another isolate after the TTL", async () => {
    const stores = countingStores();
    let clock = 1_000_000;
    const app = testApp({ storage: stores.storage, kv: stores.kv, apiKeys: new IsolateCache<AuthInfo | null>(5_000, 10_000, () => clock) });
    const other = testApp({ storage: stores.storage, kv: stores.kv }); // another isolate: its own cache
    stores.log.length = 0;
    const t = await newTenant(app); // its workspace is made with the key: the one read of it
    const list = (a = app) => a.request("/v1/workspaces", { headers: { authorization: `Bearer ${t.key}` } }, env);
    expect((await list()).status).toBe(200);
    expect((await list()).status).toBe(200);
    expect(stores.log.filter((l) => l === "kv.get apikey")).toEqual(["kv.get apikey"]);
    // Revoked through the other isolate: this one still knows the key until its entry expires.
    const keyId = t.key.split("_")[1];
    expect((await admin(other, `/v1/admin/tenants/${t.tenant}/keys/${keyId}`, undefined, "DELETE")).status).toBe(200);
    expect((await list(other)).status).toBe(401);
    expect((await list()).status).toBe(200);
    clock += 5_001;
    expect((await list()).status).toBe(401);
    // Revoked through this isolate: refused at once (the entry is dropped).
    const t2 = await newTenant(app);
    const list2 = () => app.request("/v1/workspaces", { headers: { authorization: `Bearer ${t2.key}` } }, env);
    expect((await list2()).status).toBe(200);
    expect((await admin(app, `/v1/admin/tenants/${t2.tenant}/keys/${t2.key.split("_")[1]}`, undefined, "DELETE")).status).toBe(200);
    expect((await list2()).status).toBe(401);
  });
});

describe("catalog and MCP requests: the tenant's custom tools are read once per isolate and TTL", () => {
  it("a tenant without custom tools: one GET of custom-tools.json, then none; a change through this isolate is seen at once", async () => {
    const stores = countingStores();
    // As deployed on Cloudflare: the webhook's host name is the runtime's to resolve (docs/ssrf.md).
    const app = testApp({ storage: stores.storage, kv: stores.kv, webFetch: { fetcher: cloudflareFetcher } });
    const t = await newTenant(app, { scopes: ["read", "network"] });
    const customReads = async (run: () => Promise<Response>) => {
      stores.log.length = 0;
      const res = await run();
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      return { reads: stores.log.filter((l) => l.endsWith(" custom-tools.json")), names: (body.tools ?? body.result?.tools ?? []).map((x: any) => x.name) as string[] };
    };
    const catalog = () => t.req("/v1/tools");
    const mcpList = () => t.req(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { accept: "application/json, text/event-stream", "content-type": "application/json", "mcp-protocol-version": "2025-06-18" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }) });

    expect((await customReads(catalog)).reads).toEqual(["r2.get custom-tools.json"]);
    expect((await customReads(catalog)).reads).toEqual([]);
    expect((await customReads(mcpList)).reads).toEqual([]);

    const made = await admin(app, `/v1/admin/tenants/${t.tenant}/tools/custom`, { name: "acme_echo", description: "Echo.", input_schema: { type: "object", properties: { message: { type: "string" } } }, backend: { type: "webhook", url: "https://hooks.example.com/echo" } });
    expect(made.status).toBe(201);
    const after = await customReads(catalog);
    expect(after.reads).toEqual(["r2.get custom-tools.json"]);
    expect(after.names).toContain("acme_echo");
    const viaMcp = await customReads(mcpList);
    expect(viaMcp.reads).toEqual([]);
    expect(viaMcp.names).toContain("acme_echo");

    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/tools/custom/acme_echo`, undefined, "DELETE")).status).toBe(200);
    expect((await customReads(catalog)).names).not.toContain("acme_echo");
  });
});
