/**
 * A real repository after `git gc` (packed refs, empty .git/refs/heads and refs/tags, pack files,
 * executable scripts and hooks) through import → bash (the real bubblewrap sandbox, the local
 * executor reaching the app's /v1/sync) → export: git sees a clean
 * repository in the next call, and the export holds the original tar's entries one for one
 * (kind, path, execute bit, bytes; every directory, the empty ones included).
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";

/** A repository with commits, a branch, tags and an executable script, `git gc`'d; as a tar.gz of its directory. */
function gcRepository(dir: string): Uint8Array {
  const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main", ...args], { cwd: dir, env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" } });
  mkdirSync(join(dir, "bin"), { recursive: true });
  mkdirSync(join(dir, "keep/empty"), { recursive: true });
  git("init", "-q");
  writeFileSync(join(dir, "README.md"), "# repo\n");
  writeFileSync(join(dir, "bin/run.sh"), "#!/bin/sh\necho ran\n");
  chmodSync(join(dir, "bin/run.sh"), 0o755);
  git("add", "-A");
  git("commit", "-qm", "first");
  git("tag", "v1");
  git("tag", "-a", "v1-annotated", "-m", "annotated");
  git("checkout", "-qb", "feature");
  writeFileSync(join(dir, "feature.txt"), "feature\n");
  git("add", "-A");
  git("commit", "-qm", "feature work");
  git("checkout", "-q", "main");
  writeFileSync(join(dir, "README.md"), "# repo\nsecond\n");
  git("commit", "-qam", "second");
  git("gc", "-q", "--prune=now");
  return new Uint8Array(execFileSync("tar", ["-C", dir, "-czf", "-", "."]));
}

interface Entry {
  name: string;
  kind: string;
  exec: boolean;
  bytes: string;
}
/** A tar.gz's entries, named without "./", the root left out, sorted by name: kind, execute bit (files), bytes (hex). */
async function entriesOf(body: ReadableStream<Uint8Array>): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const e of await readTarGz(body)) {
    const name = e.name.replace(/^\.\//, "");
    if (name === "" || name === ".") continue;
    out.push({ name, kind: e.kind, exec: e.kind === "file" && ((e.mode ?? 0) & 0o100) !== 0, bytes: Buffer.from(e.bytes).toString("hex") });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

{
  describe("a git gc'd repository: import → bash → export", () => {
    let app: ReturnType<typeof createApp>;
    let key: string;
    let root: string;
    let repo: string;
    let executor: ReturnType<typeof localExecutor>;
    const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string> | undefined) } });
    const call = async (tool: string, args: unknown) => {
      const r = await req(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(args) });
      return { status: r.status, body: (await r.json()) as any };
    };

    beforeAll(async () => {
      root = mkdtempSync(join(tmpdir(), "toolshed-gitgc-"));
      repo = mkdtempSync(join(tmpdir(), "toolshed-gitgc-repo-"));
      chmodSync(root, 0o711);
      const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
      executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
      const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal" } as AppDeps;
      app = createApp(deps, [...fileTools, bash]);
      const admin = (path: string, body: unknown) => Promise.resolve(app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).then((r) => r.json() as Promise<any>);
      await admin("/v1/admin/tenants", { id: "acme" });
      key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
    });
    afterAll(async () => {
      await executor.handler.close();
      rmSync(root, { recursive: true, force: true });
      rmSync(repo, { recursive: true, force: true });
    });

    it("imports, git status is clean and git log works in the next call, and the export equals the original entry by entry", async () => {
      const archive = gcRepository(repo);
      const original = await entriesOf(new Response(archive).body!);
      // The repository really is gc'd: packed refs, no loose ref, an empty refs/heads.
      expect(original.map((e) => e.name)).toEqual(expect.arrayContaining([".git/packed-refs", ".git/refs/heads/", ".git/refs/tags/", "keep/empty/"]));
      expect(original.some((e) => e.name.startsWith(".git/refs/heads/") && e.kind === "file")).toBe(false);
      expect(original.some((e) => /^\.git\/objects\/pack\/pack-.*\.pack$/.test(e.name))).toBe(true);

      const created = await req("/v1/workspaces?id=main", { method: "POST", headers: { "content-type": "application/gzip" }, body: archive });
      expect(created.status, await created.clone().text()).toBe(201);
      const report = ((await created.json()) as any).import;
      expect(report.skipped_count, report.message).toBe(0);
      expect(report.executable).toBeGreaterThan(0);

      // Byte-identical straight after the import: every entry, .git/index included.
      const exported = async () => {
        const res = await req("/v1/workspaces/main/export");
        expect(res.status).toBe(200);
        return entriesOf(res.body!);
      };
      expect(await exported()).toEqual(original);

      const status = await call("bash", { command: "git status --porcelain=v1 --branch && git log --oneline --all | wc -l && git tag && test -x bin/run.sh && ./bin/run.sh" });
      expect(status.status, JSON.stringify(status.body)).toBe(200);
      expect(status.body.data.exit_code, status.body.output).toBe(0);
      // Clean: only the branch line, no file listed as changed (no "old mode 100755 / new mode 100644").
      expect(status.body.output).toMatch(/^## main\n3\nv1\nv1-annotated\nran\n/);

      const log = await call("bash", { command: "git log --format=%s main feature" });
      expect(log.body.output).toContain("second\nfeature work\nfirst");

      // After the commands, the same again but for .git/index: `git status` rewrote it itself (it refreshes
      // the stat data it caches, and the sandbox's file times are not the original's: times are not kept).
      const withoutIndex = (l: Entry[]) => l.map((e) => (e.name === ".git/index" ? { ...e, bytes: "" } : e));
      expect(withoutIndex(await exported())).toEqual(withoutIndex(original));
    });
  });
}
