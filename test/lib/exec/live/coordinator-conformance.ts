/**
 * The live coordinator's conformance suite (lib/exec/live/types.ts): run against the memory one in
 * Node (memory.node.test.ts) and the Durable Object one in workerd (durable.test.ts). The runner's
 * side is played by calling next/result/ended directly. Timings are short (fast tests), and every
 * wait is on an answer, never a sleep.
 */
import { describe, expect, it } from "vitest";
import type { LiveCoordinator, LiveKey, LiveTimings } from "../../../../lib/exec/live/types.js";
import { LIVE_LIST_MAX, type LiveStatus } from "../../../../lib/sync/live-types.js";

export const FAST: LiveTimings = { poll_ms: 300, stale_ms: 400, start_wait_ms: 600 };
/**
 * For tests through the app whose subject is not a lost or absent runner: FAST's polls, but a runner
 * is taken for lost only after 5 s without one. With FAST's 400 ms an idle fake runner's next poll came
 * too late on a loaded machine (live-api's "two tenants" once, live-cost's second test twice).
 */
export const STEADY: LiveTimings = { ...FAST, stale_ms: 5_000, start_wait_ms: 5_000 };

let n = 0;
const newKey = (): LiveKey => ({ tenant: `t${Date.now()}${n}`, workspace: "ws", session: `s${n++}` });
const status = (generation: string, extra: Partial<LiveStatus> = {}): LiveStatus => ({ generation, started_at: Date.now(), last_used_at: Date.now(), processes: [], ports: [], wall_ms: 5, ...extra });
const TURN = { wait_ms: 5_000, turn_ms: 60_000 };
const startOf = (b: Awaited<ReturnType<LiveCoordinator["begin"]>>) => {
  if (!("start" in b)) throw new Error(`expected a start: ${JSON.stringify(b)}`);
  return b;
};

/** A new session's runner that has polled once (told to wait, its status `extra`), the turn given back: its generation. */
async function arrivedRunner(c: LiveCoordinator, key: LiveKey, extra: Partial<LiveStatus> = {}): Promise<string> {
  const b = startOf(await c.begin(key, TURN));
  const gen = b.start.generation;
  expect(await c.next(key, gen, status(gen, extra))).toEqual({ wait: true });
  await c.release(key, b.turn);
  return gen;
}

export function describeLiveCoordinator(name: string, make: () => LiveCoordinator) {
  describe(`live coordinator: ${name}`, () => {
    it("a first call starts a runner; its command goes to the runner's poll and the runner's result answers the call", async () => {
      const c = make();
      const key = newKey();
      const b = startOf(await c.begin(key, TURN));
      const gen = b.start.generation;
      const run = c.run(key, b.turn, { command: "echo hi" }, { timeout_ms: 10_000 });
      const next = await c.next(key, gen, status(gen));
      expect(next).toEqual({ command: { seq: 1, request: { command: "echo hi" } } });
      await c.result(key, gen, { generation: gen, seq: 1, response: { ok: true, result: { out: "hi" } }, status: status(gen, { processes: [{ pid: 7, command: "sleep 100" }], ports: [8123] }) });
      const a = await run;
      expect(a).toMatchObject({ response: { ok: true, result: { out: "hi" } }, ends: [] });
      await c.release(key, b.turn);
      // The next call finds the runner: no start; its status is what the runner said.
      const b2 = await c.begin(key, TURN);
      expect(b2).toMatchObject({ generation: gen });
      expect("start" in b2).toBe(false);
      const s = await c.status(key);
      expect(s.sandbox).toMatchObject({ generation: gen, processes: [{ pid: 7, command: "sleep 100" }], ports: [8123] });
      const run2 = c.run(key, (b2 as { turn: string }).turn, "second", { timeout_ms: 10_000 });
      expect(await c.next(key, gen, status(gen))).toEqual({ command: { seq: 2, request: "second" } });
      await c.result(key, gen, { generation: gen, seq: 2, response: { ok: false, error: { code: "TIMEOUT", message: "m" } }, status: status(gen) });
      expect(await run2).toMatchObject({ response: { ok: false, error: { code: "TIMEOUT" } } });
    });

    it("a runner's answer that is its next poll (resultThenNext): the call gets the answer, the poll is held for the next command; another generation's is told its end", async () => {
      const c = make();
      const key = newKey();
      const b = startOf(await c.begin(key, TURN));
      const gen = b.start.generation;
      const run = c.run(key, b.turn, "first", { timeout_ms: 10_000 });
      expect(await c.next(key, gen, status(gen))).toEqual({ command: { seq: 1, request: "first" } });
      // The session's next call waits for the turn; the answer's poll is held when the turn is given back, and is handed its command.
      const call = c.call(key, "second", { ...TURN, timeout_ms: 10_000, stateless: true });
      const poll = c.resultThenNext(key, gen, { generation: gen, seq: 1, response: { ok: true, result: 1 }, status: status(gen, { ports: [8123] }) });
      expect(await run).toMatchObject({ response: { ok: true, result: 1 }, ends: [] });
      await c.release(key, b.turn);
      expect(await poll).toEqual({ command: { seq: 2, request: "second" } });
      expect((await c.status(key)).sandbox).toMatchObject({ generation: gen, state: "running", ports: [8123] });
      const [last, answered] = await Promise.all([c.resultThenNext(key, gen, { generation: gen, seq: 2, response: { ok: true, result: 2 }, status: status(gen) }), call]);
      expect(answered).toMatchObject({ ran: { response: { ok: true, result: 2 } }, released: true });
      expect(last).toEqual({ wait: true }); // held its poll_ms: nothing came
      expect(await c.resultThenNext(key, "g_other", { generation: "g_other", seq: 1, response: { ok: true, result: 0 }, status: status("g_other") })).toEqual({ end: "replaced" });
    });

    it("a poll with nothing to do answers wait; a runner of another generation is told it was replaced", async () => {
      const c = make();
      const key = newKey();
      const b = startOf(await c.begin(key, TURN));
      expect(await c.next(key, b.start.generation, status(b.start.generation))).toEqual({ wait: true });
      expect(await c.next(key, "g_other", status("g_other"))).toEqual({ end: "replaced" });
      expect(await c.next(newKey(), b.start.generation, status(b.start.generation))).toEqual({ end: "replaced" }); // another session's key
    });

    it("a runner's newer poll answers its older one wait; the command goes to the newer", async () => {
      const c = make();
      const key = newKey();
      const b = startOf(await c.begin(key, TURN));
      const gen = b.start.generation;
      const older = c.next(key, gen, status(gen));
      await c.status(key); // the older poll is registered (one object, in order)
      const newer = c.next(key, gen, status(gen));
      expect(await older).toEqual({ wait: true });
      const run = c.run(key, b.turn, "x", { timeout_ms: 10_000 });
      expect(await newer).toEqual({ command: { seq: 1, request: "x" } });
      await c.result(key, gen, { generation: gen, seq: 1, response: { ok: true, result: "x" }, status: status(gen) });
      expect(await run).toMatchObject({ response: { ok: true, result: "x" } });
    });

    it("one command at a time: a second call waits for the turn, or is told busy when its wait runs out", async () => {
      const c = make();
      const key = newKey();
      const first = startOf(await c.begin(key, TURN));
      const busy = await c.begin(key, { wait_ms: 50, turn_ms: 60_000 });
      expect(busy).toMatchObject({ busy: { retry_after_s: expect.any(Number) } });
      expect((busy as { busy: { retry_after_s: number } }).busy.retry_after_s).toBeGreaterThanOrEqual(1);
      const second = c.begin(key, TURN);
      let got = false;
      void second.then(() => (got = true));
      await c.status(key); // a round trip: the second is still waiting
      expect(got).toBe(false);
      await c.release(key, first.turn);
      expect(await second).toMatchObject({ turn: expect.any(String) });
    });

    it("a runner that never comes: the call is answered unavailable in bounded time, and nothing is told lost", async () => {
      const c = make();
      const key = newKey();
      const b = startOf(await c.begin(key, TURN));
      const a = await c.run(key, b.turn, "x", { timeout_ms: 10_000 });
      expect(a).toMatchObject({ unavailable: { waited_ms: expect.any(Number) } });
      expect(a.ends).toEqual([expect.objectContaining({ generation: b.start.generation, arrived: false })]);
      await c.release(key, b.turn);
      const again = startOf(await c.begin(key, TURN));
      expect(again.lost).toBeUndefined();
    });

    it("a runner that ends under a command: the call is answered lost (what was lost) with a new generation to start; the end is answered once", async () => {
      const c = make();
      const key = newKey();
      const b = startOf(await c.begin(key, TURN));
      const gen = b.start.generation;
      const run = c.run(key, b.turn, "x", { timeout_ms: 10_000, lease: "lease1" });
      expect(await c.next(key, gen, status(gen))).toMatchObject({ command: { seq: 1 } });
      const lost = [{ pid: 9, command: "python3 -m http.server" }];
      const ends = await c.ended(key, gen, { generation: gen, reason: "max_life", lost_processes: lost, status: status(gen, { wall_ms: 1234, cpu_ms: 50 }) });
      expect(ends).toEqual([expect.objectContaining({ generation: gen, reason: "max_life", arrived: true, lease: "lease1", cpu_ms: 50, lost_processes: lost })]);
      const a = await run;
      expect(a).toMatchObject({ lost: { reason: "max_life", lost_processes: lost }, interrupted: true, start: { generation: expect.any(String) } });
      const fresh = (a as { start: { generation: string } }).start.generation;
      expect(fresh).not.toBe(gen);
      expect(await c.ended(key, gen, { generation: gen, reason: "max_life", lost_processes: [], status: status(gen) })).toEqual([]); // told twice: counted once
      // The same turn runs again on the new generation.
      const rerun = c.run(key, b.turn, "x", { timeout_ms: 10_000 });
      expect(await c.next(key, fresh, status(fresh))).toMatchObject({ command: { seq: 1, request: "x" } });
      await c.result(key, fresh, { generation: fresh, seq: 1, response: { ok: true, result: 1 }, status: status(fresh) });
      expect(await rerun).toMatchObject({ response: { ok: true, result: 1 } });
    });

    it("a runner that stops polling is lost: the next call is told what it lost and starts a new one", async () => {
      const c = make();
      const key = newKey();
      const gen = await arrivedRunner(c, key, { processes: [{ pid: 3, command: "node server.js" }] });
      // It never polls again: wait (on answers) until the coordinator takes it for lost.
      let s = await c.status(key);
      const until = Date.now() + 10_000;
      while (s.sandbox && Date.now() < until) s = await c.status(key);
      expect(s.sandbox).toBeNull();
      expect(s.ends).toEqual([expect.objectContaining({ generation: gen, reason: "crashed", arrived: true })]);
      const b2 = startOf(await c.begin(key, TURN));
      expect(b2.lost).toMatchObject({ generation: gen, reason: "crashed", lost_processes: [{ pid: 3, command: "node server.js" }] });
      expect(await c.next(key, gen, status(gen))).toMatchObject({ end: expect.any(String) }); // it comes back: told to end
    });

    it("end (DELETE): the held poll is told deleted, the status is gone, the next call hears of it; a second end finds none", async () => {
      const c = make();
      const key = newKey();
      const gen = await arrivedRunner(c, key);
      const held = c.next(key, gen, status(gen, { ports: [5000] }));
      await c.status(key); // the poll is registered before the end (one object, in order)
      const e = await c.end(key, "deleted");
      expect(e.ended).toMatchObject({ generation: gen, ports: [5000] });
      expect(e.ends).toEqual([expect.objectContaining({ generation: gen, reason: "deleted", arrived: true })]);
      expect(await held).toEqual({ end: "deleted" });
      expect((await c.status(key)).sandbox).toBeNull();
      expect((await c.end(key, "deleted")).ended).toBeNull();
      expect(startOf(await c.begin(key, TURN)).lost).toMatchObject({ reason: "deleted" });
    });

    it("end (DELETE) then its runner's report: lostAtEnd and the next call name the processes the runner found at its end, not its last status's", async () => {
      const c = make();
      const key = newKey();
      const gen = await arrivedRunner(c, key, { processes: [{ pid: 3, command: "sleep 2" }, { pid: 4, command: "sleep 300" }] });
      const e = await c.end(key, "ended");
      expect(e.ended?.processes.map((p) => p.command)).toEqual(["sleep 2", "sleep 300"]); // the last report's
      expect(await c.lostAtEnd(key, gen, 50)).toBeNull(); // not reported yet: not known
      const waiting = c.lostAtEnd(key, gen, 5_000);
      await c.ended(key, gen, { generation: gen, reason: "ended", lost_processes: [{ pid: 4, command: "sleep 300" }], status: status(gen) });
      expect(await waiting).toEqual({ lost_processes: [{ pid: 4, command: "sleep 300" }] });
      expect(startOf(await c.begin(key, TURN)).lost).toMatchObject({ generation: gen, reason: "ended", lost_processes: [{ pid: 4, command: "sleep 300" }], reported: true });
      expect(await c.lostAtEnd(key, gen, 50)).toBeNull(); // its loss was told: no longer the session's to read
    });

    it("end for a deleted workspace: the held poll is told workspace_deleted, the end is accounted, and no later call hears of it (nor of its runner's last word)", async () => {
      const c = make();
      const key = newKey();
      const gen = await arrivedRunner(c, key);
      const held = c.next(key, gen, status(gen, { processes: [{ pid: 3, command: "node server.js" }] }));
      await c.status(key);
      const e = await c.end(key, "workspace_deleted");
      expect(e.ends).toEqual([expect.objectContaining({ generation: gen, reason: "workspace_deleted", arrived: true })]);
      expect(await held).toEqual({ end: "workspace_deleted" });
      expect(await c.ended(key, gen, { generation: gen, reason: "workspace_deleted", lost_processes: [{ pid: 3, command: "node server.js" }], status: status(gen), written: { changed: ["a.txt"], deleted: [], conflicts: [] } })).toEqual([]);
      expect(await c.call(key, "x", { ...TURN, timeout_ms: 10_000, join: true })).toEqual({ begun: { none: {}, ends: [] } });
      expect(startOf(await c.begin(key, TURN)).lost).toBeUndefined();
    });

    it("what a runner's final write-back did reaches the next call, each list cut to its first paths and counted, however long", async () => {
      const c = make();
      const key = newKey();
      const gen = await arrivedRunner(c, key);
      // 20,000 paths of ~120 bytes: 2.4 MB, past what one DynamoDB item holds.
      const changed = Array.from({ length: 20_000 }, (_, i) => `build/${"d".repeat(100)}/${i}.o`);
      await c.ended(key, gen, { generation: gen, reason: "idle", lost_processes: [], status: status(gen), written: { changed, deleted: ["a.txt", "b.txt"], conflicts: [] } });
      expect(startOf(await c.begin(key, TURN)).lost).toEqual({
        generation: gen, reason: "idle", lost_processes: [], reported: true,
        written: { changed: changed.slice(0, 20), deleted: ["a.txt", "b.txt"], conflicts: [], counts: { changed: 20_000, deleted: 2, conflicts: 0 } },
      });
    });

    it("a status past the list bound (4,096 processes, their ports) is kept bounded with its counts, and the next call is told them all", async () => {
      const c = make();
      const key = newKey();
      // ~1 MB of status: past a poll's body and a DynamoDB item, had it been kept whole.
      const processes = Array.from({ length: 4096 }, (_, i) => ({ pid: 4096 - i, command: `worker --id ${i} ${"x".repeat(250)}` }));
      const ports = Array.from({ length: 4096 }, (_, i) => 60_000 - i);
      const gen = await arrivedRunner(c, key, { processes, ports });
      const shown = (await c.status(key)).sandbox!;
      expect(shown.processes).toHaveLength(LIVE_LIST_MAX);
      expect(shown.processes[0]).toEqual({ pid: 1, command: `worker --id 4095 ${"x".repeat(250)}`.slice(0, 200) });
      expect(shown).toMatchObject({ processes_total: 4096, ports_total: 4096 });
      expect(shown.ports.slice(0, 2)).toEqual([55_905, 55_906]);
      const held = c.next(key, gen, status(gen, { processes, ports }));
      await c.status(key);
      await c.end(key, "deleted");
      await held;
      const lost = startOf(await c.begin(key, TURN)).lost!;
      expect(lost).toMatchObject({ reason: "deleted", lost_total: 4096 });
      expect(lost.lost_processes).toHaveLength(LIVE_LIST_MAX);
    });

    it("a runner's end lists its lost processes bounded, with their count", async () => {
      const c = make();
      const key = newKey();
      const gen = await arrivedRunner(c, key);
      const lost = Array.from({ length: 300 }, (_, i) => ({ pid: i + 2, command: "sleep 300" }));
      const ends = await c.ended(key, gen, { generation: gen, reason: "idle", lost_processes: lost, status: status(gen) });
      expect(ends).toEqual([expect.objectContaining({ lost_total: 300, lost_processes: lost.slice(0, LIVE_LIST_MAX) })]);
      expect(startOf(await c.begin(key, TURN)).lost).toMatchObject({ reason: "idle", lost_total: 300, lost_processes: lost.slice(0, LIVE_LIST_MAX) });
    });

    it("a call whose sandbox access differs from the current one's replaces it; the same access reuses it", async () => {
      const c = make();
      const key = newKey();
      const b = startOf(await c.begin(key, { ...TURN, sandbox: "net" }));
      const gen = b.start.generation;
      expect(await c.next(key, gen, status(gen))).toEqual({ wait: true });
      await c.release(key, b.turn);
      const same = await c.begin(key, { ...TURN, sandbox: "net" });
      expect(same).toMatchObject({ generation: gen });
      await c.release(key, (same as { turn: string }).turn);
      const other = startOf(await c.begin(key, { ...TURN, sandbox: "no-net" }));
      expect(other.start.generation).not.toBe(gen);
      expect(other.lost).toMatchObject({ generation: gen, reason: "replaced" });
      expect(other.ends).toEqual([expect.objectContaining({ generation: gen, reason: "replaced", arrived: true })]);
      expect(await c.next(key, gen, status(gen))).toEqual({ end: "replaced" });
    });

    it("call: on a runner that has answered, one request takes the turn, runs and gives the turn back (kept while a new shell state is saved); else it is only begun", async () => {
      const c = make();
      const key = newKey();
      const CALL = { ...TURN, timeout_ms: 10_000 };
      const shell = (unchanged: boolean) => ({ ok: true as const, result: { shell: { state: { cwd: "sub" }, notes: [], ...(unchanged ? { unchanged: true } : {}) } } });
      // No runner: only begun (start one), nothing queued.
      const first = await c.call(key, "a", { ...CALL, stateless: true });
      if (!("begun" in first) || !("start" in first.begun)) throw new Error(`expected a start: ${JSON.stringify(first)}`);
      const { turn, start } = first.begun;
      const gen = start.generation;
      // Started, not yet answered: a call without the saved shell is only begun (the runner's first command restores it).
      const run = c.run(key, turn, "a+shell", { timeout_ms: 10_000 });
      expect(await c.next(key, gen, status(gen))).toEqual({ command: { seq: 1, request: "a+shell" } });
      await c.result(key, gen, { generation: gen, seq: 1, response: shell(false), status: status(gen) });
      expect(await run).toMatchObject({ response: shell(false) });
      await c.release(key, turn);
      // Served: one request, the turn given back with an answer that saves nothing.
      const same = c.call(key, "b", { ...CALL, stateless: true });
      expect(await c.next(key, gen, status(gen))).toEqual({ command: { seq: 2, request: "b" } });
      await c.result(key, gen, { generation: gen, seq: 2, response: shell(true), status: status(gen) });
      expect(await same).toMatchObject({ ran: { response: shell(true), ends: [] }, released: true });
      const free = await c.begin(key, { wait_ms: 50, turn_ms: 60_000 });
      expect(free).toMatchObject({ generation: gen });
      await c.release(key, (free as { turn: string }).turn);
      // An answer with a new shell state keeps the turn until the caller gives it back (after saving it).
      const changed = c.call(key, "cd x", { ...CALL, stateless: true });
      expect(await c.next(key, gen, status(gen))).toMatchObject({ command: { seq: 3 } });
      await c.result(key, gen, { generation: gen, seq: 3, response: shell(false), status: status(gen) });
      const kept = await changed;
      expect(kept).toMatchObject({ ran: { response: shell(false) }, released: false });
      expect(await c.begin(key, { wait_ms: 50, turn_ms: 60_000 })).toMatchObject({ busy: expect.any(Object) });
      await c.release(key, (kept as { turn: string }).turn);
      // Another session's runner that has not answered yet: a stateless call is only begun, one with its state runs.
      const k2 = newKey();
      const s2 = startOf(await c.begin(k2, TURN));
      await c.release(k2, s2.turn);
      const g2 = s2.start.generation;
      const begun = await c.call(k2, "y", { ...CALL, stateless: true });
      expect(begun).toMatchObject({ begun: { generation: g2 } });
      await c.release(k2, (begun as { begun: { turn: string } }).begun.turn);
      const ran = c.call(k2, "y+shell", CALL);
      expect(await c.next(k2, g2, status(g2))).toEqual({ command: { seq: 1, request: "y+shell" } });
      await c.result(k2, g2, { generation: g2, seq: 1, response: { ok: true, result: 1 }, status: status(g2) });
      expect(await ran).toMatchObject({ ran: { response: { ok: true, result: 1 } }, released: true });
    });

    it("join (a call without keep_alive): never starts or replaces a runner; with none, the untold loss goes with the answer", async () => {
      const c = make();
      const key = newKey();
      const CALL = { ...TURN, timeout_ms: 10_000, join: true };
      expect(await c.call(key, "x", CALL)).toEqual({ begun: { none: {}, ends: [] } });
      expect((await c.status(key)).sandbox).toBeNull(); // nothing started
      const b = startOf(await c.begin(key, { ...TURN, sandbox: "net" }));
      const gen = b.start.generation;
      expect(await c.next(key, gen, status(gen))).toEqual({ wait: true });
      await c.release(key, b.turn);
      // Other access: left alone (not replaced), no turn held.
      expect(await c.call(key, "y", { ...CALL, sandbox: "no-net" })).toEqual({ begun: { none: { other_access: true }, ends: [] } });
      expect(await c.begin(key, { wait_ms: 50, turn_ms: 60_000, sandbox: "net" })).toMatchObject({ generation: gen });
      await c.end(key, "deleted");
      // Ended: the next join is told what was lost, once; nothing is started.
      const told = await c.call(key, "z", { ...CALL, sandbox: "net" });
      expect(told).toMatchObject({ begun: { none: { lost: { generation: gen, reason: "deleted" } } } });
      expect(await c.call(key, "z", { ...CALL, sandbox: "net" })).toEqual({ begun: { none: {}, ends: [] } });
      expect((await c.status(key)).sandbox).toBeNull();
    });

    it("sessions are apart: another session's (or tenant's) key sees no sandbox", async () => {
      const c = make();
      const key = newKey();
      const b = startOf(await c.begin(key, TURN));
      await c.next(key, b.start.generation, status(b.start.generation));
      expect((await c.status(key)).sandbox).not.toBeNull();
      expect((await c.status({ ...key, tenant: `${key.tenant}x` })).sandbox).toBeNull();
      expect((await c.status({ ...key, session: `${key.session}x` })).sandbox).toBeNull();
      expect((await c.end({ ...key, workspace: "other" }, "deleted")).ended).toBeNull();
    });
  });
}
