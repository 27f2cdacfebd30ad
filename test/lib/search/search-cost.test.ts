/**
 * What makes search fast, pinned as storage operations (not time), on both workspace shapes of
 * issue #31: raw uploads (one object per file: the listing is the only way to know the files) and
 * imported (packs + manifest + index segments: the manifest knows the files, only the small upper
 * layer is listed). Through the HTTP API with the real local R2, every operation counted.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fileKey } from "../../../lib/layout/paths.js";
import { newTenant, testApp, upload } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { importReq } from "../archive/helpers.js";
import { loggedStorage, measured, sourceText } from "./helpers.js";

/** 2,500 files (three listing pages of a plain workspace): src/d<k>/f<i>.ts, a rare word in two of them. */
const N = 2500;
const path = (i: number) => `src/d${i % 25}/f${i}.ts`;
const text = (i: number) => `${sourceText(i, 6)}${i === 7 || i === 1999 ? "const rareNeedleWord = 1;\n" : ""}`;

async function setup() {
  const { driver, ops } = loggedStorage();
  const app = testApp({ storage: driver });
  return { app, ops };
}

describe("search cost on an imported workspace (packs + manifest + index)", { timeout: 600_000 }, () => {
  it("lists only the upper layer (one request), never the files the manifest knows; reads contents from packed segments", async () => {
    const { app, ops } = await setup();
    const t = await newTenant(app);
    const r = await importReq(t, tar(Array.from({ length: N }, (_, i) => ({ name: path(i), body: text(i) }))));
    expect(r.status, JSON.stringify(r.body)).toBe(200);

    const rare = await measured(t, ops, "grep", { pattern: "rareNeedleWord", output_mode: "files_with_matches" });
    expect(rare.data.filenames ?? rare.output).toBeTruthy();
    expect(rare.output).toContain(path(7));
    expect(rare.output).toContain(path(1999));
    // A plain listing of 2,500 files takes 3 pages: the walk lists the (empty) upper layer once.
    expect(rare.fileLists).toBe(1);
    expect(rare.fileGets).toBe(0);

    const glob = await measured(t, ops, "glob", { pattern: "**/*.ts" });
    expect(glob.data.total_found).toBe(N);
    expect(glob.fileLists).toBe(1);
    expect(glob.fileGets).toBe(0);

    // A file written after the import is in the upper layer: still one listing, and found.
    await upload(t, "src/new.ts", "const rareNeedleWord = 2;\n");
    const after = await measured(t, ops, "grep", { pattern: "rareNeedleWord", output_mode: "files_with_matches" });
    expect(after.output).toContain("src/new.ts");
    expect(after.fileLists).toBe(1);
  });

  it("stops early: a page of a common word reads a fraction of the candidates, in few requests", async () => {
    const { app, ops } = await setup();
    const t = await newTenant(app);
    expect((await importReq(t, tar(Array.from({ length: N }, (_, i) => ({ name: path(i), body: text(i) }))))).status).toBe(200);
    const page = await measured(t, ops, "grep", { pattern: "function", output_mode: "files_with_matches", head_limit: 20 });
    expect(page.data.count).toBe(20);
    expect(page.data.stats.candidates).toBeGreaterThan(1000);
    expect(page.data.stats.files_searched).toBeLessThan(page.data.stats.candidates / 4);
    expect(page.fileLists).toBe(1);
    expect(page.gets).toBeLessThanOrEqual(12);
  });
});

describe("search cost on raw uploads (one object per file)", { timeout: 600_000 }, () => {
  it("lists the files once (one request per 1,000 keys) and, once indexed, reads no file one by one", async () => {
    const { app, ops } = await setup();
    const t = await newTenant(app);
    // Straight to the bucket (as a sync that bypassed the index would): the first grep indexes them.
    for (let i = 0; i < N; i += 250) await Promise.all(Array.from({ length: Math.min(250, N - i) }, (_, k) => env.FILES.put(fileKey(t.tenant, t.ws, path(i + k)), text(i + k))));
    // Each call indexes what it read (within its storage budget) until every file is indexed.
    let indexed = 0;
    for (let calls = 0; indexed < N && calls < 10; calls++) indexed += (await measured(t, ops, "grep", { pattern: "rareNeedleWord", output_mode: "files_with_matches" })).data.stats.files_indexed_now;
    expect(indexed).toBe(N);

    const rare = await measured(t, ops, "grep", { pattern: "rareNeedleWord", output_mode: "files_with_matches" });
    expect(rare.output).toContain(path(1999));
    expect(rare.fileLists).toBe(Math.ceil(N / 1000));
    expect(rare.fileGets).toBe(0);
    expect(rare.data.stats.candidates).toBe(2);

    const glob = await measured(t, ops, "glob", { pattern: "**/*.ts" });
    expect(glob.data.total_found).toBe(N);
    expect(glob.fileLists).toBe(Math.ceil(N / 1000));
    expect(glob.fileGets).toBe(0);
  });
});
