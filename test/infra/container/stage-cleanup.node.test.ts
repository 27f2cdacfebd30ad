/**
 * A run's tree is renamed into the staging directory for the command (stage.ts), beside the
 * shell's scratch directory. Whatever throws once the tree is staged, it goes back to its slot and
 * nothing is left in the staging directory (infra/container/runner.ts). Failures are injected
 * through a sandbox double: no bwrap needed.
 */
import { chmodSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../support/temp-dirs.js";
import { runCommand, type RunnerDeps } from "../../../infra/container/runner.js";
import type { Sandbox } from "../../../infra/container/sandbox.js";
import { prepareStageDir } from "../../../infra/container/stage.js";
import { TreeCache } from "../../../infra/container/slot-cache.js";
import { storageSyncClient } from "../../../lib/sync/storage.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import type { RunRequest } from "../../../lib/exec/types.js";

const tmp = tempDirs("stage-cleanup");

/** A sandbox that fails where told: in `shellPath` (between staging and the run) or in `run` once the gate opens. */
function failingSandbox(at: "shellPath" | "run", seen: { runs: number }): Sandbox {
  return {
    check: async () => {},
    run: async (spec) => {
      seen.runs++;
      if (!(await spec.gate)) throw new Error("never started");
      throw new Error("injected: the sandbox failed");
    },
    runAs: null,
    hostIsolated: false,
    shellPath: (dir) => {
      if (at === "shellPath") throw new Error("injected: no shell path");
      return dir;
    },
    liveProbe: async () => {
      throw new Error("not used");
    },
  };
}

async function failedRun(at: "shellPath" | "run", shell: boolean) {
  const root = tmp("runner");
  chmodSync(root, 0o711);
  const seen = { runs: 0 };
  const cache = new TreeCache(join(root, "slots"), null);
  const deps: RunnerDeps = { cache, sandbox: failingSandbox(at, seen), owner: null, workDir: join(root, "work"), stageDir: join(root, "ws") };
  prepareStageDir(deps.stageDir);
  const driver = memoryDriver();
  await workspaceRecord(driver, "acme", "main");
  const req: RunRequest = {
    version: 1, idempotency_key: `k-${at}-${shell}`, tenant: "acme", workspace: "main", command: "true", timeout_ms: 20_000,
    sync: { url: "http://127.0.0.1:1", token: "unused" },
    ...(shell ? { shell: { keep: "cwd" as const } } : {}),
  };
  const error = await runCommand(req, storageSyncClient(driver, "acme", "main"), deps).then(() => null, (e: unknown) => e);
  await cache.emptied();
  return { error, seen, stageDir: deps.stageDir };
}

describe("the staging directory after a failed run", () => {
  it("a throw between staging the tree and the run (the shell's path) leaves it empty; the sandbox never ran", async () => {
    const { error, seen, stageDir } = await failedRun("shellPath", true);
    expect(String(error)).toContain("injected: no shell path");
    expect(seen.runs).toBe(0);
    expect(readdirSync(stageDir)).toEqual([]);
  });

  it("a sandbox that fails after the gate opened leaves neither the tree nor the shell's scratch directory", async () => {
    for (const shell of [true, false]) {
      const { error, seen, stageDir } = await failedRun("run", shell);
      expect(String(error)).toContain("injected: the sandbox failed");
      expect(seen.runs).toBe(1);
      expect(existsSync(stageDir)).toBe(true);
      expect(readdirSync(stageDir), `shell: ${shell}`).toEqual([]);
    }
  });
});
