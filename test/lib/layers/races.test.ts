/**
 * Interleavings steered deterministically: a storage wrapper runs a "racer" at the exact step
 * where a concurrent writer or restore would land (workerd, local R2, through HTTP).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import type { PutOptions, StorageDriver } from "../../../lib/storage/types.js";
import { collectGarbage } from "../../../lib/layers/gc.js";

type Hook = (key: string, opts: PutOptions) => Promise<void>;

function hooked(inner: StorageDriver, hooks: { current: Hook | null }): StorageDriver {
  return {
    ...inner,
    name: "hooked",
    async put(key, body, opts = {}) {
      const h = hooks.current;
      if (h) await h(key, opts);
      return inner.put(key, body, opts);
    },
  };
}

const raw = r2Driver(env.FILES);
const hooks: { current: Hook | null } = { current: null };
const app = testApp({ storage: hooked(raw, hooks) });

const text = async (t: Tenant, p: string) => {
  const r = await t.req(`/v1/workspaces/${t.ws}/files/${p}`);
  return r.status === 200 ? await r.text() : null;
};
const post = async (t: Tenant, path: string, body?: unknown) => {
  const r = await t.req(path, { method: "POST", headers: { "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: r.status, body: (await r.json()) as any };
};

describe("restore racing writers", () => {
  it("a writer landing between the restore's listing and its switch is reported in conflicts and kept, never overwritten", async () => {
    const t = await newTenant(app);
    await upload(t, "a.txt", "a0");
    const cp = (await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "c" })).body;
    await upload(t, "u.txt", "u-before");
    const fp = `t/${t.tenant}/w/${t.ws}/f/`;
    hooks.current = async (key, opts) => {
      if (!key.endsWith(`/w/${t.ws}/meta.json`) || opts.ifMatch === undefined) return;
      hooks.current = null;
      // Two writes acknowledged after the listing: a changed upper file and a new one.
      await raw.put(`${fp}u.txt`, "u-racer");
      await raw.put(`${fp}racer.txt`, "new-racer");
    };
    const r = await post(t, `/v1/workspaces/${t.ws}/checkpoints/${cp.id}/restore`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.conflicts).toEqual(["racer.txt", "u.txt"]);
    expect(await text(t, "u.txt")).toBe("u-racer");
    expect(await text(t, "racer.txt")).toBe("new-racer");
    expect(await text(t, "a.txt")).toBe("a0");
  });

  it("a write over a lower file whose base a restore switches meanwhile is undone and refused (FILE_MODIFIED), never half-applied", async () => {
    const t = await newTenant(app);
    await upload(t, "f.txt", "v1");
    const c1 = (await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "c1" })).body;
    await upload(t, "f.txt", "v2");
    await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "c2" });
    expect((await t.call("read", { file_path: "f.txt" })).status).toBe(200);
    hooks.current = async (key, opts) => {
      if (!key.endsWith("/f/f.txt") || opts.ifNoneMatch !== "*") return;
      hooks.current = null;
      // The writer checked the lower etag (v2); a restore to c1 lands before its create.
      const r = await post(t, `/v1/workspaces/${t.ws}/checkpoints/${c1.id}/restore`);
      expect(r.status).toBe(200);
    };
    const w = await t.call("edit", { file_path: "f.txt", old_string: "v2", new_string: "v3" });
    expect(w.status, JSON.stringify(w.body)).toBe(409);
    expect(w.body.error.code).toBe("FILE_MODIFIED");
    expect(await text(t, "f.txt")).toBe("v1");
  });

  it("a checkpoint keeps a write that lands while it seals (only the sealed version is removed from the upper layer)", async () => {
    const t = await newTenant(app);
    await upload(t, "s.txt", "sealed");
    const fp = `t/${t.tenant}/w/${t.ws}/f/`;
    hooks.current = async (key, opts) => {
      if (!key.endsWith(`/w/${t.ws}/meta.json`) || opts.ifMatch === undefined) return;
      hooks.current = null;
      await raw.put(`${fp}s.txt`, "newer");
    };
    const cp = await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "c" });
    expect(cp.status, JSON.stringify(cp.body)).toBe(201);
    expect(cp.body.kept).toBe(1);
    expect(await text(t, "s.txt")).toBe("newer");
    const diff = await (await t.req(`/v1/workspaces/${t.ws}/diff?from=${cp.body.id}`)).json() as any;
    expect(diff.changes.map((c: any) => [c.path, c.status])).toEqual([["s.txt", "changed"]]);
  });

  it("a checkpoint whose workspace is deleted (and made again) before its record lands leaves no record: the new workspace never sees the old one's checkpoint", async () => {
    const t = await newTenant(app);
    await upload(t, "secret.txt", "the old workspace's\n");
    expect((await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "sealed" })).status).toBe(201); // nothing upper: the next one switches nothing
    for (const again of [false, true]) {
      hooks.current = async (key) => {
        if (!key.includes("/x/checkpoints/")) return;
        hooks.current = null;
        expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
        if (again) expect((await post(t, "/v1/workspaces", { id: t.ws })).status).toBe(201);
      };
      const cp = await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "late" });
      hooks.current = null;
      expect(cp.status, JSON.stringify(cp.body)).toBe(404);
      expect(cp.body.error.code).toBe("NOT_FOUND");
      if (!again) expect((await post(t, "/v1/workspaces", { id: t.ws })).status).toBe(201);
      const list = (await (await t.req(`/v1/workspaces/${t.ws}/checkpoints`)).json()) as any;
      expect(list.checkpoints.map((c: any) => c.name)).toEqual([]);
      expect(await text(t, "secret.txt")).toBeNull();
      await upload(t, "secret.txt", "the old workspace's\n"); // for the next round
      expect((await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "sealed" })).status).toBe(201);
      await t.req(`/v1/workspaces/${t.ws}/checkpoints/${list.checkpoints[0]?.id ?? "none"}`, { method: "DELETE" });
    }
  });

  it("a fork from a checkpoint that is deleted and collected (GC) before the fork's record lands is undone and NOT_FOUND, never a workspace on a missing manifest", async () => {
    const t = await newTenant(app);
    await upload(t, "a.txt", "one\n");
    const old = await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "old" });
    await upload(t, "a.txt", "two\n");
    expect((await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "new" })).status).toBe(201); // the origin's base moves on
    let collected = 0;
    hooks.current = async (key) => {
      if (!key.endsWith("/w/forked/meta.json")) return;
      hooks.current = null;
      expect((await t.req(`/v1/workspaces/${t.ws}/checkpoints/${old.body.id}`, { method: "DELETE" })).status).toBe(200);
      collected = (await collectGarbage(raw, t.tenant, { now: Date.now() + 2 * 3600 * 1000, graceSeconds: 60 })).manifests_deleted;
    };
    const fork = await post(t, "/v1/workspaces", { id: "forked", from_workspace: t.ws, checkpoint: old.body.id });
    hooks.current = null;
    expect(collected).toBeGreaterThan(0); // the race happened: the checkpoint's manifest is gone
    expect(fork.status, JSON.stringify(fork.body)).toBe(404);
    expect((await t.req("/v1/workspaces/forked")).status).toBe(404);
  });
});
