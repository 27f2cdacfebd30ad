/**
 * The Worker's work per live call that repeats nothing (docs/benchmarks/investigations-live.md, #29),
 * counted on the real app (local R2/KV, the LIVE Durable Object) with the fake live runner, whose
 * answer and next poll go through the sync routes as the runner's do:
 * - HMAC keys: the sync secret's key is imported once per app (lib/shared/hmac-keys.ts), not at every
 *   token minted (the call's RunRequest) and checked (the runner's answer): 0 imports a call once warm.
 * - Guard rails: the approval gate's check and bash's share one verdict per call (lib/exec/tool-support.ts
 *   guardVerdict): each RE2 pattern runs at most once a call.
 */
import { afterEach, expect, it, vi } from "vitest";
import { RE2JS } from "re2js";
import { DEFAULT_BLOCKED, DEFAULT_CAUTION } from "../../../../lib/exec/guard.js";
import { newTenant } from "../../../helpers.js";
import { liveApp, okOutput } from "./live-app.js";

afterEach(() => void vi.restoreAllMocks());

it("a live call once warm imports no HMAC key and runs each guard pattern at most once (the gate's check and bash's shared)", async () => {
  const { app, runner } = liveApp();
  const t = await newTenant(app); // the default policy: the gate checks bash commands against the caution rules
  const bash = (command: string) => t.call("bash", { command, keep_alive: true, timeout: 5 }, "chat-1").then(okOutput);
  await bash("true");
  await bash("true");

  const imports = vi.spyOn(crypto.subtle, "importKey");
  const patternRuns = vi.spyOn(RE2JS.prototype, "test");
  const out = await bash("true");
  expect(out).toBe(`gen=${runner.generations[0]!.generation} n=3 cmd=true\n`);
  expect(imports).toHaveBeenCalledTimes(0); // 2 before: the call's token minted, the runner's answer's token checked
  // "true" matches no rule: every blocked and caution pattern is tried, once (twice each before).
  expect(patternRuns).toHaveBeenCalledTimes(DEFAULT_BLOCKED.length + DEFAULT_CAUTION.length);

  // A caution command is held by the gate from the same verdict; a blocked one is refused by bash from it.
  patternRuns.mockClear();
  const held = await t.call("bash", { command: "rm -r build", keep_alive: true, timeout: 5 }, "chat-1");
  expect(held.body.error?.code).toBe("NEEDS_APPROVAL");
  const blocked = await t.call("bash", { command: "rm -rf /", keep_alive: true, timeout: 5 }, "chat-1");
  expect(blocked.body.error?.code).toBe("BLOCKED");
  expect(imports).toHaveBeenCalledTimes(0);
});
