/**
 * `npm start` (scripts/dev.mjs) on a port another process holds: it stops before it starts or writes
 * anything, and says which port, which variable moves it and a free one to use. Before, the API's
 * port ended in wrangler's "specify a different port with --port" (npm start takes PORT), and the
 * runner's in a Node stack trace while the banner still sent bash to whatever held that port.
 * The script runs in an empty directory: whatever it would start or write, it could not do it there.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const script = resolve("scripts/dev.mjs");

function listen(port = 0): Promise<Server> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(port, "127.0.0.1", () => ok(s));
  });
}
const portOf = (s: Server) => (s.address() as { port: number }).port;

/** A port nobody listens on now. */
async function freePort(): Promise<number> {
  const s = await listen();
  const port = portOf(s);
  await new Promise((r) => s.close(r));
  return port;
}

describe("npm start with a port in use", () => {
  let held: Server;
  let dir: string;
  beforeAll(async () => {
    held = await listen();
  });
  afterAll(() => {
    held.close();
  });

  function start(env: Record<string, string>) {
    dir = mkdtempSync(join(tmpdir(), "dev-ports-"));
    try {
      const r = spawnSync(process.execPath, [script], { cwd: dir, env: { ...process.env, ...env }, encoding: "utf8", timeout: 30_000 });
      return { status: r.status, stderr: r.stderr, left: readdirSync(dir) };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("the API's port: names it, PORT and a free port, keeps the runner's port the user set, and writes nothing", async () => {
    const invoke = await freePort();
    const r = start({ PORT: String(portOf(held)), TOOLSHED_INVOKE_PORT: String(invoke) });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`port ${portOf(held)} (the API, PORT) is already in use`);
    expect(r.stderr).toMatch(new RegExp(`start on free ports: PORT=\\d+ TOOLSHED_INVOKE_PORT=${invoke} npm start`)); // copied as is, the runner stays where the user put it
    expect(r.left).toEqual([]);
  });

  it("the runner's port: names TOOLSHED_INVOKE_PORT instead of starting the API beside a runner that died", async () => {
    const api = await freePort();
    const r = start({ PORT: String(api), TOOLSHED_INVOKE_PORT: String(portOf(held)) });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`port ${portOf(held)} (the bash runner, TOOLSHED_INVOKE_PORT) is already in use`);
    expect(r.stderr).toMatch(new RegExp(`start on free ports: PORT=${api} TOOLSHED_INVOKE_PORT=\\d+ npm start`));
    expect(r.left).toEqual([]);
  });

  it("the same port for both is refused before anything starts", () => {
    const r = start({ PORT: "18999", TOOLSHED_INVOKE_PORT: "18999" });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("PORT and TOOLSHED_INVOKE_PORT are both 18999");
    expect(r.left).toEqual([]);
  });
});
