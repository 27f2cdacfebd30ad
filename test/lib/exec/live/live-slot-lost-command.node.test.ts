/**
 * A live runner that crashed under a command (it never posts the command's result, never polls again)
 * while the call that waited for that result died too (its isolate or Lambda environment): its
 * concurrent_runs slot is freed, and its end accounted once, by the first acquirer past the limit once
 * both bounds the coordinator already keeps have passed (the command's timeout overrun by stale_ms, and
 * the caller's turn), never before (docs/live-sessions-internals.md "Its concurrent_runs slot"). Before (2026-12-02) a
 * generation with a command in flight was never taken for lost but by its caller's wait: its slot stayed
 * held until its lease ran out (the maximum life and a minute).
 *
 * Played on the coordinator's real hosts with a clock of the test's (no waits): memory, and DynamoDB
 * (dynalite) with two environments over one table, the call's (its clock stopped: it died) and the
 * acquirer's.
 */
import { describe, expect, it } from "vitest";
import { acquireSlot } from "../../../../lib/exec/limited.js";
import { dynamoLiveCoordinator } from "../../../../lib/exec/live/dynamodb.js";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS, liveLeaseMs, liveService, type LiveEvents } from "../../../../lib/exec/live/service.js";
import type { LiveCoordinator, LiveEnd, LiveKey } from "../../../../lib/exec/live/types.js";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { LIVE_MAX_LIFE_MS, type LiveStatus } from "../../../../lib/sync/live-types.js";
import { dynamoTableForFile } from "../../../support/dynalite-table.js";

const T = LIVE_TIMINGS;
const TIMEOUT_MS = 10_000;
const db = dynamoTableForFile();

/** The call's environment and the acquirer's, each with its own clock, over the same coordinator state. */
type Hosts = (callNow: () => number, laterNow: () => number) => { call: LiveCoordinator; later: LiveCoordinator };
const hosts: [string, Hosts][] = [
  ["memory (one process: one clock, the test's)", (_c, later) => ((c) => ({ call: c, later: c }))(memoryLiveCoordinator(T, later))],
  ["DynamoDB, two environments", (call, later) => {
    const make = (now: () => number) => dynamoLiveCoordinator({ client: db.server.client(), table: db.table, secret: "sync-secret-for-tests-0123456789", timings: T, now });
    return { call: make(call), later: make(later) };
  }],
];

let n = 0;
describe.each(hosts)("a runner lost under a command whose caller died too: %s", (_name, make) => {
  it("its slot is freed and its end accounted once, by the first acquirer past the limit after both bounds; not a millisecond before", async () => {
    const start = Date.now();
    let clock = start;
    const { call, later } = make(() => start, () => clock);
    const limits = memoryLimits();
    const ends: LiveEnd[] = [];
    const events: LiveEvents = { started: async () => {}, ended: async (_k, e) => void ends.push(e), writtenBack: async () => {} };
    const svc = liveService(later, { limits, events });
    const tenant = `lost-cmd-${n++}-${start}`;
    const key: LiveKey = { tenant, workspace: "ws", session: "s1" };
    await limits.set(tenant, { concurrent_runs: 1 });
    const caller = { key_id: "k1" };

    const b = await call.begin(key, { wait_ms: 0, turn_ms: 60_000 });
    if (!("start" in b)) throw new Error(JSON.stringify(b));
    const gen = b.start.generation;
    const slot = await acquireSlot(limits, tenant, caller, liveLeaseMs(LIVE_MAX_LIFE_MS), { holder: { workspace: "ws", session: "s1", generation: gen }, live: svc });
    expect(slot.ok).toBe(true);
    const running = call.run(key, b.turn, { command: "sleep 100" }, { timeout_ms: TIMEOUT_MS, ...(slot.ok ? { lease: slot.lease } : {}) });
    const st: LiveStatus = { generation: gen, started_at: start, last_used_at: start, processes: [{ pid: 9, command: "sleep 100" }], ports: [], wall_ms: 0 };
    expect(await later.next(key, gen, st)).toMatchObject({ command: { seq: 1 } });
    // The runner crashed with the command; the call's environment died (its clock stands still, its wait never finds the runner late).

    const other = { holder: { workspace: "ws", session: "s2", generation: "g_other" }, live: svc };
    const turnEnds = start + TIMEOUT_MS + T.start_wait_ms + T.stale_ms; // the caller's turn (its run's bound: the runner's own, taken at once, is sooner)
    clock = turnEnds - 1;
    expect((await acquireSlot(limits, tenant, caller, 60_000, other)).ok).toBe(false); // the runner may be alive still: its slot kept
    expect(ends).toEqual([]);
    expect((await later.status(key)).sandbox).toMatchObject({ generation: gen, state: "running" });

    clock = turnEnds;
    const d = await acquireSlot(limits, tenant, caller, 60_000, other);
    expect(d.ok, JSON.stringify(d)).toBe(true);
    expect(ends).toEqual([expect.objectContaining({ generation: gen, reason: "crashed", arrived: true, lost_processes: [{ pid: 9, command: "sleep 100" }] })]);
    // The command's answer, which nobody waited for, is turn_expired (here collected by the stopped call's wait).
    expect(await running).toMatchObject({ refused: "turn_expired" });
    // The session's next call starts a new sandbox and is told what was lost; the end is not accounted again.
    const next = await later.begin(key, { wait_ms: 0, turn_ms: 60_000 });
    expect(next).toMatchObject({ start: {}, lost: { generation: gen, reason: "crashed" }, ends: [] });
    expect((await later.status(key)).ends).toEqual([]);
  });
});
