/**
 * lib/shared/after-answer.ts in workerd, with the runtime's own ExecutionContext: the work starts
 * only after the handler's answer is returned, waitUntil keeps it (waitOnExecutionContext waits for
 * it), and a throw is logged, not a rejection the runtime sees.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";
import { afterAnswer, finishAfterAnswer, type WaitUntil } from "../../../lib/shared/after-answer.js";

const waitUntilOf = (ctx: ExecutionContext): WaitUntil => (p) => ctx.waitUntil(p);

/** An app whose one route schedules `work` after its answer and answers "answered". */
function appWith(work: () => unknown, events: string[]) {
  const app = new Hono();
  app.get("/", (c) => {
    void afterAnswer(waitUntilOf(c.executionCtx as ExecutionContext), "test work", work, "await");
    events.push("handler returned");
    return c.text("answered");
  });
  return app;
}

afterEach(() => vi.restoreAllMocks());

describe("afterAnswer under workerd's waitUntil", () => {
  it("starts the work only after the handler's response is returned, and waitUntil waits for it", async () => {
    const events: string[] = [];
    let ended = false;
    const app = appWith(async () => {
      events.push("work started");
      await new Promise((r) => setTimeout(r, 5));
      ended = true;
    }, events);
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request("http://x/"), {}, ctx);
    expect(events).toEqual(["handler returned"]); // the answer is in hand; the work has not started
    expect(await res.text()).toBe("answered");
    await waitOnExecutionContext(ctx);
    expect(events).toEqual(["handler returned", "work started"]);
    expect(ended).toBe(true);
  });

  it("logs a throw (sync or async) and settles waitUntil without a rejection", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const app = new Hono();
    app.get("/", (c) => {
      const w = waitUntilOf(c.executionCtx as ExecutionContext);
      void afterAnswer(w, "sync thrower", () => {
        throw new Error("boom now");
      }, "await");
      void afterAnswer(w, "async thrower", async () => {
        throw new Error("boom later");
      }, "await");
      return c.text("answered");
    });
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request("http://x/"), {}, ctx);
    expect(res.status).toBe(200);
    await expect(waitOnExecutionContext(ctx)).resolves.toBeUndefined();
    const lines = logged.mock.calls.map((c) => c.join(" "));
    expect(lines).toContain("sync thrower: failed after the answer boom now");
    expect(lines).toContain("async thrower: failed after the answer boom later");
  });

  it("finishAfterAnswer keeps started work alive until it settles, its failure logged", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    let ended = false;
    const ctx = createExecutionContext();
    finishAfterAnswer(waitUntilOf(ctx), "started work", new Promise((r) => setTimeout(r, 5)).then(() => (ended = true)));
    finishAfterAnswer(waitUntilOf(ctx), "started failure", Promise.reject(new Error("no")));
    await expect(waitOnExecutionContext(ctx)).resolves.toBeUndefined();
    expect(ended).toBe(true);
    expect(logged.mock.calls.map((c) => c.join(" "))).toContain("started failure: failed after the answer no");
  });
});
