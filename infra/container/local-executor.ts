/**
 * The local executor: the real handler in this Node process, bubblewrap as the sandbox.
 * For `npm start` on Node and for tests. (A Worker cannot spawn processes: under
 * wrangler, use lambdaExecutor pointed at the local Invoke stand-in, local-server.ts.)
 * Background tasks take the same way as on Lambda: start hands the run to the handler without
 * waiting (an asynchronous Invoke), and the task reports to its run record in storage.
 * Every event is signed as lambdaExecutor signs it (lib/exec/runner-auth.ts): the handler
 * checks it the same way whatever door it came through. Without a secret given, executor
 * and handler share a random one made here (it never leaves this process).
 */
import { randomBytes } from "node:crypto";
import { unwrapExecResponse } from "../../lib/exec/response.js";
import { signEvent } from "../../lib/exec/runner-auth.js";
import type { ExecEvent, Executor, RunResult } from "../../lib/exec/types.js";
import { createHandler, type Handler, type HandlerOptions } from "./handler.js";

export function localExecutor(opts: HandlerOptions | { handler: Handler; secret: string }): Executor & { handler: Handler } {
  const secret = opts.secret ?? randomBytes(32).toString("base64url");
  const handler = "handler" in opts ? opts.handler : createHandler({ ...opts, secret });
  const invoke = async (event: ExecEvent) => handler(await signEvent(secret, event));
  return {
    handler,
    run: async (req) => unwrapExecResponse<RunResult>(await invoke({ ...req, action: "run" })),
    start: async (req) => {
      // A live sandbox's start (req.live) is no background task: it takes its commands from its session's coordinator.
      const signed = await signEvent(secret, req.live ? { ...req, action: "run" } : { ...req, action: "run", task: true });
      void handler(signed);
    },
  };
}
