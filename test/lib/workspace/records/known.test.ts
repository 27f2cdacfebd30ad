/**
 * Session records known to an isolate (lib/workspace/records.ts, KnownRecords): used only to confirm
 * "this session read this version". Two apps over the same R2 and KV stand for two isolates.
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../../helpers.js";

/** `t`'s calls sent to another app (another isolate, with its own caches) over the same storage and KV. */
const through = (t: Tenant, app: ReturnType<typeof testApp>) => async (tool: string, args: unknown, session = "s1") => {
  const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
  return { status: res.status, body: (await res.json()) as any };
};

describe("records known to an isolate", () => {
  it("a stale known record never refuses: the session wrote a newer version through another isolate, its edit here passes", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    const other = through(t, testApp());
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200); // this isolate knows: s1 read "one"
    expect((await other("read", { file_path: "a.txt" })).status).toBe(200);
    expect((await other("write", { file_path: "a.txt", content: "two\n" })).status).toBe(200); // s1's record: "two"
    const edit = await t.call("edit", { file_path: "a.txt", old_string: "two", new_string: "three" });
    expect(edit.status, JSON.stringify(edit.body)).toBe(200);
  });

  it("a known record never passes a version the session did not read: another session's write is FILE_MODIFIED", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    expect((await t.call("read", { file_path: "a.txt" }, "s2")).status).toBe(200);
    expect((await t.call("write", { file_path: "a.txt", content: "two\n" }, "s2")).status).toBe(200);
    const edit = await t.call("edit", { file_path: "a.txt", old_string: "two", new_string: "three" });
    expect(edit.status).toBe(409);
    expect(edit.body.error.code).toBe("FILE_MODIFIED");
  });

  it("known per session and per workspace: another session of the same isolate has not read the file", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    const edit = await t.call("edit", { file_path: "a.txt", old_string: "one", new_string: "two" }, "s2");
    expect(edit.body.error?.code).toBe("NOT_READ");
    expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "second" }) })).status).toBe(201);
    await upload({ ...t, ws: "second" }, "a.txt", "one\n"); // the same bytes: the same etag
    const res = await t.req(`/v1/workspaces/second/tools/edit`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ file_path: "a.txt", old_string: "one", new_string: "two" }) });
    expect(((await res.json()) as any).error?.code).toBe("NOT_READ");
  });
});
