/**
 * ls (not recursive) of a directory whose subdirectories links make (docs/symlinks.md): each is one entry, or one
 * hidden entry skipped, whether storage lists it too (it holds a file beside the link) or not (it holds only links),
 * on one page or over several. Before (2026-12-02) a hidden directory holding a file and a link counted twice in
 * hidden_skipped, and a page that ended before such a directory counted (or listed) it, and the next page again.
 */
import { describe, expect, it } from "vitest";
import { newTenant, upload, type Tenant } from "../helpers.js";
import { tar } from "../lib/archive/archives.js";
import { importReq } from "../lib/archive/helpers.js";

/** `-a.txt` sorts before every dot name; `.both` holds a file and a link, `.only` only a link, `.hl` is a link; `vis` holds a file and a link. */
async function seeded(): Promise<Tenant> {
  const t = await newTenant();
  for (const path of ["-a.txt", "v.txt", ".both/f", "vis/f"]) await upload(t, path, "x\n");
  const r = await importReq(t, tar([
    { name: ".both/l", type: "2", linkname: "../v.txt" },
    { name: ".only/l", type: "2", linkname: "../v.txt" },
    { name: ".hl", type: "2", linkname: "v.txt" },
    { name: "vis/l", type: "2", linkname: "../v.txt" },
  ]));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return t;
}

const shown = (data: any) => data.entries.map((e: any) => (e.type === "directory" ? `${e.path}/` : e.path));

/** Every page of `ls /` with `limit`: the entries in page order, hidden_skipped summed. */
async function pages(t: Tenant, args: Record<string, unknown>): Promise<{ entries: string[]; hidden: number }> {
  const entries: string[] = [];
  let hidden = 0;
  let cursor: string | undefined;
  do {
    const r = await t.call("ls", { path: "/", ...args, ...(cursor ? { cursor } : {}) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    entries.push(...shown(r.body.data));
    hidden += r.body.data.hidden_skipped;
    cursor = r.body.data.cursor ?? undefined;
  } while (cursor);
  return { entries, hidden };
}

describe("ls of directories links make", () => {
  it("counts each hidden one once, whether storage lists it too or not", async () => {
    const t = await seeded();
    const r = await t.call("ls", { path: "/" });
    expect(shown(r.body.data)).toEqual(["vis/", "-a.txt", "v.txt"]);
    expect(r.body.data.hidden_skipped).toBe(3); // .both, .only, .hl
    expect(r.body.output).toContain("[3 hidden entries");
    expect(shown((await t.call("ls", { path: "/", show_hidden: true })).body.data)).toEqual([".both/", ".only/", "vis/", "-a.txt", ".hl", "v.txt"]);
  });

  it("over pages of one entry: each listed once, each hidden one counted once", async () => {
    const t = await seeded();
    const hidden = await pages(t, { limit: 1 });
    expect([[...hidden.entries].sort(), hidden.hidden]).toEqual([["-a.txt", "v.txt", "vis/"], 3]);
    const all = await pages(t, { limit: 1, show_hidden: true });
    expect([[...all.entries].sort(), all.hidden]).toEqual([["-a.txt", ".both/", ".hl", ".only/", "v.txt", "vis/"], 0]);
  });
});
