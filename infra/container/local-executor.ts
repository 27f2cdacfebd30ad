/**
 * The local executor: the real handler in this Node process, bubblewrap as the sandbox.
 * For `npm start` on Node and for tests. (A Worker cannot spawn processes: under
 * wrangler, use lambdaExecutor pointed at the local Invoke stand-in, local-server.ts.)
 */
import { unwrapExecResponse } from "../../lib/exec/response.js";
import type { Executor, RunResult, TaskPoll } from "../../lib/exec/types.js";
import { createHandler, type Handler, type HandlerOptions } from "./handler.js";

export function localExecutor(opts: HandlerOptions | { handler: Handler }): Executor & { handler: Handler } {
  const handler = "handler" in opts ? opts.handler : createHandler({ background: true, ...opts });
  return {
    handler,
    run: async (req) => unwrapExecResponse<RunResult>(await handler({ ...req, action: "run" })),
    start: async (req) => unwrapExecResponse<{ task_id: string }>(await handler({ ...req, action: "start" })),
    poll: async (ref, o) => unwrapExecResponse<TaskPoll>(await handler({ action: "poll", tenant: ref.tenant, task_id: ref.task_id, ...(o?.wait_ms ? { wait_ms: o.wait_ms } : {}) })),
    kill: async (ref) => unwrapExecResponse<{ status: "killed" | "already_completed" }>(await handler({ action: "kill", tenant: ref.tenant, task_id: ref.task_id })),
  };
}
