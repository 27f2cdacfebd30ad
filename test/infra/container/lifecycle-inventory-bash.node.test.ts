/**
 * The storage inventory after a workspace's delete (test/lib/workspace/lifecycle-inventory.test.ts),
 * for what bash stores: the real runner (bubblewrap) through the app (test/support/runner-app.ts)
 * over storage and KV this test lists whole. Foreground runs (run records, the exec bits, explicit
 * directories, a cut output's full log), a shell's saved state, a background task; then the delete and
 * the scheduled tick past GC's grace: every key left must be one the allowlist explains.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { housekeepingTick } from "../../../lib/runtime/housekeeping.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { KeyValueStore, StorageDriver } from "../../../lib/storage/types.js";
import { runnerApp } from "../../support/runner-app.js";
import { KEY_REVOKE_KEEPS, survivorsOf, WORKSPACE_DELETE_KEEPS } from "../../lib/workspace/lifecycle-allowlist.js";

const storage = memoryDriver();
const kv = storageKeyValue(memoryDriver(), "kv/");
let ctx: Awaited<ReturnType<typeof runnerApp>>;

beforeAll(async () => {
  ctx = await runnerApp({ storage, deps: { kv } });
}, 60_000);
afterAll(async () => {
  await ctx?.close();
});

async function storageKeys(driver: StorageDriver, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await driver.list({ prefix, ...(cursor ? { cursor } : {}) });
    out.push(...page.objects.map((o) => o.key));
    cursor = page.cursor;
  } while (cursor);
  return out;
}
async function kvKeys(store: KeyValueStore): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({ prefix: "", ...(cursor ? { cursor } : {}) });
    out.push(...page.keys);
    cursor = page.cursor;
  } while (cursor);
  return out;
}
const inventory = async () => [...(await storageKeys(storage, "t/acme/")), ...(await kvKeys(kv)).map((k) => `kv:${k}`)];

const call = async (tool: string, args: unknown, session = "s1") => {
  const res = await ctx.app.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
  return { status: res.status, body: (await res.json()) as any };
};

it("bash's run records, exec bits, saved shells, output logs and background tasks go with the workspace", async () => {
  const first = await call("bash", { command: "mkdir -p d/e && printf 'echo hi\\n' > run.sh && chmod +x run.sh && cd d && export KEPT=1", keep_env: true });
  expect(first.status, JSON.stringify(first.body)).toBe(200);
  const big = await call("bash", { command: "seq 1 200000" });
  expect(big.status, JSON.stringify(big.body).slice(0, 400)).toBe(200);
  const bg = await call("bash", { command: "sleep 1; echo done > bg.txt", run_in_background: true });
  expect(bg.status, JSON.stringify(bg.body)).toBe(200);
  const out = await call("bash_output", { task_id: bg.body.data.task_id, wait: true, timeout: 30 });
  expect(out.body.data?.status, JSON.stringify(out.body)).toBe("completed");
  const read = await call("read", { file_path: "d/bg.txt" }); // the session's saved shell started it in d
  expect(read.status, JSON.stringify(read.body)).toBe(200);

  const before = await inventory();
  for (const kind of ["t/acme/w/main/x/modes.json", "t/acme/w/main/x/shells/", "t/acme/w/main/x/runs/", "t/acme/w/main/x/outputs/", "t/acme/w/main/f/d/e/", "kv:rec/acme/main/"]) {
    expect(before.some((k) => k.startsWith(kind)), `nothing stored under ${kind} before the delete: the inventory would prove nothing there\n${before.join("\n")}`).toBe(true);
  }

  const del = await ctx.app.request("/v1/workspaces/main", { method: "DELETE", headers: { authorization: `Bearer ${ctx.key}` } });
  expect(del.status).toBe(200);
  await housekeepingTick({ storage, kv }, {}, { now: () => Date.now() + 2 * 3600 * 1000, maxTenants: 10_000, log: () => {} });
  const { unexplained, kept } = survivorsOf(await inventory(), WORKSPACE_DELETE_KEEPS, { tenant: "acme", ws: "main" });
  expect(unexplained, `survivors no allowlist entry explains:\n${unexplained.join("\n")}`).toEqual([]);
  expect([...kept.keys()]).toContain("kv:rec/{tenant}/{ws}/*"); // the records this run left are there, and explained
}, 120_000);

it("the allowlist is the one docs/storage.md shows: each of its patterns is in the page's table", () => {
  const page = readFileSync("docs/storage.md", "utf8");
  for (const k of [...WORKSPACE_DELETE_KEEPS, ...KEY_REVOKE_KEEPS]) expect(page, k.pattern).toContain(`\`${k.pattern}\``);
});
