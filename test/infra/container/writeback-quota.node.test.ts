/**
 * A write-back too small to be packed is refused whole by the storage quotas, as a packed one is
 * (lib/sync/writeback-bound.ts, infra/container/writeback-plan.ts): the real runner and bubblewrap
 * sandbox, the app's /v1/sync over memory storage with the limits in memory, every storage write
 * and delete counted, every sync request and every call to the limits object logged. Before, such
 * a write-back went file by file, each charged: some files landed, the rest were refused, and the
 * deletes were applied.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryLimits, type LimitsStore } from "../../../lib/limits/store.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { runnerApp } from "../../support/runner-app.js";
const KiB = 1024;
const MiB = 1024 * KiB;

describe("a small write-back past the storage quotas", () => {
  let app: Awaited<ReturnType<typeof runnerApp>>["app"];
  let key: string;
  let admin: Awaited<ReturnType<typeof runnerApp>>["admin"];
  let close: () => Promise<void>;
  const mem = memoryDriver();
  /** Storage writes and deletes of workspace files, the sync requests, and the limits object's storage calls (standing: asked where the quotas stand). */
  const log = { files: [] as string[], sync: [] as string[], charges: 0, standings: 0 };
  const fileKey = (k: string) => /\/w\/[^/]+\/f\//.test(k);
  const storage: StorageDriver = {
    ...mem,
    name: "counting",
    put(k, b, o) {
      if (fileKey(k)) log.files.push(`put ${k.replace(/^.*\/f\//, "")}`);
      return mem.put(k, b, o);
    },
    delete(keys) {
      for (const k of Array.isArray(keys) ? keys : [keys]) if (fileKey(k)) log.files.push(`delete ${k.replace(/^.*\/f\//, "")}`);
      return mem.delete(keys);
    },
  };
  const inner = memoryLimits();
  /** Set: the standings asked wait until `n` of them have been (racing write-backs then see the same room). */
  let barrier: { n: number; waiting: (() => void)[] } | null = null;
  const limits: LimitsStore = {
    ...inner,
    async chargeStorage(t, c, w, d, o) {
      if (o?.standing) log.standings++;
      else log.charges++;
      const b = o?.standing ? barrier : null;
      if (b) await new Promise<void>((go) => void (b.waiting.push(go), b.waiting.length >= b.n && b.waiting.forEach((f) => f())));
      return inner.chargeStorage(t, c, w, d, o);
    },
  };
  const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s", ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown) => {
    const r = await req(`/v1/workspaces/main/tools/${tool}`, { method: "POST", body: JSON.stringify(args) });
    return { status: r.status, body: (await r.json()) as any };
  };
  const bash = async (command: string) => {
    const r = await call("bash", { command });
    expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
    return r.body;
  };
  const setLimits = async (l: Record<string, number>) => expect((await admin("/v1/admin/tenants/acme/limits", l, "PUT")).limits).toEqual(l);
  const reset = () => void ((log.files.length = 0), (log.sync.length = 0), (log.charges = 0), (log.standings = 0));
  const writes = () => log.sync.filter((s) => /\/v1\/sync\/(put|delete|stage|commit)$/.test(s) || /^(PUT|DELETE) \/v1\/sync\/files\//.test(s));
  /** The workspace's files (path → size), as a listing shows them. */
  const files = async () => {
    const r = (await (await req("/v1/workspaces/main/files/?recursive=true")).json()) as { entries: { path: string; type: string; size?: number }[] };
    return new Map(r.entries.filter((e) => e.type === "file").map((e) => [e.path, e.size!]));
  };
  const stored = async () => [...(await files()).values()].reduce((a, b) => a + b, 0);
  const fill = (path: string, bytes: number) => `head -c ${bytes} /dev/zero > ${path}`;

  beforeAll(async () => {
    ({ app, key, admin, close } = await runnerApp({ storage, deps: { limits }, onSync: (method, path) => void log.sync.push(`${method} ${path}`) }));
    expect((await call("write", { file_path: "keep.txt", content: "kept\n" })).status).toBe(200);
    expect((await call("write", { file_path: "del.txt", content: "del\n" })).status).toBe(200);
  });
  afterAll(() => close());

  it("storage_bytes: a delete and 3 files of 40 KiB where 100 KiB are free write nothing, no file and no delete (one put batch, refused on its plan); the model reads it", async () => {
    const used = await stored();
    await setLimits({ storage_bytes: used + 100 * KiB });
    const before = await files();
    reset();
    const out = await bash(`rm del.txt && for i in 1 2 3; do ${fill("f$i", 40 * KiB)}; done && echo made`);
    expect(log.files).toEqual([]);
    expect(await files()).toEqual(before);
    expect(writes()).toEqual(["POST /v1/sync/put"]); // the batch with the plan; the delete batch never went
    expect(out.output).toContain("made\n");
    expect(out.output).toContain(`[not written back: 4 changed files (del.txt, f1, f2, f3). The write-back's ${120 * KiB} bytes of files are more than the ${100 * KiB} the storage quota could take (${100 * KiB} bytes free, plus the 0 bytes of the files it replaces): the storage_bytes quota is ${used + 100 * KiB}, and ${used} are in use`);
    expect(out.output).toContain("Delete what is not needed");
    expect(out.output).toContain("These changes are NOT in the workspace");
    expect(out.data.files_changed).toEqual([]);
    expect(out.data.skipped.map((s: { path: string }) => s.path).sort()).toEqual(["del.txt", "f1", "f2", "f3"]);
    expect((await bash("cat del.txt; ls f1 2>&1")).output).toMatch(/^del\n.*No such file/);
  }, 60_000);

  it("files_per_workspace: 3 new files (one over 1 MiB, written alone) and a delete where 2 fit: the plan goes first, alone, and nothing is written", async () => {
    await setLimits({ files_per_workspace: 4 });
    const before = await files();
    expect(before.size).toBe(2);
    reset();
    const out = await bash(`rm del.txt && ${fill("big.bin", 1.5 * MiB)} && echo a > a.txt && echo b > b.txt`);
    expect(log.files).toEqual([]);
    expect(await files()).toEqual(before);
    expect(writes()).toEqual(["POST /v1/sync/put"]); // a put batch of no file, with the plan
    expect(out.output).toContain("[not written back: 4 changed files (a.txt, b.txt, big.bin, del.txt). The write-back's 3 new files are more than the 2 this workspace has room for: the files_per_workspace quota is 4, and 2 are in use");
    expect(out.data.files_changed).toEqual([]);
  }, 60_000);

  it("within the quotas the same write-backs land whole, deletes with them; a write-back of one change asks nothing more of the limits object than before", async () => {
    const used = await stored();
    await setLimits({ storage_bytes: used + 100 * KiB, files_per_workspace: 10 });
    reset();
    let out = await bash(`rm del.txt && for i in 1 2; do ${fill("f$i", 40 * KiB)}; done`);
    expect(out.data.skipped ?? []).toEqual([]);
    expect(writes()).toEqual(["POST /v1/sync/put", "POST /v1/sync/delete"]); // the batch with the plan, then its delete
    expect(log.standings).toBe(1);
    expect(log.charges).toBe(2); // the batch's two files charged at once (before: one call each), the delete's give-back
    expect([...(await files()).keys()].sort()).toEqual(["f1", "f2", "keep.txt"]);
    await setLimits({ storage_bytes: used + 4 * MiB, files_per_workspace: 10 });
    reset();
    out = await bash(`rm f1 && ${fill("big.bin", 1.5 * MiB)} && echo a > a.txt`);
    expect(out.data.skipped ?? []).toEqual([]);
    expect(writes().sort()).toEqual(["POST /v1/sync/delete", "POST /v1/sync/put", "POST /v1/sync/put", "PUT /v1/sync/files/big.bin"]); // the plan alone first
    expect(writes()[0]).toBe("POST /v1/sync/put");
    expect([...(await files()).keys()].sort()).toEqual(["a.txt", "big.bin", "f2", "keep.txt"]);
    // One change: no plan, the file's own charge (one call to the limits object), as before.
    reset();
    out = await bash("echo one > one.txt");
    expect(out.data.files_changed).toEqual(["one.txt"]);
    expect(writes()).toEqual(["POST /v1/sync/put"]);
    expect(log.standings).toBe(0);
    expect(log.charges).toBe(1);
  }, 60_000);

  it("two write-backs racing for the last room (each fits, both do not; both plans pass the same standing): one lands whole, the other is refused whole, the quota holds", async () => {
    for (const p of (await files()).keys()) if (p !== "keep.txt") await bash(`rm -f ${p}`);
    const used = await stored();
    await setLimits({ storage_bytes: used + 200 * KiB });
    reset();
    barrier = { n: 2, waiting: [] };
    const [a, b] = await Promise.all(["a", "b"].map((d) => bash(`mkdir -p ${d} && for i in 1 2 3; do ${fill(`${d}/f$i`, 40 * KiB)}; done`)));
    barrier = null;
    expect(log.standings).toBe(2);
    const now = await files();
    expect(await stored()).toBeLessThanOrEqual(used + 200 * KiB);
    const landed = [a, b].filter((out) => (out.data.skipped ?? []).length === 0);
    expect(landed, [a, b].map((o) => o.output).join("\n---\n")).toHaveLength(1);
    for (const [d, out] of [["a", a], ["b", b]] as const) {
      const mine = [1, 2, 3].map((i) => `${d}/f${i}`);
      const skipped = (out.data.skipped ?? []).map((s: { path: string }) => s.path).sort();
      if (landed[0] === out) expect(mine.every((p) => now.has(p))).toBe(true);
      else {
        expect(mine.some((p) => now.has(p)), out.output).toBe(false);
        expect(skipped).toEqual(mine);
        expect(out.output).toContain("[not written back: 3 changed files");
        expect(out.output).toContain("the storage_bytes quota is");
      }
    }
  }, 60_000);
});
