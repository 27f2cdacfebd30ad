/** Raw files: PUT | GET | HEAD | DELETE /v1/workspaces/{ws}/files/{path}. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../../lib/shared/hash.js";
import { fileKey, filesPrefix, tenantWorkspacesPrefix } from "../../../../lib/layout/paths.js";
import { newTenant, testApp, UNGATED, upload, type Tenant } from "../../../helpers.js";
import { snapshot } from "../../archive/helpers.js";

const app = testApp();

const url = (t: Tenant, path: string) => `/v1/workspaces/${t.ws}/files/${path}`;
const enc = (path: string) => path.split("/").map(encodeURIComponent).join("/");

async function put(t: Tenant, path: string, body: Uint8Array | string, headers: Record<string, string> = {}) {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const res = await t.req(url(t, path), { method: "PUT", headers: { "content-length": String(bytes.length), ...headers }, body: bytes });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

async function errorOf(res: Response) {
  const body = (await res.json()) as any;
  expect(body.ok).toBe(false);
  return body.error as { code: string; message: string; details: Record<string, unknown> };
}


function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  return out;
}

describe("PUT", () => {
  it("creates (201) then replaces (200), with a quoted ETag header", async () => {
    const t = await newTenant(app);
    const a = await put(t, "dir/a.txt", "one");
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ path: "dir/a.txt", size: 3, created: true });
    expect(typeof a.body.etag).toBe("string");
    expect(a.headers.get("etag")).toBe(`"${a.body.etag}"`);

    const b = await put(t, "/dir//a.txt", "two!");
    expect(b.status).toBe(200);
    expect(b.body).toMatchObject({ path: "dir/a.txt", size: 4, created: false });
    expect(b.body.etag).not.toBe(a.body.etag);
    expect(b.headers.get("etag")).toBe(`"${b.body.etag}"`);
    expect(await (await t.req(url(t, "dir/a.txt"))).text()).toBe("two!");
  });

  it("If-Match with a wrong etag → 409 FILE_MODIFIED, nothing written; the right one (quoted or not) → 200", async () => {
    const t = await newTenant(app);
    const a = await put(t, "a.txt", "v1");
    for (const wrong of ['"nope"', "nope", `"${a.body.etag}x"`]) {
      const r = await put(t, "a.txt", "v2", { "if-match": wrong });
      expect(r.status, wrong).toBe(409);
      expect(r.body.error.code).toBe("FILE_MODIFIED");
      expect(r.body.error.details.current_etag).toBe(a.body.etag);
    }
    expect(await (await t.req(url(t, "a.txt"))).text()).toBe("v1");
    const ok = await put(t, "a.txt", "v2", { "if-match": `"${a.body.etag}"` });
    expect(ok.status).toBe(200);
    const ok2 = await put(t, "a.txt", "v3", { "if-match": ok.body.etag });
    expect(ok2.status).toBe(200);
    expect(await (await t.req(url(t, "a.txt"))).text()).toBe("v3");
    // The old etag no longer matches.
    expect((await put(t, "a.txt", "v4", { "if-match": `"${a.body.etag}"` })).status).toBe(409);
  });

  it("If-Match as DELETE reads it: a list or * matches the version there; a tag quoted twice is a mismatch (409), never a 500 from the storage", async () => {
    const t = await newTenant(app);
    const a = await put(t, "q.txt", "v1");
    // R2 refused a condition still in quotes with a TypeError: a client that quoted a quoted ETag got 500 INTERNAL
    for (const doubled of [`""${a.body.etag}""`, '""nope""']) {
      const r = await put(t, "q.txt", "v2", { "if-match": doubled });
      expect(r.status, doubled).toBe(409);
      expect(r.body.error).toMatchObject({ code: "FILE_MODIFIED", details: { current_etag: a.body.etag } });
    }
    expect(await (await t.req(url(t, "q.txt"))).text()).toBe("v1");
    const listed = await put(t, "q.txt", "v2", { "if-match": `"nope", "${a.body.etag}"` });
    expect(listed.status).toBe(200);
    expect((await put(t, "q.txt", "v3", { "if-match": "*" })).status).toBe(200);
    expect(await (await t.req(url(t, "q.txt"))).text()).toBe("v3");
    const none = await put(t, "absent.txt", "x", { "if-match": "*" });
    expect(none.body.error).toMatchObject({ code: "FILE_MODIFIED", details: { current_etag: null } });
    expect((await t.req(url(t, "absent.txt"))).status).toBe(404);
  });

  it("If-Match on a missing file → 409 FILE_MODIFIED (nothing created)", async () => {
    const t = await newTenant(app);
    const r = await put(t, "missing.txt", "x", { "if-match": '"abc"' });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("FILE_MODIFIED");
    expect((await t.req(url(t, "missing.txt"))).status).toBe(404);
  });

  it("a stale If-Match says in the raw route's terms what to do (HEAD/GET for the current ETag, retry with it); the tools keep theirs", async () => {
    const t = await newTenant(app, UNGATED);
    const v1 = await put(t, "s.txt", "v1");
    const v2 = await put(t, "s.txt", "v2");
    const stale = await put(t, "s.txt", "v3", { "if-match": `"${v1.body.etag}"` });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("FILE_MODIFIED");
    expect(stale.body.error.message).toBe(
      `s.txt is not the version If-Match names (its ETag is now "${v2.body.etag}"); nothing was written. Take the current ETag (HEAD or GET the file without If-Match), make sure that version is the one you mean, then retry with If-Match: "<that ETag>".`,
    );
    expect(stale.body.error.message).not.toMatch(/read it/i);
    expect(stale.body.error.details).toEqual({ path: "s.txt", current_etag: v2.body.etag });
    const missing = await put(t, "gone.txt", "x", { "if-match": `"${v1.body.etag}"` });
    expect(missing.body.error.message).toBe("gone.txt does not exist, so no version of it matches If-Match; nothing was written. To create it, send the PUT without If-Match (If-None-Match: * creates only).");
    for (const method of ["GET", "DELETE"]) {
      const r = await t.req(url(t, "s.txt"), { method, headers: { "if-match": `"${v1.body.etag}"` } });
      expect((await errorOf(r)).message, method).toMatch(/^s\.txt is not the version If-Match names .*; nothing was (sent|deleted)\. Take the current ETag/);
    }
    expect(await (await t.req(url(t, "s.txt"))).text()).toBe("v2");
    // The tools' wording is theirs: a file changed after the session read it.
    expect((await t.call("read", { file_path: "s.txt" })).status).toBe(200);
    await put(t, "s.txt", "v4");
    const edit = await t.call("edit", { file_path: "s.txt", old_string: "v4", new_string: "v5" });
    expect(edit.body.error.code).toBe("FILE_MODIFIED");
    expect(edit.body.error.message).toBe("s.txt was modified since you last read it. Read it again, then retry.");
  });

  it("If-None-Match: * creates a new file (201) and refuses an existing one with 409 ALREADY_EXISTS", async () => {
    const t = await newTenant(app);
    const a = await put(t, "new.txt", "first", { "if-none-match": "*" });
    expect(a.status).toBe(201);
    const b = await put(t, "new.txt", "second", { "if-none-match": "*" });
    expect(b.status).toBe(409);
    expect(b.body.error.code).toBe("ALREADY_EXISTS");
    expect(await (await t.req(url(t, "new.txt"))).text()).toBe("first");
  });

  it("If-Match and If-None-Match: * together → 400", async () => {
    const t = await newTenant(app);
    const r = await put(t, "a.txt", "x", { "if-match": '"a"', "if-none-match": "*" });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("INVALID_ARGUMENT");
  });

  it("without a Content-Length (streamed body) → 400 INVALID_ARGUMENT, nothing written", async () => {
    const t = await newTenant(app);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode("streamed"));
        c.close();
      },
    });
    const res = await t.req(url(t, "s.txt"), { method: "PUT", body: stream, duplex: "half" } as RequestInit);
    expect(res.status).toBe(400);
    const e = await errorOf(res);
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toMatch(/Content-Length/);
    expect((await t.req(url(t, "s.txt"))).status).toBe(404);
  });

  it("a malformed Content-Length → 400", async () => {
    const t = await newTenant(app);
    for (const cl of ["abc", "-1", "1.5", ""]) {
      const res = await t.req(url(t, "x.txt"), { method: "PUT", headers: { "content-length": cl }, body: "x" });
      expect(res.status, cl).toBe(400);
    }
  });

  it("an empty file", async () => {
    const t = await newTenant(app);
    const r = await put(t, "empty", new Uint8Array());
    expect(r.status).toBe(201);
    expect(r.body.size).toBe(0);
    const g = await t.req(url(t, "empty"));
    expect(g.status).toBe(200);
    expect((await g.arrayBuffer()).byteLength).toBe(0);
  });

  it("refuses a path below a file (NOT_A_DIRECTORY) or onto a directory (IS_DIRECTORY)", async () => {
    const t = await newTenant(app);
    await upload(t, "f.txt", "x");
    await upload(t, "d/inner.txt", "x");
    const below = await put(t, "f.txt/child", "x");
    expect(below.status).toBe(400);
    expect(below.body.error.code).toBe("NOT_A_DIRECTORY");
    const onto = await put(t, "d", "x");
    expect(onto.status).toBe(400);
    expect(onto.body.error.code).toBe("IS_DIRECTORY");
  });

  it("keeps the Content-Type", async () => {
    const t = await newTenant(app);
    await put(t, "page.html", "<p>hi</p>", { "content-type": "text/html; charset=utf-8" });
    const g = await t.req(url(t, "page.html"));
    expect(g.headers.get("content-type")).toBe("text/html; charset=utf-8");
    await upload(t, "blob", "x");
    expect((await t.req(url(t, "blob"))).headers.get("content-type")).toBe("application/octet-stream");
  });
});

describe("GET and HEAD", () => {
  it("returns every byte value 0..255 unchanged, with headers", async () => {
    const t = await newTenant(app);
    const bytes = new Uint8Array(256).map((_, i) => i);
    const p = await put(t, "bin/all.bin", bytes);
    const g = await t.req(url(t, "bin/all.bin"));
    expect(g.status).toBe(200);
    expect(new Uint8Array(await g.arrayBuffer())).toEqual(bytes);
    expect(g.headers.get("etag")).toBe(`"${p.body.etag}"`);
    expect(g.headers.get("content-length")).toBe("256");
    expect(g.headers.get("accept-ranges")).toBe("bytes");
    expect(Number.isNaN(Date.parse(g.headers.get("last-modified") ?? ""))).toBe(false);
  });

  it("returns a 5 MB body byte for byte", async () => {
    const t = await newTenant(app);
    const bytes = randomBytes(5 * 1024 * 1024 + 7);
    const p = await put(t, "big.bin", bytes);
    expect(p.status).toBe(201);
    expect(p.body.size).toBe(bytes.length);
    const g = await t.req(url(t, "big.bin"));
    expect(g.status).toBe(200);
    expect(g.headers.get("content-length")).toBe(String(bytes.length));
    const back = new Uint8Array(await g.arrayBuffer());
    expect(back.length).toBe(bytes.length);
    expect(await sha256Hex(back)).toBe(await sha256Hex(bytes));
  });

  it("HEAD gives the headers and no body", async () => {
    const t = await newTenant(app);
    const p = await put(t, "h.txt", "hello world");
    const h = await t.req(url(t, "h.txt"), { method: "HEAD" });
    expect(h.status).toBe(200);
    expect(h.headers.get("etag")).toBe(`"${p.body.etag}"`);
    expect(h.headers.get("content-length")).toBe("11");
    expect((await h.arrayBuffer()).byteLength).toBe(0);
    const typed = await t.req(url(t, "page.html"), { method: "PUT", headers: { "content-type": "text/html", "content-length": "4" }, body: "<p/>" });
    expect(typed.status).toBe(201);
    expect((await t.req(url(t, "page.html"), { method: "HEAD" })).headers.get("content-type")).toBe("text/html");
    const missing = await t.req(url(t, "nope.txt"), { method: "HEAD" });
    expect(missing.status).toBe(404);
  });

  it("Range → 206 with Content-Range", async () => {
    const t = await newTenant(app);
    const bytes = new Uint8Array(256).map((_, i) => i);
    await put(t, "r.bin", bytes);
    const cases: [string, number, number][] = [
      ["bytes=10-19", 10, 19],
      ["bytes=0-0", 0, 0],
      ["bytes=250-", 250, 255],
      ["bytes=-5", 251, 255],
      ["bytes=200-999", 200, 255],
      ["bytes=0-255", 0, 255],
    ];
    for (const [range, from, to] of cases) {
      const g = await t.req(url(t, "r.bin"), { headers: { range } });
      expect(g.status, range).toBe(206);
      expect(g.headers.get("content-range"), range).toBe(`bytes ${from}-${to}/256`);
      expect(g.headers.get("content-length"), range).toBe(String(to - from + 1));
      expect(new Uint8Array(await g.arrayBuffer()), range).toEqual(bytes.slice(from, to + 1));
    }
  });

  it("a Range on an empty file → 200 with the (empty) body, never a malformed Content-Range", async () => {
    const t = await newTenant(app);
    await put(t, "empty.bin", new Uint8Array());
    for (const range of ["bytes=-5", "bytes=0-", "bytes=0-0"]) {
      const g = await t.req(url(t, "empty.bin"), { headers: { range } });
      expect(g.status, range).toBe(200);
      expect(g.headers.get("content-range"), range).toBeNull();
      expect(g.headers.get("content-length"), range).toBe("0");
      expect((await g.arrayBuffer()).byteLength).toBe(0);
    }
  });

  it("an unsatisfiable or unsupported Range → 400", async () => {
    const t = await newTenant(app);
    await put(t, "r.bin", new Uint8Array(10));
    for (const range of ["bytes=10-", "bytes=5-2", "bytes=-0", "bytes=0-1,3-4", "items=0-1", "bytes=-", "bytes=a-b"]) {
      const g = await t.req(url(t, "r.bin"), { headers: { range } });
      expect(g.status, range).toBe(400);
      expect((await errorOf(g)).code).toBe("INVALID_ARGUMENT");
    }
  });

  it("If-None-Match with the current etag → 304 without a body; another etag → 200", async () => {
    const t = await newTenant(app);
    const p = await put(t, "c.txt", "cached");
    const etag = `"${p.body.etag}"`;
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const g = await t.req(url(t, "c.txt"), { headers: { "if-none-match": inm } });
      expect(g.status, inm).toBe(304);
      expect(g.headers.get("etag")).toBe(etag);
      expect((await g.arrayBuffer()).byteLength).toBe(0);
    }
    const g = await t.req(url(t, "c.txt"), { headers: { "if-none-match": '"other"' } });
    expect(g.status).toBe(200);
    expect(await g.text()).toBe("cached");
    // After a change, the old etag no longer gives 304.
    await put(t, "c.txt", "changed");
    const after = await t.req(url(t, "c.txt"), { headers: { "if-none-match": etag } });
    expect(after.status).toBe(200);
    expect(await after.text()).toBe("changed");
  });

  it("If-Match on GET: a wrong etag → 409 FILE_MODIFIED, the right one → 200", async () => {
    const t = await newTenant(app);
    const p = await put(t, "m.txt", "x");
    expect((await t.req(url(t, "m.txt"), { headers: { "if-match": '"nope"' } })).status).toBe(409);
    expect((await t.req(url(t, "m.txt"), { headers: { "if-match": `"${p.body.etag}"` } })).status).toBe(200);
  });

  it("a missing file → 404 NOT_FOUND naming similar paths; a directory → its listing", async () => {
    const t = await newTenant(app);
    await upload(t, "src/index.ts", "x");
    const g = await t.req(url(t, "src/indx.ts"));
    expect(g.status).toBe(404);
    const e = await errorOf(g);
    expect(e.code).toBe("NOT_FOUND");
    expect(e.details.similar).toContain("src/index.ts");
    const d = await t.req(url(t, "src"));
    expect(d.status).toBe(200);
    expect(((await d.json()) as any).entries.map((e: any) => e.path)).toEqual(["src/index.ts"]);
  });
});

describe("DELETE", () => {
  it("deletes a file; with If-Match only when it matches", async () => {
    const t = await newTenant(app);
    const p = await put(t, "d.txt", "x");
    const wrong = await t.req(url(t, "d.txt"), { method: "DELETE", headers: { "if-match": '"nope"' } });
    expect(wrong.status).toBe(409);
    expect((await errorOf(wrong)).code).toBe("FILE_MODIFIED");
    expect((await t.req(url(t, "d.txt"))).status).toBe(200);

    const right = await t.req(url(t, "d.txt"), { method: "DELETE", headers: { "if-match": `"${p.body.etag}"` } });
    expect(right.status).toBe(200);
    expect(await right.json()).toEqual({ deleted: true, path: "d.txt" });
    expect((await t.req(url(t, "d.txt"))).status).toBe(404);

    await upload(t, "e.txt", "x");
    expect((await t.req(url(t, "e.txt"), { method: "DELETE" })).status).toBe(200);
    expect((await t.req(url(t, "e.txt"))).status).toBe(404);
  });

  it("If-Match: * deletes an existing file", async () => {
    const t = await newTenant(app);
    await upload(t, "star.txt", "x");
    const r = await t.req(url(t, "star.txt"), { method: "DELETE", headers: { "if-match": "*" } });
    expect(r.status).toBe(200);
    expect((await t.req(url(t, "star.txt"))).status).toBe(404);
  });

  it("a missing file → 404, a directory → 400 IS_DIRECTORY (nothing deleted)", async () => {
    const t = await newTenant(app);
    await upload(t, "dir/x.txt", "x");
    expect((await t.req(url(t, "nope.txt"), { method: "DELETE" })).status).toBe(404);
    const d = await t.req(url(t, "dir"), { method: "DELETE" });
    expect(d.status).toBe(400);
    expect((await errorOf(d)).code).toBe("IS_DIRECTORY");
    expect((await t.req(url(t, "dir/x.txt"))).status).toBe(200);
  });
});

describe("paths in the URL", () => {
  it("traversal in the URL → 400 INVALID_PATH, and nothing of the tenant changes", async () => {
    const t = await newTenant(app);
    await upload(t, "a.txt", "x");
    const before = await snapshot(t.tenant);
    const attempts = [
      "..%2f..%2fx",
      "..%2F..%2Fx",
      "%2e%2e%2f%2e%2e%2fx",
      "%2E%2E%2Fmeta.json",
      "a/..%2f..%2f..%2fx",
      "..%5c..%5cx",
      "a%5cb",
      "%2e%2e%2f",
      "a%00b",
      "a%0ab",
      "%2e%2e%2e",
      "%zz",
      "%e9", // not UTF-8
      "%ed%a0%80", // an encoded lone surrogate
    ];
    for (const a of attempts) {
      for (const method of ["GET", "HEAD", "PUT", "DELETE"]) {
        const res = await t.req(url(t, a), { method, ...(method === "PUT" ? { headers: { "content-length": "1" }, body: "x" } : {}) });
        expect(res.status, `${method} ${a}`).toBe(400);
        if (method !== "HEAD") expect((await errorOf(res)).code, `${method} ${a}`).toBe("INVALID_PATH");
      }
    }
    expect(await snapshot(t.tenant)).toEqual(before);
  });

  it("bare '%2e%2e' segments are resolved by the URL parser before the app sees them: never a file outside the workspace", async () => {
    const t = await newTenant(app);
    await upload(t, "a.txt", "x");
    const before = await snapshot(t.tenant);
    for (const a of ["%2e%2e/x", "%2e%2e/%2e%2e/x", "a/%2e%2e/%2e%2e/%2e%2e/x", "../x", "../../../x", "%2e%2e/%2e%2e/%2e%2e/%2e%2e/x"]) {
      for (const method of ["GET", "PUT", "DELETE"]) {
        const res = await t.req(url(t, a), { method, ...(method === "PUT" ? { headers: { "content-length": "1" }, body: "x" } : {}) });
        // Whatever route the resolved URL lands on, it is an error: no write, no read of another file.
        expect(res.status, `${method} ${a}`).toBeGreaterThanOrEqual(400);
      }
    }
    expect(await snapshot(t.tenant)).toEqual(before);
    // A URL whose dot segments resolve back into the same workspace names that workspace's file.
    const same = await t.req(url(t, "%2e%2e/%2e%2e/main/files/a.txt"));
    expect(same.status).toBe(200);
    expect(await same.text()).toBe("x");
  });

  it("the root /files/ → 400 IS_DIRECTORY for PUT and DELETE (GET lists it)", async () => {
    const t = await newTenant(app);
    for (const method of ["PUT", "DELETE"]) {
      const res = await t.req(`/v1/workspaces/${t.ws}/files/`, { method, ...(method === "PUT" ? { headers: { "content-length": "1" }, body: "x" } : {}) });
      expect(res.status, method).toBe(400);
      expect((await errorOf(res)).code).toBe("IS_DIRECTORY");
    }
    for (const p of ["%2f", ".", "a/..", "./"]) {
      const res = await t.req(url(t, p), { method: "PUT", headers: { "content-length": "1" }, body: "x" });
      expect(res.status, p).toBeGreaterThanOrEqual(400);
    }
    // No file was created anywhere in the workspace.
    expect((await snapshot(t.tenant)).filter((k) => k.includes("/f/"))).toEqual([]);
  });

  it("a percent-encoded workspace id in the URL names the same workspace", async () => {
    const t = await newTenant(app);
    await upload(t, "x.txt", "right");
    await upload(t, "a/v1/workspaces/main/files/x.txt", "wrong");
    const g = await t.req("/v1/workspaces/m%61in/files/x.txt");
    expect(g.status).toBe(200);
    expect(await g.text()).toBe("right");
    const g2 = await t.req("/v1/workspaces/m%61in/files/a/v1/workspaces/main/files/x.txt");
    expect(g2.status).toBe(200);
    expect(await g2.text()).toBe("wrong");
  });

  it("round-trips Unicode paths; NFD and NFC in the URL name the same file", async () => {
    const t = await newTenant(app);
    const nfc = "café/résumé.txt";
    const nfd = nfc.normalize("NFD");
    const p = await put(t, enc(nfd), "bonjour");
    expect(p.status).toBe(201);
    expect(p.body.path).toBe(nfc);
    // Stored under the NFC key.
    expect(await env.FILES.head(fileKey(t.tenant, t.ws, nfc))).not.toBeNull();
    expect(await env.FILES.head(`${filesPrefix(t.tenant, t.ws)}${nfd}`)).toBeNull();
    for (const form of [nfc, nfd]) {
      const g = await t.req(url(t, enc(form)));
      expect(g.status).toBe(200);
      expect(await g.text()).toBe("bonjour");
    }
    // The tools see the same file.
    const r = await t.call("read", { file_path: nfd });
    expect(r.body.ok).toBe(true);
    expect(r.body.data.file_path).toBe(nfc);

    for (const name of ["日本語/ファイル.md", "emoji 😀/🎉.txt", "spaces in name.txt", "100%.txt", "a+b=c&d.txt", "#hash?.txt", "%2e%2e"]) {
      const up = await put(t, enc(name), name);
      expect(up.status, name).toBe(201);
      expect(up.body.path).toBe(name);
      const g = await t.req(url(t, enc(name)));
      expect(g.status, name).toBe(200);
      expect(await g.text()).toBe(name);
    }
    // "%2e%2e" above was a literal name, not a parent.
    expect(await env.FILES.head(fileKey(t.tenant, t.ws, "%2e%2e"))).not.toBeNull();
  });

  it("an encoded '/' is a separator, like a plain one", async () => {
    const t = await newTenant(app);
    const p = await put(t, "a%2Fb.txt", "x");
    expect(p.body.path).toBe("a/b.txt");
    expect((await t.req(url(t, "a/b.txt"))).status).toBe(200);
  });
});

describe("access", () => {
  it("every method → 401 without a key, 404 on an unknown workspace", async () => {
    const t = await newTenant(app);
    await upload(t, "a.txt", "x");
    for (const method of ["GET", "HEAD", "PUT", "DELETE"]) {
      const res = await app.request(url(t, "a.txt"), { method, ...(method === "PUT" ? { headers: { "content-length": "1" }, body: "x" } : {}) });
      expect(res.status, method).toBe(401);
      const other = await t.req(`/v1/workspaces/nope/files/a.txt`, { method, ...(method === "PUT" ? { headers: { "content-length": "1" }, body: "x" } : {}) });
      expect(other.status, method).toBe(404);
      const bad = await t.req(`/v1/workspaces/NOPE/files/a.txt`, { method, ...(method === "PUT" ? { headers: { "content-length": "1" }, body: "x" } : {}) });
      expect(bad.status, method).toBe(404);
    }
    expect(await (await t.req(url(t, "a.txt"))).text()).toBe("x");
    // Nothing was created for the unknown workspaces.
    const listed = await env.FILES.list({ prefix: tenantWorkspacesPrefix(t.tenant), delimiter: "/" });
    expect(listed.delimitedPrefixes).toEqual([`${tenantWorkspacesPrefix(t.tenant)}${t.ws}/`]);
  });
});
