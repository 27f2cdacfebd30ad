/**
 * The live runner's requests per command, counted (docs/live-sessions.md, "The production design"):
 * the real app with the in-memory coordinator and the real runner (local executor, bubblewrap)
 * reaching it by fetch. A command's answer is also the runner's next poll (LiveResultPost.poll): one
 * request per command, where a runner that polls after its answer makes two. Against an API that
 * predates it (one that answers a result 204 whatever it carries: here the app with `poll` taken off
 * the body) the runner polls after each answer, and the session works as before.
 */
import { afterAll, describe, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import { sandboxApp } from "../../doors/sandbox-app.js";
import { until } from "../../../infra/container/live-helpers.js";

/** The runner's live requests (their route), and how many are open now. */
function counted(old: boolean) {
  const routes: string[] = [];
  let open = 0;
  const wrap = (f: typeof fetch): typeof fetch =>
    (async (input: string, init: RequestInit) => {
      const route = /\/v1\/sync\/live\/(\w+)$/.exec(String(input))?.[1];
      if (!route) return f(input, init);
      routes.push(route);
      open++;
      try {
        // An API before LiveResultPost.poll: the field is not read.
        const body = old && route === "result" ? JSON.stringify({ ...JSON.parse(String(init.body)), poll: undefined }) : init.body;
        return await f(input, { ...init, body });
      } finally {
        open--;
      }
    }) as typeof fetch;
  return { routes, wrap, open: () => open };
}

for (const old of [false, true]) {
  const runner = counted(old);
  const { call, tenant, close } = sandboxApp({ liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS) }, runner.wrap);
  afterAll(close);

  describe(old ? "against an API that answers a result 204 whatever it carries" : "against this API", () => {
    it(old ? "the runner polls after each answer: two requests per command; the session's shell and files as ever" : "one request per command: the answer is the runner's next poll", async () => {
      const t = await tenant(old ? "old-api" : "new-api");
      const bash = async (command: string) => {
        const r = await call("/v1/workspaces/main/tools/bash", { method: "POST", headers: { "x-session-id": "s1" }, body: JSON.stringify({ command, keep_alive: true }) }, t.key);
        const body = (await r.json()) as { output: string };
        expect(r.status, JSON.stringify(body)).toBe(200);
        return body.output;
      };
      expect(await bash("export N=0")).toContain("[live sandbox started");
      /** The runner is back to waiting: one request open (a poll, or an answer that is one), none about to be sent. */
      const settled = async () => {
        await until(() => runner.open() === 1, "the runner's poll");
        await new Promise((r) => setTimeout(r, 100));
        expect(runner.open()).toBe(1);
        return runner.routes.length;
      };
      const before = await settled();
      for (let i = 1; i <= 5; i++) expect(await bash(`N=$((N + 1)); echo $N > n.txt; echo $N`)).toBe(`${i}\n`);
      const requests = runner.routes.slice(before, await settled());
      expect(requests).toEqual(old ? Array(5).fill(["result", "next"]).flat() : Array(5).fill("result"));
      expect(await bash("cat n.txt")).toBe("5\n");
      const end = await call("/v1/workspaces/main/sessions/s1/sandbox", { method: "DELETE" }, t.key);
      expect(end.status).toBe(200);
      await until(() => runner.routes.at(-1) === "ended", "the runner's end");
    }, 60_000);
  });
}
