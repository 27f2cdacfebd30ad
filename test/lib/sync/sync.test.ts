/** The sync API (client + server + token) in workerd: what the runner may do to a workspace. */
import { describe, expect, it } from "vitest";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { mintSyncToken, verifySyncToken } from "../../../lib/sync/token.js";
import { filesPrefix } from "../../../lib/layout/paths.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import { deleteWorkspace } from "../../../lib/workspace/registry.js";

const SECRET = "a-test-secret-of-some-length";
const enc = new TextEncoder();

async function setup() {
  const driver = memoryDriver();
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => handleSync(new Request(input, init), { driver, kv: storageKeyValue(memoryDriver(), "kv/"), secret: SECRET })) as typeof fetch;
  const client = async (t: string, w: string, secret = SECRET) => {
    await workspaceRecord(driver, t, w);
    return httpSyncClient({ url: "https://api.example", token: await mintSyncToken(secret, { t, w, r: "run1" }, 60), fetch: fetchFn });
  };
  return { driver, client };
}

describe("sync tokens", () => {
  it("verify what they mint, and nothing tampered, foreign or expired", async () => {
    const token = await mintSyncToken(SECRET, { t: "acme", w: "main", r: "k1" }, 60);
    expect(await verifySyncToken(SECRET, token)).toMatchObject({ t: "acme", w: "main", r: "k1" });
    expect(await verifySyncToken("another-secret-entirely", token)).toBeNull();
    const [body, mac] = token.split(".");
    const forged = btoa(JSON.stringify({ t: "evil", w: "main", r: "k1", exp: 9e9 })).replace(/=+$/, "");
    expect(await verifySyncToken(SECRET, `${forged}.${mac}`)).toBeNull();
    expect(await verifySyncToken(SECRET, `${body}.${mac}x`)).toBeNull();
    expect(await verifySyncToken(SECRET, `${body}`)).toBeNull();
    expect(await verifySyncToken(SECRET, token, { now: Date.now() + 61_000 })).toBeNull();
  });
});

describe("sync API over HTTP", () => {
  it("manifest, fetch, conditional put and delete", async () => {
    const { client } = await setup();
    const c = await client("acme", "main");
    expect(await c.manifest()).toEqual([]);
    const created = await c.put("src/a.txt", enc.encode("one"), { ifNoneMatch: "*" });
    expect(created.ok).toBe(true);
    const etag = created.ok ? created.etag : "";
    expect(await c.put("src/a.txt", enc.encode("dup"), { ifNoneMatch: "*" })).toEqual({ ok: false, conflict: true });
    expect(await c.put("src/a.txt", enc.encode("stale"), { ifMatch: "not-the-etag" })).toEqual({ ok: false, conflict: true });
    const updated = await c.put("src/a.txt", enc.encode("two"), { ifMatch: etag });
    expect(updated.ok).toBe(true);
    const f = await c.fetch("src/a.txt");
    expect(await new Response(f!.body).text()).toBe("two");
    expect(f!.etag).toBe(updated.ok ? updated.etag : "");
    expect(await c.manifest()).toEqual([{ path: "src/a.txt", etag: f!.etag, size: 3 }]);
    expect(await c.delete("src/a.txt", { ifMatch: etag })).toEqual({ ok: false, conflict: true });
    expect(await c.delete("src/a.txt", { ifMatch: f!.etag })).toEqual({ ok: true });
    expect(await c.fetch("src/a.txt")).toBeNull();
    expect(await c.delete("src/a.txt", { ifMatch: f!.etag })).toEqual({ ok: true }); // already gone
  });

  it("explicit directories: mkdir and rmdir of markers, listed in the manifest with a trailing /, never confused with files", async () => {
    const { client, driver } = await setup();
    const c = await client("acme", "main");
    const made = await c.mkdir("a/b");
    expect(made.ok).toBe(true);
    const etag = made.ok ? made.etag : "";
    expect(await c.mkdir("a/b")).toEqual({ ok: true, etag }); // there already: same marker
    expect(await driver.head(`${filesPrefix("acme", "main")}a/b/`)).toMatchObject({ size: 0 });
    expect(await driver.head(`${filesPrefix("acme", "main")}a/b`)).toBeNull(); // no file of that name
    expect(await c.manifest()).toEqual([{ path: "a/b/", etag, size: 0 }]);
    expect(await c.fetch("a/b")).toBeNull();

    // A directory where a file is, or below one, is refused; so is a file where a directory is.
    expect((await c.put("f.txt", enc.encode("x"), { ifNoneMatch: "*" })).ok).toBe(true);
    expect(await c.mkdir("f.txt")).toEqual({ ok: false, conflict: true });
    expect(await c.mkdir("f.txt/sub")).toEqual({ ok: false, conflict: true });

    expect(await c.rmdir("a/b", { ifMatch: "another-version" })).toEqual({ ok: false, conflict: true });
    expect(await c.rmdir("a/b", { ifMatch: etag })).toEqual({ ok: true });
    expect(await c.rmdir("a/b", { ifMatch: etag })).toEqual({ ok: true, gone: true }); // already gone: it freed nothing
    expect((await c.manifest()).map((e) => e.path)).toEqual(["f.txt"]);
    // rmdir never deletes the file of the same name.
    expect(await c.rmdir("f.txt", { ifMatch: "x" })).toEqual({ ok: true, gone: true }); // no such marker
    expect((await c.manifest()).map((e) => e.path)).toEqual(["f.txt"]);
  });

  it("a token reaches its own workspace only; paths cannot climb out", async () => {
    const { client, driver } = await setup();
    await driver.put(filesPrefix("acme", "secret") + "plans.txt", "hidden");
    await driver.put(filesPrefix("other", "main") + "x.txt", "theirs");
    const c = await client("acme", "main");
    expect(await c.manifest()).toEqual([]);
    await expect(c.fetch("../secret/f/plans.txt")).rejects.toMatchObject({ code: "INVALID_PATH" });
    await expect(c.fetch("../../other/w/main/f/x.txt")).rejects.toMatchObject({ code: "INVALID_PATH" });
    // A raw request that climbs (the URL parser folds the dots) finds no route.
    const token = await mintSyncToken(SECRET, { t: "acme", w: "main", r: "r" }, 60);
    const raw = await handleSync(new Request("https://api.example/v1/sync/files/../../other/w/main/f/x.txt", { headers: { authorization: `Bearer ${token}` } }), { driver, kv: storageKeyValue(memoryDriver(), "kv/"), secret: SECRET });
    expect(raw.status).toBe(404);
    const enc2 = await c.fetch("%2e%2e/%2e%2e/x.txt").catch((e) => e);
    expect(enc2 === null || enc2.code === "INTERNAL").toBe(true);
    await c.put("..%2F..%2Fescape.txt", enc.encode("x"), {});
    const keys = (await driver.list({ prefix: "" })).objects.map((o) => o.key);
    expect(keys.filter((k) => !k.startsWith(filesPrefix("acme", "main")) && k.includes("escape"))).toEqual([]);
  });

  it("a workspace deleted while a run holds its token: nothing is listed, fetched or written back under its prefix", async () => {
    const { client, driver } = await setup();
    const c = await client("acme", "gone");
    expect((await c.put("a.txt", enc.encode("one"), { ifNoneMatch: "*" })).ok).toBe(true);
    // The workspace is deleted (its record first, then its objects), as DELETE /v1/workspaces/{ws} does.
    await deleteWorkspace(driver, "acme", "gone");
    // The API's own refusal, as the model reads it (lib/sync/refusal.ts), not "HTTP 404 {...}".
    await expect(c.manifest()).rejects.toMatchObject({ code: "NOT_FOUND", message: expect.stringMatching(/^Workspace gone no longer exists/), details: { workspace: "gone", status: 404 } });
    await expect(c.put("b.txt", enc.encode("two"), { ifNoneMatch: "*" })).rejects.toMatchObject({ code: "NOT_FOUND", message: expect.stringMatching(/no longer exists/) });
    expect((await driver.list({ prefix: "t/acme/w/gone/" })).objects).toEqual([]);
  });

  it("refuses a bad token", async () => {
    const { client } = await setup();
    const c = await client("acme", "main", "the-wrong-secret-value");
    await expect(c.manifest()).rejects.toThrow(/401/);
  });

  it("pages a large manifest", async () => {
    const { client, driver } = await setup();
    for (let i = 0; i < 2500; i++) await driver.put(`${filesPrefix("acme", "big")}f${String(i).padStart(4, "0")}`, "x");
    const c = await client("acme", "big");
    const m = await c.manifest();
    expect(m.length).toBe(2500);
    expect(new Set(m.map((e) => e.path)).size).toBe(2500);
  });
});
