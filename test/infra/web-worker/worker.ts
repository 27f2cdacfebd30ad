/** Tests only: the Workers entry with web_fetch's test-only loopback switch (see wrangler.toml beside it). */
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { fromWorkersEnv, type WorkersEnv } from "../../../lib/runtime/workers.js";
import { checkOutputs } from "../../support/output-check.js";

export default {
  fetch(request: Request, env: WorkersEnv, ctx: ExecutionContext) {
    return checkOutputs(createApp({ ...fromWorkersEnv(env), webFetch: { allowLoopback: true } }, tools), tools).fetch(request, env, ctx);
  },
} satisfies ExportedHandler<WorkersEnv>;
