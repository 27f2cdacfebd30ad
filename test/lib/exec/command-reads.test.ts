/**
 * A command tool's reads of the tenant's settings (lib/exec/tool-support.ts commandReads, the
 * tool's `startReads`): its guard rails and git identity go out beside the approval gate's read
 * of the tenant policy, not after it, and the guard is read once per call although the gate and
 * the tool both ask for it.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Executor, RunRequest, RunResult } from "../../../lib/exec/types.js";
import { workersKeyValue } from "../../../lib/storage/kv-workers.js";
import type { KeyValueStore } from "../../../lib/storage/types.js";
import { newTenant, testApp } from "../../helpers.js";

/** A runner that answers at once: what it was asked is kept. */
function fakeExecutor(asked: RunRequest[]): Executor {
  const result = (req: RunRequest): RunResult => ({
    run_id: req.idempotency_key, stdout: "hi\n", stderr: "", output: "hi\n", exit_code: 0, duration_ms: 1, timed_out: false, killed: false, truncated: false,
    files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [],
    sync: { cache: "warm", manifest_files: 0, downloaded_files: 0, downloaded_bytes: 0, uploaded_files: 0, uploaded_bytes: 0, deleted_files: 0, sync_in_ms: 0, sync_out_ms: 0 },
  });
  return { run: async (req) => (asked.push(req), result(req)), start: async () => {} };
}

/**
 * KV that logs each get's start and end by its key's first segment, and holds the read of the
 * tenant policy (the gate's) until the reads of `awaited` kinds have all started, or 1 s.
 */
function watchedKv(log: string[], awaited: string[]): KeyValueStore {
  const kv = workersKeyValue(env.KV);
  let started: () => void = () => {};
  const both = new Promise<void>((r) => (started = r));
  return {
    ...kv,
    put: (k, v, o) => kv.put(k, v, o),
    delete: (k) => kv.delete(k),
    list: (o) => kv.list(o),
    async get(key) {
      const kind = key.split("/")[0]!;
      log.push(`start ${kind}`);
      if (awaited.every((a) => log.includes(`start ${a}`))) started();
      if (kind === "policy") await Promise.race([both, new Promise((r) => setTimeout(r, 1000))]);
      const v = await kv.get(key);
      log.push(`end ${kind}`);
      return v;
    },
  };
}

describe("command tools read the tenant's settings beside the approval gate", () => {
  for (const [tool, args, guard] of [
    ["bash", { command: "echo hi" }, true],
    ["run_code", { language: "bash", code: "echo hi" }, false],
  ] as const) {
    it(`${tool}: ${guard ? "guard rails and " : ""}git identity start before the gate's policy read ends${guard ? "; the guard is read once" : ""}`, async () => {
      const log: string[] = [];
      const asked: RunRequest[] = [];
      const app = testApp({ kv: watchedKv(log, guard ? ["guard", "git"] : ["git"]), executor: fakeExecutor(asked), syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://sync.invalid" });
      const t = await newTenant(app);
      log.length = 0;
      const r = await t.call(tool, args);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(asked).toHaveLength(1);
      const policyEnd = log.indexOf("end policy");
      expect(policyEnd, log.join(", ")).toBeGreaterThan(-1);
      expect(log.indexOf("start git"), log.join(", ")).toBeLessThan(policyEnd);
      if (guard) {
        expect(log.indexOf("start guard"), log.join(", ")).toBeLessThan(policyEnd);
        expect(log.filter((l) => l === "start guard")).toHaveLength(1);
      } else expect(log).not.toContain("start guard");
    });
  }
});
