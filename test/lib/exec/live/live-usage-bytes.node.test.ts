/**
 * A live sandbox's workspace bytes in its usage records (docs/usage.md), through the real app, the
 * in-memory coordinator and the real runner (local executor, bubblewrap): a command's record counts
 * what it wrote back, and what background processes wrote since the last command (written back before
 * the next command runs); the "live sandbox" record at its end counts what its final write-back wrote.
 * Before (2026-12-02) both of the latter were 0: the runner's result left the background write-back's
 * bytes out, and its end report carried none.
 */
import { afterAll, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import { sandboxApp } from "../../doors/sandbox-app.js";
import { until } from "../../../infra/container/live-helpers.js";
import { sessionCalls } from "./session-calls.js";

const { tenant, usage, call, close } = sandboxApp({ liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS) });
afterAll(close);

it("a live command's record counts its own write-back and the background one before it; the end's record counts the final write-back", async () => {
  const t = await tenant("live-bytes");
  const { bash, read } = sessionCalls(call, t.key);
  const bashRecords = () => usage.filter((u) => u.tool === "bash");

  // Its own write: 5 bytes.
  expect(await bash({ command: "printf hello > five.txt", keep_alive: true, idle_timeout_s: 10 })).toContain("[live sandbox started");
  expect(bashRecords()[0]!.bytes_written).toBeGreaterThanOrEqual(5);

  // A background process writes 6 bytes after its command answered: written back before the next command, in that call's record.
  await bash({ command: "(sleep 1; printf 123456 > bg.txt) >/dev/null 2>&1 &" });
  await new Promise((r) => setTimeout(r, 2500));
  expect(await bash({ command: "true" })).not.toContain("live sandbox started");
  expect(bashRecords()[2]!.bytes_written).toBeGreaterThanOrEqual(6);
  expect(await read("bg.txt")).toBe("123456");

  // After the last command, 10 bytes: written back at the sandbox's end (its idle timeout), in its "live sandbox" record.
  await bash({ command: "(sleep 1; printf 0123456789 > end.txt) >/dev/null 2>&1 &" });
  const end = await until(() => usage.find((u) => u.route === "live sandbox"), "the sandbox's end record", 30_000);
  expect(await read("end.txt")).toBe("0123456789");
  expect(end.bytes_written).toBeGreaterThanOrEqual(10);
  expect(end.bytes_read).toBe(0); // an end fetches nothing
}, 60_000);
