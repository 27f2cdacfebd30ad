/**
 * A runner that speaks the real runner protocol to the app in-process (workerd tests): what
 * infra/container/runner.ts does around a command, without a sandbox. Each run claims itself
 * through the sync API (infra/container/run-once.ts runOnce over httpRunRecords), its claim carried
 * by the conditional manifest's request (lib/sync/view.ts, as runner.ts does), then "runs" the
 * command (the answer of `answer`, no process) and stores its result. Every request it makes into
 * the app is logged as "METHOD /path"; `ran` counts the commands that ran (a retried invocation
 * that found the claim does not add one; `retryEach` makes every run such a retry).
 */
import { env } from "cloudflare:workers";
import { runOnce } from "../../infra/container/run-once.js";
import type { OutputCollector } from "../../infra/container/output.js";
import { unwrapExecResponse } from "../../lib/exec/response.js";
import type { Executor, RunRequest, RunResult } from "../../lib/exec/types.js";
import { httpSyncClient } from "../../lib/sync/http.js";
import { runIdFor } from "../../lib/sync/run-records.js";
import { httpRunRecords } from "../../lib/sync/runs.js";
import { ManifestView, conditionalManifest } from "../../lib/sync/view.js";
import { ToolError } from "../../lib/shared/errors.js";

interface Requester {
  request(path: string, init: RequestInit, env: unknown, ctx?: ExecutionContext): Response | Promise<Response>;
}

/** What `node -v` answers: its output, no file changed, the shell back in the root. */
export function nodeVersion(req: RunRequest): RunResult {
  return {
    run_id: "", stdout: "v20.0.0\n", stderr: "", output: "v20.0.0\n", exit_code: 0, duration_ms: 5, timed_out: false, killed: false, truncated: false,
    files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [],
    sync: { cache: "cold", manifest_files: 0, downloaded_files: 0, downloaded_bytes: 0, uploaded_files: 0, uploaded_bytes: 0, deleted_files: 0, sync_in_ms: 0, sync_out_ms: 0 },
    ...(req.shell ? { shell: { state: { cwd: "" }, notes: [] } } : {}),
  };
}

export function protocolRunner(answer: (req: RunRequest) => RunResult = nodeVersion) {
  let app: Requester | undefined;
  let ctx: ExecutionContext | undefined;
  const requests: string[] = [];
  const state = { ran: 0, retryEach: false };
  const fetchInto = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    requests.push(`${init?.method ?? "GET"} ${url.pathname}`);
    return app!.request(url.pathname + url.search, init ?? {}, env, ctx);
  }) as typeof fetch;
  const executor: Executor = {
    async run(req) {
      const access = { url: req.sync.url, token: req.sync.token, fetch: fetchInto };
      const records = httpRunRecords(access);
      const sync = httpSyncClient(access);
      const runId = await runIdFor(req.tenant, req.workspace, req.idempotency_key);
      const attempt = () =>
        runOnce(runId, false, records, async (hooks) => {
          await conditionalManifest(sync, new ManifestView(), null, undefined, hooks.claim); // carrying the claim, as runner.ts
          if (hooks.claimed && !(await hooks.claimed())) throw new ToolError("CONFLICT", "Another attempt of this call claimed the run.");
          hooks.onStart?.({ take: () => "" } as unknown as OutputCollector);
          state.ran++;
          return { ...answer(req), run_id: runId };
        }, { claimWaitMs: 2000 });
      // retryEach: the first attempt's answer is lost on its way back, and the invocation is sent again (an SDK retry).
      if (state.retryEach) await attempt();
      return unwrapExecResponse<RunResult>(await attempt());
    },
    start: async () => {
      throw new ToolError("UNAVAILABLE", "the protocol runner runs foreground commands only");
    },
  };
  return {
    executor,
    requests,
    get ran() {
      return state.ran;
    },
    /** Each run is invoked twice, the first answer dropped (an SDK retry after a lost answer). */
    set retryEach(on: boolean) {
      state.retryEach = on;
    },
    /** The app the runner calls back into (the same one), with the execution context its requests run in. */
    attach(a: Requester, c?: ExecutionContext) {
      app = a;
      ctx = c;
    },
  };
}
