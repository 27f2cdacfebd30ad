/**
 * What an end the API decides (DELETE .../sandbox) names as lost, through the real app and the real runner (local
 * executor, bubblewrap): only the processes still running at its end, as its runner found them (its report at its
 * end, lib/exec/live/session-runner.ts ended, waited for by the DELETE: coordinator lostAtEnd), not those of its last
 * status report, taken when the last command ended. Before (2026-12-02) a process that had exited since was listed
 * as lost by the DELETE's answer and by the session's next call. GET says when its list was reported (reported_at).
 */
import { afterAll, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import { sandboxApp } from "../../doors/sandbox-app.js";
import { sessionCalls } from "./session-calls.js";

const { tenant, call, close } = sandboxApp({ liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS) });
afterAll(close);

const commands = (body: { processes: { command: string }[] }) => body.processes.map((p) => p.command).sort();

it("DELETE and the next call name only the processes still running at the end, not one that exited after the last report", async () => {
  const t = await tenant("live-end-processes");
  const s1 = sessionCalls(call, t.key, "s1");
  expect(await s1.bash({ command: "sleep 2 & sleep 300 & sleep 0.3; echo up", keep_alive: true })).toContain("up");
  const path = "/v1/workspaces/main/sessions/s1/sandbox";

  const seen = await call(path, {}, t.key);
  const view = (await seen.json()) as { processes: { command: string }[]; reported_at: string };
  expect(commands(view)).toEqual(["sleep 2", "sleep 300"]); // its runner's report when the command ended
  expect(Date.parse(view.reported_at)).toBeLessThanOrEqual(Date.now());

  await new Promise((r) => setTimeout(r, 3500)); // `sleep 2` exits; the runner's held poll (20 s) reports nothing new
  const r = await call(path, { method: "DELETE" }, t.key);
  const ended = (await r.json()) as { processes: { command: string }[]; processes_known?: boolean };
  expect(r.status, JSON.stringify(ended)).toBe(200);
  expect(commands(ended)).toEqual(["sleep 300"]);
  expect(ended.processes_known).toBeUndefined();

  const next = await s1.bash({ command: "echo again", keep_alive: true });
  expect(next).toContain("[live sandbox ended:");
  expect(next).toContain("1 process (sleep 300)");
  expect(next).not.toContain("sleep 2;");
}, 60_000);
