/**
 * A live command after a tool's edits carries the few small changed files' bytes (docs/live-sessions.md,
 * "The production design"; lib/sync/carried-files.ts): the runner's sync-in writes them from the poll's
 * answer and makes no download request for them. The real app (memory storage, the in-memory
 * coordinator) and the real runner (local executor, bubblewrap) reaching it by fetch; the runner's
 * download requests counted (POST /v1/sync/fetch, GET /v1/sync/files/...). Not timed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import { updateModes } from "../../../../lib/layout/modes.js";
import { sandboxApp, type Tenant } from "../../doors/sandbox-app.js";

/** The runner's download requests, and every sync route it asked. */
const downloads: string[] = [];
const wrap = (f: typeof fetch): typeof fetch =>
  (async (input: string, init: RequestInit = {}) => {
    const path = new URL(String(input), "http://x").pathname;
    if (path === "/v1/sync/fetch" || (path.startsWith("/v1/sync/files/") && (init.method ?? "GET") === "GET")) downloads.push(path);
    return f(input, init);
  }) as typeof fetch;

const { app, call, tenant, storage, close } = sandboxApp({ liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS) }, wrap);
let t: Tenant;

/** A tool's write (the raw files route), any bytes. */
async function put(path: string, body: string | Uint8Array, who = t): Promise<void> {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const r = await app.request(`/v1/workspaces/main/files/${path.split("/").map(encodeURIComponent).join("/")}`, { method: "PUT", headers: { authorization: `Bearer ${who.key}`, "content-length": String(bytes.length) }, body: bytes });
  expect(r.status, await r.clone().text()).toBeLessThan(300);
}

/** A live bash command: its output, and the download requests the runner made for it. */
async function bash(command: string): Promise<{ output: string; downloads: number }> {
  const before = downloads.length;
  const r = await call("/v1/workspaces/main/tools/bash", { method: "POST", headers: { "x-session-id": "s1" }, body: JSON.stringify({ command, keep_alive: true }) }, t.key);
  const body = (await r.json()) as { output: string };
  expect(r.status, JSON.stringify(body)).toBe(200);
  return { output: body.output, downloads: downloads.length - before };
}

const small = (i: number) => `src/m${i}.ts`;

beforeAll(async () => {
  t = await tenant("carry");
  for (let i = 0; i < 40; i++) await put(small(i), `export const v${i} = 0;\n`);
  await put("run.sh", "#!/bin/sh\necho v0\n");
  expect((await bash("chmod +x run.sh && cat src/m0.ts")).output).toContain("[live sandbox started");
  await bash("true"); // the chmod written back: the tree is its view's fixpoint
});
afterAll(async () => {
  await call("/v1/workspaces/main/sessions/s1/sandbox", { method: "DELETE" }, t.key);
  await close();
});

describe("a live command after a tool's edits", () => {
  it("of 1 small file: its bytes come with the command, no download request", async () => {
    await put(small(1), "export const v1 = 1;\n");
    const r = await bash(`cat ${small(1)}`);
    expect(r.output).toBe("export const v1 = 1;\n");
    expect(r.downloads).toBe(0);
  });

  it("of 10 small files: no download request, every file's new bytes in the tree", async () => {
    const edited = Array.from({ length: 10 }, (_, i) => small(i * 4 + 2));
    for (const p of edited) await put(p, `export const edited = "${p}";\n`);
    const r = await bash(`cat ${edited.join(" ")}`);
    expect(r.output).toBe(edited.map((p) => `export const edited = "${p}";\n`).join(""));
    expect(r.downloads).toBe(0);
  });

  it("CRLF, binary bytes, a unicode name, an executable file's new content: exact, no download request", async () => {
    const binary = Uint8Array.from({ length: 256 }, (_, i) => i);
    await put("crlf.txt", "a\r\nb\r\n");
    await put("blob.bin", binary);
    await put("naïve/日本語 ü.txt", "unicode\n");
    await put("run.sh", "#!/bin/sh\necho v1\n");
    const r = await bash("od -An -c crlf.txt | tr -s ' '; sha256sum blob.bin | cut -c1-16; cat 'naïve/日本語 ü.txt'; test -x run.sh && ./run.sh");
    const want = Buffer.from(await crypto.subtle.digest("SHA-256", binary)).toString("hex").slice(0, 16);
    expect(r.output).toBe(` a \\r \\n b \\r \\n\n${want}\nunicode\nv1\n`);
    expect(r.downloads).toBe(0);
  });

  it("of a file past the bound (256 KiB in all): fetched as before, one download request", async () => {
    const big = "x".repeat(300 * 1024);
    await put("big.txt", big);
    const r = await bash("wc -c < big.txt");
    expect(r.output).toBe(`${big.length}\n`);
    expect(r.downloads).toBe(1);
  });

  it("beside a symlink made by a tool (the whole reconcile): the edit is fetched as before, both in the tree", async () => {
    await put(small(3), "export const v3 = 3;\n");
    await updateModes(storage, t.id, "main", { add: [], remove: [], links: { "src/to-m3": "m3.ts" } });
    const r = await bash("readlink src/to-m3; cat src/to-m3");
    expect(r.output).toBe("m3.ts\nexport const v3 = 3;\n");
    expect(r.downloads).toBe(1);
  });

  it("never another tenant's bytes: the same workspace and path edited there is not what this sandbox gets", async () => {
    const other = await tenant("carry-other");
    await put(small(5), "export const theirs = 1;\n", other);
    await put(small(5), "export const mine = 1;\n");
    const r = await bash(`cat ${small(5)}`);
    expect(r.output).toBe("export const mine = 1;\n");
    expect(r.downloads).toBe(0);
  });
});
