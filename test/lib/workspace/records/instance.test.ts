/**
 * Session records belong to one instance of a workspace (lib/workspace/records.ts, FileRecord.i): a
 * workspace deleted and made again with the same id does not inherit the reads its sessions made in
 * the one before, neither from KV (another isolate) nor from what this isolate knows.
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../../helpers.js";

/** `t`'s calls through `app` (another app over the same R2 and KV stands for another isolate). */
const through = (t: Tenant, app: ReturnType<typeof testApp>) => async (tool: string, args: unknown, session = "s1") => {
  const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
  return { status: res.status, body: (await res.json()) as any };
};

async function remake(t: Tenant): Promise<void> {
  expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
  const made = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: t.ws }) });
  expect(made.status).toBe(201);
  await upload(t, "a.txt", "one\n"); // the same bytes: the same etag as the file the session read
}

describe("session records of a workspace made again with the same id", () => {
  it("are not the new workspace's: an edit without a read is NOT_READ (records from KV)", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    await remake(t);
    const edit = await through(t, testApp())("edit", { file_path: "a.txt", old_string: "one", new_string: "two" });
    expect(edit.body.error?.code, JSON.stringify(edit.body)).toBe("NOT_READ");
  });

  it("are not the new workspace's in the isolate that knew them either", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    await remake(t);
    const edit = await t.call("edit", { file_path: "a.txt", old_string: "one", new_string: "two" });
    expect(edit.body.error?.code, JSON.stringify(edit.body)).toBe("NOT_READ");
    // Reading it in the new workspace is what lets the session edit it.
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    const again = await through(t, testApp())("edit", { file_path: "a.txt", old_string: "one", new_string: "two" });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
  });
});
