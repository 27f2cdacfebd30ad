/**
 * What one PUT /v1/workspaces/{ws}/files/{path} costs (issue #31, raw uploads one request per file):
 * every storage operation (test/support/counting-stores.ts) and every call to the tenant's LIMITS
 * object (test/support/counting-limits.ts) is logged, and what runs before the answer is asserted
 * exactly, as round trips. Before 2026-11-29 a create made 7 round trips and ~15 storage operations
 * per file (the search index's upkeep on the path: a GET of the file just written, a LIST and a PUT of
 * segments, merges and locks; the seal's GET of every file again): now 3 round trips (the workspace
 * record; the version there, the place and the links side by side; the PUT), the index after the
 * answer from the bytes in hand, batched, and the seal from the isolate's versions.
 * The guarantees stay: If-Match and create-only are conditions of the PUT itself; a refused write,
 * or one over a quota, leaves storage as it was.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { billed, countingStores, roundTrips, sorted } from "../../../support/counting-stores.js";
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
    // The API key's resolution (kv.get apikey) is cached per isolate for 5 s (lib/api/auth/keys.ts): a call after a slow
    // one (a loaded machine) resolves it again. Not a PUT's cost: left out, so the counts below do not fail on the clock.
    const onPath = roundTrips(stores, 0, answered)
      .map((step) => step.filter((o) => o !== "kv.get apikey"))
      .filter((step) => step.length > 0);
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
    // meta.json: the layer pointer (the guard); then the path's HEAD, its 3 ancestors' HEADs, the directory LIST
    // (is the path a directory?) and the links (modes.json), at once; then the one PUT, with the bytes in hand.
    expect(made.onPath).toEqual([["r2.get meta.json"], sorted(["r2.get internal:modes.json", ...heads(4), "r2.list file"]), ["r2.put file"]]);
    // Its price on the path (class A: the LIST and the PUT; class B: the GETs and HEADs): a change that cuts
    // operations by trading HEADs for LISTs makes it dearer, and must change this line knowingly.
    expect(billed(made.onPath.flat())).toEqual({ classA: 2, classB: 6, kvRead: 0, kvWrite: 0, perMillion: 11.16 });
    expect(made.limitsOnPath).toEqual([]);
    // After the answer: the call's audit entry and the index's segment; no file is read back.
    expect(made.after.filter((o) => o === "r2.put internal:audit")).toEqual(["r2.put internal:audit"]);
    expect(made.after).toContain("r2.put index");
    expect(made.after.filter((o) => o.endsWith(" file"))).toEqual([]);
  }, 180_000); // every storage operation waits for a quiet step (counting-stores.ts): slow on a busy machine

  it("create-only (If-None-Match: *): no HEAD of the path, the PUT is the condition (then the record again: a seal meanwhile may have put the path in a lower layer); over an existing file ALREADY_EXISTS and the file unchanged", async () => {
    const { put, text } = await setup();
    await put("src/deep/dir/a.ts", "one\n");
    const made = await put("src/deep/dir/c.ts", "three\n", { "if-none-match": "*" });
    expect(made.status).toBe(201);
    // The plain driver's create-only check (lib/layers/plain-driver.ts): the record read again after the PUT.
    expect(made.onPath).toEqual([["r2.get meta.json"], sorted(["r2.get internal:modes.json", ...heads(3), "r2.list file"]), ["r2.put file"], ["r2.get meta.json"]]);
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
  }, 600_000);
});
