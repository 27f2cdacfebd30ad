/**
 * A refused write-back leaves storage as it was even when one of its deletes cannot land: a file the
 * command deletes is changed by another writer while the command runs, so that delete frees nothing.
 * The runner looks at its deletes before it takes the hold (lib/sync/delete-check.ts) and credits only
 * those still at the version the run started from. Before (until 2026-12-02) the hold credited both
 * deletes, the other one landed, the fill was refused, and the run said nothing was written back while
 * that delete stayed. The real runner and bubblewrap sandbox, the app's /v1/sync over memory storage,
 * the limits in memory, every storage write and delete of the workspace's files logged.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { memoryLimits } from "../../../lib/limits/store.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { runnerApp } from "../../support/runner-app.js";
import { loggingFileOps } from "../../support/file-ops-log.js";
import { hostPids, until } from "./live-helpers.js";

const MiB = 1024 * 1024;
const mem = memoryDriver();
const fileOps: string[] = [];
const syncLog: string[] = [];
let app: Awaited<ReturnType<typeof runnerApp>>["app"];
let key: string;
let admin: Awaited<ReturnType<typeof runnerApp>>["admin"];
let close: () => Promise<void>;

const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "x-session-id": "s", ...(init.headers as Record<string, string> | undefined) } });
const upload = async (path: string, bytes: number, fill: number) => {
  const r = await req(`/v1/workspaces/main/files/${path}`, { method: "PUT", body: new Uint8Array(bytes).fill(fill), headers: { "content-type": "application/octet-stream", "content-length": String(bytes) } });
  expect(r.status, await r.clone().text()).toBeLessThan(300);
};
/** Every file of the workspace with its etag, as storage holds it. */
const tree = async () => new Map((await mem.list({ prefix: "t/acme/w/main/f/" })).objects.map((o) => [o.key.slice("t/acme/w/main/f/".length), o.etag]));
const stored = async () => (await mem.list({ prefix: "t/acme/w/main/f/" })).objects.reduce((n, o) => n + o.size, 0);
const setLimits = async (l: Record<string, number>) => expect((await admin("/v1/admin/tenants/acme/limits", l, "PUT")).limits).toEqual(l);

/** Runs `command` (which ends in `sleep <n>`, killed here), changing b.bin through the raw files route while it runs. */
async function bashWhileBChanges(command: string, sleeper: string, fill: number) {
  const call = req("/v1/workspaces/main/tools/bash", { method: "POST", body: JSON.stringify({ command: `${command}; ${sleeper}; echo ran`, timeout: 60 }), headers: { "content-type": "application/json" } });
  // The sleep itself (not the shell or sandbox whose command line names it too).
  const sleeping = () => hostPids(sleeper).filter((p) => readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0").join(" ").trim() === sleeper);
  const [pid] = await until(() => (sleeping().length ? sleeping() : null), "the command waiting");
  await upload("b.bin", MiB, fill); // same size: no room taken, but not the version the command started from
  process.kill(pid!, "SIGKILL");
  const r = await call;
  expect(r.status).toBe(200);
  return (await r.json()) as any;
}

beforeAll(async () => {
  ({ app, key, admin, close } = await runnerApp({ storage: loggingFileOps(mem, fileOps), deps: { limits: memoryLimits() }, onSync: (method, path) => void syncLog.push(`${method} ${path}`) }));
});
afterAll(() => close());

it("a delete whose file changed during the command is not credited: refused by the hold before any delete, storage as it was but the other writer's change; with room, it lands", async () => {
  await upload("a.bin", MiB, 1);
  await upload("b.bin", MiB, 2);
  // 0.5 MiB free: the command's 2.5 MiB file fits only if both of its deletes free their 1 MiB each.
  await setLimits({ storage_bytes: (await stored()) + MiB / 2 });
  const before = await tree();
  fileOps.length = 0;
  syncLog.length = 0;
  const out = await bashWhileBChanges(`rm a.bin b.bin && head -c ${2.5 * MiB} /dev/zero > n.bin`, "sleep 7654351", 3);
  expect(out.output).toContain("ran\n");
  // Nothing of the write-back landed: a.bin is still the version it was (before: deleted, though the output said nothing was written back).
  expect(fileOps.filter((f) => f !== "put b.bin"), out.output.slice(-800)).toEqual([]);
  const after = await tree();
  expect([...after.keys()].sort()).toEqual(["a.bin", "b.bin"]);
  expect(after.get("a.bin")).toBe(before.get("a.bin"));
  expect(syncLog.filter((s) => /^POST \/v1\/sync\/(put|delete|delete\/check|stage|commit)$/.test(s))).toEqual(["POST /v1/sync/put", "POST /v1/sync/delete/check", "POST /v1/sync/put"]); // the hold of the writes alone (refused), the check, the hold with a.bin credited (refused)
  expect(out.output).toContain("[not written back: 3 changed files (a.bin, b.bin, n.bin).");
  expect(out.output).toContain("plus the 0 bytes of the files it replaces and the 1048576 bytes of the files it deletes)"); // a.bin's room alone is credited
  expect(out.output).toContain("Not counted as room: the deletes of b.bin, whose files another writer changed or deleted while the command ran (deleting them frees nothing).");
  expect(out.output).toContain("These changes are NOT in the workspace");
  expect(out.data.files_changed).toEqual([]);

  // With room for the shortfall, the same command lands: a.bin deleted, b.bin kept (a conflict), n.bin written.
  await setLimits({ storage_bytes: (await stored()) + 1.5 * MiB });
  const ok = await bashWhileBChanges(`rm a.bin b.bin && head -c ${2.5 * MiB} /dev/zero > n.bin`, "sleep 7654352", 4);
  expect(ok.data.skipped ?? [], ok.output.slice(-800)).toEqual([]);
  expect(ok.data.conflicts.map((c: { path: string }) => c.path)).toEqual(["b.bin"]);
  expect([...(await tree()).keys()].sort()).toEqual(["b.bin", "n.bin"]);

  // With room for the writes alone, no delete is looked at: the hold is taken with none credited, and b.bin's conflict needs no fill.
  await setLimits({ storage_bytes: (await stored()) + 5 * MiB });
  await upload("a.bin", MiB, 5);
  syncLog.length = 0;
  const roomy = await bashWhileBChanges(`rm a.bin b.bin && head -c ${3 * MiB} /dev/zero > m.bin`, "sleep 7654353", 6);
  expect(roomy.data.conflicts.map((c: { path: string }) => c.path)).toEqual(["b.bin"]);
  expect([...(await tree()).keys()].sort()).toEqual(["b.bin", "m.bin", "n.bin"]);
  expect(syncLog.filter((s) => /^POST \/v1\/sync\/(put|delete|delete\/check)$/.test(s))).toEqual(["POST /v1/sync/put", "POST /v1/sync/delete", "POST /v1/sync/put"]); // the hold, the deletes, the writes: no check, no fill
}, 120_000);
