/**
 * lib/shared/after-answer.ts in Node: with a waitUntil (as lib/runtime/lambda-stream.ts gives, a set of
 * promises awaited after the answer) the work starts after the handler's answer is returned and a
 * throw is logged, never an unhandled rejection; without one, each `otherwise` does what it says.
 */
import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { afterAnswer, finishAfterAnswer, type WaitUntil } from "../../../lib/shared/after-answer.js";

/** A waitUntil that keeps what it is given (lambda-stream.ts's shape), and a way to wait for all of it. */
function keeper() {
  const kept: Promise<unknown>[] = [];
  const waitUntil: WaitUntil = (p) => void kept.push(p);
  return { waitUntil, kept, settled: () => Promise.all(kept) };
}

const unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => void unhandled.push(e);
beforeEach(() => {
  unhandled.length = 0;
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
  vi.restoreAllMocks();
});
const turn = () => new Promise((r) => setTimeout(r, 10));

describe("afterAnswer with a waitUntil", () => {
  it("registers at once and starts the work only after the handler's response is returned", async () => {
    const k = keeper();
    const events: string[] = [];
    const app = new Hono();
    app.get("/", (c) => {
      void afterAnswer(k.waitUntil, "test work", () => void events.push("work started"), "await");
      expect(k.kept).toHaveLength(1); // registered before the answer: the runtime keeps the request alive for it
      events.push("handler returned");
      return c.text("answered");
    });
    const res = await app.request("/");
    expect(events).toEqual(["handler returned"]);
    expect(await res.text()).toBe("answered");
    await k.settled();
    expect(events).toEqual(["handler returned", "work started"]);
  });

  it("resolves at once whatever `otherwise` says: the answer never waits for the work", async () => {
    for (const otherwise of ["await", "start", "skip"] as const) {
      const k = keeper();
      let ran = false;
      await afterAnswer(k.waitUntil, "test work", () => void (ran = true), otherwise);
      expect(ran).toBe(false);
      await k.settled();
      expect(ran).toBe(true);
    }
  });

  it("logs a throw and settles what waitUntil holds without a rejection (no unhandled rejection)", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const k = keeper();
    void afterAnswer(k.waitUntil, "sync thrower", () => {
      throw new Error("boom now");
    }, "await");
    void afterAnswer(k.waitUntil, "async thrower", () => Promise.reject(new Error("boom later")), "skip");
    await expect(k.settled()).resolves.toBeDefined();
    await turn();
    expect(unhandled).toEqual([]);
    const lines = logged.mock.calls.map((c) => c.join(" "));
    expect(lines).toContain("sync thrower: failed after the answer boom now");
    expect(lines).toContain("async thrower: failed after the answer boom later");
  });
});

describe("afterAnswer without a waitUntil: the caller's `otherwise`", () => {
  it('"await" runs the work now and its promise is the work\'s (a rejection reaches the caller, as inline code)', async () => {
    let ended = false;
    const p = afterAnswer(undefined, "test work", async () => {
      await turn();
      ended = true;
    }, "await");
    expect(ended).toBe(false);
    await p;
    expect(ended).toBe(true);
    await expect(afterAnswer(undefined, "test work", () => Promise.reject(new Error("inline")), "await")).rejects.toThrow("inline");
  });

  it('"start" starts it now without waiting, a failure logged; "skip" does nothing', async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const events: string[] = [];
    await afterAnswer(undefined, "started", async () => {
      events.push("started");
      await turn();
      events.push("ended");
    }, "start");
    expect(events).toEqual(["started"]);
    await afterAnswer(undefined, "skipped", () => void events.push("skipped"), "skip");
    await afterAnswer(undefined, "start failure", () => Promise.reject(new Error("nope")), "start");
    await turn();
    await turn();
    expect(events).toEqual(["started", "ended"]);
    expect(unhandled).toEqual([]);
    expect(logged.mock.calls.map((c) => c.join(" "))).toContain("start failure: failed after the answer nope");
  });
});

describe("finishAfterAnswer", () => {
  it("keeps started work under waitUntil, logs its failure, and leaves no unhandled rejection without one", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const k = keeper();
    finishAfterAnswer(k.waitUntil, "kept failure", Promise.reject(new Error("x")));
    expect(k.kept).toHaveLength(1);
    await k.settled();
    finishAfterAnswer(undefined, "unwatched failure", Promise.reject(new Error("y")));
    await turn();
    expect(unhandled).toEqual([]);
    const lines = logged.mock.calls.map((c) => c.join(" "));
    expect(lines).toContain("kept failure: failed after the answer x");
    expect(lines).toContain("unwatched failure: failed after the answer y");
  });
});
