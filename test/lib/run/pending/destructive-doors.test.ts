/**
 * One rule decides what is destructive (lib/run/pending/destructive.ts), for every door: each
 * destructive tool is held by default through the tool route and through the compat routes that
 * run it (Anthropic bash, OpenAI shell and apply_patch); nothing changes before an approval, and
 * no message tells the model to confirm by itself (self_confirm is off by default).
 */
import { describe, expect, it } from "vitest";
import { ERROR_CODES } from "../../../../lib/shared/errors.js";
import { DESTRUCTIVE_TOOLS } from "../../../../lib/tools/pending/gate-policy.js";
import { newTenant, upload, type Tenant } from "../../../helpers.js";
import { compat } from "../../api/routes/compat-helpers.js";
import { held, readFile, setPolicy } from "./approval-helpers.js";

const FILES = { "a.txt": "a", "b.txt": "b", "d/a.txt": "d/a", "d/x.txt": "d/x" } as const;

async function tenantWithFiles(): Promise<Tenant> {
  const t = await newTenant();
  for (const [p, c] of Object.entries(FILES)) await upload(t, p, c);
  return t;
}

/** Every file as it was: nothing of the held call ran. */
async function expectUnchanged(t: Tenant) {
  for (const [p, c] of Object.entries(FILES)) expect(await readFile(t, p), p).toBe(c);
}

const deletePatch = (path: string) => `*** Begin Patch\n*** Delete File: ${path}\n*** End Patch`;

/** Destructive calls of every destructive tool, and the rule each names. */
const DESTRUCTIVE_CALLS: { tool: string; args: Record<string, unknown>; rule: string }[] = [
  { tool: "bash", args: { command: "rm -r d" }, rule: "rm-recursive" },
  { tool: "bash", args: { command: "git reset --hard HEAD~1" }, rule: "git-reset-hard" },
  { tool: "bash", args: { command: "git clean -fdx" }, rule: "git-clean" },
  { tool: "bash", args: { command: "find . -name '*.txt' -delete" }, rule: "find-delete" },
  { tool: "bash", args: { command: "git checkout -- ." }, rule: "git-discard" },
  { tool: "delete", args: { path: "d", recursive: true }, rule: "delete-recursive" },
  { tool: "move", args: { from: "a.txt", to: "b.txt", overwrite: true }, rule: "move-overwrite" },
  { tool: "move", args: { from: "a.txt", to: "d", overwrite: true }, rule: "move-overwrite" }, // into d/, over d/a.txt
  { tool: "copy", args: { from: "a.txt", to: "b.txt", overwrite: true }, rule: "copy-overwrite" },
  { tool: "apply_patch", args: { patch: deletePatch("a.txt") }, rule: "patch-delete" },
];

/** Their harmless neighbours: not held (they run, or go on past the gate). */
const HARMLESS_CALLS: { tool: string; args: Record<string, unknown> }[] = [
  { tool: "delete", args: { path: "a.txt" } },
  { tool: "move", args: { from: "a.txt", to: "c.txt", overwrite: true } },
  { tool: "copy", args: { from: "d", to: "e" } },
  { tool: "apply_patch", args: { patch: "*** Begin Patch\n*** Add File: n.txt\n+new\n*** End Patch" } },
];

describe("every destructive tool is held by default", () => {
  it("the cases walk every tool the rule knows", () => {
    expect(new Set(DESTRUCTIVE_CALLS.map((c) => c.tool))).toEqual(new Set(DESTRUCTIVE_TOOLS));
  });

  it.each(DESTRUCTIVE_CALLS)("tool route: $tool $args is held (rule $rule), nothing changes, no self-confirm hint", async ({ tool, args, rule }) => {
    const t = await tenantWithFiles();
    const r = await t.call(tool, args);
    const d = held(r);
    expect(d.reason).toContain(`rule ${rule}`);
    expect(JSON.stringify(r.body)).not.toMatch(/confirmed/i);
    await expectUnchanged(t);
  });

  it.each(HARMLESS_CALLS)("tool route: $tool $args is not held", async ({ tool, args }) => {
    const t = await tenantWithFiles();
    const r = await t.call(tool, args);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  });

  it("a recursive delete of a file or of a missing path, and bash without a caution pattern, pass the gate", async () => {
    const t = await tenantWithFiles();
    expect((await t.call("delete", { path: "nothing", recursive: true })).body.error.code).toBe("NOT_FOUND");
    expect((await t.call("delete", { path: "b.txt", recursive: true })).status).toBe(200);
    // No executor in this test app: UNAVAILABLE shows the command went on past the gate.
    expect((await t.call("bash", { command: "rm one.txt" })).body.error.code).toBe("UNAVAILABLE");
  });

  it("a patch that deletes only missing files passes the gate (the tool answers NOT_FOUND, no approver is asked); beside an existing one, only that one is named", async () => {
    const t = await tenantWithFiles();
    const r = await t.call("apply_patch", { patch: deletePatch("gone.txt") });
    expect(r.body.error?.code, JSON.stringify(r.body)).toBe("NOT_FOUND");
    const both = `*** Begin Patch\n*** Delete File: gone.txt\n*** Delete File: a.txt\n*** End Patch`;
    const d = held(await t.call("apply_patch", { patch: both }));
    expect(d.reason).toContain("the file a.txt");
    expect(d.reason).not.toContain("gone.txt");
    await expectUnchanged(t);
  });
});

describe("the compat doors hold the same calls", () => {
  it("Anthropic bash: rm -r is held, the text names the rule and never says to confirm", async () => {
    const t = await tenantWithFiles();
    const r = await compat(t, "anthropic", "bash", { command: "rm -r d" });
    expect(r.code).toBe("NEEDS_APPROVAL");
    expect(r.body.is_error).toBe(true);
    const text = r.body.content.map((c: { text: string }) => c.text).join("");
    expect(text).toContain("rule rm-recursive");
    expect(text).not.toMatch(/confirmed/i);
    await expectUnchanged(t);
  });

  it("OpenAI shell: git reset --hard and git clean are held; each command's stderr says so", async () => {
    const t = await tenantWithFiles();
    const r = await compat(t, "openai", "shell", { type: "shell_call", call_id: "c1", action: { commands: ["git reset --hard", "git clean -fd"] } });
    expect(r.code).toBe("NEEDS_APPROVAL");
    expect(r.body.output.map((o: any) => o.outcome)).toEqual([{ type: "exit", exit_code: 126 }, { type: "exit", exit_code: 126 }]);
    expect(r.body.output[0].stderr).toContain("rule git-reset-hard");
    expect(r.body.output[1].stderr).toContain("rule git-clean");
    expect(JSON.stringify(r.body)).not.toMatch(/confirmed/i);
  });

  it("OpenAI apply_patch: a delete_file operation and a patch that deletes are held; the file stays", async () => {
    const t = await tenantWithFiles();
    for (const body of [{ type: "apply_patch_call", call_id: "c2", operation: { type: "delete_file", path: "a.txt" } }, { patch: deletePatch("d/x.txt") }]) {
      const r = await compat(t, "openai", "apply_patch", body);
      expect(r.code).toBe("NEEDS_APPROVAL");
      expect(r.body.status).toBe("failed");
      expect(r.body.output).toContain("rule patch-delete");
      expect(r.body.output).not.toMatch(/confirmed/i);
    }
    await expectUnchanged(t);
    // An update through the same door is not destructive: it runs.
    const u = await compat(t, "openai", "apply_patch", { type: "update_file", path: "b.txt", diff: "@@\n-b\n+B\n" });
    expect(u.body.status, JSON.stringify(u.body)).toBe("completed");
  });
});

describe("no message tells the model to confirm by itself", () => {
  it("no error hint and no tool description says to call again with confirmed: true", async () => {
    for (const [code, e] of Object.entries(ERROR_CODES)) expect(e.hint, code).not.toMatch(/confirmed/i);
    const t = await newTenant();
    const catalog = await (await t.req("/v1/tools")).text();
    expect(catalog).not.toMatch(/(call|run|try) (it )?again with confirmed/i);
  });

  it("self_confirm on: only then does the held call's message say how", async () => {
    const t = await tenantWithFiles();
    await setPolicy(t.app, t.tenant, { self_confirm: true });
    const d = held(await t.call("bash", { command: "rm -r d" }));
    expect(d.reason).toContain("confirmed: true");
    // Tools without a confirmation argument never get the hint.
    expect(held(await t.call("delete", { path: "d", recursive: true })).reason).not.toMatch(/confirmed/i);
  });
});
