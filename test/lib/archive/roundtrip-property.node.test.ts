/**
 * What a workspace keeps of a POSIX tree, as a property (issue #26): random trees (files of random
 * and binary bytes, empty files, execute bits, directories and empty ones, symlinks of every kind:
 * relative, nested, to a directory, dangling, absolute, unicode names) made on disk and packed by
 * GNU tar → import → `find -printf` in bash (the real sandbox) → export, compared with the original
 * entry by entry: type, the execute bit (the mode bit git tracks), the link's target, the bytes.
 * Over the memory driver and a real S3 server (s3rver). And over
 * local R2: the app in the Workers runtime (wrangler dev) with the runner behind its Invoke
 * stand-in, as `npm start` runs it (test/infra/worker-bash.node.test.ts).
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../../functions/bash.js";
import { tools as fileTools } from "../../../functions/index.js";
import { localExecutor } from "../../../infra/container/local-executor.js";
import { readTarGz } from "../../support/tar-entries.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { httpRunRecords } from "../../../lib/sync/runs.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { s3Driver } from "../../../lib/storage/drivers/s3.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { startS3Server, type S3Server } from "../../support/s3rver.js";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../../infra/container/local-server.js";
import { freePort, startWorker, type WorkerProcess } from "../../support/wrangler-dev.js";
import { rng } from "../../support/prng.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const SEEDS = [1, 2, 3];


const NAME_PARTS = ["a", "b", "src", "lib", "é", "x y", "data_1", "read-me", "Ünï"];

/** A random tree on disk under `dir`; returns nothing (the tree is read back with tar and find). */
function makeTree(dir: string, seed: number): void {
  const r = rng(seed);
  const dirs = [""];
  const taken = new Set<string>([""]);
  const fresh = (parent: string): string | null => {
    for (let i = 0; i < 10; i++) {
      const name = `${r.pick(NAME_PARTS)}${r.int(10)}`;
      const p = parent ? `${parent}/${name}` : name;
      if (!taken.has(p)) {
        taken.add(p);
        return p;
      }
    }
    return null;
  };
  const files: string[] = [];
  for (let i = 0; i < 30; i++) {
    const parent = r.pick(dirs);
    const p = fresh(parent);
    if (!p) continue;
    const kind = r.int(10);
    if (kind < 3) {
      mkdirSync(join(dir, p));
      dirs.push(p); // some stay empty
    } else if (kind < 8) {
      const size = r.pick([0, 1, 17, 300, 5000]);
      const bytes = Buffer.alloc(size);
      for (let j = 0; j < size; j++) bytes[j] = r.int(256);
      writeFileSync(join(dir, p), bytes);
      chmodSync(join(dir, p), r.int(3) === 0 ? 0o755 : 0o644);
      files.push(p);
    } else {
      const depth = parent === "" ? 0 : parent.split("/").length;
      const up = "../".repeat(depth);
      const targets = [
        ...(files.length ? [`${up}${r.pick(files)}`] : []), // relative, to a file (maybe nested)
        ...(dirs.length > 1 ? [`${up}${r.pick(dirs.slice(1))}`] : []), // to a directory
        "missing/nowhere.txt", // dangling
        "/etc/hostname", // absolute
        "./sibling", // relative, maybe dangling
      ];
      symlinkSync(r.pick(targets), join(dir, p));
    }
  }
}

interface Entry {
  name: string;
  kind: string;
  exec: boolean;
  target: string;
  bytes: string;
}

/** A tar.gz's entries, named without "./", the root left out, sorted: kind, execute bit (files), link target, bytes (hex). */
async function entriesOf(body: ReadableStream<Uint8Array>): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const e of await readTarGz(body)) {
    const name = e.name.replace(/^\.\//, "").replace(/\/$/, "");
    if (name === "" || name === ".") continue;
    out.push({ name, kind: e.kind, exec: e.kind === "file" && ((e.mode ?? 0) & 0o100) !== 0, target: e.linkTarget ?? "", bytes: e.kind === "file" ? Buffer.from(e.bytes).toString("hex") : "" });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** `find -printf` lines (type, execute bit of files, path, target), sorted: on the host for the original, in the sandbox for the workspace. */
const FIND = `find . -mindepth 1 -printf '%y %m %P -> %l\\n' | LC_ALL=C sort`;
const normalizeFind = (text: string) =>
  text
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const m = /^(\S) (\d+) (.*) -> (.*)$/.exec(l)!;
      const exec = m[1] === "f" ? String((parseInt(m[2]!, 8) & 0o100) !== 0) : "";
      return `${m[1]} ${exec} ${m[3]} -> ${m[4]}`;
    })
    .join("\n");

type Req = (path: string, init?: RequestInit) => Response | Promise<Response>;

/** One seed's tree: packed by GNU tar, imported into workspace rt<seed>, listed by `find` in bash, exported; each compared with the original. */
async function roundTrip(req: Req, seed: number): Promise<void> {
  const tree = mkdtempSync(join(tmpdir(), "toolshed-roundtrip-tree-"));
  try {
    makeTree(tree, seed);
    const archive = new Uint8Array(execFileSync("tar", ["-C", tree, "-czf", "-", "."]));
    const original = await entriesOf(new Response(archive).body!);
    const ws = `rt${seed}`;
    const created = await req(`/v1/workspaces?id=${ws}`, { method: "POST", headers: { "content-type": "application/gzip" }, body: archive });
    expect(created.status, await created.clone().text()).toBe(201);
    const report = ((await created.json()) as any).import;
    expect(report.skipped_count, report.message).toBe(0);

    const onHost = normalizeFind(execFileSync("sh", ["-c", FIND], { cwd: tree, encoding: "utf8" }));
    const run = await req(`/v1/workspaces/${ws}/tools/bash`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ command: FIND }) });
    const body = (await run.json()) as any;
    expect(body.data?.exit_code, JSON.stringify(body)).toBe(0);
    expect(normalizeFind(body.data.stdout)).toBe(onHost);

    const exported = await req(`/v1/workspaces/${ws}/export`);
    expect(exported.status).toBe(200);
    expect(await entriesOf(exported.body!)).toEqual(original);
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
}

function suite(name: string, driver: () => StorageDriver) {
  describe(`random trees: import → bash → export (${name})`, () => {
    let app: ReturnType<typeof createApp>;
    let key: string;
    let root: string;
    let executor: ReturnType<typeof localExecutor>;
    const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string> | undefined) } });

    beforeAll(async () => {
      root = mkdtempSync(join(tmpdir(), "toolshed-roundtrip-"));
      chmodSync(root, 0o711);
      const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
      executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
      const storage = driver();
      const deps = { storage, kv: storageKeyValue(storage, "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal" } as AppDeps;
      app = createApp(deps, [...fileTools, bash]);
      const admin = (path: string, body: unknown) => Promise.resolve(app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).then((r) => r.json() as Promise<any>);
      await admin("/v1/admin/tenants", { id: "acme" });
      key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
    });
    afterAll(async () => {
      await executor?.handler.close();
      rmSync(root, { recursive: true, force: true });
    });

    for (const seed of SEEDS) it(`seed ${seed}: the same entries after import, in bash, and after export`, () => roundTrip(req, seed), 60_000);
  });
}

suite("memory", () => memoryDriver());

let server: S3Server | undefined;
beforeAll(async () => {
  server = await startS3Server();
  await server.createBucket("roundtrip");
}, 60_000);
afterAll(async () => {
  await server?.stop();
});
suite("s3 (s3rver)", () => s3Driver({ client: server!.client(), bucket: "roundtrip" }));

describe("random trees: import → bash → export (local R2: wrangler dev and the runner)", () => {
  const RUNNER = "roundtrip-runner-secret-0123456789";
  let w: WorkerProcess | undefined;
  let runner: LocalInvokeServer | undefined;
  let root: string;
  let key: string;
  const req: Req = (path, init = {}) => fetch(`${w!.url}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string> | undefined) } });

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "toolshed-roundtrip-r2-"));
    chmodSync(root, 0o711);
    runner = await startLocalInvokeServer({ root, port: await freePort(), secret: RUNNER });
    const port = await freePort();
    w = await startWorker({ port, vars: { TOOLSHED_SYNC_SECRET: SECRET, TOOLSHED_RUNNER_SECRET: RUNNER, TOOLSHED_RUNNER_URL: runner.url, TOOLSHED_PUBLIC_URL: `http://127.0.0.1:${port}` } });
    const admin = (path: string, body: unknown) => fetch(`${w!.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${w!.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
    await admin("/v1/admin/tenants", { id: "acme" });
    key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
  }, 120_000);
  afterAll(async () => {
    await w?.stop();
    await runner?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  for (const seed of SEEDS) it(`seed ${seed}: the same entries after import, in bash, and after export`, () => roundTrip(req, seed), 60_000);
});
