/**
 * What a live sandbox's status and end may list (lib/sync/live-types.ts LIVE_LIST_MAX): the runner
 * sends no more, the coordinators keep no more (coordinator-conformance.ts), and the model's loss note
 * counts them all.
 */
import { describe, expect, it } from "vitest";
import { boundedEnded, boundedStatus, LIVE_COMMAND_MAX, LIVE_LIST_MAX, type LiveStatus } from "../../../lib/sync/live-types.js";
import { lossNote } from "../../../lib/exec/live/loss-note.js";

const status = (extra: Partial<LiveStatus> = {}): LiveStatus => ({ generation: "g", started_at: 1, last_used_at: 2, processes: [], ports: [], wall_ms: 3, ...extra });
const procs = (n: number) => Array.from({ length: n }, (_, i) => ({ pid: n - i, command: `p${n - i}` }));

describe("bounded live statuses", () => {
  it("leaves a status within the bound as it is: no counts added", () => {
    const s = status({ processes: procs(LIVE_LIST_MAX), ports: [3000, 8123], cpu_ms: 5 });
    expect(boundedStatus(s)).toEqual(s);
  });

  it("keeps the lowest pids and ports, counts them all, and cuts each command line", () => {
    const long = procs(LIVE_LIST_MAX + 1).map((p) => ({ ...p, command: "x".repeat(1000) }));
    const b = boundedStatus(status({ processes: long, ports: Array.from({ length: 70 }, (_, i) => 9000 - i) }));
    expect(b.processes.map((p) => p.pid)).toEqual(Array.from({ length: LIVE_LIST_MAX }, (_, i) => i + 1));
    expect(b.processes.every((p) => p.command.length === LIVE_COMMAND_MAX)).toBe(true);
    expect(b).toMatchObject({ processes_total: LIVE_LIST_MAX + 1, ports_total: 70 });
    expect(b.ports[0]).toBe(8931);
  });

  it("a list cut before keeps its count; a count below the list's length is not believed", () => {
    expect(boundedStatus(status({ processes: procs(LIVE_LIST_MAX), processes_total: 500 }))).toMatchObject({ processes_total: 500 });
    expect(boundedStatus(status({ processes: procs(LIVE_LIST_MAX + 2), processes_total: 3 })).processes_total).toBe(LIVE_LIST_MAX + 2);
    expect(boundedStatus(status({ processes: procs(2), processes_total: 1 }))).not.toHaveProperty("processes_total");
  });

  it("an end's lost processes and its status are bounded alike", () => {
    const e = boundedEnded({ generation: "g", reason: "idle", lost_processes: procs(300), status: status({ processes: procs(300) }) });
    expect(e.lost_processes).toHaveLength(LIVE_LIST_MAX);
    expect(e.lost_total).toBe(300);
    expect(e.status.processes_total).toBe(300);
  });
});

describe("the loss note", () => {
  it("counts every lost process, not just those listed", () => {
    const note = lossNote({ generation: "g", reason: "idle", lost_processes: procs(LIVE_LIST_MAX), lost_total: 300 });
    expect(note).toContain("300 processes (p64; p63; p62; p61; p60; ...)");
    expect(lossNote({ generation: "g", reason: "idle", lost_processes: procs(1) })).toContain("1 process (p1)");
  });
});
