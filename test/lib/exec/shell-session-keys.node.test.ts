/**
 * A session's saved shell belongs to the API key that saved it (docs/shell-sessions.md): another
 * key of the same tenant, limited to the same workspace, naming the same X-Session-Id (or, like
 * the first, none: the default session) starts from its own shell, never from the first key's
 * exported variables (a secret) or functions (a planted `ls` the first key's next command would
 * run). Before, the shell was kept per workspace and session (x/shells/<session>.json), so it did.
 * Through the real app and the real sandbox (local executor), native bash and the Anthropic-compat bash.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { legacyShellKey, shellsPrefix, workspaceMetaKey } from "../../../lib/layout/paths.js";
import { FIRST_LAYOUT_ENDED } from "../../../lib/exec/shell-session.js";
import { runnerApp } from "../../support/runner-app.js";

let env: Awaited<ReturnType<typeof runnerApp>>;
const storage = memoryDriver();
let keyB: string;
let keyBId: string;

/** A call of `tool` (native, or Anthropic's compat bash) with `key`; `session` undefined: no X-Session-Id. */
async function bash(key: string, args: Record<string, unknown>, session: string | undefined, door: "native" | "anthropic" = "native", ws = "main"): Promise<string> {
  const path = door === "native" ? `/v1/workspaces/${ws}/tools/bash` : `/v1/workspaces/${ws}/compat/anthropic/bash`;
  const res = await env.app.request(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(session ? { "x-session-id": session } : {}) }, body: JSON.stringify(args) });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return door === "native" ? body.output : body.content.map((c: { text: string }) => c.text).join("");
}

beforeAll(async () => {
  env = await runnerApp({ storage });
  const made = await env.admin("/v1/admin/tenants/acme/keys", { scopes: ["read", "write", "execute"], workspaces: ["main"] });
  keyB = made.key;
  keyBId = made.key_id;
});
afterAll(async () => env?.close());

describe("a session's saved shell is its key's", () => {
  const PLANT = 'export DB_PASSWORD=hunter2 && ls() { echo "planted by A"; }';
  const PROBE = 'echo "[${DB_PASSWORD:-}]"; [ "$(type -t ls)" = function ] && echo function || echo "ls: not a function"';

  for (const session of ["shared", undefined]) {
    it(`native bash (${session ? "the same X-Session-Id" : "no X-Session-Id: the default session"}): key B sees neither key A's exported variable nor its function; key A still does`, async () => {
      await bash(env.key, { command: PLANT, keep_env: true }, session);
      expect(await bash(keyB, { command: PROBE, keep_env: true }, session)).toBe("[]\nls: not a function\n");
      // Key B's own state is saved beside A's, and A's is not overwritten by it.
      await bash(keyB, { command: "export DB_PASSWORD=b-side", keep_env: true }, session);
      expect(await bash(env.key, { command: PROBE, keep_env: true }, session)).toBe("[hunter2]\nfunction\n");
      expect(await bash(keyB, { command: PROBE, keep_env: true }, session)).toBe("[b-side]\nls: not a function\n");
    }, 60_000);
  }

  it("Anthropic's compat bash: the same, and a restart by key B leaves key A's shell alone", async () => {
    await bash(env.key, { command: `mkdir -p a-dir && cd a-dir && ${PLANT}` }, "compat", "anthropic");
    expect(await bash(keyB, { command: `pwd; ${PROBE}` }, "compat", "anthropic")).toBe("/workspace\n[]\nls: not a function\n");
    await bash(keyB, { restart: true }, "compat", "anthropic");
    expect(await bash(env.key, { command: `pwd; ${PROBE}` }, "compat", "anthropic")).toBe("/workspace/a-dir\n[hunter2]\nfunction\n");
    // Native bash of key A in that session finds the same shell (one shell per key and session, whatever the door).
    expect(await bash(env.key, { command: "pwd" }, "compat")).toBe("/workspace/a-dir\n");
  }, 60_000);

  it("the saved shells lie under each key's id (never its secret) in the workspace's internal objects", async () => {
    const keys = (await storage.list({ prefix: shellsPrefix("acme", "main") })).objects.map((o) => o.key.slice(shellsPrefix("acme", "main").length));
    expect(keys.some((k) => k.startsWith(`${keyBId}/`))).toBe(true);
    expect(keys.every((k) => /^[a-z0-9]+\/[^/]+\.json$/.test(k))).toBe(true);
    expect(keys.join("\n")).not.toContain(keyB.split("_").at(-1)!);
  });
});

describe("a shell saved at the first layout's path (x/shells/<session>.json, the workspace's)", () => {
  const RESET = "[shell reset: this session's saved shell (working directory, exported variables and functions) was saved before 2026-12-02, when a saved shell was the workspace's rather than its API key's,";
  const plant = (session: string, ws = "old") => storage.put(legacyShellKey("acme", ws, session), JSON.stringify({ cwd: "old-dir", env: { OLD_SECRET: "from-before" } }), { contentType: "application/json" });

  it("a workspace made since shells became their key's holds none: nothing is looked for there", async () => {
    const made = await env.app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${env.key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "made-since" }) });
    expect(made.status).toBe(201);
    await plant("s", "made-since"); // cannot happen in production: planted to show it is not even looked at
    const res = await env.app.request("/v1/workspaces/made-since/tools/bash", { method: "POST", headers: { authorization: `Bearer ${env.key}`, "content-type": "application/json", "x-session-id": "s" }, body: JSON.stringify({ command: "pwd" }) });
    expect(((await res.json()) as { output: string }).output).toBe("/workspace\n");
    expect(await storage.head(legacyShellKey("acme", "made-since", "s"))).not.toBeNull();
  }, 60_000);

  it("(workspace old, below, is one made before then)", async () => {
    const made = await env.app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${env.key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "old" }) });
    expect(made.status).toBe(201);
    // Its record says it was made before FIRST_LAYOUT_ENDED (before any call reads it).
    const key = workspaceMetaKey("acme", "old");
    const meta = JSON.parse(await new Response((await storage.get(key))!.body).text()) as { created_at: string };
    meta.created_at = new Date(Date.parse(FIRST_LAYOUT_ENDED) - 86_400_000).toISOString();
    await storage.put(key, JSON.stringify(meta), { contentType: "application/json" });
    // The create left its record known to the app (5 s): a checkpoint writes the record again through the app (so it is forgotten), keeping created_at.
    const cp = await env.app.request("/v1/workspaces/old/checkpoints", { method: "POST", headers: { authorization: `Bearer ${env.key}`, "content-type": "application/json" }, body: "{}" });
    expect(cp.status, await cp.text()).toBeLessThan(300);
  });

  it("is never applied; the session's next command is told once, and the object is gone", async () => {
    await bash(env.key, { command: "mkdir -p old-dir" }, "before-deploy", "native", "old");
    await plant("before-deploy");
    // The first layout's path is looked at beside the read of the key's own (no round trip more): both asked before either answers.
    const seen: string[] = [];
    const { get, head } = storage;
    const watched = <A extends unknown[], T>(op: string, f: (key: string, ...rest: A) => Promise<T>) => async (key: string, ...rest: A) => {
      const shell = key.includes("/x/shells/");
      if (shell) seen.push(`${op} asked`);
      const got = await f.call(storage, key, ...rest);
      if (shell) seen.push(`${op} answered`);
      return got;
    };
    Object.assign(storage, { get: watched("get", get), head: watched("head", head) });
    const first = await bash(env.key, { command: 'pwd; echo "[${OLD_SECRET:-}]"', keep_env: true }, "before-deploy", "native", "old").finally(() => Object.assign(storage, { get, head }));
    expect(seen.slice(0, 2).sort()).toEqual(["get asked", "head asked"]);
    expect(first).toBe(`${RESET} and was discarded (it may have been another key's); the command started in the workspace root]\n/workspace\n[]\n`);
    expect(await storage.head(legacyShellKey("acme", "old", "before-deploy"))).toBeNull();
    // Said once: the next command reads no note (and goes on from the shell the first one saved, its key's).
    expect(await bash(env.key, { command: "pwd" }, "before-deploy", "native", "old")).toBe("/workspace\n");
  }, 60_000);

  it("native bash without keep_env names only the working directory; a restart deletes it with the session's own, unsaid", async () => {
    await plant("cwd-only");
    expect(await bash(env.key, { command: "pwd" }, "cwd-only", "native", "old")).toBe("[shell reset: this session's saved shell (working directory) was saved before 2026-12-02, when a saved shell was the workspace's rather than its API key's, and was discarded (it may have been another key's); the command started in the workspace root]\n/workspace\n");
    await plant("restarted");
    expect(await bash(env.key, { command: "pwd", restart: true }, "restarted", "native", "old")).toBe("/workspace\n");
    expect(await storage.head(legacyShellKey("acme", "old", "restarted"))).toBeNull();
    expect(await bash(env.key, { command: "pwd" }, "restarted", "native", "old")).toBe("/workspace\n");
  }, 60_000);
});
