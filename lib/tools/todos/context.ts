/** The TodoScope of a tool call: this workspace and session, metered into the call's usage. */
import type { ToolContext } from "../../contract/tool.js";
import type { TodoScope } from "./store.js";

export function todoScope(ctx: ToolContext): TodoScope {
  const ws = ctx.ws;
  return {
    driver: ctx.deps.storage,
    tenant: ws.tenant,
    workspace: ws.id,
    session: ctx.session,
    meter: { read: (n) => void (ws.bytesRead += n), written: (n) => void (ws.bytesWritten += n) },
  };
}
