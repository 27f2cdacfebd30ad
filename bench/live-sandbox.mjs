#!/usr/bin/env node
// Bundles bench/live-sandbox.ts (it imports the project's TypeScript) and runs it. Usage: node bench/live-sandbox.mjs [files] [runs] [idle]
import { build } from "esbuild";
import { spawnSync } from "node:child_process";

const outfile = "dist/bench/live-sandbox.mjs";
await build({
  entryPoints: ["bench/live-sandbox.ts"], outfile, bundle: true, platform: "node", target: "node22", format: "esm", logLevel: "warning",
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
});
process.exit(spawnSync(process.execPath, [outfile, ...process.argv.slice(2)], { stdio: "inherit" }).status ?? 1);
