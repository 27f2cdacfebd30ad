/**
 * The directory markers a command leaves (mkdir -p: infra/container/dirs.ts) against files_per_workspace
 * (issue #28): each new marker is one entry of the write-back's plan, so a write-back they do not fit
 * is refused whole (no marker, no file of the run lands, the output names the quota), and one that
 * fits makes them drawing on its hold; rmdir gives the entry back, and within a write-back that writes
 * or makes something it is credited in the hold, as a deleted file is; the limits object's count stays
 * the recount's. The real runner in its bubblewrap sandbox, the app's /v1/sync over memory storage,
 * limits in memory. Before, `mkdir -p d/{1..50}` beside a full quota wrote 50 markers, counted nowhere.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countStored } from "../../../lib/limits/storage-quota.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { openWorkspace } from "../../../lib/layers/open.js";
import { ManifestCache } from "../../../lib/layers/manifest.js";
import { filesPrefix } from "../../../lib/layout/paths.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { runnerApp } from "../../support/runner-app.js";
import { loggingFileOps } from "../../support/file-ops-log.js";

describe("directory markers of a write-back against files_per_workspace", () => {
  let app: Awaited<ReturnType<typeof runnerApp>>["app"];
  let key: string;
  let admin: Awaited<ReturnType<typeof runnerApp>>["admin"];
  let close: () => Promise<void>;
  const mem = memoryDriver();
  /** Storage writes and deletes of the workspace's files and markers, and the sync requests. */
  const log = { files: [] as string[], sync: [] as string[] };
  const storage = loggingFileOps(mem, log.files);
  const limits = memoryLimits();
  const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s", ...(init.headers as Record<string, string> | undefined) } });
  const bash = async (command: string) => {
    const r = await req("/v1/workspaces/main/tools/bash", { method: "POST", body: JSON.stringify({ command }) });
    const body = (await r.json()) as any;
    expect(r.status, JSON.stringify(body).slice(0, 600)).toBe(200);
    return body;
  };
  const setLimits = async (l: Record<string, number>) => expect((await admin("/v1/admin/tenants/acme/limits", l, "PUT")).limits).toEqual(l);
  const reset = () => void ((log.files.length = 0), (log.sync.length = 0));
  /** Every key and etag of the workspace's files and markers in storage. */
  const tree = async () => {
    const got = new Map<string, string>();
    for (let cursor: string | undefined, first = true; first || cursor; first = false) {
      const r = await mem.list({ prefix: filesPrefix("acme", "main"), ...(cursor ? { cursor } : {}) });
      for (const o of r.objects) got.set(o.key, o.etag);
      cursor = r.cursor;
    }
    return got;
  };
  /** The limits object's count of the workspace's entries, and a listing's (the recount's). */
  const counts = async () => {
    const d = await limits.chargeStorage("acme", { key_id: "" }, "main", { files: 0, bytes: 0 });
    if (!d.ok) throw new Error(JSON.stringify(d));
    const { driver } = await openWorkspace({ storage: mem, manifests: new ManifestCache() }, "acme", "main");
    return { charged: d.files, listed: (await countStored(driver, filesPrefix("acme", "main"))).files };
  };

  beforeAll(async () => {
    ({ app, key, admin, close } = await runnerApp({ storage, deps: { limits }, onSync: (method, path) => void log.sync.push(`${method} ${path}`) }));
    expect((await bash("echo kept > keep.txt")).data.files_changed).toEqual(["keep.txt"]);
  });
  afterAll(() => close());

  it("mkdir -p of 50 directories and a file, 20 entries allowed: refused whole, no marker and no file lands, the model reads which quota", async () => {
    await setLimits({ files_per_workspace: 20 });
    const before = await tree();
    reset();
    const out = await bash("mkdir -p d/{1..50} && echo x > f.txt && echo made");
    expect(out.output).toContain("made\n");
    expect(log.files).toEqual([]);
    expect(await tree()).toEqual(before);
    expect(log.sync.filter((s) => /\/v1\/sync\/files\/.*\/$/.test(s))).toEqual([]); // no marker asked for
    const line = out.output.split("\n").find((l: string) => l.startsWith("[not written back:"));
    expect(line, out.output).toContain("[not written back: 51 changes (");
    expect(out.output).toContain("files_per_workspace quota is 20, and 1 is in use");
    expect(out.data.skipped.filter((s: { change?: string }) => s.change === "dir_created")).toHaveLength(50);
    // Markers alone, no file: refused whole the same way.
    reset();
    const alone = await bash("mkdir -p e/{1..30}");
    expect(log.files).toEqual([]);
    expect(await tree()).toEqual(before);
    expect(alone.output).toContain("files_per_workspace quota is 20");
    expect(await counts()).toEqual({ charged: 1, listed: 1 });
  }, 60_000);

  it("within the quota the markers land on the write-back's hold and count; rmdir gives the entry back; the count is the recount's", async () => {
    await setLimits({ files_per_workspace: 6 });
    reset();
    const out = await bash("mkdir -p e/1 e/2 e/3 && echo y > g.txt");
    expect(out.data.skipped ?? [], out.output.slice(-600)).toEqual([]);
    expect(out.data.dirs_created).toEqual(["e/1", "e/2", "e/3"]);
    // The hold with the plan (1 file and 3 markers), the file's batch, each marker drawn on the hold, then its release.
    const sent = log.sync.filter((s) => !/\/v1\/sync\/(manifest|run)/.test(s));
    expect([...sent.slice(0, 2), ...sent.slice(2, 5).sort(), ...sent.slice(5)]).toEqual(["POST /v1/sync/put", "POST /v1/sync/put", "PUT /v1/sync/files/e/1/", "PUT /v1/sync/files/e/2/", "PUT /v1/sync/files/e/3/", "POST /v1/sync/put"]);
    expect(await counts()).toEqual({ charged: 5, listed: 5 });
    // One entry left: two more directories do not fit, one does.
    expect((await bash("mkdir x y")).output).toContain("files_per_workspace quota is 6, and 5 are in use");
    expect(await counts()).toEqual({ charged: 5, listed: 5 });
    await bash("rmdir e/1");
    expect(await counts()).toEqual({ charged: 4, listed: 4 });
    // One directory alone: no plan and no hold, its own charge refuses it (one request, as before markers counted).
    reset();
    const one = await bash("mkdir z");
    expect(log.sync.filter((s) => !/\/v1\/sync\/(manifest|run)/.test(s))).toEqual(["PUT /v1/sync/files/z/"]);
    expect(one.data.dirs_created).toEqual(["z"]);
    expect(await counts()).toEqual({ charged: 5, listed: 5 });
    expect((await bash("mkdir v")).data.dirs_created).toEqual(["v"]);
    reset();
    const full = await bash("mkdir w");
    expect(log.files).toEqual([]);
    expect(full.output).toContain("The directory w/ needs 1 more entry (an explicit directory counts as a file)");
    expect(full.output).toContain("files_per_workspace quota is 6, and 6 are in use");
    await bash("rmdir z v");
    expect(await counts()).toEqual({ charged: 4, listed: 4 });
    const two = await bash("mkdir x y");
    expect(two.data.dirs_created).toEqual(["x", "y"]);
    expect(await counts()).toEqual({ charged: 6, listed: 6 });
  }, 60_000);

  it("a packed write-back (250 files) whose 3 markers are one entry too many is refused whole by its hold, no pack staged; one more entry and it lands with its markers", async () => {
    const now = (await counts()).charged;
    await setLimits({ files_per_workspace: now + 252 });
    const before = await tree();
    reset();
    const cmd = "mkdir -p p/files q/1 q/2 q/3 && for i in $(seq 1 250); do echo $i > p/files/f$i; done";
    const out = await bash(cmd);
    expect(log.files).toEqual([]);
    expect(await tree()).toEqual(before);
    expect(log.sync.filter((s) => /stage|commit|\/v1\/sync\/files\//.test(s))).toEqual([]);
    expect(out.output).toContain(`files_per_workspace quota is ${now + 252}`);
    await setLimits({ files_per_workspace: now + 253 });
    reset();
    const ok = await bash(cmd);
    expect(ok.data.skipped ?? [], ok.output.slice(-600)).toEqual([]);
    expect(log.sync.filter((s) => /commit/.test(s))).toHaveLength(1); // packed
    expect(ok.data.dirs_created).toEqual(["q/1", "q/2", "q/3"]);
    expect(await counts()).toEqual({ charged: now + 253, listed: now + 253 });
  }, 60_000);

  it("at a full quota, markers removed are credited in the hold like deleted files: rmdir beside mkdir (or a new file) lands when the end state fits, removal first; one entry too many is refused whole", async () => {
    await setLimits({ files_per_workspace: 1_000 });
    expect((await bash("mkdir -p r/a r/b r/c")).data.dirs_created).toEqual(["r/a", "r/b", "r/c"]);
    const full = (await counts()).charged;
    await setLimits({ files_per_workspace: full });
    const calls = () => log.sync.filter((s) => !/\/v1\/sync\/(manifest|run)/.test(s));
    // One removed, two made: one entry past the quota. Nothing lands, the output names the three changes and the quota.
    const before = await tree();
    reset();
    const over = await bash("rmdir r/a && mkdir r/x r/y");
    expect(log.files).toEqual([]);
    expect(await tree()).toEqual(before);
    expect(calls()).toEqual(["POST /v1/sync/put", "POST /v1/sync/put"]); // the holds (nothing credited, then the removal credited), refused
    expect(over.output).toContain("[not written back: 3 changes (");
    expect(over.output).toContain("r/a/ (directory removed)");
    expect(over.output).toContain(`files_per_workspace quota is ${full}, and ${full} are in use`);
    expect(await counts()).toEqual({ charged: full, listed: full });
    // One removed, one made: the hold credits the removal; the removal frees its entry into the hold, then the new marker draws it.
    reset();
    const swap = await bash("rmdir r/a && mkdir r/x");
    expect(swap.data.skipped ?? [], swap.output.slice(-600)).toEqual([]);
    expect(swap.data.dirs_deleted).toEqual(["r/a"]);
    expect(swap.data.dirs_created).toEqual(["r/x"]);
    expect(log.files).toEqual(["delete r/a/", "put r/x/"]);
    expect(calls()).toEqual(["POST /v1/sync/put", "POST /v1/sync/put", "DELETE /v1/sync/files/r/a/", "PUT /v1/sync/files/r/x/", "POST /v1/sync/put"]); // the hold of the new entry alone (refused at the full quota), the hold with the removal credited, ..., the release
    expect(await counts()).toEqual({ charged: full, listed: full });
    // One removed, one file written: the same, the file's batch the last request (it releases the hold).
    reset();
    const file = await bash("rmdir r/b && echo z > r/z.txt");
    expect(file.data.skipped ?? [], file.output.slice(-600)).toEqual([]);
    expect(file.data.files_changed).toEqual(["r/z.txt"]);
    expect(log.files).toEqual(["delete r/b/", "put r/z.txt"]);
    expect(calls()).toEqual(["POST /v1/sync/put", "POST /v1/sync/put", "DELETE /v1/sync/files/r/b/", "POST /v1/sync/put"]); // the hold of the file alone (refused), the hold with the removal credited, the removal, the file's batch
    expect(await counts()).toEqual({ charged: full, listed: full });
  }, 60_000);
});
