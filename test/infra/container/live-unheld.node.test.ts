/**
 * A live sandbox whose processes do not hold still for the runner's work on its tree (hold-still.ts;
 * here: a probe that, once armed, sees no process, which the hold takes as not holding still) is
 * ended before that work, and the model reads it in the command's output: before the command (it
 * did not run) or after it (it ran, and its changes were written back).
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bwrapSandbox, type Sandbox } from "../../../infra/container/sandbox.js";
import { liveSetup } from "./live-helpers.js";

const stateDir = mkdtempSync(join(tmpdir(), "toolshed-unheld-"));
chmodSync(stateDir, 0o711);
const real = bwrapSandbox({ stateDir });
/** The next hold sees no process: armed by the test, or by a file `unhold` in the tree (made by a command: its hold after it). */
let armed = false;
let armedByFile = (): boolean => false;
const sandbox: Sandbox = {
  ...real,
  async liveProbe(hostPid, shellPid) {
    const probe = await real.liveProbe(hostPid, shellPid);
    return {
      ...probe,
      pids: async () => {
        if (!armed && !armedByFile()) return probe.pids();
        armed = false;
        return [];
      },
    };
  },
};
const { t, startLive, inTree } = liveSetup({ sandbox });
afterAll(async () => {
  await t.cleanup();
  rmSync(stateDir, { recursive: true, force: true });
});

describe("a live sandbox that does not hold still", () => {
  it("before a command: the sandbox ends, the command does not run, and its output says so", async () => {
    const s = startLive();
    expect((await s.cmd("echo one")).stdout).toBe("one\n");
    await t.write("edited.txt", "a tool's edit\n"); // work in the tree before the command: its sync-in holds the sandbox
    armed = true;
    const r = await s.cmd("echo two > two.txt; echo two");
    expect(r.stdout).toBe("");
    expect(r.output).toContain("ended before this command ran (it did not run: run it again)");
    expect(r.output).toContain("did not all stop within 5 s");
    expect(await t.read("two.txt").catch(() => null)).toBeNull();
    expect((await s.ended).reason).toBe("crashed");
  }, 60_000);

  it("after a command: it ran, its changes are written back, the sandbox ends, and its output says so", async () => {
    armedByFile = () => inTree("unhold");
    const s = startLive();
    const r = await s.cmd("echo kept > kept.txt; touch unhold; echo ran");
    armedByFile = () => false;
    expect(r.stdout).toBe("ran\n");
    expect(r.output).toMatch(/^ran\n\[toolshed: the session's live sandbox was ended after this command: /);
    expect(await t.read("kept.txt")).toBe("kept\n");
    expect((await s.ended).reason).toBe("crashed");
  }, 60_000);
});
