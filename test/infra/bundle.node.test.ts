/** `wrangler deploy --dry-run` bundles the Worker offline, within Workers' size limits. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { expect, it } from "vitest";

it("bundles for Workers offline, under the 3 MB (gzip) limit of the free plan", () => {
  const out = mkdtempSync(join(tmpdir(), "toolshed-bundle-"));
  try {
    execFileSync(join(process.cwd(), "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", out], {
      stdio: "pipe",
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", PATH: `${join(process.cwd(), "node_modules/.bin")}:${process.env.PATH}` },
    });
    const bundle = join(out, "cloudflare.js");
    const size = statSync(bundle).size;
    const gzipped = gzipSync(readFileSync(bundle)).length;
    console.log(`Worker bundle: ${(size / 1024).toFixed(0)} KiB, ${(gzipped / 1024).toFixed(0)} KiB gzipped`);
    expect(size).toBeGreaterThan(50_000);
    expect(gzipped).toBeLessThan(3 * 1024 * 1024);
    // Node-only code (the container runner, the S3 test server) never reaches the Worker.
    const text = readFileSync(bundle, "utf8");
    expect(text).not.toContain("bwrap");
    expect(text).not.toContain("s3rver");
    // web_fetch's Node transport (undici, node:dns) is for Lambda; Workers use the runtime's fetch.
    expect(text).not.toContain("guardedLookup");
    expect(text).not.toContain("undici");
    // The HTML converter of web_fetch is in.
    expect(text).toContain("node-html-markdown");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 120_000);
