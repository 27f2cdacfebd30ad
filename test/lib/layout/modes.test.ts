/** The workspace's list of executable files (lib/layout/modes.ts) on the real (local) R2, and its sync routes. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_EXEC_FILES, MAX_LINKS_BYTES, parseModesDelta, readModes, updateModes } from "../../../lib/layout/modes.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { conditionalManifest, ManifestView } from "../../../lib/sync/view.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { randomId } from "../../../lib/shared/hash.js";
import { modesKey } from "../../../lib/layout/paths.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";

const driver = r2Driver(env.FILES);
const SECRET = "a-test-secret-of-some-length";
const ws = () => `m${randomId(8).toLowerCase()}`;

describe("modes store", () => {
  it("starts empty, applies removals then additions, keeps the list sorted and unique", async () => {
    const w = ws();
    expect(await readModes(driver, "acme", w)).toEqual({ etag: null, exec: [] });
    const a = await updateModes(driver, "acme", w, { add: ["z.sh", "bin/run", "z.sh"], remove: [] });
    expect(a.exec).toEqual(["bin/run", "z.sh"]);
    expect(a.etag).toEqual(expect.any(String));
    const b = await updateModes(driver, "acme", w, { add: ["a.sh"], remove: ["z.sh", "never-there"] });
    expect(b.exec).toEqual(["a.sh", "bin/run"]);
    expect(await readModes(driver, "acme", w)).toEqual(b);
    // A delta that changes nothing writes nothing.
    expect(await updateModes(driver, "acme", w, { add: ["a.sh"], remove: ["gone"] })).toEqual(b);
    expect((await driver.head(modesKey("acme", w)))!.etag).toBe(b.etag);
  });

  it("20 concurrent updates of one list: every change is kept (If-Match, merged, retried)", async () => {
    const w = ws();
    await updateModes(driver, "acme", w, { add: ["base.sh"], remove: [] });
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => updateModes(driver, "acme", w, { add: [`f${i}.sh`], remove: i === 0 ? ["base.sh"] : [] })));
    const failed = results.filter((r) => r.status === "rejected");
    // A writer that lost every round says CONFLICT; whatever succeeded is in the list.
    for (const f of failed) expect((f as PromiseRejectedResult).reason.code).toBe("CONFLICT");
    const now = await readModes(driver, "acme", w);
    results.forEach((r, i) => {
      if (r.status === "fulfilled") expect(now.exec).toContain(`f${i}.sh`);
    });
    expect(failed.length).toBeLessThan(5);
    if (results[0]!.status === "fulfilled") expect(now.exec).not.toContain("base.sh");
  });

  it("the links table is bounded in bytes (8 MiB of paths and targets): a change past it is refused, saying what to do, and the table stays as it was", async () => {
    const w = ws();
    const target = (i: number) => `${"a/".repeat(1900)}${i}`; // ~3.8 KB, a target a command or an archive can give
    const before = await updateModes(driver, "t1", w, { add: [], remove: [], links: { kept: "x" } });
    const many = Object.fromEntries(Array.from({ length: 2300 }, (_, i) => [`s${i}`, target(i)])); // ~8.7 MB: the links of 4 KB targets that made it grow without bound
    const err = await updateModes(driver, "t1", w, { add: ["run.sh"], remove: [], links: many }).catch((e) => e);
    expect(err).toMatchObject({ code: "PAYLOAD_TOO_LARGE", details: { reason: "links_bytes", max: MAX_LINKS_BYTES } });
    expect(err.message).toMatch(/^Symlinks past 8 MiB: remove unneeded links \(find \. -type l\) or shorten targets\./);
    expect(await readModes(driver, "t1", w)).toEqual(before);
    // Up to the bound it is recorded; a change that only removes links is never refused.
    const fewer = Object.fromEntries(Object.entries(many).slice(0, 2000));
    const saved = await updateModes(driver, "t1", w, { add: [], remove: [], links: fewer });
    expect(Object.keys(saved.links ?? {})).toHaveLength(2001);
  });

  it("deltas from the wire: canonical paths only, bounded", () => {
    expect(parseModesDelta({ add: ["./a//b.sh"], remove: ["/c"] })).toEqual({ add: ["a/b.sh"], remove: ["c"] });
    expect(parseModesDelta({})).toEqual({ add: [], remove: [] });
    expect(() => parseModesDelta({ add: ["../etc/passwd"] })).toThrow(/INVALID_PATH|outside|\.\./);
    expect(() => parseModesDelta({ add: "a.sh" })).toThrow(/array/);
    expect(() => parseModesDelta({ add: new Array(MAX_EXEC_FILES + 1).fill("a") })).toThrow(/at most/);
  });
});

describe("modes over the sync API", () => {
  const setup = async (w: string, t = "acme") => {
    await workspaceRecord(driver, t, w);
    const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => handleSync(new Request(input, init), { driver, kv: storageKeyValue(memoryDriver(), "kv/"), secret: SECRET })) as typeof fetch;
    return httpSyncClient({ url: "https://api.example", token: await mintSyncToken(SECRET, { t, w, r: "run1" }, 60), fetch: fetchFn });
  };
  /** The execute bits as the conditional manifest brings them (one request with the listing). */
  const modesOf = async (c: Awaited<ReturnType<typeof setup>>, known: string | null = null) => (await conditionalManifest(c, new ManifestView(), known)).modes;

  it("the manifest brings the list, 'same' for a current etag; POST merges a delta", async () => {
    const w = ws();
    const c = await setup(w);
    expect(await modesOf(c)).toEqual({ etag: null, exec: [] });
    const m = await c.updateModes({ add: ["run.sh"], remove: [] });
    expect(m.exec).toEqual(["run.sh"]);
    expect(await modesOf(c, m.etag)).toBe("same");
    expect(await modesOf(c, "stale-etag")).toEqual(m);
    await expect(c.updateModes({ add: ["../x"], remove: [] })).rejects.toThrow(/HTTP 400/);
  });

  it("a token reaches only its own workspace's list", async () => {
    const w = ws();
    await (await setup(w)).updateModes({ add: ["secret.sh"], remove: [] });
    expect(await modesOf(await setup(ws()))).toEqual({ etag: null, exec: [] });
    expect(await modesOf(await setup(w, "other"))).toEqual({ etag: null, exec: [] });
    await (await setup(w, "other")).updateModes({ add: ["x.sh"], remove: ["secret.sh"] });
    expect((await readModes(driver, "acme", w)).exec).toEqual(["secret.sh"]);
  });

  it("an API without the conditional manifest: modes unknown (null), and the runner leaves them alone", async () => {
    const old = httpSyncClient({
      url: "https://api.example",
      token: "t",
      fetch: (async (_: RequestInfo | URL, init?: RequestInit) => (init?.method === "POST" ? new Response("", { status: 404 }) : Response.json({ files: [] }))) as unknown as typeof fetch,
    });
    expect(await conditionalManifest(old, new ManifestView(), null)).toEqual({ unchanged: true, received: 0, modes: null });
  });
});
