/**
 * Other tool systems' spellings of our arguments (lib/contract/foreign-args.ts): the table cannot
 * rot (every entry names an argument its tool has, under a spelling the tool does not take), and the
 * one argument parser's refusal names ours, through HTTP, for every entry.
 */
import { describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { SCOPES } from "../../../lib/contract/caller.js";
import { FOREIGN_ARGS } from "../../../lib/contract/foreign-args.js";
import { fold } from "../../../lib/shared/suggest.js";
import { newTenant, testApp } from "../../helpers.js";

const app = testApp();
const argsOf = (name: string) => Object.keys((tools.find((t) => t.name === name)?.input as { shape?: object } | undefined)?.shape ?? {});

describe("the table of other systems' spellings", () => {
  it("names, for each entry, an argument its tool has; the spelling is none of the tool's own", () => {
    for (const [tool, table] of Object.entries(FOREIGN_ARGS)) {
      const own = argsOf(tool);
      expect(own.length, `${tool} is a tool with arguments`).toBeGreaterThan(0);
      for (const [spelling, entry] of Object.entries(table)) {
        expect(own, `${tool}.${spelling} → ${entry.arg}`).toContain(entry.arg);
        expect(own.map(fold), `${tool}.${spelling} is the tool's own`).not.toContain(fold(spelling));
        if (entry.hint) expect(entry.hint, `${tool}.${spelling}`).toContain(`'${entry.arg}'`);
      }
    }
  });

  it("each entry, sent to its tool, is refused (400) naming the tool's argument", async () => {
    const t = await newTenant(app, { scopes: [...SCOPES] });
    for (const [tool, table] of Object.entries(FOREIGN_ARGS)) {
      for (const [spelling, entry] of Object.entries(table)) {
        const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ [spelling]: 1 }) });
        const body = (await res.json()) as any;
        expect(res.status, `${tool} ${spelling}`).toBe(400);
        expect(body.error.code).toBe("INVALID_ARGUMENT");
        const said = entry.hint ?? `Did you mean '${entry.arg}'?`;
        expect(body.error.message, `${tool} ${spelling}`).toContain(`Unknown argument '${spelling}'. ${said} Known: `);
      }
    }
  });

  it("Claude Code's grep -n: drop it, content mode numbers every line; its -i, -A, -B, -C: ours", async () => {
    const t = await newTenant(app);
    const res = await app.request(`/v1/workspaces/${t.ws}/tools/grep`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ pattern: "x", "-i": true, "-n": true, "-A": 2, "-B": 2, "-C": 3 }) });
    const msg = ((await res.json()) as any).error.message as string;
    expect(msg).toContain(`Unknown argument '-n'. Line numbers need no argument: 'output_mode': "content" shows them on every line; drop '-n'.`);
    for (const [flag, ours] of [["-i", "case_insensitive"], ["-A", "after"], ["-B", "before"], ["-C", "context"]]) expect(msg).toContain(`Unknown argument '${flag}'. Did you mean '${ours}'?`);
  });

  it("a timeout in milliseconds (Claude Code's Bash) is refused saying seconds", async () => {
    const t = await newTenant(app, { scopes: [...SCOPES] });
    for (const tool of ["bash", "run_code"]) {
      const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ command: "true", language: "python", code: "1", timeout: 120000 }) });
      const body = (await res.json()) as any;
      expect(res.status, tool).toBe(400);
      expect(body.error.message, tool).toContain("timeout: Too big: at most 600. timeout is in seconds, not milliseconds");
    }
  });
});
