/**
 * A run's claim carried by its manifest request (infra/container/riding-claim.ts, lib/sync/view.ts
 * conditionalManifest): taken there when the client can carry it, sent alone when it cannot, when
 * the API took none (an older API), and when the carrying request failed after the API took it (the
 * same attempt is told `claimed`, so the run still runs, once). A retried invocation never runs again.
 */
import { describe, expect, it } from "vitest";
import { RidingClaim } from "../../../infra/container/riding-claim.js";
import { runOnce } from "../../../infra/container/run-once.js";
import type { RunResult } from "../../../lib/exec/types.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { ManifestAnswer, ManifestQuery } from "../../../lib/sync/manifest.js";
import { storageRunRecords } from "../../../lib/sync/run-records.js";
import type { ClaimOutcome, ClaimRequest, RunRecordClient, SyncClient } from "../../../lib/sync/types.js";
import { ManifestView, conditionalManifest } from "../../../lib/sync/view.js";

const empty: ManifestAnswer = { count: 0, buckets: 1, same: [], files: [] };

/** The run's record in memory, every claim asked through it logged. */
function records(key = "k") {
  const rec = storageRunRecords(memoryDriver(), "t", "w", key, Date.now() + 60_000);
  const alone: ClaimRequest[] = [];
  return { rec, alone, client: { ...rec, claim: (o: ClaimRequest) => (alone.push(o), rec.claim(o)) } as RunRecordClient };
}

/** A sync client that carries claims to `rec` (as POST /v1/sync/manifest does); `how` bends its answer. */
function carrying(rec: RunRecordClient, how: "ok" | "lost" | "older" = "ok") {
  const carried: ClaimRequest[] = [];
  const sync = {
    manifestSince: async (_q: ManifestQuery) => empty,
    manifestWithClaim: async (_q: ManifestQuery, claim: ClaimRequest): Promise<{ answer: ManifestAnswer | null; claim: ClaimOutcome | null }> => {
      carried.push(claim);
      if (how === "older") return { answer: empty, claim: null }; // an API that took no claim
      const outcome = await rec.claim(claim);
      if (how === "lost") throw new Error("connection reset"); // taken, its answer lost
      return { answer: empty, claim: outcome };
    },
  } as unknown as SyncClient;
  return { sync, carried };
}

describe("the claim carried by the manifest request", () => {
  it("rides on the request: nothing sent alone", async () => {
    const r = records();
    const { sync, carried } = carrying(r.rec);
    const ride = new RidingClaim(r.client, false);
    await conditionalManifest(sync, new ManifestView(), null, undefined, ride);
    expect(await ride.outcome).toEqual({ claimed: true, kill: false });
    expect(carried).toHaveLength(1);
    expect(r.alone).toEqual([]);
  });

  it("goes alone, with the same attempt, when the carrying request's answer was lost or an older API took none: still this attempt's", async () => {
    for (const how of ["lost", "older"] as const) {
      const r = records();
      const { sync, carried } = carrying(r.rec, how);
      const ride = new RidingClaim(r.client, false);
      const asked = conditionalManifest(sync, new ManifestView(), null, undefined, ride);
      if (how === "lost") await expect(asked).rejects.toThrow(/connection reset/);
      else await asked;
      expect(await ride.outcome).toEqual({ claimed: true, kill: false });
      expect(r.alone).toEqual(carried); // the same request: task and attempt
    }
  });

  it("goes alone beside the request when the client carries nothing (no manifestWithClaim)", async () => {
    const r = records();
    const ride = new RidingClaim(r.client, true);
    await conditionalManifest({ manifestSince: async () => empty } as unknown as SyncClient, new ManifestView(), null, undefined, ride);
    expect(await ride.outcome).toEqual({ claimed: true, kill: false });
    expect(r.alone).toHaveLength(1);
    expect(r.alone[0]!.task).toBe(true);
  });

  it("runOnce: a run whose carrying answer was lost runs once; a retried invocation runs nothing and answers the first result", async () => {
    const r = records();
    let ran = 0;
    const run = (how: "ok" | "lost") => async (hooks: Parameters<Parameters<typeof runOnce>[3]>[0]) => {
      await conditionalManifest(carrying(r.rec, how).sync, new ManifestView(), null, undefined, hooks.claim).catch(() => {});
      if (hooks.claimed && !(await hooks.claimed())) throw new Error("not ours");
      hooks.onStart?.({ take: () => "" } as never);
      ran++;
      return { exit_code: 0, output: `run ${ran}` } as unknown as RunResult;
    };
    const first = await runOnce("r1", false, r.client, run("lost"), { claimWaitMs: 1000 });
    expect(first).toMatchObject({ ok: true, result: { output: "run 1" } });
    const retry = await runOnce("r1", false, r.client, run("ok"), { claimWaitMs: 1000 });
    expect(retry).toEqual(first);
    expect(ran).toBe(1);
  });

  it("a run that stops before its manifest request claims alone, then releases (a retry may run it)", async () => {
    const r = records();
    const res = await runOnce("r2", false, r.client, async () => {
      throw new Error("the workspace could not be fetched");
    });
    expect(res).toMatchObject({ ok: false, error: { code: "INTERNAL" } });
    expect(r.alone).toHaveLength(1);
    expect(await r.rec.state()).toEqual({ claim: null, result: null });
  });
});
