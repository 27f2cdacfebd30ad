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
import { runnerApp } from "../../support/runner-app.js";
import { loggingFileOps } from "../../support/file-ops-log.js";
const KiB = 1024;
const MiB = 1024 * KiB;

describe("a small write-back past the storage quotas", () => {
  let app: Awaited<ReturnType<typeof runnerApp>>["app"];
  let key: string;
  let admin: Awaited<ReturnType<typeof runnerApp>>["admin"];
  let close: () => Promise<void>;
  const mem = memoryDriver();
  /** Storage writes and deletes of workspace files, the sync requests, and the limits object's storage calls (standing: asked where the quotas stand; hold: a write-back's whole charge held). */
  const log = { files: [] as string[], sync: [] as string[], charges: 0, standings: 0, holds: 0 };
  const storage = loggingFileOps(mem, log.files);
  const inner = memoryLimits();
  /** Set: the standings asked wait until `n` of them have been (racing write-backs then see the same room). */
  let barrier: { n: number; waiting: (() => void)[] } | null = null;
  /** Set: run once right after the next plan check (a racing writer). */
  let racer: (() => Promise<void>) | null = null;
  /** Set: run once right after the next hold taken (not one refused, nor the standing asked for its message). */
  let holdRacer: (() => Promise<void>) | null = null;
  const limits: LimitsStore = {
    ...inner,
    async chargeStorage(t, c, w, d, o) {
      if (o?.standing) log.standings++;
      else if (o?.hold) log.holds++;
      else log.charges++;
      const b = o?.standing ? barrier : null;
      if (b) await new Promise<void>((go) => void (b.waiting.push(go), b.waiting.length >= b.n && b.waiting.forEach((f) => f())));
      const answer = await inner.chargeStorage(t, c, w, d, o);
      // Another writer takes the room once the write-back's plan was checked (a hold taken, or where the quotas stand asked), before its first batch.
      const r = o?.standing || o?.hold ? racer : null;
      racer = null;
      if (r) await r();
      const h = o?.hold && (answer as { ok?: boolean }).ok ? holdRacer : null;
      if (h) holdRacer = null;
      if (h) await h();
      return answer;
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
  const reset = () => void ((log.files.length = 0), (log.sync.length = 0), (log.charges = 0), (log.standings = 0), (log.holds = 0));
  const writes = () => log.sync.filter((s) => /\/v1\/sync\/(put|delete|stage|commit)$/.test(s) || /^(PUT|DELETE) \/v1\/sync\/files\//.test(s));
  /** The workspace's files (path → size), as a listing shows them. */
  const files = async () => {
    const r = (await (await req("/v1/workspaces/main/files/?recursive=true")).json()) as { entries: { path: string; type: string; size?: number }[] };
    return new Map(r.entries.filter((e) => e.type === "file").map((e) => [e.path, e.size!]));
  };
  const stored = async () => [...(await files()).values()].reduce((a, b) => a + b, 0);
  const fill = (path: string, bytes: number) => `head -c ${bytes} /dev/zero > ${path}`;
  /** What storage holds of the workspace's tree: every file's and marker's key and etag, and the modes table (execute bits, symlinks). */
  const tree = async () => {
    const got = new Map<string, string>();
    for (let cursor: string | undefined, first = true; first || cursor; first = false) {
      const r = await mem.list({ prefix: "", ...(cursor ? { cursor } : {}) });
      for (const o of r.objects) if (/\/w\/[^/]+\/(f\/|x\/modes\.json$)/.test(o.key)) got.set(o.key, o.etag);
      cursor = r.cursor;
    }
    return got;
  };

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
    expect(writes()).toEqual(["POST /v1/sync/put", "POST /v1/sync/put"]); // the hold of the writes alone (refused), then with the delete credited (refused); the delete batch never went
    expect(out.output).toContain("made\n");
    expect(out.output).toContain(`[not written back: 4 changed files (del.txt, f1, f2, f3). The write-back's ${120 * KiB} bytes of files are more than the ${100 * KiB + 4} the storage quota could take (${100 * KiB} bytes free, plus the 0 bytes of the files it replaces and the 4 bytes of the files it deletes): the storage_bytes quota is ${used + 100 * KiB}, and ${used} are in use`);
    expect(out.output).toContain("Delete what is not needed");
    expect(out.output).toContain("These changes are NOT in the workspace");
    expect(out.data.files_changed).toEqual([]);
    expect(out.data.skipped.map((s: { path: string }) => s.path).sort()).toEqual(["del.txt", "f1", "f2", "f3"]);
    expect((await bash("cat del.txt; ls f1 2>&1")).output).toMatch(/^del\n.*No such file/);
  }, 60_000);

  it("files_per_workspace: 4 new files (one over 1 MiB, written alone) and a delete where 2 fit and the delete frees one: the hold goes first, alone, and nothing is written", async () => {
    await setLimits({ files_per_workspace: 4 });
    const before = await files();
    expect(before.size).toBe(2);
    reset();
    const out = await bash(`rm del.txt && ${fill("big.bin", 1.5 * MiB)} && echo a > a.txt && echo b > b.txt && echo c > c.txt`);
    expect(log.files).toEqual([]);
    expect(await files()).toEqual(before);
    expect(writes()).toEqual(["POST /v1/sync/put", "POST /v1/sync/put"]); // puts of no file, with the plan: the hold of the writes alone, then with the delete credited, both refused
    expect(out.output).toContain("[not written back: 5 changed files (a.txt, b.txt, big.bin, c.txt, del.txt). The write-back's 4 new entries (files, and empty directories: each counts as a file) are more than the 3 this workspace has room for (with the 1 it deletes): the files_per_workspace quota is 4, and 2 are in use");
    expect(out.data.files_changed).toEqual([]);
  }, 60_000);

  it("within the quotas the same write-backs land whole, deletes with them; a write-back of one change asks nothing more of the limits object than before", async () => {
    const used = await stored();
    await setLimits({ storage_bytes: used + 100 * KiB, files_per_workspace: 10 });
    reset();
    let out = await bash(`rm del.txt && for i in 1 2; do ${fill("f$i", 40 * KiB)}; done`);
    expect(out.data.skipped ?? []).toEqual([]);
    expect(writes()).toEqual(["POST /v1/sync/put", "POST /v1/sync/delete", "POST /v1/sync/put"]); // the hold, the delete (applied first), the only batch (releasing the hold)
    expect(log.files[0], log.files.join()).toBe("delete del.txt");
    expect([log.standings, log.holds]).toEqual([0, 1]);
    expect(log.charges).toBe(2); // the delete's give-back into the hold; the batch's two files drawn at once, the hold released with them
    expect([...(await files()).keys()].sort()).toEqual(["f1", "f2", "keep.txt"]);
    // No batch carries the plan alone: two files written at once, as before.
    reset();
    out = await bash(`for i in 1 2; do ${fill("g$i", 10 * KiB)}; done`);
    expect(writes()).toEqual(["POST /v1/sync/put"]);
    expect([log.standings, log.holds, log.charges]).toEqual([1, 0, 1]); // the standing, the batch's two files charged at once
    await bash("rm g1 g2");
    await setLimits({ storage_bytes: used + 4 * MiB, files_per_workspace: 10 });
    reset();
    out = await bash(`rm f1 && ${fill("big.bin", 1.5 * MiB)} && echo a > a.txt`);
    expect(out.data.skipped ?? []).toEqual([]);
    // The hold alone first, the delete, the batch and the large file drawing on it, then the hold released.
    expect(writes()).toEqual(["POST /v1/sync/put", "POST /v1/sync/delete", "POST /v1/sync/put", "PUT /v1/sync/files/big.bin", "POST /v1/sync/put"]);
    expect([...(await files()).keys()].sort()).toEqual(["a.txt", "big.bin", "f2", "keep.txt"]);
    // One change: no plan, the file's own charge (one call to the limits object), as before.
    reset();
    out = await bash("echo one > one.txt");
    expect(out.data.files_changed).toEqual(["one.txt"]);
    expect(writes()).toEqual(["POST /v1/sync/put"]);
    expect([log.standings, log.holds, log.charges]).toEqual([0, 0, 1]);
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

  it("a write-back of two put batches raced by an upload that takes the room once its plan was checked lands whole; the upload is refused", async () => {
    for (const p of (await files()).keys()) if (p !== "keep.txt") await bash(`rm -f ${p}`);
    const used = await stored();
    await setLimits({ storage_bytes: used + 80 * KiB, files_per_workspace: 1000 });
    reset();
    let raced = 0;
    racer = async () => {
      const r = await req("/v1/workspaces/main/files/racer.bin", { method: "PUT", body: new Uint8Array(30 * KiB), headers: { "content-type": "application/octet-stream", "content-length": String(30 * KiB) } });
      raced = r.status;
    };
    // 70 new files of 1 KiB: two put batches (64 files each at most).
    const out = await bash(`mkdir -p r && for i in $(seq 1 70); do ${fill("r/f$i", KiB)}; done`);
    expect(raced).toBe(413);
    expect(out.data.skipped ?? [], out.output.slice(-600)).toEqual([]);
    const now = await files();
    expect([...now.keys()].filter((p) => p.startsWith("r/"))).toHaveLength(70);
    expect(now.has("racer.bin")).toBe(false);
    expect(log.files.filter((f) => f.startsWith("put r/"))).toHaveLength(70);
    expect(writes()).toEqual(["POST /v1/sync/put", "POST /v1/sync/put", "POST /v1/sync/put", "POST /v1/sync/put"]); // the hold, two batches drawing on it, its release
    expect(log.holds).toBe(1);
    expect(await stored()).toBeLessThanOrEqual(used + 80 * KiB);
  }, 60_000);

  it("a write-back that deletes more than it writes next to a full quota lands: its delete goes first, then its writes", async () => {
    await setLimits({ storage_bytes: 100 * MiB, files_per_workspace: 1000 });
    await bash(fill("old.bin", 50 * KiB));
    const used = await stored();
    await setLimits({ storage_bytes: used + 20 * KiB, files_per_workspace: 1000 });
    reset();
    const out = await bash(`rm old.bin && ${fill("n1", 30 * KiB)} && ${fill("n2", 30 * KiB)}`);
    expect(out.data.skipped ?? [], out.output.slice(-600)).toEqual([]);
    expect(log.files[0]).toBe("delete old.bin");
    expect(log.files.slice(1).sort()).toEqual(["put n1", "put n2"]);
    const now = await files();
    expect(now.has("old.bin")).toBe(false);
    expect([now.get("n1"), now.get("n2")]).toEqual([30 * KiB, 30 * KiB]);
    expect(await stored()).toBe(used + 10 * KiB);
    // Past the quota even with its delete: refused whole, the delete not applied either.
    reset();
    const refused = await bash(`rm n1 && ${fill("n3", 60 * KiB)} && ${fill("n4", 1 * KiB)}`);
    expect(log.files).toEqual([]);
    expect(refused.output).toContain("[not written back: 3 changed files (n1, n3, n4)");
    expect((await files()).has("n1")).toBe(true);
  }, 60_000);

  it("a write-back refused whole leaves the markers, execute bits and symlinks as they were, and the output names them as not saved, once", async () => {
    for (const p of (await files()).keys()) if (p !== "keep.txt") await bash(`rm -f ${p}`);
    await setLimits({ storage_bytes: 100 * MiB, files_per_workspace: 1000 });
    await bash("mkdir -p old gone && echo x > run.sh && echo y > bin");
    const used = await stored();
    await setLimits({ storage_bytes: used + 100 * KiB, files_per_workspace: 1000 });
    const before = await tree();
    // gone/ is removed and a file takes its name: that marker's removal goes before the writes, after the hold.
    for (const [cmd, n] of [["", 9], ["rm bin && ", 10]] as const) {
      reset();
      const out = await bash(`${cmd}rmdir old gone && echo g > gone && mkdir new && chmod +x run.sh && ln -s run.sh link && for i in 1 2 3; do ${fill("f$i", 40 * KiB)}; done && echo made`);
      expect(out.output).toContain("made\n");
      expect(await tree()).toEqual(before);
      expect(writes()).toEqual(["POST /v1/sync/put", "POST /v1/sync/put"]); // the holds, refused (first the writes alone, then with the removed markers and the delete credited): no marker removed or made, no modes table written
      expect(log.sync.filter((s) => /mkdir|rmdir|modes/.test(s))).toEqual([]);
      const line = out.output.split("\n").find((l: string) => l.startsWith("[not written back:"));
      expect(line, out.output).toContain(`[not written back: ${n} changes (`);
      expect(out.data.skipped.map((s: { path: string; change?: string }) => `${s.path}${s.change ? ` ${s.change}` : ""}`).sort()).toEqual([...(n === 10 ? ["bin"] : []), "f1", "f2", "f3", "gone", "gone/ dir_deleted", "link symlink", "new/ dir_created", "old/ dir_deleted", "run.sh execute_bit"].sort());
      expect(out.output).toContain("the storage_bytes quota is");
      // Named once, as not saved: no line says they were kept or made.
      expect(out.output).not.toMatch(/empty directories kept|symlinks made|execute bit changed|directories removed/);
      expect([out.data.dirs_created, out.data.dirs_deleted, out.data.links_changed, out.data.modes_changed].map((l) => l ?? [])).toEqual([[], [], [], []]);
      // The sandbox is back to what storage holds: the next command sees the directories, no link, no execute bit.
      expect((await bash("for d in old gone new; do test -d $d && echo dir:$d; done; test -L link || echo nolink; test -x run.sh || echo noexec")).output).toBe("dir:old\ndir:gone\nnolink\nnoexec\n");
    }
    // Within the quotas the same command saves them all; the markers removed (the one a file crosses among them) go after the hold, before the writes, credited in it.
    await setLimits({ storage_bytes: used + 200 * KiB, files_per_workspace: 1000 });
    reset();
    const ok = await bash(`rmdir old gone && echo g > gone && mkdir new && chmod +x run.sh && ln -s run.sh link && for i in 1 2 3; do ${fill("f$i", 40 * KiB)}; done`);
    expect(ok.data.skipped ?? [], ok.output.slice(-600)).toEqual([]);
    const sent = log.sync.filter((s) => !/\/v1\/sync\/(manifest|runs)/.test(s));
    expect([sent[0], ...sent.slice(1, 3).sort(), sent[3]]).toEqual(["POST /v1/sync/put", "DELETE /v1/sync/files/gone/", "DELETE /v1/sync/files/old/", "POST /v1/sync/put"]);
    expect(ok.output).toContain("[empty directories kept: new/]");
    expect(ok.output).toContain("[symlinks made or repointed: link]");
    expect([ok.data.dirs_deleted, ok.data.modes_changed]).toEqual([["gone", "old"], ["run.sh"]]);
  }, 60_000);

  it("a delete that turns out a conflict (the file edited after the hold was taken) next to a full quota: the hold is made whole before any write or refused, and then none of the writes lands", async () => {
    for (const p of (await files()).keys()) if (p !== "keep.txt") await bash(`rm -f ${p}`);
    await setLimits({ storage_bytes: 100 * MiB, files_per_workspace: 1000 });
    await bash(fill("old.bin", 2 * MiB));
    const used = await stored();
    await setLimits({ storage_bytes: used + 2 * MiB, files_per_workspace: 1000 });
    // Right after the hold (3 MiB of writes less the 2 MiB delete: 1 MiB held, 2 MiB awaited of the delete), old.bin is rewritten (same size: no room needed).
    let raced = 0;
    holdRacer = async () => void (raced = (await req("/v1/workspaces/main/files/old.bin", { method: "PUT", body: new Uint8Array(2 * MiB).fill(1), headers: { "content-type": "application/octet-stream", "content-length": String(2 * MiB) } })).status);
    reset();
    const out = await bash(`rm old.bin && ${fill("n1", 1.5 * MiB)} && ${fill("n2", 1.5 * MiB)}`);
    holdRacer = null;
    expect(raced).toBe(200);
    // Before: n1 landed on the hold's 1 MiB and 0.5 MiB of the free room, n2 was refused (a write-back cut partway).
    expect(log.files.filter((f) => f.startsWith("put n")), out.output.slice(-800)).toEqual([]);
    const now = await files();
    expect([now.has("n1"), now.has("n2"), now.get("old.bin")]).toEqual([false, false, 2 * MiB]);
    expect(out.data.conflicts.map((c: { path: string }) => c.path)).toEqual(["old.bin"]);
    expect(out.data.skipped.map((s: { path: string }) => s.path).sort()).toEqual(["n1", "n2"]);
    expect(out.output).toContain("Some of the write-back's deletes did not land (the file changed or was deleted meanwhile), so the room they were to free is not there for its files: the storage_bytes quota is");
    expect(out.output).toContain("None of its files was written; the deletes that landed stay.");
    expect(writes()).toEqual(["POST /v1/sync/put", "POST /v1/sync/put", "POST /v1/sync/delete", "POST /v1/sync/put", "POST /v1/sync/put"]); // the hold of the writes alone (refused), the hold with the delete credited, the delete (a conflict), the fill (refused), the release
    expect(await stored()).toBe(used);
    // With room for what the delete did not free, the same race lands whole: the fill takes it from the free room.
    await setLimits({ storage_bytes: used + 4 * MiB, files_per_workspace: 1000 });
    holdRacer = async () => void (raced = (await req("/v1/workspaces/main/files/old.bin", { method: "PUT", body: new Uint8Array(2 * MiB).fill(2), headers: { "content-type": "application/octet-stream", "content-length": String(2 * MiB) } })).status);
    reset();
    const ok = await bash(`rm old.bin && ${fill("n1", 1.5 * MiB)} && ${fill("n2", 1.5 * MiB)}`);
    holdRacer = null;
    expect(ok.data.skipped ?? [], ok.output.slice(-600)).toEqual([]);
    expect(ok.data.files_changed.sort()).toEqual(["n1", "n2"]);
    expect(await stored()).toBe(used + 3 * MiB);
  }, 60_000);
});
