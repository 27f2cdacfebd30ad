/**
 * Change tools on a known plain record over a version the isolate holds (lib/api/routes/known-workspace.ts
 * knownFiles, lib/workspace/version-cache.ts): the write goes out at once, If-Match that version. A
 * stale version (changed through another isolate, a checkpoint, a raw PUT) never gives a wrong
 * answer: the call runs again on storage; a concurrent writer is refused as before. Two apps over
 * the same R2 and KV stand for two isolates.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import type { StorageDriver } from "../../../../lib/storage/types.js";
import { CLOCK_MARGIN_MS, mayRunAgain, StaleRecord } from "../../../../lib/api/routes/known-workspace.js";
import { ToolError } from "../../../../lib/shared/errors.js";
import { newTenant, testApp, upload, workersCalls, type Tenant } from "../../../helpers.js";
import { rawText } from "../../../functions/file-helpers.js";

type App = ReturnType<typeof testApp>;
/** Waits until a version written now counts as written before the next call (CLOCK_MARGIN_MS). */
const pastMargin = () => new Promise((r) => setTimeout(r, CLOCK_MARGIN_MS + 50));
/** The same tenant and workspace through another isolate (its own caches). */
function through(t: Tenant, app: App): Tenant {
  const req = async (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown, session = "s1") => {
    const res = await req(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
    return { status: res.status, body: (await res.json()) as any };
  };
  return { ...t, app, req, call };
}

/** R2 with the file GETs and HEADs under the files prefix counted. */
function counted() {
  const base = r2Driver(env.FILES);
  const n = { get: 0, head: 0 };
  const storage: StorageDriver = { ...base, get: (k, o) => ((k.includes("/f/") ? n.get++ : 0), base.get(k, o)), head: (k) => ((k.includes("/f/") ? n.head++ : 0), base.head(k)) };
  return { storage, n };
}

describe("change tools over the isolate's version of a file", () => {
  it("a raw PUT through another isolate before the call: the write over the stale version is refused, the call runs again and answers NOT_READ; the other's bytes stand", async () => {
    const t = await newTenant();
    expect((await t.call("write", { file_path: "a.txt", content: "mine\n" })).status).toBe(200);
    await upload(through(t, testApp()), "a.txt", "theirs\n");
    await pastMargin();
    const r = await t.call("write", { file_path: "a.txt", content: "mine again\n" });
    expect(r.body.error?.code, JSON.stringify(r.body)).toBe("NOT_READ");
    expect(await rawText(t, "a.txt")).toBe("theirs\n");
  });

  it("NO_CHANGE from a stale version is not trusted: the call runs again on storage", async () => {
    const t = await newTenant();
    expect((await t.call("write", { file_path: "a.txt", content: "same\n" })).status).toBe(200);
    await upload(through(t, testApp()), "a.txt", "theirs\n");
    // This isolate holds "same\n": from it alone the answer would be NO_CHANGE, and wrong.
    const r = await t.call("write", { file_path: "a.txt", content: "same\n" });
    expect(r.body.error?.code, JSON.stringify(r.body)).toBe("NOT_READ");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    expect((await t.call("write", { file_path: "a.txt", content: "same\n" })).status).toBe(200);
    expect(await rawText(t, "a.txt")).toBe("same\n");
  });

  it("the session wrote a newer version through another isolate: an edit of text only that version has lands (the stale version's NO_MATCH is not the answer)", async () => {
    const t = await newTenant();
    const b = through(t, testApp());
    expect((await t.call("write", { file_path: "a.ts", content: "let v = 1;\n" })).status).toBe(200);
    expect((await b.call("read", { file_path: "a.ts" })).status).toBe(200);
    expect((await b.call("edit", { file_path: "a.ts", old_string: "v = 1", new_string: "v = 2" })).status).toBe(200);
    const r = await t.call("edit", { file_path: "a.ts", old_string: "v = 2", new_string: "v = 3" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await rawText(t, "a.ts")).toBe("let v = 3;\n");
    // And a write over a stale version (b holds "v = 2"; t wrote "v = 3" over 1 s before): refused, run
    // again over the session's own newer version, lands; the same for t's write after b's.
    await pastMargin();
    expect((await b.call("write", { file_path: "a.ts", content: "b's\n" })).status).toBe(200);
    await pastMargin();
    const w = await t.call("write", { file_path: "a.ts", content: "a's\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(await rawText(t, "a.ts")).toBe("a's\n");
    // Within the margin the refusal stands: a version written a moment before the call may be a concurrent call's.
    expect((await b.call("read", { file_path: "a.ts" })).status).toBe(200);
    expect((await b.call("write", { file_path: "a.ts", content: "b's again\n" })).status).toBe(200);
    const soon = await t.call("write", { file_path: "a.ts", content: "a's again\n" });
    expect(soon.body.error?.code, JSON.stringify(soon.body)).toBe("FILE_MODIFIED");
    expect(await rawText(t, "a.ts")).toBe("b's again\n");
  });

  it("20 concurrent edits of the held version: no GET of the file, one wins, the 19 others are FILE_MODIFIED (a writer during the call), the file is the winner's", async () => {
    const { storage, n } = counted();
    const t = await newTenant(testApp({ storage }));
    await upload(t, "c.ts", "export const value = 0;\n");
    expect((await t.call("read", { file_path: "c.ts" })).status).toBe(200);
    n.get = 0;
    n.head = 0;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => t.call("edit", { file_path: "c.ts", old_string: `value = 0`, new_string: `value = ${i + 1}` })));
    const winners = results.flatMap((r, i) => (r.status === 200 ? [i] : []));
    expect(winners.length, JSON.stringify(results.map((r) => r.body.error?.code ?? "ok"))).toBe(1);
    for (const [i, r] of results.entries()) if (i !== winners[0]) expect(r.body.error.code).toBe("FILE_MODIFIED");
    expect(n.get).toBe(0);
    expect(n.head).toBe(19); // each refusal looks once at the version that won
    expect(await rawText(t, "c.ts")).toBe(`export const value = ${winners[0]! + 1};\n`);
  });

  it("a checkpoint through another isolate seals the file into a pack: the write is refused over the plain record, runs again on the layered one, and lands; read and grep see it", async () => {
    const t = await newTenant();
    await upload(t, "src/a.ts", "export const a = 1;\n");
    expect((await t.call("read", { file_path: "src/a.ts" })).status).toBe(200);
    const b = through(t, testApp());
    expect((await b.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "c1" }) })).status).toBe(201);
    const w = await t.call("write", { file_path: "src/a.ts", content: "export const a = 42; // sealed-then-written\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    for (const x of [t, b]) {
      expect((await x.call("read", { file_path: "src/a.ts" })).body.output).toContain("sealed-then-written");
      const g = await x.call("grep", { pattern: "sealed-then-written", output_mode: "files_with_matches" });
      expect(g.body.output).toContain("src/a.ts");
    }
  });

  it("index upkeep after the answer opens the workspace from its record: grep finds the new text in the index", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const { call, settle } = workersCalls(app);
    await upload(t, "n.txt", "nothing yet\n");
    expect((await call(t, "read", { file_path: "n.txt" })).status).toBe(200);
    await settle();
    const w = await call(t, "write", { file_path: "n.txt", content: "zebracorn appears\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    await settle();
    const g = await t.call("grep", { pattern: "zebracorn", output_mode: "content" });
    expect(g.body.output).toContain("zebracorn appears");
    expect(g.body.data.stats?.files_unindexed ?? 0).toBe(0);
  });

  it("undo of a write made over the held version restores the bytes it replaced", async () => {
    const t = await newTenant();
    await upload(t, "u.txt", "before\n");
    expect((await t.call("read", { file_path: "u.txt" })).status).toBe(200);
    const w = await t.call("write", { file_path: "u.txt", content: "after\n" });
    expect(w.status).toBe(200);
    const u = await t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ call_id: w.body.call_id }) });
    expect(u.status, await u.clone().text()).toBe(200);
    expect(await rawText(t, "u.txt")).toBe("before\n");
  });

  it("another tenant's workspace of the same id and path: never answered from this tenant's held version", async () => {
    const a = await newTenant();
    const b = await newTenant(a.app); // same isolate, both have "main"
    await upload(a, "secret.txt", "a's secret\n");
    expect((await a.call("read", { file_path: "secret.txt" })).status).toBe(200);
    const e = await b.call("edit", { file_path: "secret.txt", old_string: "a's secret", new_string: "b's" });
    expect(e.status).toBe(404);
    expect(JSON.stringify(e.body)).not.toContain("a's secret");
    const w = await b.call("write", { file_path: "secret.txt", content: "b's own\n" });
    expect(w.body.data?.created, JSON.stringify(w.body)).toBe(true);
    expect(await rawText(a, "secret.txt")).toBe("a's secret\n");
    expect(await rawText(b, "secret.txt")).toBe("b's own\n");
  });
});

describe("mayRunAgain: the one rule for running a call on a known record again", () => {
  it("never once a write settled the call; after StaleRecord; after a ToolError only when the call used the isolate's version", () => {
    const stale = new StaleRecord("a miss");
    const refusal = new ToolError("NO_MATCH", "x");
    expect(mayRunAgain({ servedCached: false, decided: false }, stale)).toBe(true);
    expect(mayRunAgain({ servedCached: false, decided: false }, refusal)).toBe(false);
    expect(mayRunAgain({ servedCached: true, decided: false }, refusal)).toBe(true);
    expect(mayRunAgain({ servedCached: true, decided: false }, new Error("storage down"))).toBe(false);
    expect(mayRunAgain({ servedCached: true, decided: true }, stale)).toBe(false);
    expect(mayRunAgain({ servedCached: true, decided: true }, refusal)).toBe(false);
  });
});
