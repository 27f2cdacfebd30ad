/**
 * A packed write-back past the storage quotas is refused before it writes (issue #28 §2;
 * lib/sync/writeback-bound.ts): the real runner and bubblewrap sandbox, the app's /v1/sync over memory
 * storage with the limits in memory, every storage PUT counted by kind. Before the bound, a command
 * writing 300 files of 64 KiB (18.75 MiB) under a 1 MiB quota wrote 4 packs (18.75 MiB) before the
 * commit's charge refused them; now its first stage requests are refused on the plan: no pack.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryLimits } from "../../../lib/limits/store.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { runnerApp } from "../../support/runner-app.js";
const KiB = 1024;
const MiB = 1024 * KiB;

describe("a packed write-back past the storage quotas", () => {
  let app: Awaited<ReturnType<typeof runnerApp>>["app"];
  let key: string;
  let admin: Awaited<ReturnType<typeof runnerApp>>["admin"];
  let close: () => Promise<void>;
  const mem = memoryDriver();
  /** Storage PUTs by kind (pack bytes summed), and the sync requests. */
  const log = { puts: [] as string[], packBytes: 0, sync: [] as string[] };
  const storage: StorageDriver = {
    ...mem,
    name: "counting",
    put(k, b, o) {
      const kind = k.includes("/packs/") ? "pack" : k.includes("/manifests/") ? "manifest" : k.endsWith("/meta.json") ? "meta" : /\/w\/[^/]+\/f\//.test(k) ? "file" : k.includes("/x/index/") ? "index" : "other";
      log.puts.push(kind);
      if (kind === "pack") log.packBytes += o?.length ?? (b as Uint8Array).length ?? 0;
      return mem.put(k, b, o);
    },
  };
  const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s", ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown) => {
    const r = await req(`/v1/workspaces/main/tools/${tool}`, { method: "POST", body: JSON.stringify(args) });
    return { status: r.status, body: (await r.json()) as any };
  };
  const setLimits = async (limits: Record<string, number>) => expect((await admin("/v1/admin/tenants/acme/limits", limits, "PUT")).limits).toEqual(limits);
  const reset = () => void ((log.puts.length = 0), (log.packBytes = 0), (log.sync.length = 0));
  const staging = () => log.sync.filter((s) => /\/v1\/sync\/(stage|commit|put)$/.test(s) || s.startsWith("PUT /v1/sync/files"));
  /** The workspace's files (path → size), as a listing shows them. */
  const files = async () => {
    const r = (await (await req("/v1/workspaces/main/files/?recursive=true")).json()) as { entries: { path: string; type: string; size?: number }[] };
    return new Map(r.entries.filter((e) => e.type === "file").map((e) => [e.path, e.size]));
  };
  /** 300 files of 64 KiB each (18.75 MiB): four stage requests of ~6 MiB. */
  const make300 = (dir: string, byte = "0") => `mkdir -p ${dir} && head -c ${64 * KiB} /dev/zero | tr '\\0' '${byte}' > ${dir}/f1 && for i in $(seq 2 300); do cp ${dir}/f1 ${dir}/f$i; done`;

  beforeAll(async () => {
    ({ app, key, admin, close } = await runnerApp({ storage, deps: { limits: memoryLimits() }, onSync: (method, path) => void log.sync.push(`${method} ${path}`) }));
  });
  afterAll(() => close());

  it("18.75 MiB under storage_bytes 1 MiB: refused before any pack is written, storage unchanged; the model reads that nothing was written back, the quota and what to do", async () => {
    await setLimits({ storage_bytes: MiB });
    expect((await call("write", { file_path: "keep.txt", content: "kept\n" })).status).toBe(200);
    const before = await files();
    reset();
    const r = await call("bash", { command: `${make300("big")} && echo made` });
    expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
    // No pack, no manifest, no switch, no file: the stage requests were refused on the plan, nothing committed, nothing put one by one.
    expect(log.puts.filter((p) => p !== "other")).toEqual([]);
    expect(log.packBytes).toBe(0);
    expect(staging().every((s) => s === "POST /v1/sync/stage"), staging().join(",")).toBe(true);
    expect(staging().length).toBeGreaterThanOrEqual(1);
    expect(staging().length).toBeLessThanOrEqual(3); // those in flight when the first refusal came; none started after it
    expect(await files()).toEqual(before);
    // What the model reads: the files were not written back, why (the quota, its usage and limit), and what to do.
    const out: string = r.body.output;
    expect(out).toContain("made\n");
    expect(out).toContain("[not written back: 300 changed files (big/f1, big/f10, big/f100, big/f101, big/f102, ...). The write-back's 19660800 bytes of files are more than the 1048571 the storage quota could take (1048571 bytes free, plus the 0 bytes of the files it replaces)");
    expect(out).toContain(`the storage_bytes quota is ${MiB}, and 5 are in use`);
    expect(out).toContain("Delete what is not needed");
    expect(out).toContain("These changes are NOT in the workspace");
    expect(r.body.data.skipped).toHaveLength(300);
    expect(r.body.data.files_changed).toEqual([]);
    // The next command does not see them.
    expect((await call("bash", { command: "ls big 2>&1 | head -1" })).body.output).toContain("No such file");
  }, 120_000);

  it("within the quota the same command lands as before (stage requests, one commit); a rewrite of every file near the quota passes (what it replaces counts)", async () => {
    await setLimits({ storage_bytes: 64 * MiB });
    reset();
    const r = await call("bash", { command: make300("big") });
    expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
    expect(r.body.data.skipped ?? []).toEqual([]);
    expect(staging().filter((s) => s.endsWith("/commit"))).toEqual(["POST /v1/sync/commit"]);
    expect(log.packBytes).toBe(300 * 64 * KiB);
    expect((await files()).size).toBe(301);
    // The quota at exactly what is stored: a same-size rewrite of all 300 needs no room.
    await setLimits({ storage_bytes: 300 * 64 * KiB + 5 });
    reset();
    const w = await call("bash", { command: make300("big", "1") });
    expect(w.status, JSON.stringify(w.body).slice(0, 600)).toBe(200);
    expect(w.body.data.skipped ?? []).toEqual([]);
    expect(w.body.data.files_changed).toHaveLength(300);
    expect((await call("bash", { command: "head -c 3 big/f300" })).body.output).toBe("111");
  }, 120_000);

  it("files_per_workspace: 250 new files where 49 fit: refused before any pack, named so", async () => {
    await setLimits({ files_per_workspace: 350 });
    reset();
    const r = await call("bash", { command: "mkdir -p many && for i in $(seq 1 250); do echo $i > many/f$i; done" });
    expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
    expect(log.packBytes).toBe(0);
    expect(log.puts.filter((p) => p !== "other")).toEqual([]);
    expect(r.body.output).toContain("The write-back's 250 new files are more than the 49 this workspace has room for: the files_per_workspace quota is 350, and 301 are in use");
    expect((await files()).size).toBe(301);
  }, 120_000);

  it("refused whole: the run's delete and its large file (written alone) are not written back either, though each alone would fit", async () => {
    const used = 300 * 64 * KiB + 5; // the 300 files of 64 KiB and keep.txt, as the tests above left them
    await setLimits({ storage_bytes: used + 3 * MiB });
    const before = await files();
    expect(before.get("keep.txt")).toBe(5);
    reset();
    const r = await call("bash", { command: `rm keep.txt && head -c ${1.5 * MiB} /dev/zero > large.bin && ${make300("more")} && echo made` });
    expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
    expect(log.puts.filter((p) => p !== "other")).toEqual([]); // no pack, and no large file put alone
    expect(await files()).toEqual(before); // keep.txt not deleted, large.bin not written
    expect(r.body.data.skipped.map((s: { path: string }) => s.path)).toEqual(expect.arrayContaining(["keep.txt", "large.bin"]));
    expect(r.body.data.files_changed).toEqual([]);
    expect(r.body.output).toContain("These changes are NOT in the workspace");
  }, 120_000);
});
