/**
 * Every tool and route over a workspace whose files live (partly) in the lower layer: a checkpoint
 * moves the files into a pack + manifest, then each reader must see them and each writer must keep
 * its conditional semantics over them (workerd, local R2, through HTTP).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant, UNGATED } from "../../helpers.js";
import { readModes, updateModes } from "../../../lib/layout/modes.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";

const app = testApp();

/** Raw upper objects of the workspace (what is not in the lower layer). */
async function upperKeys(t: Tenant, ws = t.ws): Promise<string[]> {
  const prefix = `t/${t.tenant}/w/${ws}/f/`;
  const r = await env.FILES.list({ prefix });
  return r.objects.map((o) => o.key.slice(prefix.length)).sort();
}

export async function checkpoint(t: Tenant, name = "cp", ws = t.ws) {
  const r = await t.req(`/v1/workspaces/${ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name }) });
  const body = (await r.json()) as any;
  expect(r.status, JSON.stringify(body)).toBe(201);
  return body;
}

/** A workspace whose files are all lower (sealed by a checkpoint) but `upper`. */
export async function layered(files: Record<string, string>, upper: Record<string, string> = {}): Promise<Tenant> {
  const t = await newTenant(app, UNGATED);
  for (const [p, c] of Object.entries(files)) await upload(t, p, c);
  await checkpoint(t, "base");
  expect(await upperKeys(t)).toEqual([]);
  for (const [p, c] of Object.entries(upper)) await upload(t, p, c);
  return t;
}

const base = { "src/a.ts": "export const a = 1;\nconst token = 'alpha';\n", "src/b.ts": "export const b = 2;\n", "README.md": "# demo\nhello lower\n", "docs/guide/intro.md": "intro\n" };

describe("reads over the lower layer", () => {
  it("read, ls, glob, find, grep see lower files merged with upper ones", async () => {
    const t = await layered(base, { "src/c.ts": "export const c = 3; // token upper\n" });
    const r = await t.call("read", { file_path: "src/a.ts" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.output).toContain("export const a = 1;");
    const page = await t.call("read", { file_path: "src/a.ts", offset: 2, limit: 1 });
    expect(page.body.output).toContain("token = 'alpha'");
    const ls = await t.call("ls", { path: "" });
    expect(ls.body.data.entries.map((e: any) => e.path)).toEqual(["docs", "src", "README.md"]);
    const lsSrc = await t.call("ls", { path: "src" });
    expect(lsSrc.body.data.entries.map((e: any) => e.path)).toEqual(["src/a.ts", "src/b.ts", "src/c.ts"]);
    const rec = await t.call("ls", { path: "", recursive: true });
    expect(rec.body.data.entries.filter((e: any) => e.type === "file").map((e: any) => e.path).sort()).toEqual(["README.md", "docs/guide/intro.md", "src/a.ts", "src/b.ts", "src/c.ts"]);
    const glob = await t.call("glob", { pattern: "**/*.ts", sort: "name" });
    expect(glob.body.data.matches.map((f: any) => f.path).sort()).toEqual(["src/a.ts", "src/b.ts", "src/c.ts"]);
    const find = await t.call("find", { pattern: "intro" });
    expect(find.body.output).toContain("docs/guide/intro.md");
    const grep = await t.call("grep", { pattern: "token", output_mode: "files_with_matches" });
    expect(grep.status, JSON.stringify(grep.body)).toBe(200);
    expect(grep.body.output).toContain("src/a.ts");
    expect(grep.body.output).toContain("src/c.ts");
    const raw = await t.req(`/v1/workspaces/${t.ws}/files/README.md`);
    expect(raw.status).toBe(200);
    expect(await raw.text()).toBe(base["README.md"]);
    const ranged = await t.req(`/v1/workspaces/${t.ws}/files/README.md`, { headers: { range: "bytes=2-5" } });
    expect(ranged.status).toBe(206);
    expect(await ranged.text()).toBe("demo");
    const head = await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("etag")).toBe(`"${await md5(base["src/b.ts"])}"`);
  });

  it("export streams lower and upper files", async () => {
    const t = await layered(base, { "new.txt": "upper\n", "src/b.ts": "export const b = 'upper over lower';\n" });
    const res = await t.req(`/v1/workspaces/${t.ws}/export`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-toolshed-files")).toBe("5");
    const gz = new Uint8Array(await res.arrayBuffer());
    const tarBytes = new Uint8Array(await new Response(new Blob([gz]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());
    const text = new TextDecoder().decode(tarBytes);
    expect(text).toContain("hello lower");
    expect(text).toContain("export const b = 'upper over lower';");
    expect(text).not.toContain("export const b = 2;");
    expect(text).toContain("export const a = 1;");
    expect(text).toContain("upper\n");
  });
});

async function md5(s: string): Promise<string> {
  const d = await crypto.subtle.digest("MD5", new TextEncoder().encode(s));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("writes over the lower layer", () => {
  it("write, edit and multi_edit over a lower file go to the upper layer; the etag guards them", async () => {
    const t = await layered(base);
    await t.call("read", { file_path: "src/a.ts" });
    const e = await t.call("edit", { file_path: "src/a.ts", old_string: "a = 1", new_string: "a = 10" });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    expect(await upperKeys(t)).toEqual(["src/a.ts"]);
    expect((await t.call("read", { file_path: "src/a.ts" })).body.output).toContain("a = 10");
    const m = await t.call("multi_edit", { file_path: "src/a.ts", edits: [{ old_string: "a = 10", new_string: "a = 11" }, { old_string: "alpha", new_string: "beta" }] });
    expect(m.status, JSON.stringify(m.body)).toBe(200);
    await t.call("read", { file_path: "src/b.ts" });
    const w = await t.call("write", { file_path: "src/b.ts", content: "rewritten\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`)).text()).toBe("rewritten\n");
    // create-only over a lower file is refused
    const again = await t.req(`/v1/workspaces/${t.ws}/files/README.md`, { method: "PUT", headers: { "if-none-match": "*", "content-length": "1" }, body: "x" });
    expect(again.status).toBe(409);
    // If-Match the lower etag: accepted once; the stale etag then refused
    const etag = await md5(base["README.md"]);
    const ok = await t.req(`/v1/workspaces/${t.ws}/files/README.md`, { method: "PUT", headers: { "if-match": `"${etag}"`, "content-length": "3" }, body: "new" });
    expect(ok.status).toBe(200);
    const stale = await t.req(`/v1/workspaces/${t.ws}/files/README.md`, { method: "PUT", headers: { "if-match": `"${etag}"`, "content-length": "3" }, body: "old" });
    expect(stale.status).toBe(409);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/README.md`)).text()).toBe("new");
  });


  it("a file edited back to its lower bytes (same etag above and below) is still editable, and its stale etag refused", async () => {
    const t = await layered(base);
    const lowerEtag = await md5(base["src/b.ts"]);
    await t.call("read", { file_path: "src/b.ts" });
    expect((await t.call("edit", { file_path: "src/b.ts", old_string: "b = 2", new_string: "b = 3" })).status).toBe(200);
    const back = await t.call("edit", { file_path: "src/b.ts", old_string: "b = 3", new_string: "b = 2" });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.data.etag ?? lowerEtag).toBe(lowerEtag);
    expect(await upperKeys(t)).toEqual(["src/b.ts"]); // an upper object whose etag is the lower one's
    const next = await t.call("edit", { file_path: "src/b.ts", old_string: "b = 2", new_string: "b = 4" });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`)).text()).toBe("export const b = 4;\n");
    // The raw route: If-Match the shared etag is accepted while it is current, refused once it is not.
    await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`, { method: "PUT", headers: { "content-length": String(base["src/b.ts"].length) }, body: base["src/b.ts"] });
    const ok = await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`, { method: "PUT", headers: { "if-match": `"${lowerEtag}"`, "content-length": "5" }, body: "five\n" });
    expect(ok.status).toBe(200);
    const stale = await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`, { method: "PUT", headers: { "if-match": `"${lowerEtag}"`, "content-length": "4" }, body: "six\n" });
    expect(stale.status).toBe(409);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`)).text()).toBe("five\n");
  });
  it("20 concurrent edits of one lower file: exactly one wins", async () => {
    const t = await layered(base);
    const sessions = Array.from({ length: 20 }, (_, i) => `s${i}`);
    for (const s of sessions) await t.call("read", { file_path: "src/b.ts" }, s);
    const rs = await Promise.all(sessions.map((s, i) => t.call("edit", { file_path: "src/b.ts", old_string: "b = 2", new_string: `b = ${100 + i}` }, s)));
    const wins = rs.filter((r) => r.status === 200);
    expect(wins.length, JSON.stringify(rs.map((r) => r.body.error?.code ?? "ok"))).toBe(1);
    expect(rs.filter((r) => r.status === 409).every((r) => r.body.error.code === "FILE_MODIFIED")).toBe(true);
    const content = await (await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`)).text();
    expect(content).toBe(`export const b = ${100 + rs.indexOf(wins[0]!)};\n`);
  });

  it("delete of a lower file leaves a whiteout: gone from read, ls, glob, grep, raw GET; recreate works", async () => {
    const t = await layered(base);
    const d = await t.call("delete", { path: "src/a.ts" });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect((await t.call("read", { file_path: "src/a.ts" })).body.error.code).toBe("NOT_FOUND");
    expect((await t.call("ls", { path: "src" })).body.data.entries.map((e: any) => e.path)).toEqual(["src/b.ts"]);
    expect((await t.call("glob", { pattern: "**/*.ts" })).body.data.matches.length).toBe(1);
    expect((await t.call("grep", { pattern: "alpha" })).body.output).not.toContain("src/a.ts");
    expect((await t.req(`/v1/workspaces/${t.ws}/files/src/a.ts`)).status).toBe(404);
    // the last lower file of a directory deleted: the directory goes too
    expect((await t.call("delete", { path: "docs/guide/intro.md" })).status).toBe(200);
    expect((await t.call("ls", { path: "" })).body.data.entries.map((e: any) => e.path)).toEqual(["src", "README.md"]);
    // create over a whiteout
    const w = await t.call("write", { file_path: "src/a.ts", content: "again\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/src/a.ts`)).text()).toBe("again\n");
    // raw DELETE with a stale If-Match of a lower file is refused
    const stale = await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`, { method: "DELETE", headers: { "if-match": '"0123"' } });
    expect(stale.status).toBe(409);
    const del = await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`, { method: "DELETE", headers: { "if-match": `"${await md5(base["src/b.ts"])}"` } });
    expect(del.status).toBeLessThan(300);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/src/b.ts`)).status).toBe(404);
  });

  it("move and copy of lower files and directories", async () => {
    const t = await layered(base);
    const mv = await t.call("move", { from: "src/a.ts", to: "lib/a.ts" });
    expect(mv.status, JSON.stringify(mv.body)).toBe(200);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/src/a.ts`)).status).toBe(404);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/lib/a.ts`)).text()).toBe(base["src/a.ts"]);
    const cp = await t.call("copy", { from: "docs", to: "docs2" });
    expect(cp.status, JSON.stringify(cp.body)).toBe(200);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/docs2/guide/intro.md`)).text()).toBe("intro\n");
    const mvDir = await t.call("move", { from: "docs", to: "old-docs" });
    expect(mvDir.status, JSON.stringify(mvDir.body)).toBe(200);
    expect((await t.call("ls", { path: "" })).body.data.entries.map((e: any) => e.path)).toEqual(["docs2", "lib", "old-docs", "src", "README.md"]);
    const rm = await t.call("delete", { path: "old-docs", recursive: true });
    expect(rm.status, JSON.stringify(rm.body)).toBe(200);
    expect((await t.call("find", { pattern: "intro" })).body.output).not.toContain("old-docs");
  });
});

describe("explicit directories in the lower layer", () => {
  it("an empty directory sealed by a checkpoint stays listed; rmdir whites it out; mkdir makes it again", async () => {
    const t = await newTenant(app, UNGATED);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/empty/inner/`, { method: "PUT", headers: { "content-length": "0" } })).status).toBe(201);
    await upload(t, "f.txt", "f");
    await checkpoint(t);
    expect(await upperKeys(t)).toEqual([]);
    expect((await t.call("ls", { path: "" })).body.data.entries.map((e: any) => `${e.path}:${e.type}`)).toEqual(["empty:directory", "f.txt:file"]);
    expect((await t.call("ls", { path: "empty" })).body.data.entries.map((e: any) => e.path)).toEqual(["empty/inner"]);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/empty/inner/`, { method: "PUT", headers: { "content-length": "0" } })).status).toBe(200);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/empty/inner/`, { method: "DELETE" })).status).toBeLessThan(300);
    expect((await t.call("ls", { path: "" })).body.data.entries.map((e: any) => e.path)).toEqual(["f.txt"]);
    expect((await t.call("write", { file_path: "empty/inner", content: "now a file" })).status).toBe(200);
    expect((await t.call("find", { pattern: "inner" })).body.output).toContain("empty/inner");
  });
});

describe("checkpoint, restore, fork, diff", () => {
  it("checkpoint → change → restore gives the checkpoint's content back; diff shows the changes", async () => {
    const t = await layered(base);
    const cps = await (await t.req(`/v1/workspaces/${t.ws}/checkpoints`)).json() as any;
    const first = cps.checkpoints[0];
    expect(first).toMatchObject({ name: "base", files: 4 });
    await t.call("read", { file_path: "src/a.ts" });
    expect((await t.call("edit", { file_path: "src/a.ts", old_string: "a = 1", new_string: "a = 2" })).status).toBe(200);
    expect((await t.call("delete", { path: "src/b.ts" })).status).toBe(200);
    await upload(t, "added.txt", "added\n");
    const diff = await (await t.req(`/v1/workspaces/${t.ws}/diff?from=${first.id}`)).json() as any;
    expect(diff.changes.map((c: any) => [c.path, c.status])).toEqual([["added.txt", "added"], ["src/a.ts", "changed"], ["src/b.ts", "deleted"]]);
    expect(diff.changes[1].diff).toContain("-export const a = 1;");
    expect(diff.changes[1].diff).toContain("+export const a = 2;");
    const second = await checkpoint(t, "second");
    expect(second.sealed).toBe(3);
    expect(await upperKeys(t)).toEqual([]);
    const diff2 = await (await t.req(`/v1/workspaces/${t.ws}/diff?from=${first.id}&to=${second.id}&limit=1`)).json() as any;
    expect(diff2.changes.length).toBe(1);
    expect(diff2.cursor).toBe("added.txt");
    const r = await t.req(`/v1/workspaces/${t.ws}/checkpoints/${first.id}/restore`, { method: "POST" });
    const rb = (await r.json()) as any;
    expect(r.status, JSON.stringify(rb)).toBe(200);
    expect(rb.conflicts).toEqual([]);
    for (const [p, c] of Object.entries(base)) expect(await (await t.req(`/v1/workspaces/${t.ws}/files/${p}`)).text()).toBe(c);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/added.txt`)).status).toBe(404);
    // an upper change after the restore, then restore again: removed
    await upload(t, "later.txt", "x");
    const again = (await (await t.req(`/v1/workspaces/${t.ws}/checkpoints/${second.id}/restore`, { method: "POST" })).json()) as any;
    expect(again.removed).toBe(1);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/later.txt`)).status).toBe(404);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/added.txt`)).text()).toBe("added\n");
  });

  it("diff without from, or with a limit that is not a number: 400 naming the query parameter in plain words", async () => {
    const t = await layered(base);
    const r = await t.req(`/v1/workspaces/${t.ws}/diff`);
    const body = (await r.json()) as any;
    expect(r.status).toBe(400);
    expect(body.error.code).toBe("INVALID_ARGUMENT");
    expect(body.error.message).toMatch(/^Missing required query parameter 'from'\. Fix the request and retry; GET \/openapi\.json describes/);
    expect(body.error.message).not.toMatch(/undefined|Invalid input/);
    expect(body.error.details.issues).toEqual([{ path: "from", message: "Missing required query parameter 'from'" }]);
    const cp = (await (await t.req(`/v1/workspaces/${t.ws}/checkpoints`)).json() as any).checkpoints[0];
    const bad = (await (await t.req(`/v1/workspaces/${t.ws}/diff?from=${cp.id}&limit=ten`)).json()) as any;
    expect(bad.error.message).toContain(`Query parameter 'limit' must be a number, got "ten"`);
  });

  it("restore racing writers loses no acknowledged write", async () => {
    const t = await layered(base);
    const cp = (await (await t.req(`/v1/workspaces/${t.ws}/checkpoints`)).json() as any).checkpoints[0];
    await upload(t, "u.txt", "u0");
    const writes = Array.from({ length: 10 }, (_, i) => t.req(`/v1/workspaces/${t.ws}/files/w${i}.txt`, { method: "PUT", headers: { "content-length": "2" }, body: `w${i}` }).then((r) => r.status));
    const [restore, ...statuses] = await Promise.all([t.req(`/v1/workspaces/${t.ws}/checkpoints/${cp.id}/restore`, { method: "POST" }).then(async (r) => ({ status: r.status, body: (await r.json()) as any })), ...writes]);
    expect(restore.status, JSON.stringify(restore.body)).toBe(200);
    // Every acknowledged write is still there, or was removed by the restore itself (it was listed
    // before the switch, so the restore counts it in `removed`): nothing else makes one vanish.
    let absent = 0;
    for (let i = 0; i < statuses.length; i++) {
      expect(statuses[i]).toBeLessThan(300);
      const got = await t.req(`/v1/workspaces/${t.ws}/files/w${i}.txt`);
      if (got.status === 200) expect(await got.text()).toBe(`w${i}`);
      else absent++;
    }
    expect(restore.body.removed).toBe(1 + absent); // u.txt, listed before the restore began, and the absent ones
  });

  it("a fork and its origin evolve independently; fork from a given checkpoint", async () => {
    const t = await layered(base, { "up.txt": "upper of origin\n" });
    const f = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "fork1", from_workspace: t.ws }) });
    const fb = (await f.json()) as any;
    expect(f.status, JSON.stringify(fb)).toBe(201);
    const fork = { ...t, ws: "fork1", call: (tool: string, args: unknown, s = "s1") => t.req(`/v1/workspaces/fork1/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": s }, body: JSON.stringify(args) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any })) };
    expect(await (await t.req(`/v1/workspaces/fork1/files/up.txt`)).text()).toBe("upper of origin\n");
    await fork.call("read", { file_path: "src/a.ts" });
    expect((await fork.call("edit", { file_path: "src/a.ts", old_string: "a = 1", new_string: "a = 'fork'" })).status).toBe(200);
    await upload(t, "src/a.ts", "origin changed\n");
    expect(await (await t.req(`/v1/workspaces/fork1/files/src/a.ts`)).text()).toContain("a = 'fork'");
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/src/a.ts`)).text()).toBe("origin changed\n");
    expect((await fork.call("delete", { path: "README.md" })).status).toBe(200);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/README.md`)).status).toBe(200);
    const f2 = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "fork2", from_workspace: t.ws, checkpoint: fb.checkpoint }) });
    expect(f2.status).toBe(201);
    expect(await (await t.req(`/v1/workspaces/fork2/files/src/a.ts`)).text()).toBe(base["src/a.ts"]);
  });

  it("executable bits go with a checkpoint: a fork has them, a restore brings them back", async () => {
    const t = await layered(base);
    const d = r2Driver(env.FILES);
    await updateModes(d, t.tenant, t.ws, { add: ["src/a.ts"], remove: [] });
    const cp = await checkpoint(t, "with modes");
    expect(cp.exec).toEqual(["src/a.ts"]);
    const f = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "forkm", from_workspace: t.ws, checkpoint: cp.id }) });
    expect(f.status).toBe(201);
    expect((await readModes(d, t.tenant, "forkm")).exec).toEqual(["src/a.ts"]);
    await updateModes(d, t.tenant, t.ws, { add: ["src/b.ts"], remove: ["src/a.ts"] });
    expect((await t.req(`/v1/workspaces/${t.ws}/checkpoints/${cp.id}/restore`, { method: "POST" })).status).toBe(200);
    expect((await readModes(d, t.tenant, t.ws)).exec).toEqual(["src/a.ts"]);
  });
});
