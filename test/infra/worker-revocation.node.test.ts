/**
 * A key revoked through one Worker, on another (issue #28 §5; docs/tenant-keys.md "How soon a revocation
 * takes effect"): two `wrangler dev` processes (two workerd runtimes, each with its own isolate and key
 * cache) over one local state directory (`--persist-to`: local R2 and KV, which miniflare keeps in
 * SQLite and blob files both processes open), with the real runner. Local KV has no propagation delay,
 * so the bound here is the key cache's 5 s alone; deployed KV adds up to 60 s, which no local test shows.
 * Usage and limits are off (TOOLSHED_BUSINESS_OFF): their Durable Objects would run twice over one
 * SQLite file, which Cloudflare never does (one instance per id). The scenario and the bounds:
 * test/support/revocation-across-instances.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, it } from "vitest";
import { expectDocumentedBounds, revokeAcrossInstances, startWatchedRunner } from "../support/revocation-across-instances.js";
import { freePort, startWorker, type WorkerProcess } from "../support/wrangler-dev.js";
import { RUNNER_SECRET } from "./container/helpers.js";

const ADMIN = `admin-${Math.random().toString(36).slice(2)}`;
const state = mkdtempSync(join(tmpdir(), "toolshed-worker-revocation-state-"));
let runner: Awaited<ReturnType<typeof startWatchedRunner>>;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  runner = await startWatchedRunner();
  const start = async () => {
    const port = await freePort();
    const vars = { TOOLSHED_ADMIN_TOKEN: ADMIN, TOOLSHED_SYNC_SECRET: "worker-revocation-sync-secret-0123", TOOLSHED_RUNNER_SECRET: RUNNER_SECRET, TOOLSHED_RUNNER_URL: runner.url, TOOLSHED_PUBLIC_URL: `http://127.0.0.1:${port}`, TOOLSHED_BUSINESS_OFF: "metering,limits" };
    workers.push(await startWorker({ port, state, vars }));
  };
  // One after the other: started at once over a new directory, one of them exits at start with
  // "database is locked: SQLITE_BUSY" (workerd/util/sqlite.c++, 2 of 2 tries): the first makes the databases, the second opens them.
  await start();
  await start();
}, 240_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await runner?.close();
  rmSync(state, { recursive: true, force: true });
});

it("a key revoked through Worker A: A refuses it at once, B within its key cache's 5 s (local KV: no propagation); on B its wait answers key_gone within 5 s + the key watch's 5 s, its command is killed within 1 s more, its background task within 5 s + 1 s; nothing written back", async () => {
  const [a, b] = workers;
  const t = await revokeAcrossInstances({ a: a!.url, b: b!.url, adminToken: ADMIN, tenant: "revw", invokeAnswers: runner.invokeAnswers });
  console.log(`Workers, revocation across wrangler dev processes (ms from the revocation's start): ${JSON.stringify(t)}`);
  expectDocumentedBounds(t);
}, 180_000);
