import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Two projects: `*.test.ts` runs inside workerd with real (local) R2 and KV;
// `*.node.test.ts` runs in Node (S3 driver against a real S3 server, Lambda entry, bash sandbox).
export default defineConfig({
  test: {
    reporters: ["default", "./test/summary-reporter.ts"],
    // Two test files at a time even on 2 cores (vitest's default there is one): a workers file
    // spends ~3 s starting its runtime and importing the app, mostly waiting, so two overlap
    // (the whole suite: ~600-720 s with one, 474 s with two, on the 2-core CI machine).
    maxWorkers: Math.max(2, availableParallelism() - 1),
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
          include: ["test/**/*.node.test.ts"],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
