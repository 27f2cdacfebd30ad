/**
 * move and copy of directories that hold explicit (empty) directories, on the conditional
 * transfer: undo of the markers a failed call made, an interrupted move finished by the same
 * move (crashed during the copies, or between the file deletes and the marker deletes), and a
 * source changed during the move.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { r2Driver } from "../../lib/storage/drivers/r2.js";
import type { StorageDriver } from "../../lib/storage/types.js";
import { deleteTargets } from "../../lib/storage/types.js";
import { newTenant, testApp, testDeps, upload, type Tenant, UNGATED } from "../helpers.js";
import { expectError, interceptPuts, uploadAll } from "./fs-helpers.js";

const mkdir = (t: Tenant, dir: string) => t.req(`/v1/workspaces/${t.ws}/files/${dir}/`, { method: "PUT", headers: { "content-length": "0" } });

/** Every key of the tenant's workspace files (markers end with "/"), relative to its files prefix. */
async function keys(t: Tenant): Promise<string[]> {
  const prefix = `t/${t.tenant}/w/${t.ws}/f/`;
  const r = await r2Driver(env.FILES).list({ prefix });
  return r.objects.map((o) => o.key.slice(prefix.length)).sort();
}

async function seed(t: Tenant, files: Record<string, string>, dirs: string[]) {
  await uploadAll(t, files);
  for (const d of dirs) expect((await mkdir(t, d)).status).toBe(201);
}

/** A driver that dies (every call fails, like a dead isolate) once `when` says so. */
function crashing(base: StorageDriver) {
  const state = { dead: false, when: { put: (_k: string) => false, delete: (_keys: string[]) => false } };
  const dead = () => {
    if (state.dead) throw new Error("the isolate died");
  };
  const driver: StorageDriver = {
    ...base,
    head: async (k) => (dead(), base.head(k)),
    get: async (k, o) => (dead(), base.get(k, o)),
    list: async (o) => (dead(), base.list(o)),
    delete: async (k) => {
      if (state.when.delete(deleteTargets(k).map((x) => x.key))) state.dead = true;
      dead();
      return base.delete(k);
    },
    put: async (key, body, opts) => {
      if (state.when.put(key)) state.dead = true;
      dead();
      return base.put(key, body, opts);
    },
  };
  const revive = () => {
    state.dead = false;
    state.when = { put: () => false, delete: () => false };
  };
  return { driver, state, revive };
}

const FILES = { "src/a.ts": "a", "src/b.ts": "b", "src/c.ts": "c" };
const DIRS = ["src/empty", "src/x/y"];

describe("move and copy with explicit directories", () => {
  it("a failed copy or move removes the markers it made, keeps the ones that were there, and every source stays", async () => {
    const app = testApp({ storage: interceptPuts(testDeps().storage, async (key) => {
      if (key.endsWith("/f/dst/src/x/y/")) throw new Error("storage failure");
    }) });
    const t = await newTenant(app, UNGATED);
    // dst exists, so src lands in dst/src/ (merged with overwrite), whose empty/ is there already.
    await seed(t, FILES, [...DIRS, "src/z", "dst/src/empty"]);
    const before = await keys(t);
    for (const tool of ["copy", "move"]) {
      const r = await t.call(tool, { from: "src", to: "dst", overwrite: true });
      expectError(r, "INTERNAL", 500);
      expect(r.body.error.message).toMatch(/Nothing was (copied|moved): the 3 new copies made so far were removed/);
      expect(await keys(t), tool).toEqual(before);
    }
    // The move's journal went with its undo: nothing is reported as unfinished.
    expect((await t.call("ls", {})).body.data.unfinished_moves).toBeUndefined();
  });

  it("a move interrupted during the copies is finished by the same move, empty directories included", async () => {
    const c = crashing(testDeps().storage);
    const t = await newTenant(testApp({ storage: c.driver }), UNGATED);
    await seed(t, FILES, DIRS);
    let copies = 0;
    c.state.when.put = (k) => k.includes("/f/lib/") && ++copies > 2;
    expect((await t.call("move", { from: "src", to: "lib" })).status).toBe(500);
    c.revive();
    expect((await keys(t)).filter((k) => k.startsWith("lib/"))).toHaveLength(2);
    const ls = await t.call("ls", { path: "src" });
    expect(ls.body.output).toMatch(/did not finish .*: 2 files exist in both, 3 files and 2 directories still in src\/\./);

    const finish = await t.call("move", { from: "src", to: "lib" });
    expect(finish.status, JSON.stringify(finish.body)).toBe(200);
    expect(finish.body.data).toMatchObject({ finished: true, directories: ["lib/empty", "lib/x/y"] });
    expect(finish.body.output).toMatch(/^Finished the interrupted move of src\/ to lib\/: 3 files and 2 directories \(empty ones kept\) moved by this call, 3 bytes\. src\/ no longer exists\./);
    expect(await keys(t)).toEqual(["lib/a.ts", "lib/b.ts", "lib/c.ts", "lib/empty/", "lib/x/y/"]);
    expect((await t.call("ls", {})).body.data.unfinished_moves).toBeUndefined();
  });

  it("a move interrupted between the file deletes and the marker deletes is reported and finished by the same move", async () => {
    const c = crashing(testDeps().storage);
    const t = await newTenant(testApp({ storage: c.driver }), UNGATED);
    await seed(t, FILES, DIRS);
    c.state.when.delete = (ks) => ks.some((k) => k.includes("/f/src/") && k.endsWith("/"));
    expect((await t.call("move", { from: "src", to: "lib" })).status).toBe(500);
    c.revive();
    expect(await keys(t)).toEqual(["lib/a.ts", "lib/b.ts", "lib/c.ts", "lib/empty/", "lib/x/y/", "src/empty/", "src/x/y/"]);
    const ls = await t.call("ls", {});
    expect(ls.body.output).toMatch(/A move of src\/ to lib\/ started at \S+ did not finish \(it was interrupted, or is still running\): 0 files exist in both, 0 files and 2 directories still in src\/\. Call move again with the same arguments/);

    const finish = await t.call("move", { from: "src", to: "lib" });
    expect(finish.status, JSON.stringify(finish.body)).toBe(200);
    expect(finish.body.data).toMatchObject({ finished: true, files: [], directories: ["lib/empty", "lib/x/y"] });
    expect(await keys(t)).toEqual(["lib/a.ts", "lib/b.ts", "lib/c.ts", "lib/empty/", "lib/x/y/"]);
    expect((await t.call("ls", {})).body.data.unfinished_moves).toBeUndefined();
  });

  it("a source file changed during the move stays (CONFLICT); the empty directories move with the other files; the same move again moves the rest", async () => {
    const base = testDeps().storage;
    let change: (() => Promise<void>) | null = null;
    const app = testApp({ storage: interceptPuts(base, async (key) => {
      const c = change;
      if (c && key.includes("/f/dst/")) {
        change = null;
        await c();
      }
    }) });
    const t = await newTenant(app, UNGATED);
    await seed(t, FILES, DIRS);
    change = async () => void (await upload(t, "src/b.ts", "b newer"));
    const d = await t.call("move", { from: "src", to: "dst" });
    expectError(d, "CONFLICT", 409);
    expect(d.body.error.details.changed).toEqual(["src/b.ts"]);
    expect(await keys(t)).toEqual(["dst/a.ts", "dst/c.ts", "dst/empty/", "dst/x/y/", "src/b.ts"]);
    const again = await t.call("move", { from: "src", to: "dst" });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await keys(t)).toEqual(["dst/a.ts", "dst/b.ts", "dst/c.ts", "dst/empty/", "dst/x/y/"]);
  });
});
