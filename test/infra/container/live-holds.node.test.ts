/**
 * How often a live command holds its sandbox still (hold-still.ts), counted by the scans of its
 * processes (LiveProbe.pids): a command with nothing to do in the tree before it (no background
 * process, storage unchanged, no working directory to make) is held once, after it, and a hold of
 * an idle sandbox scans its processes twice (to stop them, then to see them all still). Before
 * (2026-12-02): two holds per command, each scanning again every turn until the stops took effect
 * (≥ 4 scans per no-change command; 13 on average in a live sandbox at load 16).
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bwrapSandbox, type Sandbox } from "../../../infra/container/sandbox.js";
import { liveSetup } from "./live-helpers.js";

const stateDir = mkdtempSync(join(tmpdir(), "toolshed-holds-"));
chmodSync(stateDir, 0o711);
const real = bwrapSandbox({ stateDir });
let scans = 0;
const sandbox: Sandbox = {
  ...real,
  async liveProbe(hostPid, shellPid) {
    const probe = await real.liveProbe(hostPid, shellPid);
    return { ...probe, pids: () => (scans++, probe.pids()) };
  },
};
const { t, startLive } = liveSetup({ sandbox });
afterAll(async () => {
  await t.cleanup();
  rmSync(stateDir, { recursive: true, force: true });
});

/** The scans `work` made. */
async function scansOf(work: () => Promise<unknown>): Promise<number> {
  const from = scans;
  await work();
  return scans - from;
}

describe("the holds of a live command", () => {
  it("no change: one hold, after the command, of two scans", async () => {
    await t.write("a.txt", "a\n");
    const s = startLive();
    await s.cmd("true");
    await s.cmd("true");
    for (let i = 0; i < 10; i++) expect(await scansOf(() => s.cmd("x=$((x+1))"))).toBeLessThanOrEqual(2);
    expect((await s.cmd("echo $x")).stdout).toBe("10\n");
    await s.end();
  }, 60_000);

  it("a tool's edit before the command, or a working directory to make: held before it too, and the edit is in the tree", async () => {
    const s = startLive();
    await s.cmd("true");
    await t.write("edited.txt", "by a tool\n");
    let out = "";
    expect(await scansOf(async () => (out = (await s.cmd("cat edited.txt")).stdout))).toBeGreaterThanOrEqual(4);
    expect(out).toBe("by a tool\n");
    expect(await scansOf(async () => (out = (await s.cmd("pwd", { cwd: "made/here" })).stdout))).toBeGreaterThanOrEqual(4);
    expect(out).toMatch(/\/made\/here\n$/);
    await s.end();
  }, 60_000);

  it("a background process left running: held before the command too (its changes are written back first)", async () => {
    const s = startLive();
    await s.cmd("(while :; do sleep 0.05; done) &");
    await s.cmd("echo bg > bg.txt &");
    expect(await scansOf(() => s.cmd("true"))).toBeGreaterThanOrEqual(4);
    expect(await t.read("bg.txt")).toBe("bg\n");
    await s.end();
  }, 60_000);
});
