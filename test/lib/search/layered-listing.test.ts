/**
 * A layered workspace's listing (the manifest's entries taken a run at a time: KeyWalk.known) skips
 * what a plain workspace's listing skips: hidden entries, ignored directories (also inside a run,
 * and reaching past it into the upper layer), with the same skip report and the same files found.
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { importReq } from "../archive/helpers.js";
import { ok } from "./helpers.js";

const FILES: Record<string, string> = {
  "a.ts": "const needleWord = 1;\n",
  ".env": "needleWord=1\n",
  ".hidden/h.ts": "needleWord\n",
  "node_modules/x/y.ts": "needleWord\n",
  "node_modules/x/z.ts": "needleWord\n",
  "src/b.ts": "needleWord\n",
  "src/node_modules/q.ts": "needleWord\n",
  "src/vendor/v.ts": "needleWord\n",
  "src/vendorish/w.ts": "needleWord\n",
  "src/.cache/c.ts": "needleWord\n",
  "src/d/e.ts": "needleWord\n",
  "zz.ts": "needleWord\n",
};
/** Written after the import: in the upper layer, some inside directories the rules skip. */
const LATER: Record<string, string> = { "node_modules/x/later.ts": "needleWord\n", "src/later.ts": "needleWord\n", "src/vendor/later.ts": "needleWord\n" };

describe("listing a layered workspace", { timeout: 120_000 }, () => {
  it("skips and finds what a plain workspace does, with the same report", async () => {
    const app = testApp();
    const layered = await newTenant(app);
    const r = await importReq(layered, tar(Object.entries(FILES).map(([name, body]) => ({ name, body }))));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const plain = await newTenant(app);
    for (const [p, body] of Object.entries(FILES)) await upload(plain, p, body);
    for (const t of [layered, plain]) for (const [p, body] of Object.entries(LATER)) await upload(t, p, body);

    const search = async (t: typeof plain, args: Record<string, unknown>) => {
      const d = ok(await t.call("grep", { pattern: "needleWord", ...args }));
      return { files: [...d.files].sort(), skipped: d.skipped.counts };
    };
    for (const args of [{}, { include_hidden: true }, { include_ignored: true }, { path: "src" }]) {
      const l = await search(layered, args);
      const p = await search(plain, args);
      expect(l, JSON.stringify(args)).toEqual(p);
    }
    const plainDefault = await search(plain, {});
    expect(plainDefault.files).toEqual(["a.ts", "src/b.ts", "src/d/e.ts", "src/later.ts", "src/vendorish/w.ts", "zz.ts"]);
    const globs = async (t: typeof plain) => [...ok(await t.call("glob", { pattern: "**/*.ts" })).matches.map((m: any) => m.path)].sort();
    expect(await globs(layered)).toEqual(await globs(plain));
  });
});
