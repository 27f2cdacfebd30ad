/** Live-session tests: starting live sandboxes on a test handler (setup()), as the API's Event invocation does. */
import type { RunRequest } from "../../../lib/exec/types.js";
import type { LiveEnded, LiveSpec } from "../../../lib/sync/live-types.js";
import type { ExecResponse } from "../../../lib/sync/types.js";
import type { setup } from "./helpers.js";
import { QueueChannel } from "./live-helpers.js";

/**
 * Starts live sandboxes on the handler of `t`, a setup() whose liveChannel is
 * `(req) => channels.get(req.live!.generation)!`. Each start's `ended` resolves with its LiveEnded
 * (rejects with the refusal); `cmd` runs a command in it, `end` ends it as DELETE does.
 */
export function liveStarter(t: ReturnType<typeof setup>, channels: Map<string, QueueChannel>, prefix = "g") {
  let gen = 0;
  return (live: Partial<LiveSpec> = {}, extra: Partial<RunRequest> = {}) => {
    const generation = `${prefix}${++gen}`;
    const channel = new QueueChannel();
    channels.set(generation, channel);
    const event = t.req("", { live: { generation, idle_ms: 60_000, max_life_ms: 120_000, ...live }, ...extra });
    const ended = t.handler(event, { tenantId: event.tenant }).then((r: ExecResponse) => {
      if (!r.ok) throw Object.assign(new Error(`${r.error.code}: ${r.error.message}`), { error: r.error });
      return r.result as LiveEnded;
    });
    const cmd = (command: string, x: Partial<RunRequest> = {}) => channel.run(t.req(command, x));
    const end = () => (channel.push({ end: "deleted" }), ended);
    return { generation, channel, ended, cmd, end };
  };
}
