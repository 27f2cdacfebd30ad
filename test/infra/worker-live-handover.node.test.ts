/**
 * A live sandbox's handover at its maximum life (issue #29), shortened for the test
 * (TOOLSHED_LIVE_MAX_LIFE_MS): the real runner behind the local Invoke stand-in ends its invocation
 * by itself, writes back what its background processes wrote, and the session's next call starts a
 * new sandbox, says what went, and keeps the files and the saved working directory.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { LocalInvokeServer } from "../../infra/container/local-server.js";
import { startWorkerWithRunner, type WorkerWithRunner } from "../support/worker-with-runner.js";
import { setupTenant, type WorkerProcess } from "../support/wrangler-dev.js";

let w: WorkerProcess;
let runner: LocalInvokeServer;
let toolshed: WorkerWithRunner;

beforeAll(async () => {
  toolshed = await startWorkerWithRunner("worker-live-handover", { TOOLSHED_LIVE_MAX_LIFE_MS: "12000" });
  ({ worker: w, runner } = toolshed);
}, 120_000);

afterAll(async () => {
  await toolshed?.stop();
});

it("at its maximum life the sandbox hands over: background writes are written back, the next call starts anew and says so; files and the saved cwd stay", async () => {
  const t = await setupTenant(w, "handover");
  const invoked = runner.invocations.length;
  const first = await t.call("bash", { command: "mkdir -p app && cd app && (sleep 2; echo from-background > bg.txt) & sleep 0.1; cd app; echo begun", keep_alive: true, idle_timeout_s: 600 }, "s1");
  expect(first.ok, JSON.stringify(first)).toBe(true);
  expect(first.output).toContain("begun");
  // The sandbox ends by itself at 12 s although its idle timeout is 600 s: GET answers 404 then (polled, no fixed sleep).
  const deadline = Date.now() + 90_000;
  while ((await fetch(`${t.base}/sessions/s1/sandbox`, { headers: { authorization: `Bearer ${t.key}` } })).status !== 404) {
    expect(Date.now()).toBeLessThan(deadline);
    await new Promise((r) => setTimeout(r, 500));
  }
  // What its background process wrote after the last command was written back at its end.
  expect((await t.call("read", { file_path: "app/bg.txt" })).output).toBe("     1\tfrom-background");
  const next = await t.call("bash", { command: "pwd; cat bg.txt", keep_alive: true }, "s1");
  expect(next.ok, JSON.stringify(next)).toBe(true);
  expect(next.output).toMatch(/max(imum)?[ _]life/i);
  expect(next.output).toContain("/workspace/app\nfrom-background");
  // Two invocations: the first sandbox's and the one that took over.
  expect(runner.invocations.slice(invoked).filter((i) => i.type === "Event").length).toBe(2);
}, 180_000);
