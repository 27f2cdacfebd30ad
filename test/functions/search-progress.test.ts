/**
 * grep, glob and find report status progress over SSE (lib/contract/progress.ts), through HTTP over local R2:
 * counts that never go backwards nor past their total, all before the one result event; the result
 * is the envelope a plain call answers; a quick call stays quiet at the default interval.
 * The throttle's interval is 0 here (AppDeps.progress), so every change is an event; the
 * throttle itself is test/lib/contract/progress.test.ts.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { fileKey } from "../../lib/layout/paths.js";
import { newTenant, testApp, type Tenant } from "../helpers.js";
import { readEvents, statusEvents } from "../support/sse-events.js";

const sse = { "content-type": "application/json", accept: "text/event-stream", "x-session-id": "s1" };
const FILES = 1100; // two list pages

/** Writes `n` files straight to the bucket (no index): grep reads every file itself. */
async function seed(t: Tenant, n = FILES): Promise<void> {
  const puts = Array.from({ length: n }, (_, i) => () => env.FILES.put(fileKey(t.tenant, t.ws, `src/d${i % 10}/f${String(i).padStart(4, "0")}.ts`), `export const v${i} = ${i};\n${i % 100 === 0 ? "// needle here\n" : ""}`));
  for (let i = 0; i < puts.length; i += 100) await Promise.all(puts.slice(i, i + 100).map((p) => p()));
}

async function stream(t: Tenant, tool: string, args: unknown) {
  const res = await t.req(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: sse, body: JSON.stringify(args) });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const events = await readEvents(res);
  return { status: statusEvents(events), result: events.at(-1)!.data };
}

/** The envelope without usage (its timings differ between two calls). */
const same = (envelope: any) => {
  const { usage: _u, ...rest } = envelope;
  return rest;
};

let t: Tenant;
let quiet: Tenant;
beforeAll(async () => {
  const app = testApp({ progress: { intervalMs: 0 } });
  t = await newTenant(app);
  await seed(t);
  quiet = await newTenant(testApp());
  await seed(quiet, 20);
}, 120_000);

describe("search progress over SSE", () => {
  it("grep: listing, then files searched of the candidates, then the result a plain call answers", async () => {
    // One directory: its 110 files fit one call's storage budget (the whole workspace would need a resume).
    const args = { pattern: "needle", path: "src/d0", output_mode: "count", head_limit: 2000 };
    const { status, result } = await stream(t, "grep", args);
    expect(result).toMatchObject({ ok: true, data: { complete: true, total_found: 11 } });
    const listing = status.filter((s) => s.message.startsWith("listing files"));
    const searched = status.filter((s) => s.message.startsWith("searched"));
    expect(listing.length).toBeGreaterThan(0);
    expect(listing.every((s) => s.done === undefined)).toBe(true);
    expect(status.indexOf(listing.at(-1)!)).toBeLessThan(status.indexOf(searched[0]!));
    expect(searched.length).toBeGreaterThan(10);
    expect(searched.every((s) => s.total === 110)).toBe(true);
    expect(searched.at(-1)).toEqual({ kind: "status", message: "searched 110 of 110 files", done: 110, total: 110 });
    // The same call without the header: the JSON envelope, the same result (the first call indexed the files: stats differ).
    const plain = await t.call("grep", args);
    expect(plain.status).toBe(200);
    const { stats: _a, ...streamed } = result.data;
    const { stats: _b, ...again } = plain.body.data;
    expect(again).toEqual(streamed);
    expect(plain.body.output).toBe(result.output);
  });

  it("glob: entries listed so far after each page, the total at the end", async () => {
    const { status, result } = await stream(t, "glob", { pattern: "src/**/*.ts", limit: 5 });
    expect(result).toMatchObject({ ok: true, data: { total_found: FILES, count: 5 } });
    // One event per list page (the count so far, no total), then the count with its total.
    const pages = status.slice(0, -1);
    expect(pages.length).toBeGreaterThanOrEqual(2);
    expect(pages.every((s, i) => s.total === undefined && s.done! > (pages[i - 1]?.done ?? 0))).toBe(true);
    expect(pages[0]!.done).toBeLessThan(FILES);
    expect(status.at(-1)).toEqual({ kind: "status", message: `listed ${FILES} entries`, done: FILES, total: FILES });
    const plain = await t.call("glob", { pattern: "src/**/*.ts", limit: 5 });
    expect(same(plain.body)).toEqual(same(result));
  });

  it("find: the same listing progress", async () => {
    const { status, result } = await stream(t, "find", { pattern: "f000*", type: "file" });
    expect(result).toMatchObject({ ok: true, data: { total_found: 10 } });
    expect(status.at(-1)).toMatchObject({ done: FILES, total: FILES });
    const plain = await t.call("find", { pattern: "f000*", type: "file" });
    expect(same(plain.body)).toEqual(same(result));
  });

  it("at the default interval (250 ms) a quick call sends no progress, only its result", async () => {
    const { status, result } = await stream(quiet, "glob", { pattern: "src/d1/f0001.ts" });
    expect(result).toMatchObject({ ok: true, data: { total_found: 1 } });
    expect(status).toEqual([]);
  });
});
