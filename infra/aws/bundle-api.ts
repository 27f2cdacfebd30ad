/**
 * Bundles the API entry (infra/lambda.ts: `handler` and `gcHandler`) for Node 22 with esbuild, as
 * infra/container/build.mjs bundles the runner: one ESM file the API and GC functions load.
 */
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Writes <outDir>/index.mjs (+ its source map) and returns outDir, the functions' code asset. */
export async function bundleApi(outDir = join(REPO_ROOT, "dist", "aws", "api")): Promise<string> {
  mkdirSync(outDir, { recursive: true });
  await build({
    entryPoints: [join(REPO_ROOT, "infra", "lambda.ts")],
    outfile: join(outDir, "index.mjs"),
    bundle: true,
    platform: "node",
    target: "node22",
    format: "esm",
    sourcemap: "linked",
    // Bundled ESM still needs require() for a few CommonJS dependencies.
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: "warning",
  });
  return outDir;
}
