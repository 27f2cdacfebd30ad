/** hold-still.ts on processes of the test's own: stopped until a scan finds none running, resumed after; fail-closed when it sees none. */
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { holdStill } from "../../../infra/container/hold-still.js";
import { threadStates } from "../../../infra/container/live-status.js";

const children: ChildProcess[] = [];
afterAll(() => children.forEach((c) => c.kill("SIGKILL")));
const start = (cmd: string) => {
  const c = spawn("/bin/sh", ["-c", cmd], { stdio: "ignore" });
  children.push(c);
  return c.pid!;
};
const states = (pid: number) => threadStates(pid).map((t) => t.state).join("");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it("stops every listed process (a busy one, a sleeping one), resumes only those it stopped", async () => {
  const busy = start("while :; do :; done");
  const idle = start("exec sleep 600");
  const paused = start("exec sleep 601");
  process.kill(paused, "SIGSTOP");
  await sleep(100);
  expect(states(paused)).toBe("T"); // control
  const resume = await holdStill(async () => [busy, idle, paused]);
  expect(resume).not.toBeNull();
  expect([states(busy), states(idle), states(paused)]).toEqual(["T", "T", "T"]);
  resume!();
  await sleep(100);
  expect(states(busy)).toMatch(/^[RS]$/);
  expect(states(idle)).toBe("S");
  expect(states(paused)).toBe("T"); // the command's own stop stays
});

it("a sandbox whose processes cannot be seen is not held: null (the caller ends it)", async () => {
  expect(await holdStill(async () => [])).toBeNull();
});

it("reads the whole list twice per hold when nothing forks: once to stop, once to see all still (each turn between reads only the threads of those stopped)", async () => {
  const sleepers = Array.from({ length: 20 }, (_, i) => start(`exec sleep ${700 + i}`));
  await sleep(100);
  let scans = 0;
  const list = async () => (scans++, sleepers);
  for (let i = 0; i < 10; i++) {
    const resume = await holdStill(list);
    expect(resume).not.toBeNull();
    expect(sleepers.map(states).join("")).toBe("T".repeat(20));
    resume!();
  }
  // Before (2026-12-02): every turn until the stops took effect read the whole list again (6.7 reads per hold, in a live sandbox at load 16).
  expect(scans).toBe(20);
});

it("a process that keeps continuing another: both are held (the one continued is stopped again)", async () => {
  const target = start("exec sleep 720");
  const waker = start(`while :; do kill -CONT ${target} 2>/dev/null; done`);
  await sleep(100);
  for (let i = 0; i < 5; i++) {
    const resume = await holdStill(async () => [target, waker]);
    expect(resume).not.toBeNull();
    expect([states(target), states(waker)]).toEqual(["T", "T"]);
    resume!();
    await sleep(20);
  }
});

/** cgroup v1's freezer, where this host has one we may write: a frozen process shows D and stops only once thawed. */
const FREEZER = "/sys/fs/cgroup/freezer";
const freezer = (() => {
  try {
    accessSync(FREEZER, constants.W_OK);
    return true;
  } catch {
    return false;
  }
})();

it.skipIf(!freezer)("a process slow to stop (frozen: D until thawed) is read about once a millisecond, not every turn, and held once it stops", async () => {
  const pid = start("exec sleep 730");
  const group = mkdtempSync(join(FREEZER, "toolshed-hold-"));
  const thaw = () => writeFileSync(join(group, "freezer.state"), "THAWED");
  try {
    writeFileSync(join(group, "cgroup.procs"), String(pid));
    writeFileSync(join(group, "freezer.state"), "FROZEN");
    for (let i = 0; i < 100 && readFileSync(join(group, "freezer.state"), "utf8").trim() !== "FROZEN"; i++) await sleep(10);
    expect(states(pid)).toBe("D"); // control
    const thawed = sleep(300).then(thaw);
    const counts = { scans: 0, readings: 0 };
    const resume = await holdStill(async () => [pid], 5000, counts);
    await thawed;
    expect(resume).not.toBeNull();
    expect(states(pid)).toBe("T");
    // ~300 readings in 300 ms; the code before read the list and the threads every turn meanwhile (thousands).
    expect(counts.readings).toBeLessThan(600);
    expect(counts.scans).toBe(2);
    resume!();
  } finally {
    thaw();
    writeFileSync(join(FREEZER, "cgroup.procs"), String(pid));
    rmdirSync(group);
  }
});
