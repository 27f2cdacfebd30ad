/**
 * The local executor: the real handler in this Node process, bubblewrap as the sandbox.
 * For `npm start` on Node and for tests. (A Worker cannot spawn processes: under
 * wrangler, use lambdaExecutor pointed at the local Invoke stand-in, local-server.ts.)
 * Background tasks take the same way as on Lambda: start hands the run to the handler without
 * waiting (an asynchronous Invoke), and the task reports to its run record in storage.
 */
import { unwrapExecResponse } from "../../lib/exec/response.js";
import type { Executor, RunResult } from "../../lib/exec/types.js";
import { createHandler, type Handler, type HandlerOptions } from "./handler.js";

export function localExecutor(opts: HandlerOptions | { handler: Handler }): Executor & { handler: Handler } {
  const handler = "handler" in opts ? opts.handler : createHandler(opts);
  return {
    handler,
    run: async (req) => unwrapExecResponse<RunResult>(await handler({ ...req, action: "run" })),
    start: async (req) => {
      void handler({ ...req, action: "run", task: true });
    },
  };
}
