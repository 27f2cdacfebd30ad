/**
 * A live sandbox's background processes against the runner's own work on its tree (hold-still.ts).
 * The runner writes back, syncs in and settles by path, as root here: a background process that
 * swaps a directory for a link to a host directory at the right moment made it upload a host file
 * into the workspace, or download the tenant's files into the host directory. Both attacks below
 * succeeded on the code before the fix (the download one on its first command).
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { liveSetup } from "./live-helpers.js";

const { t, startLive } = liveSetup();
const victim = `${t.root}-victim`; // a host directory no sandbox sees: another slot, the runner's own files
afterAll(async () => {
  await t.cleanup();
  rmSync(victim, { recursive: true, force: true });
});

/** A python program that swaps `d` (a directory) and `l` (a link to the victim) with renameat2(RENAME_EXCHANGE). */
const swapper = (loop: string) => `
import os, ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs('d', exist_ok=True)
if not os.path.islink('l'): os.symlink('${victim}', 'l')
swap = lambda: libc.renameat2(-100, b'd', -100, b'l', 2)
${loop}
`;

describe("a live sandbox holds still while the runner works on its tree", () => {
  it("a link swapped in for a directory during the sync-in: no downloaded file lands in the host directory", async () => {
    mkdirSync(victim, { recursive: true });
    // Waits for the runner's first file in d/ (inotify IN_CREATE), then makes d the link: the next files would go through it.
    await t.write("swap.py", swapper("fd = libc.inotify_init(); libc.inotify_add_watch(fd, b'd', 0x100); print('watching', flush=True); os.read(fd, 64); swap(); print('swapped', flush=True)"));
    const s = startLive();
    expect((await s.cmd("(python3 swap.py > /tmp/log 2>&1 &); sleep 0.3; cat /tmp/log")).stdout).toBe("watching\n");
    for (let i = 0; i < 100; i++) await t.write(`d/planted-${i}.txt`, "planted by the tenant\n");
    const r = await s.cmd("sleep 0.2; cat /tmp/log; readlink d");
    expect(r.stdout).toBe(`watching\nswapped\n${victim}\n`); // control: the swap happened, after the runner's first file
    expect(readdirSync(victim)).toEqual([]);
    await s.end();
  }, 60_000);

  it("a directory and a link swapped all the time: no host file is written back, and the loop runs on between commands", async () => {
    mkdirSync(victim, { recursive: true });
    writeFileSync(`${victim}/secret.txt`, "HOST-SECRET\n");
    await t.write("toggle.py", swapper("i = 0\nwhile True:\n    i += 1\n    open('count.new', 'w').write(str(i)); os.rename('count.new', 'count')\n    os.path.isdir('d') and not os.path.islink('d') and open('d/secret.txt', 'w').write(str(i))\n    swap(); time.sleep(0.0003)"));
    const s = startLive();
    await s.cmd("rm -rf d l; (python3 toggle.py 2>/tmp/err &); sleep 0.2");
    const counts: number[] = [];
    for (let i = 0; i < 15; i++) counts.push(Number((await s.cmd("sleep 0.05; cat count")).stdout));
    for (const p of await t.paths()) expect(await t.read(p)).not.toContain("HOST-SECRET");
    expect(new Set(counts).size).toBe(counts.length); // control: it ran between (and during) the commands
    expect((await s.cmd("cat /tmp/err")).stdout).toBe("");
    await s.end();
  }, 120_000);

  it("a background loop of subprocesses (vfork: a parent waits, uninterruptibly, on its stopped child) does not hold a command up", async () => {
    await t.write("spawn.py", "import subprocess\nwhile True: subprocess.run(['/bin/true'])\n");
    const s = startLive();
    await s.cmd("(python3 spawn.py &); (python3 spawn.py &); sleep 0.3");
    for (let i = 0; i < 15; i++) expect((await s.cmd("echo ok")).stdout).toBe("ok\n"); // before the vfork rule: the fifth or so waited 5 s, and the sandbox was killed
    // Both loops still run. Counted by parent: a loop's child caught between its vfork and its exec shows the loop's command line too.
    const loops = `for p in $(pgrep -f spawn.py); do pp=$(cut -d' ' -f4 /proc/$p/stat 2>/dev/null) && ! grep -qs spawn.py /proc/$pp/cmdline && echo $p; done | wc -l`;
    expect((await s.cmd(loops)).stdout.trim()).toBe("2");
    await s.end();
  }, 120_000);

  it("a process the command stopped stays stopped; the others run on", async () => {
    const s = startLive();
    await s.cmd("sleep 711 & echo $! > /tmp/stopped; kill -STOP $!; (while :; do date +%s%N > ticks.new; mv ticks.new ticks; sleep 0.01; done) &");
    const state = () => s.cmd("sleep 0.1; cut -d' ' -f3 /proc/$(cat /tmp/stopped)/stat; cat ticks");
    const [a, b] = [(await state()).stdout.split("\n"), (await state()).stdout.split("\n")];
    expect([a[0], b[0]]).toEqual(["T", "T"]);
    expect(b[1]).not.toBe(a[1]);
    await s.end();
  }, 60_000);
});

