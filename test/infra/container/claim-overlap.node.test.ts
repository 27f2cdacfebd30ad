/**
 * The run's claim and its start go side by side (run-once.ts): the manifest is asked while the
 * claim is in flight, and the command waits for the claim. A run that turns out to be another
 * attempt's runs no command, keeps its slot warm, and touches no record.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { ManifestQuery } from "../../../lib/exec/sync-manifest.js";
import { storageSyncClient } from "../../../lib/exec/sync-storage.js";
import type { RunRecordClient, RunRequest, RunResult, SyncClient } from "../../../lib/exec/types.js";
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
  return { events, handler: t.freshHandler({ runRecords, syncClient }) };
}

describe("claim and manifest side by side", () => {
  it("the manifest is asked before the claim is answered; the command runs after it", async () => {
    await t.write("in.txt", "hello\n");
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    const { events, handler } = logged(() => opened);
    const req = t.req("cat in.txt; echo made > out.txt");
    const pending = handler(req, { tenantId: req.tenant });
    await new Promise((r) => setTimeout(r, 300)); // the claim is held: the run gets as far as it may
    expect(events).toEqual(["claim asked", "manifest"]);
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
});
