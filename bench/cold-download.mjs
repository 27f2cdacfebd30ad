#!/usr/bin/env node
// Bundles bench/cold-download.ts (it imports the project's TypeScript) and runs it. Usage: node bench/cold-download.mjs [--files=10000] [--runs=3] [--floor]
import { build } from "esbuild";
import { spawnSync } from "node:child_process";

const outfile = "dist/bench/cold-download.mjs";
await build({
  entryPoints: ["bench/cold-download.ts"], outfile, bundle: true, platform: "node", target: "node22", format: "esm", logLevel: "warning",
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
});
process.exit(spawnSync(process.execPath, [outfile, ...process.argv.slice(2)], { stdio: "inherit" }).status ?? 1);
