/**
 * A foreground command of a key revoked while it runs (lib/run/key-watch.ts): the real sandbox, the
 * SSE door. The command prints a line, then sleeps; once that line has streamed the key is revoked,
 * and the call ends killed with UNAUTHORIZED key_gone, not at the command's end with its output.
 */
import { afterAll, describe, expect, it } from "vitest";
import { readEvents } from "../../support/sse-events.js";
import { ADMIN, sandboxApp } from "../doors/sandbox-app.js";

const { app, post, tenant, close } = sandboxApp({ keyWatchMs: 20 });
afterAll(close);

describe("a foreground command outlives no key", () => {
  it("revoked while its command runs: the run is killed and the call answers key_gone", async () => {
    const t = await tenant("kwrun");
    const res = await app.request("/v1/workspaces/main/tools/bash", {
      method: "POST",
      headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ command: "echo started; sleep 60; echo finished", timeout: 120 }),
    });
    let revoked: Promise<unknown> | null = null;
    const events = await readEvents(res, (e) => {
      if (!revoked && e.event === "progress" && JSON.stringify(e.data).includes("started")) revoked = post(`/v1/admin/tenants/${t.id}/keys/${t.keyId}`, undefined, ADMIN, "DELETE");
    });
    await revoked;
    const result = events.at(-1)!;
    expect(result.event).toBe("result");
    expect(result.data.error, JSON.stringify(result.data)).toMatchObject({ code: "UNAUTHORIZED", details: { refused_by: "key_gone" } });
    expect(JSON.stringify(events)).not.toContain("finished");
  }, 120_000);
});
