/**
 * Search on the raw shape (issue #31 §1–2), pinned as storage operations (not time): a workspace
 * filled through the raw files route (PUT /files/{path}, one request and one object per file), as
 * an app syncing a repository file by file leaves it, searched before and after its seal.
 *
 * - Before the seal (a plain workspace: no manifest) the listing is the only way to know the
 *   files: one list request per 1,000 of them, on every search.
 * - The seal (lib/layers/background-seal.ts, after the uploads' answers where the runtime has
 *   waitUntil) is what makes it fast: once sealed, the manifest knows the files and a search lists
 *   only the small upper layer (one request), never what the manifest knows.
 * - Contents come from the index segments the uploads' upkeep wrote: no file is read one by one,
 *   before or after (the seal keeps every file's etag, so the segments stay valid).
 *
 * Through the HTTP API over the real local R2, every operation logged.
 */
import { describe, expect, it } from "vitest";
import { ManifestCache } from "../../../lib/layers/manifest.js";
import { filesDriver, readMeta } from "../../../lib/layers/open.js";
import { filesPrefix } from "../../../lib/layout/paths.js";
import { vacuum } from "../../../lib/search/indexer.js";
import { listUpper } from "../../../lib/layers/seal.js";
import { sealIfLarge } from "../../../lib/layers/background-seal.js";
import { executionContext, newTenant, testApp, type Tenant } from "../../helpers.js";
import { loggedStorage, measured, sourceText } from "./helpers.js";

/**
 * Files uploaded. Two listing pages (one per 1,000): the 10,000 are ten, and scale the
 * "before" listings with them. 1,100 keeps the suite's time down: 2,000 took ~4-5 min per case in
 * workerd on a shared 2-core machine at load 8-11 (~8 uploads/s), 10,000 PUTs through the route far more.
 */
const N = 1_100;
/** Uploads in flight, as a sync client sends them (bench/bash-scale.ts --raw). */
const IN_FLIGHT = 16;
const path = (i: number) => `src/d${i % 40}/f${i}.ts`;
const RARE = [7, N - 3];
const text = (i: number) => `${sourceText(i, 3)}${RARE.includes(i) ? "const rareNeedleWord = 1;\n" : ""}`;

/** Uploads files 0..n-1 through PUT /files/{path}, IN_FLIGHT at a time; `ctx`: the Workers runtime's execution context (none: Lambda's). */
async function rawUploads(t: Tenant, n: number, ctx?: ExecutionContext): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) {
        const i = next++;
        const body = text(i);
        const r = await t.app.request(`/v1/workspaces/${t.ws}/files/${path(i)}`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": String(body.length) }, body }, {}, ctx);
        if (r.status !== 201) throw new Error(`upload ${path(i)}: ${r.status} ${await r.text()}`);
        await r.arrayBuffer();
      }
    }),
  );
}

/** grep for the rare word and glob every file: both must find everything, whatever the shape. */
async function searches(t: Tenant, ops: { op: string; key: string }[]) {
  const rare = await measured(t, ops, "grep", { pattern: "rareNeedleWord", output_mode: "files_with_matches" });
  for (const i of RARE) expect(rare.output).toContain(path(i));
  const glob = await measured(t, ops, "glob", { pattern: "**/*.ts" });
  expect(glob.data.total_found).toBe(N);
  return { rare, glob };
}

const summary = (s: Awaited<ReturnType<typeof searches>>) => ({ grep: { fileLists: s.rare.fileLists, lists: s.rare.lists, gets: s.rare.gets, fileGets: s.rare.fileGets }, glob: { fileLists: s.glob.fileLists, lists: s.glob.lists, gets: s.glob.gets, fileGets: s.glob.fileGets } });

describe(`search on ${N.toLocaleString("en")} raw uploads, before and after the seal`, { timeout: 1_800_000 }, () => {
  it("no after-the-answer work (Lambda): a plain workspace lists every file on each search; the seal leaves one listing of the upper layer; no file read one by one before or after", async () => {
    const { driver, ops } = loggedStorage();
    const app = testApp({ storage: driver });
    const t = await newTenant(app);
    await rawUploads(t, N);
    expect((await readMeta(driver, t.tenant, t.ws))!.meta.base ?? null).toBeNull(); // nothing sealed it

    const before = await searches(t, ops);
    console.log(`raw shape, ${N} files, before the seal: ${JSON.stringify(summary(before))}`);
    const pages = Math.ceil(N / 1000);
    expect(before.rare.fileLists).toBeGreaterThanOrEqual(pages);
    expect(before.rare.fileLists).toBeLessThanOrEqual(pages + 1);
    expect(before.glob.fileLists).toBeGreaterThanOrEqual(pages);
    expect(before.glob.fileLists).toBeLessThanOrEqual(pages + 1);
    expect(before.rare.fileGets).toBe(0); // indexed before each upload's answer (no waitUntil)
    expect(before.glob.fileGets).toBe(0);

    // The seal the background sealer runs (each call folds up to BACKGROUND_MAX objects).
    const deps = { storage: driver, manifests: new ManifestCache() };
    let seals = 0;
    while ((await sealIfLarge(deps, t.tenant, t.ws)) && seals < 10) seals++;
    expect(seals).toBeGreaterThan(0);
    expect((await listUpper(driver, t.tenant, t.ws)).length).toBe(0);

    const after = await searches(t, ops);
    console.log(`raw shape, ${N} files, after the seal (${seals} seals): ${JSON.stringify(summary(after))}`);
    expect(after.rare.fileLists).toBe(1); // the (empty) upper layer, once
    expect(after.glob.fileLists).toBe(1);
    expect(after.rare.fileGets).toBe(0);
    expect(after.glob.fileGets).toBe(0);
    expect(after.rare.data.stats.candidates).toBe(RARE.length);

    // The index's vacuum (on 1 change in 64) learns the live files the same way: the manifest walked, the upper layer listed once.
    ops.length = 0;
    await vacuum(await filesDriver(deps, t.tenant, t.ws, (await readMeta(driver, t.tenant, t.ws))!.meta), t.tenant, t.ws);
    expect(ops.filter((o) => o.op === "list" && o.key.startsWith(filesPrefix(t.tenant, t.ws))).length).toBe(1);
  });

  it("Workers: the uploads are sealed after their answers as they come; the search after them lists only the small upper layer left since the last seal", async () => {
    const { driver, ops } = loggedStorage();
    const app = testApp({ storage: driver });
    const t = await newTenant(app);
    const { ctx, settle } = executionContext();
    await rawUploads(t, N, ctx);
    await settle(); // the work after the answers: index upkeep and the background seals

    const rec = (await readMeta(driver, t.tenant, t.ws))!;
    expect(rec.meta.base).toBeTruthy();
    const sealed = (await new ManifestCache().load(driver, t.tenant, rec.meta.base!)).entries.length;
    const upper = (await listUpper(driver, t.tenant, t.ws)).length;
    expect(sealed + upper).toBe(N);
    expect(upper).toBeLessThan(1000); // one listing page: the tail since the last seal

    const s = await searches(t, ops);
    console.log(`raw shape, ${N} files, sealed in the background (${sealed} in packs, ${upper} upper): ${JSON.stringify(summary(s))}`);
    expect(s.rare.fileLists).toBe(1);
    expect(s.glob.fileLists).toBe(1);
    expect(s.rare.fileGets).toBe(0); // the index covers the packed files and the upper ones alike
    expect(s.glob.fileGets).toBe(0);
    expect(s.rare.data.stats.candidates).toBe(RARE.length);
  });
});
