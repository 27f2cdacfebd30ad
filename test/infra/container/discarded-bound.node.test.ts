/**
 * A stopped run's discarded changes are listed like the result's other listings: the first
 * DISCARDED_SHOWN in path order and how many there were (lib/exec/discarded.ts). Before, every path
 * was listed: a killed run with 68,015 changes answered a 700 KB result. The real runner and
 * bubblewrap sandbox through the app (test/support/runner-app.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DISCARDED_SHOWN } from "../../../lib/exec/discarded.js";
import { discardedNote } from "../../../lib/exec/write-back-notes.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { runnerApp } from "../../support/runner-app.js";

const N = 250;
const names = Array.from({ length: N }, (_, i) => `f${String(i + 1).padStart(3, "0")}.txt`);

describe("a stopped run's discarded changes, bounded", () => {
  let env: Awaited<ReturnType<typeof runnerApp>>;
  beforeAll(async () => {
    env = await runnerApp({ storage: memoryDriver() });
  });
  afterAll(() => env?.close());

  it(`a timed-out run that made ${N} files lists the first ${DISCARDED_SHOWN} in path order and counts them all; the model's message says how many`, async () => {
    // Made in reverse: the list is in path order, not the order they were made or walked in.
    const res = await env.app.request("/v1/workspaces/main/tools/bash", {
      method: "POST",
      headers: { authorization: `Bearer ${env.key}`, "content-type": "application/json" },
      body: JSON.stringify({ command: `for i in $(seq ${N} -1 1); do : > f$(printf %03d $i).txt; done; echo made; sleep 30`, timeout: 4 }),
    });
    const body = (await res.json()) as any;
    expect(body.error?.code, JSON.stringify(body).slice(0, 600)).toBe("TIMEOUT");
    expect(body.error.details.output).toContain("made");
    expect(body.error.details.discarded).toEqual(names.slice(0, DISCARDED_SHOWN));
    expect(body.error.details.discarded_count).toBe(N);
    expect(body.error.message).toContain(`Not in the workspace (${N} changes): f001.txt, f002.txt, f003.txt, f004.txt, f005.txt, .... Its output so far:`);
    expect(JSON.stringify(body).length).toBeLessThan(8000);
    const ls = (await (await env.app.request("/v1/workspaces/main/files/", { headers: { authorization: `Bearer ${env.key}` } })).json()) as any;
    expect(ls.entries).toEqual([]);
  });

  it("bash_output's and the OpenAI shell's line counts what the list does not name", () => {
    const line = discardedNote({ discarded: names.slice(0, DISCARDED_SHOWN), discarded_count: N }, "was killed", "Run it again to make them.");
    expect(line).toBe(`\n[not written back: the command was killed before it ended, so its ${N} changes (f001.txt, f002.txt, f003.txt, f004.txt, f005.txt, ...) are NOT in the workspace. Run it again to make them.]`);
    expect(discardedNote({ discarded: ["a.txt"] }, "timed out", "Again.")).toBe("\n[not written back: the command timed out before it ended, so its change (a.txt) is NOT in the workspace. Again.]");
  });
});
