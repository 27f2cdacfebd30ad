/**
 * Every tool that rewrites a file it looked at writes over exactly the version it saw (DESIGN
 * invariants 2 and 9: the conditional write is the lost-update guard). The storage lets another
 * writer land right after the tool's look (its read, or its stat of a copy's target:
 * test/support/change-after-look.ts), before any later check of the call's own (the undo journal's
 * HEAD of the version it replaces, which alone would make an unconditional write conditional on the
 * intruder's version, and lose it): the call is refused and the intruder's bytes stay.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { r2Driver } from "../../lib/storage/drivers/r2.js";
import type { StorageDriver } from "../../lib/storage/types.js";
import { newTenant, testApp, UNGATED, upload, type Tenant } from "../helpers.js";
import { changeAfterLook } from "../support/change-after-look.js";
import { expectError, expectOk, rawGet, rawText, withFile } from "./file-helpers.js";

const BEFORE = "alpha\nbeta\n";
const INTRUDER = "written by another call\n";

async function racedTenant() {
  const { storage, arm } = changeAfterLook(r2Driver(env.FILES), INTRUDER);
  return { t: await newTenant(testApp({ storage }), UNGATED), arm, storage };
}

/** The tenant's calls through another app over the same storage: another isolate, whose version cache and known records are its own. */
function otherIsolate(t: Tenant, storage: StorageDriver): Tenant {
  const app = testApp({ storage });
  const req = async (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown, session = "s1") => {
    const res = await req(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
    return { status: res.status, body: (await res.json()) as any };
  };
  return { ...t, app, req, call };
}

/** Each editing tool's call on a.txt (holding BEFORE), which succeeds when nothing races it. */
const EDITS: [string, Record<string, unknown>][] = [
  ["edit", { file_path: "a.txt", old_string: "beta", new_string: "gamma" }],
  ["multi_edit", { file_path: "a.txt", edits: [{ old_string: "alpha", new_string: "one" }, { old_string: "beta", new_string: "two" }] }],
  ["insert", { file_path: "a.txt", insert_line: 1, text: "inserted" }],
  ["apply_patch", { patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+gamma\n*** End Patch" }],
];

describe("a file changed between a tool's look at it and its write", () => {
  for (const [tool, args] of EDITS) {
    it(`${tool}: FILE_MODIFIED, the other writer's version kept`, async () => {
      const { t, arm, storage } = await racedTenant();
      // The session reads the file through another isolate: this one holds no version of it, so the tool GETs it (a version
      // this isolate holds is taken with no GET, its write If-Match that version: a write that is not is refused there).
      await withFile("a.txt", BEFORE, otherIsolate(t, storage));
      arm("a.txt");
      expectError(await t.call(tool, args), 409, "FILE_MODIFIED", tool);
      expect(await rawText(t, "a.txt")).toBe(INTRUDER);
    });
  }

  it("control: with no other writer, every one of these calls writes (so the refusals above come from the race)", async () => {
    const { t } = await racedTenant();
    for (const [tool, args] of EDITS) {
      await withFile("a.txt", BEFORE, t);
      expectOk(await t.call(tool, args));
      expect(await rawText(t, "a.txt")).not.toBe(BEFORE);
    }
  });

  it("copy and move with overwrite over a file changed after the call's stat of it: refused, the other writer's version kept", async () => {
    for (const mode of ["copy", "move"]) {
      const { t, arm } = await racedTenant();
      await withFile("src.txt", "source\n", t);
      await withFile("dst.txt", BEFORE, t);
      arm("dst.txt", "head");
      const r = await t.call(mode, { from: "src.txt", to: "dst.txt", overwrite: true });
      expect(r.status, `${mode}: ${JSON.stringify(r.body)}`).toBe(409);
      expect(await rawText(t, "dst.txt")).toBe(INTRUDER);
      expect(await rawText(t, "src.txt")).toBe("source\n");
    }
  });

  it("a batch upload's if_match over a per-file object changed after the batch listed it: FILE_MODIFIED, the other writer's version kept", async () => {
    const { t, arm } = await racedTenant();
    await upload(t, "a.txt", BEFORE); // a per-file object: the batch writes it alone, conditionally
    const { etag } = await rawGet(t, "a.txt");
    arm("a.txt", "list");
    const res = await t.req(`/v1/workspaces/${t.ws}/uploads`, { method: "POST", headers: { "content-type": "application/x-ndjson" }, body: `${JSON.stringify({ path: "a.txt", content: "mine\n", if_match: etag })}\n` });
    const body = (await res.json()) as any;
    expect({ status: res.status, code: body.error?.code }, JSON.stringify(body)).toEqual({ status: 409, code: "FILE_MODIFIED" });
    expect(await rawText(t, "a.txt")).toBe(INTRUDER);
  });
});
