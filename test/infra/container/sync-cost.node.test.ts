/**
 * The fixed cost of a warm run, and that cutting it gave up no exactness:
 * - the conditional manifest (lib/sync/manifest.ts, lib/sync/view.ts): only buckets that differ from the
 *   runner's view cross the wire, and the view always ends equal to storage's listing;
 * - the runner skips reconcile only when storage is unchanged AND the slot is a fixpoint of it;
 * - walk + pruneSettled give the same tree as pruning every directory;
 * - isValidName's ASCII fast path agrees with normalizePath.
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../support/temp-dirs.js";
import { runCommand, type RunnerDeps } from "../../../infra/container/runner.js";
import { bwrapSandbox } from "../../../infra/container/sandbox.js";
import { prepareStageDir } from "../../../infra/container/stage.js";
import { walk } from "../../../infra/container/walk.js";
import { pruneEmptyDirs, pruneSettled } from "../../../infra/container/tree.js";
import { isValidName } from "../../../infra/container/file-marks.js";
import { TreeCache } from "../../../infra/container/slot-cache.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { FETCH_MAX_FILES, allFrames } from "../../../lib/sync/batch.js";
import { bucketCountFor } from "../../../lib/sync/manifest.js";
import { storageSyncClient } from "../../../lib/sync/storage.js";
import { conditionalManifest, ManifestView } from "../../../lib/sync/view.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { RunRequest, RunResult } from "../../../lib/exec/types.js";
import type { SyncClient, SyncEntry } from "../../../lib/sync/types.js";
import { filesPrefix, normalizePath } from "../../../lib/layout/paths.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { rng } from "../../support/prng.js";

const tmp = tempDirs("sync-cost");


const listing = async (driver: StorageDriver, prefix: string): Promise<Map<string, string>> => {
  const out = new Map<string, string>();
  let cursor: string | undefined;
  do {
    const page = await driver.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) out.set(o.key.slice(prefix.length), o.etag);
    cursor = page.cursor;
  } while (cursor);
  return out;
};
const viewOf = (v: ManifestView) => new Map([...v.values()].map((e) => [e.path, e.etag]));

describe("isValidName", () => {
  const reference = (rel: string) => {
    try {
      return normalizePath(rel) === rel && rel !== "";
    } catch {
      return false;
    }
  };

  it("agrees with normalizePath on 30,000 random paths (ASCII fast path and the rest)", () => {
    const r = rng(7);
    const alphabet = ["a", "b", "Z", "0", "_", "-", "@", "+", "=", ",", " ", ".", ".", "/", "/", "\\", "\u0000", "\u001f", "\u007f", "~", "é", "e\u0301", "\u{1f600}", "\ud800"];
    let disagreements: string[] = [];
    for (let i = 0; i < 30_000; i++) {
      const len = r.int(12) + (r.int(50) === 0 ? 250 + r.int(20) : 0);
      let s = "";
      for (let k = 0; k < len; k++) s += r.pick(alphabet);
      if (isValidName(s) !== reference(s)) disagreements.push(s);
    }
    // Lengths at the limits.
    for (const s of ["a".repeat(255), "a".repeat(256), `${"a".repeat(255)}/${"b".repeat(255)}/${"c".repeat(256)}`, Array.from({ length: 3 }, () => "d".repeat(255)).join("/") + "/x".repeat(6), "x/".repeat(384) + "y"]) {
      if (isValidName(s) !== reference(s)) disagreements.push(s);
    }
    disagreements = disagreements.slice(0, 5);
    expect(disagreements).toEqual([]);
    expect(isValidName("@types/node/index.d.ts")).toBe(true);
    expect(isValidName("a/../b")).toBe(false);
    expect(isValidName("a//b")).toBe(false);
    expect(isValidName(".hidden/x")).toBe(true);
    expect(isValidName("...")).toBe(false);
  });
});

describe("walk + pruneSettled", () => {
  it("leave exactly the tree that pruning every directory leaves", async () => {
    const r = rng(11);
    for (let round = 0; round < 25; round++) {
      const a = tmp("prune-a");
      const b = tmp("prune-b");
      // The same random tree twice: files, empty directories, nested empties, a symlink.
      const names = ["x", "y", "z", "d1", "d2"];
      const files: string[] = [];
      const build = (root: string, depth: number, rel: string, seed: number) => {
        const rr = rng(seed);
        for (let i = 0; i < 2 + rr.int(4); i++) {
          const name = `${rr.pick(names)}${i}`;
          const p = rel ? `${rel}/${name}` : name;
          const kind = depth < 3 ? rr.int(3) : 0;
          if (kind === 0) {
            writeFileSync(join(root, p), p);
            if (root === a) files.push(p);
          } else {
            mkdirSync(join(root, p));
            if (kind === 2 || rr.int(3) > 0) build(root, depth + 1, p, seed * 31 + i);
          }
        }
      };
      const seed = 1000 + round;
      build(a, 0, "", seed);
      build(b, 0, "", seed);
      for (const root of [a, b]) symlinkSync("/etc/passwd", join(root, "link"));
      const removed = files.filter(() => r.int(2) === 0);
      const afterA = await walk(a);
      const afterB = await walk(b);
      for (const root of [a, b]) for (const p of [...removed, "link"]) rmSync(join(root, p), { force: true });
      await pruneEmptyDirs(a, afterA.dirs);
      await pruneSettled(b, afterB, [...removed, "link"]);
      const tree = (root: string): string[] => {
        const out: string[] = [];
        const go = (rel: string) => {
          for (const n of readdirSync(join(root, rel)).sort()) {
            const p = rel ? `${rel}/${n}` : n;
            out.push(lstatSync(join(root, p)).isDirectory() ? `${p}/` : p);
            if (lstatSync(join(root, p)).isDirectory()) go(p);
          }
        };
        go("");
        return out;
      };
      expect(tree(b)).toEqual(tree(a));
      expect([...afterB.links]).toEqual([["link", "/etc/passwd"]]);
    }
  });

  it("counts what each directory holds; an empty tree prunes nothing", async () => {
    const t = tmp("counts");
    mkdirSync(join(t, "a/b/c"), { recursive: true });
    writeFileSync(join(t, "a/f"), "1");
    const w = await walk(t);
    expect(Object.fromEntries(w.counts)).toEqual({ "": 1, a: 2, "a/b": 1, "a/b/c": 0 });
    await pruneSettled(t, w, []);
    expect(existsSync(join(t, "a/b"))).toBe(false);
    expect(existsSync(join(t, "a/f"))).toBe(true);
    await pruneSettled(t, await walk(t), ["a/f"]); // a/f still on disk: a is not empty, stays
    expect(existsSync(join(t, "a"))).toBe(true);
  });
});

describe("conditional manifest", () => {
  const prefix = filesPrefix("acme", "main");

  it("keeps the view equal to storage through random changes, sending only buckets that differ", async () => {
    const driver = memoryDriver();
    const sync = storageSyncClient(driver, "acme", "main");
    const r = rng(3);
    const paths = Array.from({ length: 4000 }, (_, i) => `d${i % 17}/f${i}.txt`);
    for (const p of paths.slice(0, 3000)) await driver.put(prefix + p, p);
    const view = new ManifestView();
    const first = await conditionalManifest(sync, view);
    expect(first).toEqual({ unchanged: false, changed: [...paths.slice(0, 3000)].sort(), received: 3000, modes: { etag: null, exec: [] } });
    for (let round = 0; round < 60; round++) {
      const n = r.int(4); // 0 to 3 changes by "other writers" (a delete of a missing file is none)
      const before = await listing(driver, prefix);
      for (let k = 0; k < n; k++) {
        const p = r.pick(paths);
        if (r.int(3) === 0) await driver.delete(prefix + p);
        else await driver.put(prefix + p, `v${round}`);
      }
      const now = await listing(driver, prefix);
      const touched = new Set([...before.keys(), ...now.keys()].filter((p) => before.get(p) !== now.get(p)));
      const m = await conditionalManifest(sync, view);
      expect(viewOf(view)).toEqual(now);
      expect(m.unchanged).toBe(touched.size === 0);
      // Exactly the paths added, removed or given another etag: what the runner reconciles (infra/container/reconcile.ts, reconcileChanged).
      expect(m.changed ?? []).toEqual([...touched].sort());
      // What crossed the wire: the buckets of the touched paths (~128 entries each), never the whole workspace.
      const perBucket = Math.ceil(Math.max(before.size, now.size) / bucketCountFor(before.size));
      expect(m.received).toBeLessThanOrEqual(touched.size * perBucket * 2);
      if (touched.size > 0) expect(m.received).toBeGreaterThan(0);
    }
  });

  it("a wrong view (any guess) only costs bytes: the result is storage's", async () => {
    const driver = memoryDriver();
    const sync = storageSyncClient(driver, "acme", "main");
    for (let i = 0; i < 300; i++) await driver.put(`${prefix}f${i}`, String(i));
    const truth = await listing(driver, prefix);
    const guesses: SyncEntry[][] = [
      [],
      [...truth].map(([path, etag]) => ({ path, etag: `${etag}x`, size: 1 })), // every etag wrong
      [...truth].slice(0, 150).map(([path, etag]) => ({ path, etag, size: 1 })), // half missing
      [...[...truth].map(([path, etag]) => ({ path, etag, size: 1 })), ...Array.from({ length: 400 }, (_, i) => ({ path: `ghost${i}`, etag: "e", size: 0 }))], // extra files
    ];
    for (const g of guesses) {
      const view = new ManifestView(g);
      await conditionalManifest(sync, view);
      expect(viewOf(view)).toEqual(truth);
    }
  });

  it("over HTTP: one request, a few bytes when unchanged; an older server gets the paged manifest", async () => {
    const driver = memoryDriver();
    for (let i = 0; i < 3000; i++) await driver.put(`${prefix}src/dir${i % 40}/file-${i}.ts`, `x${i}`);
    const secret = "sync-cost-test-secret-0123456789";
    const kv = storageKeyValue(memoryDriver(), "kv/");
    const wire: { method: string; path: string; bytes: number }[] = [];
    const serve = async (req: Request, old: boolean) => {
      const url = new URL(req.url);
      // An API from before the conditional manifest: POST /v1/sync/manifest is no route there.
      if (old && req.method === "POST" && url.pathname === "/v1/sync/manifest") return Response.json({ ok: false, error: { code: "NOT_FOUND" } }, { status: 404 });
      const res = await handleSync(req, { driver, kv, secret, autoSeal: false }); // the 3,000 raw files stay upper objects: the manifest's bytes are what this measures
      const body = await res.arrayBuffer();
      wire.push({ method: req.method, path: url.pathname, bytes: body.byteLength });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    await workspaceRecord(driver, "acme", "main");
    const token = await mintSyncToken(secret, { t: "acme", w: "main", r: "r1" }, 60);
    const client = (old = false) => httpSyncClient({ url: "https://api.example", token, fetch: ((i: RequestInfo | URL, init?: RequestInit) => serve(new Request(i, init), old)) as typeof fetch });

    const view = new ManifestView();
    await conditionalManifest(client(), view);
    expect(view.size).toBe(3000);
    wire.length = 0;
    const warm = await conditionalManifest(client(), view);
    expect(warm).toEqual({ unchanged: true, received: 0, modes: { etag: null, exec: [] } });
    expect(wire.length).toBe(1);
    expect(wire[0]!.bytes).toBeLessThan(1000); // the plain manifest of 3,000 files is ~250 KB
    await driver.put(`${prefix}src/dir3/file-3.ts`, "changed");
    wire.length = 0;
    const one = await conditionalManifest(client(), view);
    expect(one.unchanged).toBe(false);
    expect(one.received).toBeLessThanOrEqual(200);
    expect(wire[0]!.bytes).toBeLessThan(20_000);
    expect(view.get("src/dir3/file-3.ts")?.etag).toBe((await driver.head(`${prefix}src/dir3/file-3.ts`))!.etag);

    // Older server: 404 on POST, then the paged GET; exact all the same.
    await driver.delete(`${prefix}src/dir4/file-4.ts`);
    wire.length = 0;
    const c = client(true);
    const old = await conditionalManifest(c, view);
    expect(old.unchanged).toBe(false);
    expect(viewOf(view)).toEqual(await listing(driver, prefix));
    expect(wire.map((w) => `${w.method} ${w.path}`)).toEqual(["GET /v1/sync/manifest", "GET /v1/sync/manifest", "GET /v1/sync/manifest"]);
    wire.length = 0;
    expect((await conditionalManifest(c, view)).unchanged).toBe(true); // the client remembers: no second POST
    expect(wire.every((w) => w.method === "GET")).toBe(true);
  });

  it("refuses an answer that vouches for entries it also sends, or miscounts", async () => {
    const driver = memoryDriver();
    const real = storageSyncClient(driver, "acme", "main");
    for (let i = 0; i < 10; i++) await driver.put(`${prefix}f${i}`, String(i));
    const view = new ManifestView();
    await conditionalManifest(real, view);
    await driver.put(`${prefix}f1`, "new");
    const lying = (mutate: (a: NonNullable<Awaited<ReturnType<typeof real.manifestSince>>>) => void): typeof real => ({
      ...real,
      async manifestSince(q) {
        const a = (await real.manifestSince(q))!;
        mutate(a);
        return a;
      },
    });
    const snapshot = viewOf(view);
    await expect(conditionalManifest(lying((a) => (a.same = [0])), view)).rejects.toThrow(/bad answer/);
    await expect(conditionalManifest(lying((a) => (a.count += 1)), view)).rejects.toThrow(/bad answer/);
    expect(viewOf(view)).toEqual(snapshot); // a refused answer changes nothing
  });
});

// ---------------------------------------------------------------- the runner

const owner = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : null;

function runner() {
  const root = tmp("runner");
  chmodSync(root, 0o711);
  const deps: RunnerDeps = {
    cache: new TreeCache(join(root, "slots"), owner),
    sandbox: bwrapSandbox({ stateDir: join(root, "sandbox") }),
    owner,
    workDir: join(root, "work"),
    stageDir: join(root, "ws"),
  };
  prepareStageDir(deps.stageDir);
  let seq = 0;
  return (sync: SyncClient, command: string, extra: Partial<RunRequest> = {}): Promise<RunResult> =>
    runCommand({ version: 1, idempotency_key: `k${++seq}`, tenant: "acme", workspace: "main", command, timeout_ms: 20_000, sync: { url: "http://127.0.0.1:1", token: "unused" }, ...extra }, sync, deps);
}

/** The plain SyncClient (no conditional manifest), with counters and a one-shot fetch failure. */
function counted(inner: SyncClient, conditional: boolean) {
  const stats = { fetches: 0, manifests: 0, batches: 0 };
  const vanish = new Set<string>();
  const c: SyncClient & { manifestSince?: unknown } = {
    manifest: () => (stats.manifests++, inner.manifest()),
    fetch: (p) => {
      stats.fetches++;
      if (vanish.delete(p)) return Promise.resolve(null); // as if deleted between listing and fetch
      return inner.fetch(p);
    },
    fetchMany: async (ps) => {
      stats.batches++;
      const got = await inner.fetchMany(ps);
      // A vanishing file is missing from the batch; the runner then asks for it alone (and it is gone).
      return got && (async function* () {
        for (const f of await allFrames(got)) yield vanish.has(f.path) ? { path: f.path, missing: true as const } : f;
      })();
    },
    put: (p, b, o) => inner.put(p, b, o),
    ...(inner.putOutputLog ? { putOutputLog: inner.putOutputLog.bind(inner) } : {}),
    delete: (p, o) => inner.delete(p, o),
    mkdir: (d) => inner.mkdir(d),
    rmdir: (d, o) => inner.rmdir(d, o),
    updateModes: (d) => inner.updateModes(d),
  };
  const im = (inner as { manifestSince?: (q: unknown) => Promise<unknown> }).manifestSince;
  if (conditional && im) c.manifestSince = (q: unknown) => (stats.manifests++, im(q));
  return { client: c as SyncClient, stats, vanish };
}

for (const conditional of [true, false]) {
  describe(`runner, ${conditional ? "conditional" : "plain"} manifest: a warm run sees every change and nothing stale`, () => {
    const prefix = filesPrefix("acme", "main");
    const driver = memoryDriver();
    const { client, stats, vanish } = counted(storageSyncClient(driver, "acme", "main"), conditional);
    const run = runner();
    const put = (p: string, text: string) => driver.put(prefix + p, text);

    it("unchanged: nothing fetched; then a write, a delete and a same-bytes rewrite by other writers", async () => {
      await put("a.txt", "one\n");
      await put("src/b.txt", "two\n");
      await put("src/deep/c.txt", "three\n");
      const cold = await run(client, "cat a.txt src/b.txt");
      expect(cold.stdout).toBe("one\ntwo\n");
      expect(cold.sync.downloaded_files).toBe(3);
      stats.fetches = 0;
      const warm = await run(client, "find . -type f | sort");
      expect(warm.stdout).toBe("./a.txt\n./src/b.txt\n./src/deep/c.txt\n");
      expect(stats.fetches).toBe(0);
      expect(warm.sync.manifest_files).toBe(3);
      await put("a.txt", "ONE\n");
      await driver.delete(`${prefix}src/deep/c.txt`);
      await put("src/b.txt", "two\n"); // same bytes, a new version
      const after = await run(client, "cat a.txt src/b.txt; find . | sort");
      expect(after.stdout).toBe("ONE\ntwo\n.\n./a.txt\n./src\n./src/b.txt\n");
      expect(after.sync.downloaded_files).toBe(2);
    });

    it("a file that vanished during a download is fetched by the next run", async () => {
      await put("flaky.txt", "here\n");
      vanish.add("flaky.txt");
      const r1 = await run(client, "cat flaky.txt 2>&1; true");
      expect(r1.stdout).toContain("No such file");
      const r2 = await run(client, "cat flaky.txt"); // storage unchanged since r1's listing
      expect(r2.stdout).toBe("here\n");
    });

    it("an entry blocked by a path conflict appears once the command removed what blocked it", async () => {
      await put("node", "a file\n");
      await put("node/child.txt", "under it\n");
      const r1 = await run(client, "cat node");
      expect(r1.stdout).toBe("a file\n");
      expect(r1.skipped).toContainEqual(expect.objectContaining({ path: "node/child.txt", reason: "path_conflict" }));
      const r2 = await run(client, "cat node >/dev/null && echo warm"); // storage unchanged: the same skip is reported
      expect(r2.skipped).toEqual(r1.skipped);
      const r3 = await run(client, "rm node");
      expect(r3.files_deleted).toEqual(["node"]);
      const r4 = await run(client, "cat node/child.txt");
      expect(r4.stdout).toBe("under it\n");
      expect(r4.skipped).toEqual([]);
    });

    it("the saved output of a cut run stays out of the tree; a command's own files are there next time", async () => {
      await run(client, "true");
      const r1 = await run(client, "seq 1 20000", { limits: { output_bytes: 1000 } }); // changes no file
      expect(r1.output_file).toBeDefined();
      expect(r1.files_changed).toEqual([]);
      const r2 = await run(client, "ls -A; echo mine > made.txt; cat made.txt");
      expect(r2.stdout).not.toContain(".toolshed");
      expect(r2.stdout).toContain("mine\n");
      const r3 = await run(client, "rm made.txt; echo again > made2.txt");
      expect(r3.files_deleted).toEqual(["made.txt"]);
      await put("other.txt", "by a tool\n");
      const r4 = await run(client, "ls made* other.txt; cat made2.txt other.txt");
      expect(r4.stdout).toBe("made2.txt\nother.txt\nagain\nby a tool\n");
      expect((await listing(driver, prefix)).has("made.txt")).toBe(false);
    });

    it("a killed run's changes are not kept in the slot: the next run sees storage", async () => {
      await put("keep.txt", "stored\n");
      await run(client, "true");
      const t = await run(client, "echo local > keep.txt; echo junk > junk.txt; sleep 5", { timeout_ms: 1500 });
      expect(t.timed_out).toBe(true);
      const r = await run(client, "cat keep.txt; ls junk.txt 2>&1 || true");
      expect(r.stdout).toMatch(/^stored\n.*No such file/s);
    });

    it("entries a file system cannot hold are reported on every warm run", async () => {
      await driver.put(`${prefix}bad\\name.txt`, "x");
      const r1 = await run(client, "true");
      const r2 = await run(client, "true");
      expect(r1.skipped).toContainEqual({ path: "bad\\name.txt", reason: "invalid_name" });
      expect(r2.skipped).toEqual(r1.skipped);
      await driver.delete(`${prefix}bad\\name.txt`);
      expect((await run(client, "true")).skipped).not.toContainEqual({ path: "bad\\name.txt", reason: "invalid_name" });
    });
  });
}

describe("runner: a cold start fetches small files in batches", () => {
  const prefix = filesPrefix("acme", "main");

  it("300 small files and one large: 1 batch request and 1 single fetch, every byte in place", async () => {
    const driver = memoryDriver();
    const { client, stats } = counted(storageSyncClient(driver, "acme", "main"), true);
    for (let i = 0; i < 300; i++) await driver.put(`${prefix}src/m${i % 7}/f${i}.txt`, `file ${i}\n`);
    await driver.put(`${prefix}big.bin`, new Uint8Array(2 * 1024 * 1024 + 3).fill(7));
    const r = await runner()(client, "cat src/m*/f*.txt | wc -l; wc -c < big.bin; cat src/m3/f3.txt");
    expect(r.stdout).toBe(`300\n${2 * 1024 * 1024 + 3}\nfile 3\n`);
    expect(r.sync.downloaded_files).toBe(301);
    expect(stats.batches).toBe(Math.ceil(300 / FETCH_MAX_FILES));
    expect(stats.fetches).toBe(1); // the large file, alone
  });

  it("without batches (an older API) every file comes alone, with the same result", async () => {
    const driver = memoryDriver();
    const { client, stats } = counted(storageSyncClient(driver, "acme", "main"), true);
    const noBatches: SyncClient = { ...client, fetchMany: async () => (stats.batches++, null) };
    for (let i = 0; i < 100; i++) await driver.put(`${prefix}f${i}.txt`, `${i}\n`);
    const r = await runner()(noBatches, "cat f*.txt | wc -l");
    expect(r.stdout).toBe("100\n");
    expect(stats.fetches).toBe(100);
    expect(stats.batches).toBeLessThanOrEqual(4); // one per batch in flight, then no more asking
  });
});
