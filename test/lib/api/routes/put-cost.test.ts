/**
 * What one PUT /v1/workspaces/{ws}/files/{path} costs (issue #31, raw uploads one request per file):
 * every storage operation (test/support/counting-stores.ts) and every call to the tenant's LIMITS
 * object (test/support/counting-limits.ts) is logged, and what runs before the answer is asserted
 * exactly, as round trips. Before 2026-11-29 a create made 7 round trips and ~15 storage operations
 * per file (the search index's upkeep on the path: a GET of the file just written, a LIST and a PUT of
 * segments, merges and locks; the seal's GET of every file again): now 3 round trips (the workspace
 * record; the version there, the place and the links side by side; the PUT), the index after the
 * answer from the bytes in hand, batched, and the seal from the isolate's versions. The place check
 * then asked a HEAD per ancestor: now its parent's LIST answers for all of them (a parent that is a
 * directory has no file above it), so a file costs 2 LISTs and a HEAD however deep it lies, and only
 * the first files of a new directory a HEAD of it and a LIST of the one above (9.09 → ~7.6
 * operations per file in the 300-PUT test below).
 * The guarantees stay: If-Match and create-only are conditions of the PUT itself; a refused write,
 * or one over a quota, leaves storage as it was.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { countingStores, roundTrips, sorted } from "../../../support/counting-stores.js";
import { countingLimits } from "../../../support/counting-limits.js";
import { admin, executionContext, newTenant, testApp, UNGATED } from "../../../helpers.js";
import { searchIndexer } from "../../../../lib/search/indexer.js";

async function setup(opts: { steps?: boolean } = {}) {
  const stores = countingStores(opts);
  const limitCalls: string[] = [];
  const limits = countingLimits(limitCalls);
  // The index holds changes after the answer up to 1 s by default (lib/shared/held-batches.ts): a shorter hold keeps the file fast.
  const app = testApp({ storage: stores.storage, kv: stores.kv, limits: limits.store, listeners: [searchIndexer({ hold: { holdMs: 200 } })] });
  const t = await newTenant(app, UNGATED);
  const { ctx, settle } = executionContext();
  const send = (path: string, body: string, headers: Record<string, string> = {}) => {
    const bytes = new TextEncoder().encode(body);
    return app.request(`/v1/workspaces/${t.ws}/files/${path}`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": String(bytes.length), ...headers }, body: bytes }, env, ctx);
  };
  /** One PUT as on Workers: its operations before the answer (round trips), those after it, and the LIMITS calls before it. */
  const put = async (path: string, body: string, headers: Record<string, string> = {}) => {
    await settle();
    stores.log.length = 0;
    stores.steps.length = 0;
    limitCalls.length = 0;
    limits.gate.closed = true;
    stores.hold();
    const res = await send(path, body, headers);
    const answered = stores.log.length;
    const answer = (await res.json()) as any;
    const onPath = roundTrips(stores, 0, answered);
    const limitsOnPath = limitCalls.filter((n) => !n.startsWith("held:"));
    limits.gate.open();
    stores.release();
    await settle();
    return { status: res.status, answer, onPath, after: sorted(stores.log.slice(answered)), limitsOnPath };
  };
  const text = async (path: string) => (await app.request(`/v1/workspaces/${t.ws}/files/${path}`, { headers: { authorization: `Bearer ${t.key}` } }, env)).text();
  return { app, t, stores, put, send, settle, text };
}

const heads = (n: number) => Array.from({ length: n }, () => "r2.head file");

describe("PUT /files: storage operations and LIMITS calls per file", () => {
  it("a create: three round trips (the record; the version there, the place and the links side by side; the PUT), no LIMITS call; the index after the answer without reading the file back", async () => {
    const { put } = await setup();
    await put("src/deep/dir/a.ts", "export const a = 1;\n"); // the isolate's first: its call pool and storage allowance are taken
    const made = await put("src/deep/dir/b.ts", "export const b = 2;\n");
    expect(made.status).toBe(201);
    expect(made.answer.created).toBe(true);
    // meta.json: the layer pointer (the guard); then the path's HEAD, two LISTs (is the path a directory? is its
    // parent one? then no ancestor is a file, however deep) and the links (modes.json), at once; then the one PUT,
    // with the bytes in hand. (Before: a HEAD per ancestor where the parent's LIST is now, 3 here.)
    expect(made.onPath).toEqual([["r2.get meta.json"], sorted(["r2.get internal:modes.json", "r2.head file", "r2.list file", "r2.list file"]), ["r2.put file"]]);
    expect(made.limitsOnPath).toEqual([]);
    // After the answer: the call's audit entry and the index's segment; no file is read back.
    expect(made.after.filter((o) => o === "r2.put internal:audit")).toEqual(["r2.put internal:audit"]);
    expect(made.after).toContain("r2.put index");
    expect(made.after.filter((o) => o.endsWith(" file"))).toEqual([]);
  }, 180_000); // every storage operation waits for a quiet step (counting-stores.ts): slow on a busy machine

  it("the first file of a new directory: its parent is no directory yet, so it is HEADed beside a LIST of the grandparent, and only where that is none either a HEAD per ancestor above; a file above the path, however high, is NOT_A_DIRECTORY naming the nearest, nothing written", async () => {
    const { put, text, stores, t } = await setup();
    await put("top.ts", "top\n");
    const made = await put("src/new/dir/a.ts", "a\n");
    expect(made.status).toBe(201);
    // src/new/dir is no directory: HEAD it, LIST src/new/ (none either): HEAD src/new and src.
    expect(made.onPath).toEqual([["r2.get meta.json"], sorted(["r2.get internal:modes.json", "r2.head file", "r2.list file", "r2.list file"]), sorted(["r2.head file", "r2.list file"]), heads(2), ["r2.put file"]]);
    // The next new directory beside it: its grandparent src/new is one now, so nothing above is HEADed.
    const beside = await put("src/new/other/b.ts", "b\n");
    expect(beside.status).toBe(201);
    expect(beside.onPath).toEqual([["r2.get meta.json"], sorted(["r2.get internal:modes.json", "r2.head file", "r2.list file", "r2.list file"]), sorted(["r2.head file", "r2.list file"]), ["r2.put file"]]);
    expect((await put("src/file", "f\n")).status).toBe(201);
    const below = await put("src/file/deep/er/b.ts", "b\n");
    expect(below.status).toBe(400);
    expect(below.answer.error.code).toBe("NOT_A_DIRECTORY");
    expect(below.answer.error.details).toMatchObject({ path: "src/file/deep/er/b.ts", file: "src/file" });
    expect(below.onPath).toEqual([["r2.get meta.json"], sorted(["r2.get internal:modes.json", "r2.head file", "r2.list file", "r2.list file"]), sorted(["r2.head file", "r2.list file"]), heads(3)]);
    expect(await text("src/file")).toBe("f\n");
    const listed = await stores.storage.list({ prefix: `t/${t.tenant}/w/${t.ws}/f/src/file/` });
    expect(listed.objects).toEqual([]);
    // Onto a directory: IS_DIRECTORY from the first round trip, no HEAD of the ancestors.
    const onto = await put("src/new/dir", "x\n");
    expect(onto.status).toBe(400);
    expect(onto.answer.error.code).toBe("IS_DIRECTORY");
    expect(onto.onPath).toEqual([["r2.get meta.json"], sorted(["r2.get internal:modes.json", "r2.head file", "r2.list file", "r2.list file"])]);
  }, 180_000);

  it("create-only (If-None-Match: *): no HEAD of the path, the PUT is the condition (then the record again: a seal meanwhile may have put the path in a lower layer); over an existing file ALREADY_EXISTS and the file unchanged", async () => {
    const { put, text } = await setup();
    await put("src/deep/dir/a.ts", "one\n");
    const made = await put("src/deep/dir/c.ts", "three\n", { "if-none-match": "*" });
    expect(made.status).toBe(201);
    // The plain driver's create-only check (lib/layers/plain-driver.ts): the record read again after the PUT.
    expect(made.onPath).toEqual([["r2.get meta.json"], sorted(["r2.get internal:modes.json", "r2.list file", "r2.list file"]), ["r2.put file"], ["r2.get meta.json"]]);
    const again = await put("src/deep/dir/c.ts", "other\n", { "if-none-match": "*" });
    expect(again.status).toBe(409);
    expect(again.answer.error.code).toBe("ALREADY_EXISTS");
    expect(await text("src/deep/dir/c.ts")).toBe("three\n");
  }, 180_000);

  it("a replace If-Match: the version there, then the PUT If-Match it; no place check, no LIMITS call; a stale etag is FILE_MODIFIED and the file unchanged", async () => {
    const { put, text } = await setup();
    const first = await put("src/a.ts", "v1\n");
    await put("src/b.ts", "b\n");
    const replaced = await put("src/a.ts", "v2\n", { "if-match": `"${first.answer.etag}"` });
    expect(replaced.status).toBe(200);
    expect(replaced.onPath).toEqual([["r2.get meta.json"], ["r2.head file"], ["r2.put file"]]);
    expect(replaced.limitsOnPath).toEqual([]); // same size: nothing to charge
    const stale = await put("src/a.ts", "v3\n", { "if-match": `"${first.answer.etag}"` });
    expect(stale.status).toBe(409);
    expect(stale.answer.error.code).toBe("FILE_MODIFIED");
    expect(await text("src/a.ts")).toBe("v2\n");
  }, 180_000);

  it("over the files quota: QUOTA_EXCEEDED before anything is written", async () => {
    const { app, t, put, stores } = await setup();
    // Set before the first write: an isolate's allowance held under an earlier quota may still be spent (lib/limits/storage-allowance.ts).
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { files_per_workspace: 1 }, "PUT")).status).toBe(200);
    expect((await put("a.txt", "a\n")).status).toBe(201);
    const over = await put("b.txt", "b\n");
    expect(over.status).toBe(413);
    expect(over.answer.error.code).toBe("QUOTA_EXCEEDED");
    expect([...over.onPath.flat(), ...over.after].filter((o) => o.startsWith("r2.put") || o.startsWith("r2.delete")).filter((o) => o !== "r2.put internal:audit")).toEqual([]);
    const listed = await stores.storage.list({ prefix: `t/${t.tenant}/w/${t.ws}/f/` });
    expect(listed.objects.map((o) => o.key.split("/f/")[1])).toEqual(["a.txt"]);
  }, 180_000);

  it("300 PUTs, 8 in flight, as on Workers: no file is read back (neither by the index nor by the seal), one index segment per many files", async () => {
    const { send, settle, stores } = await setup({ steps: false });
    stores.log.length = 0;
    const n = 300;
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < n) {
        const i = next++;
        const res = await send(`pkg${i % 10}/src/dir${i % 7}/f${i}.ts`, `export const x${i} = "${"y".repeat(500 + (i % 7) * 300)}";\n`);
        expect(res.status).toBe(201);
        await res.arrayBuffer();
      }
    }));
    await settle();
    const count = (op: string) => stores.log.filter((o) => o === op).length;
    expect(count("r2.put file")).toBe(n);
    // The background seal folded the uploads into packs (it checks on the 1st and every 64th create), from the isolate's versions.
    expect(count("r2.put pack")).toBeGreaterThanOrEqual(1);
    expect(count("r2.get file")).toBe(0);
    // The index: segments of held batches (up to 64 changes each), not one (and its merges) per file.
    expect(count("r2.put index")).toBeLessThanOrEqual(n / 16);
    expect(stores.log.filter((o) => / index$| internal:search$/.test(o)).length).toBeLessThanOrEqual(n / 4);
    expect(count("r2.put internal:audit")).toBe(n);
    // The place check: the path's HEAD and two LISTs per file (is it a directory? is its parent?); a HEAD of the parent
    // and a LIST of the grandparent only for the first file of each of the 70 directories (i and i + 70 share one,
    // never in flight together), and a HEAD of the 2 ancestors above only where pkgN/src was no directory yet either.
    expect(count("r2.head file")).toBeGreaterThanOrEqual(n + 70);
    expect(count("r2.head file")).toBeLessThanOrEqual(n + 70 + 2 * 70);
    expect(count("r2.list file")).toBeLessThanOrEqual(2 * n + 70 + 5);
    // In all 7.65 operations per file here (meta.json, modes.json, HEAD, 2 LISTs, the PUT, the audit entry; the index
    // and the seal ~0.05; the new directories' ~0.5); 9.09 with a HEAD per ancestor (before 2026-11-29 05:00).
    expect(stores.log.length / n).toBeLessThan(7.8);
  }, 600_000);
});
