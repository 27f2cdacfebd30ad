/**
 * The doors that are no agent session (the raw file routes and the routes beside them, the runner's
 * sync door) keep their read records under session names no X-Session-Id can spell
 * (DOOR_SESSIONS, lib/workspace/records.ts). Before, they were "raw" and "sync": an agent session
 * named `raw` read and wrote the raw routes' records, one named `sync` the write-back's. The app
 * in Node over memory storage and KV; the one way those doors get their records, checked on the tree.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import type { AppDeps } from "../../../../lib/api/deps.js";
import { checkSessionId } from "../../../../lib/layout/paths.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { DOOR_SESSIONS, doorRecords, sessionRecords } from "../../../../lib/workspace/records.js";

const ADMIN = "admin-token-for-tests";
const kv = storageKeyValue(memoryDriver(), "kv/");
let app: ReturnType<typeof createApp>;
let key: string;

const req = (path: string, init: RequestInit & { session?: string } = {}) =>
  app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(init.session ? { "x-session-id": init.session } : {}), ...(init.headers as Record<string, string>) } });

beforeAll(async () => {
  app = createApp({ storage: memoryDriver(), kv, adminToken: ADMIN } as AppDeps, tools);
  const admin = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
  expect((await req("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "main" }) })).status).toBe(201);
});

describe("the doors' own sessions", () => {
  it("no X-Session-Id spells them: a tool call naming one is INVALID_ARGUMENT, nothing runs", async () => {
    for (const name of Object.values(DOOR_SESSIONS)) {
      expect(() => checkSessionId(name)).toThrow(/Invalid X-Session-Id/);
      const r = await req("/v1/workspaces/main/tools/write", { method: "POST", session: name, body: JSON.stringify({ file_path: "x.txt", content: "x" }) });
      expect(r.status).toBe(400);
      expect(((await r.json()) as any).error.code).toBe("INVALID_ARGUMENT");
    }
    expect((await req("/v1/workspaces/main/files/x.txt")).status).toBe(404);
  });

  for (const door of ["raw", "sync"] as const) {
    it(`a record of the ${door} door is not the agent session "${door}"'s, nor the other way round`, async () => {
      const own = doorRecords(kv, "acme", "main", door);
      await own.set("a.txt", "etag-door");
      expect(await sessionRecords(kv, "acme", "main", door).get("a.txt")).toBeNull();
      await sessionRecords(kv, "acme", "main", door).set("b.txt", "etag-agent");
      expect(await doorRecords(kv, "acme", "main", door).get("b.txt")).toBeNull();
      expect((await doorRecords(kv, "acme", "main", door).get("a.txt"))?.etag).toBe("etag-door");
    });
  }

  it('a session "raw" does not inherit a read the raw door recorded: its edit without a read is NOT_READ, the file unchanged', async () => {
    const put = await req("/v1/workspaces/main/files/doc.txt", { method: "PUT", body: "one\n", headers: { "content-type": "text/plain", "content-length": "4" } });
    expect(put.status).toBe(201);
    const { etag } = (await put.json()) as { etag: string };
    await doorRecords(kv, "acme", "main", "raw").set("doc.txt", etag);
    const edit = await req("/v1/workspaces/main/tools/edit", { method: "POST", session: "raw", body: JSON.stringify({ file_path: "doc.txt", old_string: "one", new_string: "two" }) });
    expect(((await edit.json()) as any).error?.code).toBe("NOT_READ");
    expect(await (await req("/v1/workspaces/main/files/doc.txt")).text()).toBe("one\n");
  });

  it("every store of session records is made by sessionRecords or doorRecords (lib/workspace/records.ts), nowhere else", () => {
    const found: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith(".ts") && p !== join("lib", "workspace", "records.ts") && readFileSync(p, "utf8").includes("new RecordStore(")) found.push(p);
      }
    };
    for (const root of ["lib", "functions", "infra"]) walk(root);
    expect(found).toEqual([]);
  });
});
