/** Shared setup of the container-function tests: a real sandbox over an in-memory workspace. */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { createHandler, type Handler, type HandlerOptions } from "../../../infra/container/handler.js";
import { signEvent, type SignedEvent } from "../../../lib/exec/runner-auth.js";
import { RUN_MARGIN_MS, storageRunRecords } from "../../../lib/sync/run-records.js";
import { handleSync } from "../../../lib/sync/server.js";
import { storageSyncClient } from "../../../lib/sync/storage.js";
import type { ExecEvent, RunRequest, RunResult } from "../../../lib/exec/types.js";
import type { ExecResponse } from "../../../lib/sync/types.js";
import { filesPrefix } from "../../../lib/layout/paths.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../../lib/storage/types.js";

let seq = 0;

/** The runner secret of the container-function tests (the API and the runner share it). */
export const RUNNER_SECRET = "test-runner-secret-0123456789";

/** A handler called as the API calls it: every event signed with RUNNER_SECRET first. */
export type SigningHandler = ((event: ExecEvent, context?: { tenantId?: string }) => Promise<ExecResponse>) & { raw: Handler; close(): Promise<void> };

export function signing(raw: Handler): SigningHandler {
  const call = async (event: ExecEvent, context?: { tenantId?: string }) => raw(await signEvent(RUNNER_SECRET, event), context);
  return Object.assign(call, { raw, close: () => raw.close() });
}

/** An event as sent by someone without the secret (tests of refusals). */
export const unsigned = (event: ExecEvent): SignedEvent => event as SignedEvent;

export function setup(opts: Partial<HandlerOptions> = {}, tenant = "t1", workspace = "w1") {
  const driver = memoryDriver();
  const sync = storageSyncClient(driver, tenant, workspace);
  const root = mkdtempSync(join(tmpdir(), "toolshed-test-"));
  chmodSync(root, 0o711); // the sandbox uid traverses to its tree
  // The run's record in the same storage, as the sync API's /v1/sync/run serves it.
  const runRecords = (r: RunRequest) => storageRunRecords(driver, r.tenant, r.workspace, r.idempotency_key, Date.now() + r.timeout_ms + RUN_MARGIN_MS);
  const base: HandlerOptions = { root, syncClient: (r) => storageSyncClient(driver, r.tenant, r.workspace), runRecords, secret: RUNNER_SECRET, ...opts };
  // One handler for every tenant, as in the local server: the request names the workspace.
  const handler = signing(createHandler(base));
  // Another execution environment: its own root (slots), no memory of this one; the same storage.
  const others: SigningHandler[] = [];
  let envs = 0;
  const freshHandler = (extra: Partial<HandlerOptions> = {}): SigningHandler => {
    const h = signing(createHandler({ ...base, root: `${root}-env${++envs}`, ...extra }));
    others.push(h);
    return h;
  };

  const req = (command: string, extra: Partial<RunRequest> = {}): RunRequest => ({
    version: 1,
    idempotency_key: `k${++seq}-${Date.now()}`,
    tenant,
    workspace,
    command,
    timeout_ms: 20_000,
    sync: { url: "http://127.0.0.1:1", token: "unused-in-process" },
    ...extra,
  });

  const unwrap = <T>(r: ExecResponse): T => {
    if (!r.ok) throw Object.assign(new Error(`${r.error.code}: ${r.error.message}`), { code: r.error.code });
    return r.result as T;
  };

  // Invoked as PER_TENANT Lambda does: the context names the request's tenant.
  const run = async (command: string, extra: Partial<RunRequest> = {}): Promise<RunResult> => {
    const r = req(command, extra);
    return unwrap<RunResult>(await handler(r, { tenantId: r.tenant }));
  };

  const write = async (path: string, text: string) => {
    const r = await sync.put(path, new TextEncoder().encode(text), {});
    if (!r.ok) throw new Error("seed write failed");
    return r.etag;
  };

  const read = async (path: string): Promise<string | null> => {
    const f = await sync.fetch(path);
    return f ? await new Response(f.body).text() : null;
  };

  const paths = async () => (await sync.manifest()).map((e) => e.path).sort();

  const cleanup = async () => {
    await Promise.all([handler, ...others].map((h) => h.close()));
    for (const dir of [root, `${root}-fg`, `${root}-nobwrap`, ...Array.from({ length: envs }, (_, i) => `${root}-env${i + 1}`)]) rmSync(dir, { recursive: true, force: true });
  };

  /** How many fresh handlers were made (the last one's root is `${root}-env${envCount()}`). */
  const envCount = () => envs;
  return { driver, sync, root, handler, freshHandler, envCount, runRecords, req, run, unwrap, write, read, paths, cleanup, tenant, workspace };
}

/**
 * The sync API of a Worker (handleSync) over `driver`, served on 127.0.0.1 for runners that speak HTTP.
 * `answer` may answer a request itself first (null: handleSync answers).
 */
export async function startSyncServer(driver: StorageDriver, secret: string, answer?: (req: Request) => Promise<Response | null>): Promise<{ url: string; requests(): number; close(): void }> {
  let requests = 0;
  const kv = storageKeyValue(memoryDriver(), "kv/");
  const server = createServer(async (req, res) => {
    requests++;
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const request = new Request(`http://127.0.0.1${req.url}`, {
      method: req.method!,
      headers: req.headers as Record<string, string>,
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}),
    } as RequestInit);
    const r = (await answer?.(request)) ?? (await handleSync(request, { driver, kv, secret }));
    res.writeHead(r.status, Object.fromEntries(r.headers));
    if (r.body) for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) res.write(c);
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url, requests: () => requests, close: () => server.close() };
}
