/**
 * No server-side path follows a symlink out of the tenant's prefix (issue #26), walked over every
 * tool the app lists (read from GET /v1/tools, not a list kept by hand) and the raw routes: a
 * workspace holds hostile links (absolute, climbing above the root, `..`, through a directory link,
 * a loop) and every path-like argument of every tool is given each of them, other required
 * arguments filled with the least their schema accepts. Another tenant's secret, a file of this
 * tenant's other workspace and the host's /etc/passwd appear in no answer, the other tenant's
 * storage is unchanged, and no call is a 5xx.
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp, UNGATED, upload } from "../helpers.js";
import { tar } from "../lib/archive/archives.js";
import { importReq, snapshot } from "../lib/archive/helpers.js";

const SECRET = "other-tenant-secret-5b2e";
const SIBLING = "sibling-workspace-secret-91c0";
const HOST = "root:x:0:0";

const HOSTILE_LINKS = [
  { name: "abs", type: "2", linkname: "/etc/passwd" },
  { name: "up", type: "2", linkname: "../../../../t/other/w/main/f/secret.txt" },
  { name: "dotdot", type: "2", linkname: ".." },
  { name: "sib", type: "2", linkname: "../sibling/secret.txt" },
  { name: "d/deep", type: "2", linkname: "../../../../../../etc" },
  { name: "loop", type: "2", linkname: "loop" },
] as const;
const HOSTILE_PATHS = ["abs", "up", "dotdot", "dotdot/secret.txt", "sib", "d/deep/passwd", "d/deep", "loop", "loop/x"];

/** The least value a JSON Schema accepts, for arguments the walk does not aim at. */
function least(schema: any, name: string): unknown {
  if (!schema || typeof schema !== "object") return "x";
  if (schema.enum) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
  if (type === "string") return name === "url" ? "http://127.0.0.1:9/" : "x".repeat(Math.max(1, schema.minLength ?? 1));
  if (type === "integer" || type === "number") return schema.minimum ?? 1;
  if (type === "boolean") return false;
  if (type === "array") return [];
  if (type === "object") return {};
  if (schema.anyOf) return least(schema.anyOf[0], name);
  return "x";
}

const PATHY = /(^|_)(path|file|dir|from|to|source|destination|target|cwd)(_|$)|^file_path$|^working_dir$/;

describe("no tool and no route follows a symlink out of the tenant's prefix", () => {
  it("every listed tool, every path-like argument, every hostile link", async () => {
    const app = testApp();
    const other = await newTenant(app, UNGATED);
    await upload(other, "secret.txt", SECRET);
    const t = await newTenant(app, UNGATED);
    const sibling = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "sibling" }) });
    expect(sibling.status).toBe(201);
    await upload({ ...t, ws: "sibling" }, "secret.txt", SIBLING);
    await upload(t, "secret.txt", "this workspace's own file\n");
    const imported = await importReq(t, tar([...HOSTILE_LINKS]));
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    expect(imported.body.symlinks).toBe(HOSTILE_LINKS.length);
    const before = await snapshot(other.tenant);

    const listed = (await (await t.req("/v1/tools")).json()) as { tools: { name: string; input_schema: any }[] };
    expect(listed.tools.length).toBeGreaterThan(15);
    let calls = 0;
    let aimed = 0;
    let refused = 0;
    for (const tool of listed.tools) {
      const props: Record<string, any> = tool.input_schema?.properties ?? {};
      const required: string[] = tool.input_schema?.required ?? [];
      const pathy = Object.keys(props).filter((p) => PATHY.test(p) && (props[p].type === "string" || (Array.isArray(props[p].type) && props[p].type.includes("string"))));
      const base: Record<string, unknown> = {};
      for (const r of required) base[r] = least(props[r], r);
      const variants: Record<string, unknown>[] = pathy.length ? pathy.flatMap((p) => HOSTILE_PATHS.map((h) => ({ ...base, [p]: h }))) : [base];
      if (tool.name === "apply_patch") variants.push(...HOSTILE_PATHS.map((h) => ({ input: `*** Begin Patch\n*** Update File: ${h}\n@@\n-x\n+y\n*** End Patch` })));
      if (tool.name === "bash" || tool.name === "run_code" || tool.name === "task" || tool.name === "web_fetch" || tool.name === "web_search") continue; // no executor or network here; the sandbox is walked in test/infra/container/symlinks.node.test.ts
      for (const args of variants) {
        const res = await t.call(tool.name, args);
        const text = JSON.stringify(res.body);
        calls++;
        if (pathy.length) aimed++;
        expect(res.status, `${tool.name} ${JSON.stringify(args)}: ${text.slice(0, 300)}`).toBeLessThan(500);
        for (const leak of [SECRET, SIBLING, HOST]) expect(text, `${tool.name} ${JSON.stringify(args)}`).not.toContain(leak);
        if (res.body?.error?.code === "SYMLINK_REFUSED") refused++;
      }
    }
    expect(aimed).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(20); // the walk does reach the links (read, write, edit, … refuse them by name)

    // The raw routes: files (get, put, delete), listings, export, versions.
    for (const h of HOSTILE_PATHS) {
      for (const [method, path, body] of [
        ["GET", `/v1/workspaces/main/files/${h}`, undefined],
        ["PUT", `/v1/workspaces/main/files/${h}/new.txt`, "y"], // (content-length set below)
        ["DELETE", `/v1/workspaces/main/files/${h}`, undefined],
        ["GET", `/v1/workspaces/main/files?dir=${encodeURIComponent(h)}`, undefined],
        ["GET", `/v1/workspaces/main/export?path=${encodeURIComponent(h)}`, undefined],
      ] as const) {
        const res = await t.req(path, { method, ...(body ? { body, headers: { "content-length": String(body.length) } } : {}) });
        const bytes = new Uint8Array(await res.arrayBuffer());
        const text = new TextDecoder().decode(bytes);
        calls++;
        expect(res.status, `${method} ${path}`).toBeLessThan(500);
        for (const leak of [SECRET, SIBLING, HOST]) expect(text, `${method} ${path}`).not.toContain(leak);
      }
    }
    expect(await snapshot(other.tenant)).toEqual(before);
    expect(await (await t.req("/v1/workspaces/sibling/files/secret.txt")).text()).toBe(SIBLING);
    expect(calls).toBeGreaterThan(150);
  }, 120_000);
});
