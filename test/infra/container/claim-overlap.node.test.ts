/**
 * The run's claim and its start go side by side (run-once.ts): the manifest is asked while the
 * claim is in flight, the sandbox is set up meanwhile (its command waits at the gate: runner.ts),
 * and the command waits for the claim. A run that turns out to be another attempt's runs no
 * command, keeps its slot warm, and touches no record.
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { ManifestQuery } from "../../../lib/sync/manifest.js";
import { storageSyncClient } from "../../../lib/sync/storage.js";
import type { RunRequest, RunResult } from "../../../lib/exec/types.js";
import type { RunRecordClient, SyncClient } from "../../../lib/sync/types.js";
import { setup } from "./helpers.js";

const t = setup({}, "t-overlap", "w-overlap");
afterAll(() => t.cleanup());

/** A handler whose claims and manifests log when they are asked and answered; claims wait for `hold`. */
function logged(hold: () => Promise<void>) {
  const events: string[] = [];
  const runRecords = (r: RunRequest): RunRecordClient => {
    const rec = t.runRecords(r);
    return {
      ...rec,
      claim: async (o) => {
        events.push("claim asked");
        await hold();
        const c = await rec.claim(o);
        events.push(c.claimed ? "claimed" : "not ours");
        return c;
      },
      release: () => (events.push("release"), rec.release()),
      finish: (res) => (events.push("finish"), rec.finish(res)),
    };
  };
  const syncClient = (r: RunRequest): SyncClient => {
    const s = storageSyncClient(t.driver, r.tenant, r.workspace);
    return { ...s, manifestSince: (q: ManifestQuery) => (events.push("manifest"), s.manifestSince(q)) } as SyncClient;
  };
  // No spare sandbox (sandbox-spare.ts) beside the run's own among the processes counted here.
  const handler = t.freshHandler({ runRecords, syncClient, spares: false });
  /** In every bwrap command line of this handler's sandboxes (the tree's stage path; the command comes through the gate). */
  const marker = `${t.root}-env${t.envCount()}/`;
  return { events, handler, marker };
}

/** This process's bubblewrap children whose command line holds `marker` (the sandboxes of one handler). */
function bwrapChildren(marker: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat);
      if (m && m[1] === "bwrap" && Number(m[2]) === process.pid && readFileSync(`/proc/${d}/cmdline`, "utf8").includes(marker)) out.push(Number(d));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

describe("claim and manifest side by side", () => {
  it("the manifest is asked before the claim is answered; the command runs after it", async () => {
    await t.write("in.txt", "hello\n");
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    const { events, handler } = logged(() => opened);
    const req = t.req("cat in.txt; echo made > out.txt");
    const pending = handler(req, { tenantId: req.tenant });
    // The claim is held: the run gets as far as it may (waited for, not slept: a loaded machine is slow to get there).
    await vi.waitFor(() => expect(events).toEqual(["claim asked", "manifest"]), { timeout: 10_000, interval: 20 });
    expect(await t.read("out.txt")).toBe(null); // the command waits for the claim
    open();
    const r = t.unwrap<RunResult>(await pending);
    expect(r.stdout).toBe("hello\n");
    expect(events).toEqual(["claim asked", "manifest", "claimed", "finish"]);
    expect(await t.read("out.txt")).toBe("made\n");
  });

  it("a run that is another attempt's runs no command, touches no record, and leaves its slot warm", async () => {
    const req = t.req("echo x >> counter.txt; echo ran");
    const first = await t.handler(req, { tenantId: req.tenant });
    const { events, handler } = logged(async () => {});
    expect(await handler({ ...req }, { tenantId: req.tenant })).toEqual(first);
    expect([...events].sort()).toEqual(["claim asked", "manifest", "not ours"]); // no release, no finish
    expect(await t.read("counter.txt")).toBe("x\n");
    const next = t.unwrap<RunResult>(await handler(t.req("cat counter.txt"), { tenantId: req.tenant }));
    expect(next.stdout).toBe("x\n");
    expect(next.sync.cache).toBe("warm"); // the slot reconciled by the run that was not ours
  });

  it("the sandbox starts while the claim is held, its command at the gate; the timeout counts from the gate; a new working directory is made before", async () => {
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    const { events, handler, marker } = logged(() => opened);
    // A timeout shorter than the hold: counted from spawn, it would kill the command.
    const req = t.req("pwd; echo ran > /workspace/gate.txt", { timeout_ms: 1000, cwd: "new/sub" });
    const pending = handler(req, { tenantId: req.tenant });
    const until = Date.now() + 10_000;
    while (bwrapChildren(marker).length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(bwrapChildren(marker).length).toBe(1); // set up before the claim is answered
    await new Promise((r) => setTimeout(r, 1500));
    expect(events).toEqual(["claim asked", "manifest"]);
    expect(await t.read("gate.txt")).toBe(null);
    open();
    const r = t.unwrap<RunResult>(await pending);
    expect(r.timed_out).toBe(false);
    expect(r.stdout).toBe("/workspace/new/sub\n");
    expect(await t.read("gate.txt")).toBe("ran\n");
    expect(bwrapChildren(marker)).toEqual([]);
  });

  it("a run that is not ours ends its waiting sandbox without running the command", async () => {
    const req = t.req("echo y >> gated.txt");
    await t.handler(req, { tenantId: req.tenant });
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    const { events, handler, marker } = logged(() => opened);
    const pending = handler({ ...req }, { tenantId: req.tenant });
    const until = Date.now() + 10_000;
    while (bwrapChildren(marker).length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(bwrapChildren(marker).length).toBe(1);
    open();
    await pending;
    expect(events).toContain("not ours");
    expect(bwrapChildren(marker)).toEqual([]);
    expect(await t.read("gated.txt")).toBe("y\n");
  });
});
