/**
 * What a live sandbox's background processes do to directories between two commands is told to the
 * model in the next command's output, as a command's own changes are (docs/live-sessions.md, "What persists";
 * docs/limits-and-quotas.md, files_per_workspace): empty directories that landed ("[empty directories
 * kept: …]", data.dirs_created), and those files_per_workspace refused ("[not written back: …
 * (empty directory) … files_per_workspace …]", data.skipped). The real app over memory storage, the
 * in-memory coordinator and the real runner (local executor, bubblewrap). Before (2026-12-02) the
 * runner folded only the background write-back's files into the result: a background `mkdir -p` of 30
 * directories beside a quota of 10 vanished from the sandbox with no word, and one that landed was not named.
 */
import { readdirSync } from "node:fs";
import { afterAll, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { ADMIN, sandboxApp } from "../../doors/sandbox-app.js";
import { until } from "../../../infra/container/live-helpers.js";
import { capturedPosts } from "./session-calls.js";

/** Every `/v1/sync/live/ended` the runner posted: its end report (what its final write-back did) has reached the API. */
const { posts: endedPosts, wrap: capture } = capturedPosts("/v1/sync/live/ended");
const { call, post, tenant, close, root } = sandboxApp({ liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS), limits: memoryLimits() }, capture);
afterAll(close);

async function setup(id: string) {
  const t = await tenant(id);
  expect((await post(`/v1/admin/tenants/${t.id}/limits`, { files_per_workspace: 10 }, ADMIN, "PUT")).status).toBe(200);
  const bash = async (args: Record<string, unknown>) => {
    const r = await call("/v1/workspaces/main/tools/bash", { method: "POST", headers: { "x-session-id": "s1" }, body: JSON.stringify(args) }, t.key);
    const body = (await r.json()) as { output: string; data: { dirs_created?: string[]; skipped?: { path: string; change?: string }[] } };
    expect(r.status, JSON.stringify(body)).toBe(200);
    return body;
  };
  /** Waits until the background command has left its last file (`name`) in the sandbox's tree, seen from the host under the runner's root. */
  const settled = (name: string) =>
    until(() => {
      try {
        return readdirSync(root, { recursive: true }).some((p) => String(p).endsWith(`/${name}`));
      } catch {
        return false; // a sandbox's tree changed under the listing: look again
      }
    }, `the background command's ${name}`);
  const listed = async (path: string) => (await call(`/v1/workspaces/main/tools/ls`, { method: "POST", body: JSON.stringify({ path }) }, t.key)).status;
  return { t, bash, settled, listed };
}

it("a background mkdir between two commands is named in the next command's output: kept when it fits, not written back (and why) when files_per_workspace refuses it", async () => {
  const { bash, settled, listed } = await setup("live-bg-dirs");

  // Fits: two empty directories (and the file that says the work is done) made after the command answered, written back before the next one, and named there.
  expect((await bash({ command: "(sleep 1; mkdir -p ok/a ok/b; echo > done-1) >/dev/null 2>&1 &", keep_alive: true, idle_timeout_s: 30 })).output).toContain("[live sandbox started");
  await settled("done-1");
  const kept = await bash({ command: "true" });
  expect(kept.output).toContain("[empty directories kept: ok/a/, ok/b/]");
  expect(kept.data.dirs_created).toEqual(["ok/a", "ok/b"]);
  expect(await listed("ok/a")).toBe(200);

  // Does not fit (3 entries used, 10 allowed, 31 more asked): nothing of it lands, and the next command says so.
  await bash({ command: "(sleep 1; mkdir -p bg/{1..30}; echo > done-2) >/dev/null 2>&1 &" });
  await settled("done-2");
  const refused = await bash({ command: "true" });
  const line = refused.output.split("\n").find((l) => l.startsWith("[not written back:"));
  expect(line, refused.output).toContain("31 changes (bg/1/ (empty directory)");
  expect(line).toContain("files_per_workspace quota is 10");
  expect(refused.data.skipped?.filter((s) => s.change === "dir_created")).toHaveLength(30);
  expect(await listed("bg")).toBe(404);
}, 90_000);

it("at the sandbox's end (DELETE), the next call names the directories its final write-back made, and what files_per_workspace refused", async () => {
  const { t, bash, settled, listed } = await setup("live-end-dirs");
  const end = async (marker: string) => {
    await settled(marker);
    const d = await call("/v1/workspaces/main/sessions/s1/sandbox", { method: "DELETE" }, t.key);
    expect(d.status, await d.clone().text()).toBe(200);
    const generation = ((await d.json()) as { generation: string }).generation;
    await until(() => endedPosts.find((p) => String(p.init.body).includes(generation)), "the runner's end report", 30_000);
  };

  // Fits: the end writes back two directories and a file; the next call names the directories too.
  await bash({ command: "true", keep_alive: true, idle_timeout_s: 60 });
  await bash({ command: "(sleep 1; mkdir -p ok/a ok/b; echo > end-1) >/dev/null 2>&1 &" });
  await end("end-1");
  const kept = await bash({ command: "true" });
  expect(kept.output).toContain("At its end, what background processes did since was written back: changed end-1, ok/a/, ok/b/.");
  expect(await listed("ok/a")).toBe(200);

  // Does not fit: nothing of it lands, and the next call says so instead of only that files are safe.
  await bash({ command: "true", keep_alive: true, idle_timeout_s: 60 });
  await bash({ command: "(sleep 1; mkdir -p bg/{1..30}; echo > end-2) >/dev/null 2>&1 &" });
  await end("end-2");
  const told = (await bash({ command: "true" })).output;
  expect(told).toContain("NOT written back at its end, so not in the workspace: bg/1/ (empty directory), bg/10/ (empty directory), bg/11/ (empty directory), bg/12/ (empty directory), bg/13/ (empty directory), ... (31 in all). The write-back's 31 new entries");
  expect(told).toContain("files_per_workspace quota is 10");
  expect(await listed("bg")).toBe(404);
}, 90_000);
