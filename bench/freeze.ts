/**
 * The code under test, frozen: wrangler dev rebuilds and restarts the Worker whenever a source
 * file changes, which mid-bench would mix two versions and kill requests in flight ("Your worker
 * restarted mid-request"). So the bench bundles bench/worker.ts once, exactly as a deploy would
 * (`wrangler deploy --dry-run --outdir`), and serves that bundle with no_bundle = true.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function freezeWorker(config = "bench/wrangler.toml"): { config: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "toolshed-bench-worker-"));
  execFileSync("wrangler", ["deploy", "--dry-run", "--config", config, "--outdir", dir], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  const toml = readFileSync(config, "utf8").replace(/^main = .*$/m, 'main = "worker.js"\nno_bundle = true');
  writeFileSync(join(dir, "wrangler.toml"), toml);
  return { config: join(dir, "wrangler.toml"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
