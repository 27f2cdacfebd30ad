#!/usr/bin/env node
// Bundles one bench script that imports the project's TypeScript (runner code with Node built-ins and
// CommonJS dependencies) with esbuild, then runs it with the rest of the arguments.
// Usage: node bench/run-bundled.mjs bench/<script>.ts [its arguments]
import { build } from "esbuild";
import { spawnSync } from "node:child_process";
import { basename } from "node:path";

const [entry, ...args] = process.argv.slice(2);
if (!entry?.endsWith(".ts")) {
  console.error("usage: node bench/run-bundled.mjs bench/<script>.ts [arguments]   (e.g. bench/cold-download.ts --runs=1)");
  process.exit(2);
}
const outfile = `dist/bench/${basename(entry, ".ts")}.mjs`;
await build({
  entryPoints: [entry], outfile, bundle: true, platform: "node", target: "node22", format: "esm", logLevel: "warning",
  // dynalite (a local DynamoDB: bench/live-dynamodb.ts) does not bundle (files of mixed module syntax): Node loads it from node_modules.
  external: ["dynalite"],
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
});
process.exit(spawnSync(process.execPath, [outfile, ...args], { stdio: "inherit" }).status ?? 1);
