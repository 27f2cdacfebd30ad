/**
 * write and edit write their undo record BESIDE the file's PUT, naming the etag the PUT will leave
 * (the MD5 of the bytes: StorageDriver.contentEtags), keep small before-images inside the record
 * (lib/workspace/undo-journal.ts, Workspace.put), and write no session record: the version carries the session
 * as its writer (lib/workspace/session-files.ts). Through HTTP, real local R2: a refused PUT leaves no
 * undo record and the session does not know the other writer's version; undo of an inline
 * before-image is exact; undo refuses when the file changed since; a storage whose etags are not
 * what was expected gets its undo record repaired.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { md5Hex } from "../../../../lib/storage/md5.js";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import type { StorageDriver } from "../../../../lib/storage/types.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { encodeBase64 } from "../../../../lib/shared/text.js";
import { INLINE_BYTES } from "../../../../lib/workspace/undo-journal.js";
import { newTenant, testApp, upload, type Tenant } from "../../../helpers.js";
import { rawGet, tenantWithCreateRace, tenantWithOverwriteRace, withFile } from "../../../functions/file-helpers.js";

const app = testApp();

const undo = (t: Tenant, body: Record<string, unknown>, session = "s1") =>
  t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
const listed = async (t: Tenant, session = "s1") => ((await (await t.req(`/v1/workspaces/${t.ws}/undo?session=${session}`)).json()) as any).calls as { call_id: string; paths: string[] }[];

/** The keys of the workspace's undo objects (records r-, blobs b-, claims). */
async function undoKeys(t: Tenant): Promise<string[]> {
  const r = await env.FILES.list({ prefix: `t/${t.tenant}/w/${t.ws}/x/undo/` });
  return r.objects.map((o) => o.key);
}

describe("a refused PUT leaves no undo record and no session record naming another writer's version", () => {
  it("write over a file another writer changed just before the PUT: FILE_MODIFIED; nothing listed; the session must read again", async () => {
    const t = await tenantWithOverwriteRace("changed by someone else\n");
    await upload(t, "a.txt", "original\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    const w = await t.call("write", { file_path: "a.txt", content: "mine\n" });
    expect(w.body.error?.code, JSON.stringify(w.body)).toBe("FILE_MODIFIED");
    expect(await undoKeys(t)).toEqual([]);
    expect(await listed(t)).toEqual([]);
    expect((await undo(t, {})).body.error.code).toBe("NOT_FOUND");
    // The session never read the other writer's version: its next write is refused until it reads.
    const again = await t.call("edit", { file_path: "a.txt", old_string: "someone", new_string: "me" });
    expect(again.body.error?.code, JSON.stringify(again.body)).toBe("FILE_MODIFIED");
    expect(new TextDecoder().decode((await rawGet(t, "a.txt")).bytes)).toBe("changed by someone else\n");
  });

  it("create that another writer won: ALREADY_EXISTS; nothing listed; the session may not overwrite the winner's file unread", async () => {
    const t = await tenantWithCreateRace("created by someone else\n");
    const w = await t.call("write", { file_path: "new.txt", content: "mine\n" });
    expect(w.body.error?.code, JSON.stringify(w.body)).toBe("ALREADY_EXISTS");
    expect(await undoKeys(t)).toEqual([]);
    expect(await listed(t)).toEqual([]);
    const again = await t.call("write", { file_path: "new.txt", content: "mine again\n" });
    expect(["NOT_READ", "FILE_MODIFIED"]).toContain(again.body.error?.code);
  });

  it("20 concurrent edits in one session: one winner, and the session's undo lists that one call only; undo restores the version read", async () => {
    const t = await withFile("counter.ts", "export const value = 0;\n");
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => t.call("edit", { file_path: "counter.ts", old_string: "value = 0", new_string: `value = ${i + 1}` })));
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    for (const r of results) if (r.status !== 200) expect(r.body.error.code).toBe("FILE_MODIFIED");
    const calls = await listed(t);
    expect(calls.map((c) => c.call_id)).toEqual([winners[0]!.body.call_id]);
    expect((await undoKeys(t)).filter((k) => /\/r-[^/]+\.json$/.test(k))).toHaveLength(1);
    const u = await undo(t, {});
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    expect(new TextDecoder().decode((await rawGet(t, "counter.ts")).bytes)).toBe("export const value = 0;\n");
  });
});

describe("inline before-images (at most INLINE_BYTES): undo is exact; no blob is written", () => {
  const cases: [string, Uint8Array][] = [
    ["binary (every byte value)", Uint8Array.from({ length: 512 }, (_, i) => i % 256)],
    ["CRLF text", new TextEncoder().encode("line one\r\nline two\r\n\r\nend")],
    ["an empty file", new Uint8Array(0)],
    ["exactly INLINE_BYTES", new Uint8Array(INLINE_BYTES).fill(0x0a)],
  ];
  for (const [name, old] of cases) {
    it(`${name}: write over it, undo gives the same bytes and etag back`, async () => {
      const t = await newTenant(app);
      const etag = await upload(t, "f.bin", old);
      expect((await t.call("read", { file_path: "f.bin", encoding: "base64" })).status).toBe(200);
      const w = await t.call("write", { file_path: "f.bin", content: encodeBase64(new Uint8Array([1, 2, 3])), encoding: "base64" });
      expect(w.status, JSON.stringify(w.body)).toBe(200);
      expect(w.body.data.etag).toBe(md5Hex(new Uint8Array([1, 2, 3])));
      expect((await undoKeys(t)).filter((k) => k.includes("/b-"))).toEqual([]);
      const u = await undo(t, { call_id: w.body.call_id });
      expect(u.status, JSON.stringify(u.body)).toBe(200);
      const back = await rawGet(t, "f.bin");
      expect(back.bytes).toEqual(old);
      expect(back.etag).toBe(`"${etag}"`);
    });
  }

  it("a before-image over INLINE_BYTES goes to a blob, and undo still restores it", async () => {
    const t = await newTenant(app);
    const old = "x".repeat(INLINE_BYTES + 1);
    await upload(t, "big.txt", old);
    await t.call("read", { file_path: "big.txt" });
    const w = await t.call("write", { file_path: "big.txt", content: "small\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect((await undoKeys(t)).filter((k) => k.includes("/b-"))).toHaveLength(1);
    expect((await undo(t, { call_id: w.body.call_id })).status).toBe(200);
    expect(new TextDecoder().decode((await rawGet(t, "big.txt")).bytes)).toBe(old);
  });

  it("undo of an edit is refused (FILE_MODIFIED, nothing written) when the file changed since", async () => {
    const t = await withFile("a.txt", "alpha\n", await newTenant(app));
    const e = await t.call("edit", { file_path: "a.txt", old_string: "alpha", new_string: "bravo" });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    await upload(t, "a.txt", "changed by someone\n");
    const u = await undo(t, { call_id: e.body.call_id });
    expect(u.status).toBe(409);
    expect(u.body.error.code).toBe("FILE_MODIFIED");
    expect(new TextDecoder().decode((await rawGet(t, "a.txt")).bytes)).toBe("changed by someone\n");
  });
});

describe("a storage that claims content etags but returns others: the undo record written beside is repaired", () => {
  it("write, edit again unread, undo: all as if the etag had been known", async () => {
    const base = memoryDriver(); // etags m<version>-<size>, never the MD5
    const liar: StorageDriver = { ...base, contentEtags: true };
    const t = await newTenant(testApp({ storage: liar, kv: storageKeyValue(memoryDriver(), "kv/") }));
    const w = await t.call("write", { file_path: "a.txt", content: "one\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(w.body.data.etag).not.toBe(md5Hex(new TextEncoder().encode("one\n")));
    // The session record names the real version: edit needs no read.
    const e = await t.call("edit", { file_path: "a.txt", old_string: "one", new_string: "two" });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    const calls = await listed(t);
    expect(calls.map((c) => c.call_id)).toEqual([e.body.call_id, w.body.call_id]);
    expect((await undo(t, { call_id: e.body.call_id })).status).toBe(200);
    expect(await new Response((await base.get(`t/${t.tenant}/w/${t.ws}/f/a.txt`))!.body).text()).toBe("one\n");
  });
});

// r2Driver is what testApp uses; this file relies on it declaring content etags.
it("the R2 driver declares content etags", () => expect(r2Driver(env.FILES).contentEtags).toBe(true));

describe("the session knows the versions it wrote (the object's writer), without a KV record", () => {
  it("s1 writes: s1 edits again unread, s2 may not (NOT_READ); after a raw upload s1 may not either", async () => {
    const t = await newTenant(app);
    expect((await t.call("write", { file_path: "a.txt", content: "one\n" }, "s1")).status).toBe(200);
    expect(await env.KV.list({ prefix: `rec/${t.tenant}/${t.ws}/s1/` }).then((r) => r.keys)).toEqual([]);
    expect((await t.call("edit", { file_path: "a.txt", old_string: "one", new_string: "two" }, "s1")).status).toBe(200);
    expect((await t.call("edit", { file_path: "a.txt", old_string: "two", new_string: "six" }, "s2")).body.error?.code).toBe("NOT_READ");
    await upload(t, "a.txt", "two\n"); // same bytes, same etag, but no writer: the raw route is nobody's session
    expect((await t.call("edit", { file_path: "a.txt", old_string: "two", new_string: "six" }, "s1")).body.error?.code).toBe("NOT_READ");
    expect((await t.call("read", { file_path: "a.txt" }, "s1")).status).toBe(200);
    expect((await t.call("edit", { file_path: "a.txt", old_string: "two", new_string: "six" }, "s1")).status).toBe(200);
  });

  it("apply_patch: the files it adds and updates count as read (their writer), with no KV record written", async () => {
    const t = await newTenant(app);
    await upload(t, "b.txt", "b\n");
    const p = await t.call("apply_patch", { patch: "*** Begin Patch\n*** Add File: a.txt\n+alpha\n*** Update File: b.txt\n@@\n-b\n+bravo\n*** End Patch" }, "s1");
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    expect(await env.KV.list({ prefix: `rec/${t.tenant}/${t.ws}/s1/` }).then((r) => r.keys)).toEqual([]);
    expect((await t.call("edit", { file_path: "a.txt", old_string: "alpha", new_string: "A" }, "s1")).status).toBe(200);
    expect((await t.call("edit", { file_path: "b.txt", old_string: "bravo", new_string: "B" }, "s1")).status).toBe(200);
  });
});
