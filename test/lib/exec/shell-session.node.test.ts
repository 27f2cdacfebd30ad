/**
 * A command's line numbers are its own, whatever the shell replays before it
 * (infra/container/shell-state.ts). A session's saved shell (lib/exec/shell-session.ts) is bounded
 * in time and count, as the output logs are: a state last saved more than SHELL_STATE_DAYS ago is not applied (deleted when read;
 * the command says the shell was reset), and a key keeps at most KEEP_SHELL_STATES of a workspace, the
 * most recently saved. Through the real app and the real sandbox (local executor) over memory
 * storage; time passes by ageing the `modified` storage reports for a state.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../../functions/bash.js";
import { tools as fileTools } from "../../../functions/index.js";
import { localExecutor } from "../../../infra/container/local-executor.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { KEEP_SHELL_STATES, SHELL_STATE_DAYS } from "../../../lib/exec/shell-session.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { httpRunRecords } from "../../../lib/sync/runs.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { ObjectInfo, StorageDriver } from "../../../lib/storage/types.js";
import { keyShellsPrefix, shellKey, shellsPrefix } from "../../../lib/layout/paths.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const DAY = 86_400_000;

/** Memory storage whose objects can be made older: `age(key, ms)` moves the `modified` that get and list report back by ms (until the key is written again). */
function ageingStorage(): { storage: StorageDriver; age: (key: string, ms: number) => void } {
  const raw = memoryDriver();
  const ages = new Map<string, number>();
  const aged = <T extends ObjectInfo>(o: T): T => (ages.has(o.key) ? { ...o, modified: new Date(o.modified.getTime() - ages.get(o.key)!) } : o);
  const storage: StorageDriver = {
    ...raw,
    get: async (k, o) => {
      const r = await raw.get(k, o);
      return r ? aged(r) : r;
    },
    list: async (o) => {
      const r = await raw.list(o);
      return { ...r, objects: r.objects.map(aged) };
    },
    put: async (k, b, o) => {
      ages.delete(k);
      return raw.put(k, b, o);
    },
  };
  return { storage, age: (key, ms) => void ages.set(key, ms) };
}

let app: ReturnType<typeof createApp>;
let key: string;
let keyId: string;
let root: string;
let executor: ReturnType<typeof localExecutor>;
let store: ReturnType<typeof ageingStorage>;
const call = async (args: unknown, session: string) => {
  const res = await app.request("/v1/workspaces/main/tools/bash", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
};
/** The key's saved shells in the workspace (relative to its prefix). */
const states = async () => (await store.storage.list({ prefix: keyShellsPrefix("acme", "main", keyId) })).objects.map((o) => o.key.slice(keyShellsPrefix("acme", "main", keyId).length)).sort();

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-shell-bounds-"));
  chmodSync(root, 0o711);
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
  store = ageingStorage();
  const deps = { storage: store.storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal" } as AppDeps;
  app = createApp(deps, [...fileTools, bash]);
  const admin = (path: string, body: unknown) => Promise.resolve(app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).then((r) => r.json() as Promise<any>);
  await admin("/v1/admin/tenants", { id: "acme" });
  ({ key, key_id: keyId } = await admin("/v1/admin/tenants/acme/keys", {}));
  const ws = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  expect(ws.status).toBe(201);
});
afterAll(async () => {
  await executor?.handler.close();
  rmSync(root, { recursive: true, force: true });
});

describe("a session's saved shell is bounded in time and count", () => {
  it(`a state saved more than ${SHELL_STATE_DAYS} days ago is not applied: the command starts in the root without its variables, and says the shell was reset`, async () => {
    await call({ command: "mkdir -p sub && cd sub && export SECRET_TOKEN=s3cr3t", keep_env: true }, "old");
    expect((await call({ command: 'pwd; echo "[$SECRET_TOKEN]"', keep_env: true }, "old")).output).toBe("/workspace/sub\n[s3cr3t]\n");
    // Just inside the bound it is still applied.
    store.age(shellKey("acme", "main", keyId, "old"), SHELL_STATE_DAYS * DAY - 60_000);
    expect((await call({ command: "pwd", keep_env: true }, "old")).output).toBe("/workspace/sub\n");
    store.age(shellKey("acme", "main", keyId, "old"), SHELL_STATE_DAYS * DAY + 60_000);
    const r = await call({ command: 'pwd; echo "[$SECRET_TOKEN]"', keep_env: true }, "old");
    expect(r.output).toBe(`[shell reset: this session's saved shell (working directory, exported variables and functions) was last saved more than ${SHELL_STATE_DAYS} days ago and was discarded; the command started in the workspace root]\n/workspace\n[]\n`);
    // The expired state was deleted when read; the command ended in the root with nothing kept, which needs no saved state: the secret is gone from storage.
    expect(await store.storage.get(shellKey("acme", "main", keyId, "old"))).toBeNull();
    await call({ command: "cd sub" }, "old");
    expect((await call({ command: "pwd" }, "old")).output).toBe("/workspace/sub\n");
  }, 60_000);

  it(`a key keeps the ${KEEP_SHELL_STATES} most recently saved states of a workspace, none older than ${SHELL_STATE_DAYS} days (pruned when a session saves its first); another key's are not its to prune`, async () => {
    // Another key's shells, older than all of this key's: not this key's to push out while in their time; one past the time bound
    // is never applied again, and goes, as does a shell of the first layout (x/shells/<session>.json, no longer read) past it.
    const [older, stale] = ["older", "stale"].map((s) => shellKey("acme", "main", "otherkey", s));
    const [firstLayout, firstLayoutStale] = ["recent", "stale"].map((s) => `${shellsPrefix("acme", "main")}${s}.json`);
    for (const k of [older, stale, firstLayout, firstLayoutStale]) await store.storage.put(k!, JSON.stringify({ cwd: "" }), { contentType: "application/json" });
    for (const k of [older, firstLayout]) store.age(k!, 2 * DAY);
    for (const k of [stale, firstLayoutStale]) store.age(k!, (SHELL_STATE_DAYS + 1) * DAY);
    // Sessions saved earlier, each a minute older than the next; one far older than the bound.
    const prefix = keyShellsPrefix("acme", "main", keyId);
    const sessions = Array.from({ length: KEEP_SHELL_STATES + 2 }, (_, i) => `n${String(i).padStart(3, "0")}`);
    for (const [i, s] of sessions.entries()) {
      await store.storage.put(shellKey("acme", "main", keyId, s), JSON.stringify({ cwd: "" }), { contentType: "application/json" });
      store.age(prefix + `${s}.json`, (sessions.length - i) * 60_000);
    }
    store.age(shellKey("acme", "main", keyId, "old"), (SHELL_STATE_DAYS + 1) * DAY);
    // A session's later saves do not prune (its state was there already) ...
    await call({ command: "true" }, sessions.at(-1)!);
    expect(await states()).toHaveLength(sessions.length + 1);
    // A session's first command that ends in a fresh shell (the root, nothing kept) saves nothing, so prunes nothing ...
    await call({ command: "true" }, "fresh");
    expect(await states()).toHaveLength(sessions.length + 1);
    // ... its first save does: the newest KEEP_SHELL_STATES stay, the new one among them; the stale one is gone whatever the count.
    await call({ command: "mkdir -p sub && cd sub" }, "newest");
    const left = await states();
    expect(left).toHaveLength(KEEP_SHELL_STATES);
    expect(left).toContain("newest.json");
    expect(left).not.toContain("old.json");
    expect(left).toEqual([...sessions.slice(-(KEEP_SHELL_STATES - 1)).map((s) => `${s}.json`), "newest.json"].sort());
    for (const k of [older, firstLayout]) expect(await store.storage.get(k!), k).not.toBeNull();
    for (const k of [stale, firstLayoutStale]) expect(await store.storage.get(k!), k).toBeNull();
  }, 60_000);
});

describe("a command's line numbers are its own", () => {
  // Line 2 fails, line 3 prints its number, line 4 does not parse: as `bash -c` numbers them.
  const SCRIPT = 'echo one\nnot_a_command_here\necho "at line $LINENO"\nif then';
  const expectOwnLines = (output: string) => {
    expect(output).toMatch(/line 2: not_a_command_here: command not found/);
    expect(output).toContain("at line 3\n");
    expect(output).toMatch(/line 4: syntax error near unexpected token `then'/);
  };

  it("in a fresh session, and after a saved shell with multi-line variables and functions is replayed before it", async () => {
    expectOwnLines((await call({ command: SCRIPT }, "lines")).output);
    await call({ command: "mkdir -p deep && cd deep && export NOTE=$'two\nlines' && greet() {\n  echo hi\n}", keep_env: true }, "lines");
    const r = await call({ command: `${SCRIPT}`, keep_env: true }, "lines");
    expectOwnLines(r.output);
    expect((await call({ command: 'pwd; echo "$NOTE"; greet', keep_env: true }, "lines")).output).toBe("/workspace/deep\ntwo\nlines\nhi\n");
  }, 60_000);

  it("the command's text reaches the shell as written: quotes, backslashes, escapes, carriage returns, non-ASCII", async () => {
    const command = "printf '%s|' 'it'\"'\"'s' \"a\\\\b\" '\\x41\\n' \"$'x'\" 'ü日本'\nprintf '%s' 'c\rr' | od -An -c\necho done";
    const out = (await call({ command }, "quotes")).output;
    expect(out).toContain("it's|a\\b|\\x41\\n|$'x'|ü日本|");
    expect(out).toMatch(/c +\\r +r/);
    expect(out).toContain("done\n");
  }, 60_000);
});
