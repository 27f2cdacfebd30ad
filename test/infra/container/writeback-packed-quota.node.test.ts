/**
 * A packed write-back past the storage quotas is refused before it writes (issue #28 §2;
 * lib/sync/writeback-bound.ts): the real runner and bubblewrap sandbox, the app's /v1/sync over memory
 * storage with the limits in memory, every storage PUT counted by kind. Before the bound, a command
 * writing 300 files of 64 KiB (18.75 MiB) under a 1 MiB quota wrote 4 packs (18.75 MiB) before the
 * commit's charge refused them; now its first stage requests are refused on the plan: no pack.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryLimits, type LimitsStore } from "../../../lib/limits/store.js";
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
  const log = { puts: [] as string[], packBytes: 0, sync: [] as string[], order: [] as string[], holds: 0 };
  const storage: StorageDriver = {
    ...mem,
    name: "counting",
    put(k, b, o) {
      const kind = k.includes("/packs/") ? "pack" : k.includes("/manifests/") ? "manifest" : k.endsWith("/meta.json") ? "meta" : /\/w\/[^/]+\/f\//.test(k) ? "file" : k.includes("/x/index/") ? "index" : "other";
      log.puts.push(kind);
      if (kind === "pack" || kind === "file") log.order.push(kind);
      if (kind === "pack") log.packBytes += o?.length ?? (b as Uint8Array).length ?? 0;
      return mem.put(k, b, o);
    },
    delete(keys) {
      for (const t of Array.isArray(keys) ? keys : [keys]) {
        const k = typeof t === "string" ? t : t.key;
        if (/\/w\/[^/]+\/f\//.test(k)) log.order.push(`delete ${k.replace(/^.*\/f\//, "")}`);
      }
      return mem.delete(keys);
    },
  };
  const inner = memoryLimits();
  /** Set: run once right after the write-back's plan is first checked (its hold taken, or where the quotas stand asked): a racing writer. */
  let racer: (() => Promise<void>) | null = null;
  const limits: LimitsStore = {
    ...inner,
    async chargeStorage(t, c, w, d, o) {
      if (o?.hold) log.holds++;
      const answer = await inner.chargeStorage(t, c, w, d, o);
      const r = o?.standing || o?.hold ? racer : null;
      if (r) racer = null;
      if (r) await r();
      return answer;
    },
  };
  const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s", ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown) => {
    const r = await req(`/v1/workspaces/main/tools/${tool}`, { method: "POST", body: JSON.stringify(args) });
    return { status: r.status, body: (await r.json()) as any };
  };
  const setLimits = async (limits: Record<string, number>) => expect((await admin("/v1/admin/tenants/acme/limits", limits, "PUT")).limits).toEqual(limits);
  const reset = () => void ((log.puts.length = 0), (log.packBytes = 0), (log.sync.length = 0), (log.order.length = 0), (log.holds = 0));
  const staging = () => log.sync.filter((s) => /\/v1\/sync\/(stage|commit|put)$/.test(s) || s.startsWith("PUT /v1/sync/files"));
  /** The workspace's files (path → size), as a listing shows them. */
  const files = async () => {
    const r = (await (await req("/v1/workspaces/main/files/?recursive=true")).json()) as { entries: { path: string; type: string; size?: number }[] };
    return new Map(r.entries.filter((e) => e.type === "file").map((e) => [e.path, e.size]));
  };
  /** 300 files of 64 KiB each (18.75 MiB): four stage requests of ~6 MiB. */
  const make300 = (dir: string, byte = "0") => `mkdir -p ${dir} && head -c ${64 * KiB} /dev/zero | tr '\\0' '${byte}' > ${dir}/f1 && for i in $(seq 2 300); do cp ${dir}/f1 ${dir}/f$i; done`;

  beforeAll(async () => {
    ({ app, key, admin, close } = await runnerApp({ storage, deps: { limits }, onSync: (method, path) => void log.sync.push(`${method} ${path}`) }));
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
    expect(staging()).toEqual(["POST /v1/sync/put"]); // the write-back's hold, refused: no stage request
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
    expect(r.body.output).toContain("The write-back's 250 new entries (files, and empty directories: each counts as a file) are more than the 49 this workspace has room for: the files_per_workspace quota is 350, and 301 are in use");
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

  it("raced by an upload that takes the room once its plan was checked: the packed write-back lands whole (its room held before its first stage request), the upload is refused", async () => {
    for (const d of ["big", "more", "many"]) await call("bash", { command: `rm -rf ${d} large.bin` });
    const used = [...(await files()).values()].reduce((a, b) => a! + b!, 0)!;
    // Room for the 300 files of 16 KiB and 100 KiB more; the upload takes 200 KiB right after the plan's check.
    await setLimits({ storage_bytes: used + 300 * 16 * KiB + 100 * KiB });
    let raced = 0;
    racer = async () => void (raced = (await req("/v1/workspaces/main/files/racer.bin", { method: "PUT", body: new Uint8Array(200 * KiB), headers: { "content-type": "application/octet-stream", "content-length": String(200 * KiB) } })).status);
    reset();
    const r = await call("bash", { command: `mkdir -p held && head -c ${16 * KiB} /dev/zero > held/f1 && for i in $(seq 2 300); do cp held/f1 held/f$i; done` });
    racer = null;
    expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
    expect(raced).toBe(413);
    expect(r.body.data.skipped ?? [], r.body.output.slice(-600)).toEqual([]);
    expect(r.body.data.files_changed).toHaveLength(300);
    const now = await files();
    expect(now.has("racer.bin")).toBe(false);
    expect([...now.keys()].filter((p) => p.startsWith("held/"))).toHaveLength(300);
    // The hold, one stage request, the commit drawing on the hold, the hold released.
    expect(staging()).toEqual(["POST /v1/sync/put", "POST /v1/sync/stage", "POST /v1/sync/commit", "POST /v1/sync/put"]);
    expect(log.holds).toBe(1);
    expect(log.packBytes).toBe(300 * 16 * KiB);
  }, 120_000);

  it("rm big && write many beside a full quota lands: the delete is credited in the hold and applied before any pack is written", async () => {
    await setLimits({ storage_bytes: 64 * MiB });
    expect((await call("bash", { command: `head -c ${2 * MiB} /dev/zero > big.bin` })).status).toBe(200);
    const used = [...(await files()).values()].reduce((a, b) => a! + b!, 0)!;
    await setLimits({ storage_bytes: used + 50 * KiB });
    reset();
    const r = await call("bash", { command: `rm big.bin && mkdir -p swap && head -c ${4 * KiB} /dev/zero > swap/f1 && for i in $(seq 2 300); do cp swap/f1 swap/f$i; done` });
    expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
    expect(r.body.data.skipped ?? [], r.body.output.slice(-600)).toEqual([]);
    expect(log.order[0]).toBe("delete big.bin");
    expect(log.order.filter((o) => o === "pack").length).toBeGreaterThan(0);
    const now = await files();
    expect(now.has("big.bin")).toBe(false);
    expect([...now.keys()].filter((p) => p.startsWith("swap/"))).toHaveLength(300);
    expect(staging()).toEqual(["POST /v1/sync/put", "POST /v1/sync/put", "POST /v1/sync/stage", "POST /v1/sync/commit", "POST /v1/sync/put"]); // the hold of the writes alone (refused), the hold with the delete credited, the pack, the release
    // Past the quota even with its delete: refused whole, no pack, the delete not applied either.
    reset();
    const no = await call("bash", { command: `rm swap/f1 && mkdir -p over && head -c ${4 * KiB} /dev/zero > over/f1 && for i in $(seq 2 300); do cp over/f1 over/f$i; done` });
    expect(log.packBytes).toBe(0);
    expect(log.order).toEqual([]);
    expect(no.body.output).toContain("[not written back: 301 changed files");
    expect((await files()).has("swap/f1")).toBe(true);
  }, 120_000);
});
