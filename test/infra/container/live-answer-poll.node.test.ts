/**
 * A command's answer as the runner's next poll (LiveResultPost.poll; docs/live-sessions.md, "The
 * production design"), runner side: the real bwrap sandbox and an in-process channel standing in
 * for the API (QueueChannel). One request per command when the answer's status is what a poll
 * would read; the answer alone, then a poll that reads the status anew, when the command left a new
 * process (caught before its exec, it would be listed by its shell's command line); an API that
 * answers the answer 204 (one that predates it) is polled; an answer still to go is posted before
 * the sandbox's end.
 */
import { afterAll, describe, expect, it } from "vitest";
import { liveSetup, until } from "./live-helpers.js";

const { t, startLive } = liveSetup();
afterAll(() => t.cleanup());

describe("a command's answer carries the runner's next poll", () => {
  it("one request per command while the command leaves no new process; the answer alone, then a poll with the status read anew, when it does", async () => {
    const s = startLive();
    await s.cmd("true");
    await until(() => s.channel.log.length === 2, "the answer's request");
    expect(s.channel.log).toEqual(["next", "result+poll"]);
    for (let i = 0; i < 3; i++) await s.cmd("echo $((1 + 2)) > three.txt");
    await until(() => s.channel.log.length === 5, "the answers' requests");
    expect(s.channel.log.slice(2)).toEqual(["result+poll", "result+poll", "result+poll"]);
    // A process left running: its answer goes alone and the next poll's status is read after it (the process as it runs).
    // The command ends once the process has exec'ed: caught before its exec it is listed by its shell's command line, and
    // at the next command's end as `sleep 611`, a "new" process (the answer then goes alone: right, but not this test's case).
    const bg = await s.cmd('(exec sleep 611) & until [ "$(cat /proc/$!/comm 2>/dev/null)" = sleep ]; do :; done');
    await until(() => s.channel.log.length === 7, "the answer and the poll after it");
    expect(s.channel.log.slice(5)).toEqual(["result", "next"]);
    expect(bg.status.processes).toHaveLength(1);
    expect(s.channel.statuses.at(-1)!.processes).toHaveLength(1);
    // It still runs, nothing new: one request again, its status the answer's.
    const again = await s.cmd("true");
    await until(() => s.channel.log.length === 8, "the answer's request");
    expect(s.channel.log.at(-1)).toBe("result+poll");
    expect(s.channel.statuses.at(-1)).toEqual(again.status);
    const e = await s.end();
    expect(e.lost_processes.map((p) => p.command)).toEqual(["sleep 611"]);
  });

  it("an API that answers an answer 204 (one that predates it): the runner polls after each, and every command runs", async () => {
    const s = startLive();
    s.channel.old = true;
    expect((await s.cmd("export N=1")).exit_code).toBe(0);
    expect((await s.cmd("echo $((N + 1))")).stdout).toBe("2\n");
    await until(() => s.channel.log.length === 5, "the poll after the second answer");
    expect(s.channel.log).toEqual(["next", "result", "next", "result", "next"]);
    expect((await s.end()).reason).toBe("deleted");
  });

  it("a sandbox that ends while its answer's poll is held posts that answer again, alone, before its end (the API takes it once)", async () => {
    const s = startLive({ idle_ms: 1_500 });
    expect((await s.cmd("echo hi")).stdout).toBe("hi\n");
    const e = await s.ended;
    expect(e.reason).toBe("idle");
    expect(s.channel.log).toEqual(["next", "result+poll", "result", "ended"]);
  });
});
