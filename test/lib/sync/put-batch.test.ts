/** Batched write-back (lib/sync/put-batch.ts, lib/sync/put-server.ts) through the real app, on the real (local) R2. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { PUT_BATCH_MAX_FILES, putBatchBody, type PutManyItem } from "../../../lib/sync/put-batch.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { fileKey } from "../../../lib/layout/paths.js";
import { newTenant, testApp } from "../../helpers.js";
import { r2Keys } from "../../support/local-storage-keys.js";

const SECRET = "batch-put-secret-0123456789abcdef";
const app = testApp({ syncSecret: SECRET });
const enc = new TextEncoder();
const bytes = (s: string) => enc.encode(s);

async function client(t: string, w: string, requests: string[] = []) {
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    requests.push(`${req.method} ${new URL(req.url).pathname}`);
    return app.request(req);
  }) as typeof fetch;
  return httpSyncClient({ url: "http://api.test", token: await mintSyncToken(SECRET, { t, w, r: "run1" }, 60), fetch: fetchFn });
}

const stored = async (t: string, w: string, path: string) => {
  const o = await env.FILES.get(fileKey(t, w, path));
  return o ? await o.text() : null;
};

/** Every object under a prefix (keys), for "nothing else was written". */
const keys = async (prefix: string): Promise<string[]> => (await r2Keys(prefix)).sort();

describe("put and delete batches over the sync API", () => {
  it("a batch of creates, overwrites and conflicts answers per file and writes the others; deletes alike", async () => {
    const t = await newTenant(app);
    const c0 = await client(t.tenant, t.ws);
    const base = (p: string, s: string) => c0.put(p, bytes(s), { ifNoneMatch: "*" }).then((r) => (r.ok ? r.etag : ""));
    const keep = await base("keep.txt", "v1");
    const stale = await base("stale.txt", "v1");
    await c0.put("stale.txt", bytes("theirs"), { ifMatch: stale }); // a tool changed it during the run
    await base("taken.txt", "theirs");
    const del = await base("del.txt", "old");
    const delStale = await base("del-stale.txt", "old");
    await c0.put("del-stale.txt", bytes("theirs"), { ifMatch: delStale });
    const delGone = await base("del-gone.txt", "old");
    await c0.delete("del-gone.txt", { ifMatch: delGone });

    const requests: string[] = [];
    const c = await client(t.tenant, t.ws, requests);
    const items: PutManyItem[] = [
      { path: "new/a.ts", bytes: bytes("export const a = 1;\n"), ifNoneMatch: "*" },
      { path: "keep.txt", bytes: bytes("v2"), ifMatch: keep },
      { path: "stale.txt", bytes: bytes("mine"), ifMatch: stale },
      { path: "taken.txt", bytes: bytes("mine"), ifNoneMatch: "*" },
      { path: "empty", bytes: new Uint8Array(0), ifNoneMatch: "*" },
      { path: "bin/blob", bytes: new Uint8Array(256).map((_, i) => i), ifNoneMatch: "*" },
    ];
    const put = await c.putMany!(items);
    const dels = await c.deleteMany!([{ path: "del.txt", ifMatch: del }, { path: "del-stale.txt", ifMatch: delStale }, { path: "del-gone.txt", ifMatch: delGone }]);
    expect(requests).toEqual(["POST /v1/sync/put", "POST /v1/sync/delete"]);

    expect(put!.map((r) => [r.path, r.ok ? "ok" : "conflict" in r ? "conflict" : "error"])).toEqual([
      ["new/a.ts", "ok"], ["keep.txt", "ok"], ["stale.txt", "conflict"], ["taken.txt", "conflict"], ["empty", "ok"], ["bin/blob", "ok"],
    ]);
    for (const r of put!) if (r.ok) expect(r.etag).toBe((await env.FILES.head(fileKey(t.tenant, t.ws, r.path)))!.etag);
    expect(await stored(t.tenant, t.ws, "new/a.ts")).toBe("export const a = 1;\n");
    expect(await stored(t.tenant, t.ws, "keep.txt")).toBe("v2");
    expect(await stored(t.tenant, t.ws, "stale.txt")).toBe("theirs");
    expect(await stored(t.tenant, t.ws, "taken.txt")).toBe("theirs");
    expect(await stored(t.tenant, t.ws, "empty")).toBe("");
    expect([...new Uint8Array(await (await env.FILES.get(fileKey(t.tenant, t.ws, "bin/blob")))!.arrayBuffer())]).toEqual([...items[5]!.bytes]);

    expect(dels).toEqual([{ path: "del.txt", ok: true }, { path: "del-stale.txt", ok: false, conflict: true }, { path: "del-gone.txt", ok: true, gone: true }]);
    expect(await stored(t.tenant, t.ws, "del.txt")).toBeNull();
    expect(await stored(t.tenant, t.ws, "del-stale.txt")).toBe("theirs");
  });

  it("a path outside the rules is refused for that file only (per-file), nothing lands outside the workspace", async () => {
    const t = await newTenant(app);
    const c = await client(t.tenant, t.ws);
    const before = await keys(`t/${t.tenant}/`);
    const r = await c.putMany!([{ path: "ok.txt", bytes: bytes("fine"), ifNoneMatch: "*" }]);
    expect(r![0]!.ok).toBe(true);
    // The client refuses bad paths itself; a hand-made body reaches the server with them.
    const token = await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "run1" }, 60);
    const hostile = ["../other/x", "a\\b", "", "..", "sub/../../escape", "x\u0000y", "....", 42 as unknown as string];
    const body = putBatchBody([...hostile.map((p) => ({ path: p, bytes: bytes("evil"), ifNoneMatch: "*" as const })), { path: "also-ok.txt", bytes: bytes("fine"), ifNoneMatch: "*" }]);
    const res = await app.request("http://api.test/v1/sync/put", { method: "POST", body, headers: { authorization: `Bearer ${token}` }, duplex: "half" } as RequestInit);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { files: { path: string; error?: { code: string }; etag?: string }[] };
    expect(answer.files.map((f) => f.path)).toEqual([...hostile.map(String), "also-ok.txt"]);
    for (const f of answer.files.slice(0, hostile.length)) expect(f.error?.code, f.path).toMatch(/INVALID_PATH|IS_DIRECTORY|INVALID_ARGUMENT/);
    expect(answer.files.at(-1)!.etag).toBeTruthy();
    const after = await keys(`t/${t.tenant}/`);
    expect(after.filter((k) => !before.includes(k) && !k.includes("/x/"))).toEqual([fileKey(t.tenant, t.ws, "also-ok.txt"), fileKey(t.tenant, t.ws, "ok.txt")].sort());
    // A file without a condition is refused too (a write-back is always conditional).
    const bare = await app.request("http://api.test/v1/sync/put", { method: "POST", body: putBatchBody([{ path: "bare.txt", bytes: bytes("x") }]), headers: { authorization: `Bearer ${token}` }, duplex: "half" } as RequestInit);
    expect(((await bare.json()) as { files: { error?: { code: string } }[] }).files[0]!.error?.code).toBe("INVALID_ARGUMENT");
    expect(await stored(t.tenant, t.ws, "bare.txt")).toBeNull();
  });

  it("a token writes only its own workspace; no token, nothing written", async () => {
    const a = await newTenant(app);
    const b = await newTenant(app);
    const before = await keys(`t/${a.tenant}/`);
    // B's token: the batch lands in B's workspace, whatever the paths say.
    const cb = await client(b.tenant, b.ws);
    const r = await cb.putMany!([{ path: "x.txt", bytes: bytes("from b"), ifNoneMatch: "*" }]);
    expect(r![0]!.ok).toBe(true);
    expect(await stored(b.tenant, b.ws, "x.txt")).toBe("from b");
    expect((await cb.deleteMany!([{ path: "x.txt", ifMatch: "whatever" }]))![0]).toEqual({ path: "x.txt", ok: false, conflict: true });
    for (const auth of [{}, { authorization: "Bearer forged.token" }] as Record<string, string>[]) {
      const res = await app.request("http://api.test/v1/sync/put", { method: "POST", body: putBatchBody([{ path: "x.txt", bytes: bytes("evil"), ifNoneMatch: "*" }]), headers: auth, duplex: "half" } as RequestInit);
      expect(res.status).toBe(401);
      const del = await app.request("http://api.test/v1/sync/delete", { method: "POST", body: JSON.stringify({ files: [{ path: "x.txt", etag: "e" }] }), headers: auth });
      expect(del.status).toBe(401);
    }
    expect(await keys(`t/${a.tenant}/`)).toEqual(before);
    expect(await stored(b.tenant, b.ws, "x.txt")).toBe("from b");
  });

  it("the index stays exact: grep finds what batches wrote, and each batch adds one segment", async () => {
    const t = await newTenant(app);
    const c = await client(t.tenant, t.ws);
    const segments = () => keys(`t/${t.tenant}/w/${t.ws}/x/search/v1/seg/`);
    for (let b = 0; b < 3; b++) {
      const items = Array.from({ length: PUT_BATCH_MAX_FILES }, (_, i) => ({ path: `pkg/b${b}/m${i}.ts`, bytes: bytes(`export const v${b}_${i} = ${i};\n${i % 20 === 0 ? `// batch_needle_${b}\n` : ""}`), ifNoneMatch: "*" as const }));
      const r = await c.putMany!(items);
      expect(r!.every((x) => x.ok)).toBe(true);
      expect((await segments()).length).toBe(b + 1); // one segment per batch (no merge before 8)
    }
    const g = await t.call("grep", { pattern: "batch_needle_1", output_mode: "files_with_matches" });
    expect(g.status).toBe(200);
    expect((g.body.output as string).split("\n").filter((l) => l.startsWith("pkg/")).sort()).toEqual(["pkg/b1/m0.ts", "pkg/b1/m20.ts", "pkg/b1/m40.ts", "pkg/b1/m60.ts"]);
    // Deleted by a batch: gone from grep too.
    const etag = (await env.FILES.head(fileKey(t.tenant, t.ws, "pkg/b1/m20.ts")))!.etag;
    expect((await c.deleteMany!([{ path: "pkg/b1/m20.ts", ifMatch: etag }]))![0]!.ok).toBe(true);
    const g2 = await t.call("grep", { pattern: "batch_needle_1", output_mode: "files_with_matches" });
    expect((g2.body.output as string).split("\n").filter((l) => l.startsWith("pkg/")).sort()).toEqual(["pkg/b1/m0.ts", "pkg/b1/m40.ts", "pkg/b1/m60.ts"]);
  });

  it("a batch over the limits stops where it is: the files before keep their answers, the rest are not written", async () => {
    const t = await newTenant(app);
    const requests: string[] = [];
    const c = await client(t.tenant, t.ws, requests);
    const items = Array.from({ length: PUT_BATCH_MAX_FILES + 2 }, (_, i) => ({ path: `f${i}.txt`, bytes: bytes(`${i}`), ifNoneMatch: "*" as const }));
    const r = await c.putMany!(items);
    expect(r!.slice(0, PUT_BATCH_MAX_FILES).every((x) => x.ok)).toBe(true);
    for (const x of r!.slice(PUT_BATCH_MAX_FILES)) {
      expect(x.ok).toBe(false);
      expect("error" in x && x.error).toMatch(/at most 64 files/);
    }
    expect(await stored(t.tenant, t.ws, `f${PUT_BATCH_MAX_FILES}.txt`)).toBeNull();
    expect(await stored(t.tenant, t.ws, `f${PUT_BATCH_MAX_FILES - 1}.txt`)).toBe(`${PUT_BATCH_MAX_FILES - 1}`);
    // A file over 1 MiB is refused at its header: the client sends those alone.
    const big = await c.putMany!([{ path: "small.txt", bytes: bytes("s"), ifNoneMatch: "*" }, { path: "big.bin", bytes: new Uint8Array(1024 * 1024 + 1), ifNoneMatch: "*" }]);
    expect(big![0]!.ok).toBe(true);
    expect(big![1]!.ok).toBe(false);
    expect(await stored(t.tenant, t.ws, "big.bin")).toBeNull();
    // A truncated body: 400, nothing of the cut frame written.
    const token = await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "run1" }, 60);
    const whole = new Uint8Array(await new Response(putBatchBody([{ path: "cut.txt", bytes: bytes("0123456789"), ifNoneMatch: "*" }])).arrayBuffer());
    const res = await app.request("http://api.test/v1/sync/put", { method: "POST", body: whole.slice(0, whole.length - 3), headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(400);
    expect(await stored(t.tenant, t.ws, "cut.txt")).toBeNull();
  });

  it("against an API without batches: null, and the client stops asking", async () => {
    const requests: string[] = [];
    const old = httpSyncClient({
      url: "http://api.test", token: "t",
      fetch: (async (input: RequestInfo | URL, init?: RequestInit) => {
        const req = new Request(input, init);
        requests.push(new URL(req.url).pathname);
        return new Response(JSON.stringify({ ok: false, error: { code: "NOT_FOUND" } }), { status: 404 });
      }) as typeof fetch,
    });
    expect(await old.putMany!([{ path: "a", bytes: bytes("a"), ifNoneMatch: "*" }])).toBeNull();
    expect(await old.deleteMany!([{ path: "a", ifMatch: "e" }])).toBeNull();
    expect(await old.putMany!([{ path: "a", bytes: bytes("a"), ifNoneMatch: "*" }])).toBeNull();
    expect(requests).toEqual(["/v1/sync/put"]);
  });
});
