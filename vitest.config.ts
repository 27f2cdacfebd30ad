import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { statfsSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { defineConfig } from "vitest/config";

// The workers tests' local R2, KV and Durable Objects live in miniflare's temporary directory
// (os.tmpdir() when the pool starts one). Where /dev/shm is RAM with room to spare and the caller
// set no TMPDIR of their own, it goes there: the local R2's writes ran about 1.6x faster than on
// this machine's disk (copy.test.ts: its tests 30-32 s on disk, 17-21 s there; docs/testing.md).
// The Node tests keep the disk's temporary directory (env below): their sandboxes' trees and
// multi-GB files stay off RAM.
const diskTmp = tmpdir();
const TMPFS_MAGIC = 0x01021994;
function ramTmp(): string | null {
  try {
    const s = statfsSync("/dev/shm");
    return s.type === TMPFS_MAGIC && s.bavail * s.bsize >= 4 * 2 ** 30 ? "/dev/shm" : null;
  } catch {
    return null;
  }
}
const ram = process.env.TMPDIR ? null : ramTmp();
if (ram) process.env.TMPDIR = ram;

// Two test files at a time even on 2 cores (vitest's default there is one): a workers file spends
// ~3 s starting its runtime and importing the app, mostly waiting, so two overlap (the whole suite:
// ~600-720 s with one, 474 s with two, on the 2-core CI machine). The Node files wait far more than
// they compute (sandboxed sleeps, kill checks, servers starting): twice as many of them at a time.
const WORKERS = Math.max(2, availableParallelism() - 1);
const NODE_WORKERS = 2 * WORKERS;

// Two projects: `*.test.ts` runs inside workerd with real (local) R2 and KV;
// `*.node.test.ts` runs in Node (S3 driver against a real S3 server, Lambda entry, bash sandbox).
export default defineConfig({
  test: {
    reporters: ["default", "./test/summary-reporter.ts"],
    maxWorkers: WORKERS,
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { TOOLSHED_ADMIN_TOKEN: "test-admin-token" } },
          }),
        ],
        test: {
          name: "workers",
          // One runtime and one module graph for the files a pool worker runs in turn (vitest's `isolate`;
          // the plugin then reuses its Miniflare): a file no longer starts workerd and imports the app
          // afresh (the whole project 255-526 s, import 42-104 s summed over the files; docs/testing.md).
          // The runtime's local R2 and KV would carry one file's objects into the next: the setup file
          // empties them before every file.
          isolate: false,
          // After the node project's files (groups run in turn, each with one maxWorkers): WORKERS at a time.
          sequence: { groupOrder: 1 },
          setupFiles: ["./test/support/workers-file-setup.ts"],
          include: ["test/**/*.test.ts"],
          exclude: ["test/**/*.node.test.ts"],
          // Tests that write a thousand objects into local R2 take seconds on a busy 2-core machine.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: "node",
          environment: "node",
          // NODE_WORKERS files at a time (4 on 2 cores; docs/testing.md, "Four Node files at a time"). Its
          // own group, run first: a group has one maxWorkers, and the workers files keep WORKERS runtimes.
          sequence: { groupOrder: 0 },
          maxWorkers: NODE_WORKERS,
          include: ["test/**/*.node.test.ts"],
          env: { TMPDIR: diskTmp },
          testTimeout: 30_000,
          hookTimeout: 60_000,
          // Bundles a test builds and imports (the Lambda entry, 9 MB: docs-assets.node.test.ts) load
          // through Node's own import, not vitest's transform (16 s quiet, 72 s on a loaded machine).
          server: { deps: { external: [/toolshed-lambda-docs-/] } },
        },
      },
    ],
  },
});
