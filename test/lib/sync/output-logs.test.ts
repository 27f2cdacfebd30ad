/** Saved full outputs (lib/sync/output-logs.ts) through the runner's sync route, in workerd over the real local R2. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { randomId } from "../../../lib/shared/hash.js";
import { readOutputLog } from "../../../lib/sync/output-logs.js";
import { runIdFor } from "../../../lib/sync/run-records.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { filesPrefix, outputLogsPrefix } from "../../../lib/layout/paths.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { workersKeyValue } from "../../../lib/storage/kv-workers.js";
import { workspaceRecord } from "../../support/workspace-record.js";

const SECRET = "a-test-secret-of-some-length";
const driver = r2Driver(env.FILES);
const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => handleSync(new Request(input, init), { driver, kv: workersKeyValue(env.KV), secret: SECRET })) as typeof fetch;
const client = async (t: string, w: string, r: string) => {
  await workspaceRecord(driver, t, w);
  return httpSyncClient({ url: "https://api.example", token: await mintSyncToken(SECRET, { t, w, r }, 600), fetch: fetchFn });
};
const stream = (text: string) => new Response(text).body!;

describe("saved full outputs", () => {
  it("are stored under the run the token names, outside the files, and read back in pages of lines", async () => {
    const t = `t-${randomId(8)}`;
    const text = Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
    const name = await (await client(t, "main", "k1")).putOutputLog!("r000000000000000", stream(text), text.length);
    expect(name).toMatch(new RegExp(`^\\d{8}T\\d{9}Z-${await runIdFor(t, "main", "k1")}\\.log$`)); // the token's run, not the one the client named
    expect((await driver.list({ prefix: filesPrefix(t, "main") })).objects).toEqual([]);
    const page = await readOutputLog(driver, t, "main", name, 4999, 10);
    expect(page).toEqual({ text: "  4999\tline 4999\n  5000\tline 5000\n" });
    const first = await readOutputLog(driver, t, "main", name, 1, 2);
    expect(first).toEqual({ text: "     1\tline 1\n     2\tline 2\n", next_offset: 3 });
    // At most ~50 KB a page, with where to go on.
    const big = await readOutputLog(driver, t, "main", name, 1, 100_000);
    expect(big.text.length).toBeLessThanOrEqual(50_000);
    expect(big.next_offset).toBeGreaterThan(1000);
    await expect(readOutputLog(driver, t, "main", name, 6000, 1)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    // Another workspace (or tenant) names no such output.
    await expect(readOutputLog(driver, t, "other", name, 1, 1)).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(readOutputLog(driver, `t-${randomId(8)}`, "main", name, 1, 1)).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(readOutputLog(driver, t, "main", "../f/secret.txt", 1, 1)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("a body longer than its Content-Length, or without one, is refused and nothing is kept", async () => {
    const t = `t-${randomId(8)}`;
    const sync = await client(t, "main", "k2");
    await expect(sync.putOutputLog!("r0", stream("0123456789"), 4)).rejects.toThrow();
    const res = await fetchFn("https://api.example/v1/sync/run/log", { method: "PUT", headers: { authorization: `Bearer ${await mintSyncToken(SECRET, { t, w: "main", r: "k3" }, 600)}` }, body: stream("no length"), duplex: "half" } as RequestInit);
    expect(res.status).toBe(413);
    expect((await driver.list({ prefix: outputLogsPrefix(t, "main") })).objects).toEqual([]);
  });
});
