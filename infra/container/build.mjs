#!/usr/bin/env node
// Bundles the container function for Node 22: dist/container/handler.mjs (the Lambda
// image's handler), dist/container/local-server.mjs (the local Invoke stand-in) and
// dist/container/runner-secret.mjs (the image's entrypoint reads the runner secret with it).
// Usage: node infra/container/build.mjs   (then: node dist/container/local-server.mjs)
import { build } from "esbuild";

const common = {
  bundle: true,
  platform: "node",
  target: "node22",
  format: "esm",
  sourcemap: "linked",
  // Bundled ESM still needs require() for a few CommonJS dependencies.
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  logLevel: "info",
};

await build({ ...common, entryPoints: ["infra/container/handler.ts"], outfile: "dist/container/handler.mjs" });
await build({ ...common, entryPoints: ["infra/container/local-server.ts"], outfile: "dist/container/local-server.mjs" });
// Run by the image's entrypoint with the role's credentials: the runner secret from Secrets Manager into a file.
await build({ ...common, entryPoints: ["infra/container/runner-secret.ts"], outfile: "dist/container/runner-secret.mjs" });
