/** backgroundOf (lib/api/routes/common.ts): the runtime's waitUntil, looked up once per request. */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { AppEnv } from "../../../../lib/api/http.js";
import { backgroundOf } from "../../../../lib/api/routes/common.js";

/** An app whose one route asks backgroundOf three times, counting how often Hono's executionCtx is read. */
function probe() {
  const app = new Hono<AppEnv>();
  const state = { asked: 0, seen: [] as unknown[] };
  app.get("/", (c) => {
    const real = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(c), "executionCtx")!;
    Object.defineProperty(c, "executionCtx", { get: () => (state.asked++, real.get!.call(c)) });
    for (let i = 0; i < 3; i++) state.seen.push(backgroundOf(c));
    return c.text("ok");
  });
  return { app, state };
}

describe("backgroundOf", () => {
  it("without an execution context (Lambda): undefined, and Hono's throwing getter is read once", async () => {
    const { app, state } = probe();
    expect((await app.request("/")).status).toBe(200);
    expect(state).toEqual({ asked: 1, seen: [undefined, undefined, undefined] });
  });

  it("with one (Workers): the same function each time, handing promises to waitUntil", async () => {
    const { app, state } = probe();
    const waited: Promise<unknown>[] = [];
    const ctx = { waitUntil: (p: Promise<unknown>) => void waited.push(p), passThroughOnException: () => {}, props: {} } as unknown as ExecutionContext;
    expect((await app.request("/", {}, {}, ctx)).status).toBe(200);
    expect(state.asked).toBe(1);
    expect(typeof state.seen[0]).toBe("function");
    expect(state.seen[1]).toBe(state.seen[0]);
    (state.seen[0] as (p: Promise<unknown>) => void)(Promise.resolve());
    expect(waited).toHaveLength(1);
  });
});
