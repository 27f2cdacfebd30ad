#!/usr/bin/env node
// `npm start`: serve Toolshed locally in the Workers runtime (wrangler dev) with local R2 and KV
// persisted under .wrangler/state, make sure a dev tenant and API key exist, and print a first curl.
// Beside it runs the bash runner: the container function's handler behind a local stand-in for
// the Lambda Invoke API (infra/container/local-server.ts), sandboxed with bubblewrap.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";

const PORT = Number(process.env.PORT ?? 8787);
const RUNNER_PORT = Number(process.env.TOOLSHED_INVOKE_PORT ?? 9009);
const BASE = `http://127.0.0.1:${PORT}`;
const VARS = ".dev.vars";
const DEV_STATE = ".toolshed-dev.json";

function readVars() {
  if (!existsSync(VARS)) return {};
  return Object.fromEntries(
    readFileSync(VARS, "utf8")
      .split("\n")
      .filter((l) => l.includes("=") && !l.startsWith("#"))
      .map((l) => [l.slice(0, l.indexOf("=")).trim(), l.slice(l.indexOf("=") + 1).trim()]),
  );
}

/** Local secrets live in .dev.vars (git-ignored), made once. */
function ensureVars() {
  const vars = readVars();
  let changed = false;
  // TOOLSHED_RUNNER_SECRET signs every invocation of the runner (lib/exec/runner-auth.ts); wrangler reads
  // it from .dev.vars like the others, and startRunner hands it to the runner. Never the sync secret.
  // TOOLSHED_SECRETS_KEY encrypts tenant secrets (docs/secrets.md); the API's only, never the runner's.
  for (const name of ["TOOLSHED_ADMIN_TOKEN", "TOOLSHED_SYNC_SECRET", "TOOLSHED_RUNNER_SECRET", "TOOLSHED_SECRETS_KEY"]) {
    if (!vars[name]) {
      vars[name] = randomBytes(24).toString("hex");
      changed = true;
    }
  }
  if (changed) writeFileSync(VARS, `${Object.entries(vars).map(([k, v]) => `${k}=${v}`).join("\n")}\n`, { mode: 0o600 });
  return vars;
}

async function waitForServer(child, ms = 90_000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with code ${child.exitCode}`);
    try {
      const r = await fetch(`${BASE}/healthz`);
      if (r.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`Toolshed did not answer on ${BASE} within ${ms / 1000}s`);
}

async function api(path, { token, method = "GET", body } = {}) {
  const r = await fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: await r.json().catch(() => null) };
}

/** The dev tenant's key from last time if it still works, else a new tenant/key. */
async function ensureDevKey(adminToken) {
  if (existsSync(DEV_STATE)) {
    const { key } = JSON.parse(readFileSync(DEV_STATE, "utf8"));
    if (key && (await api("/v1/workspaces", { token: key })).status === 200) return key;
  }
  const t = await api("/v1/admin/tenants", { token: adminToken, method: "POST", body: { id: "dev", name: "Local development" } });
  if (t.status !== 201 && t.status !== 409) throw new Error(`could not create the dev tenant: ${JSON.stringify(t.body)}`);
  const k = await api("/v1/admin/tenants/dev/keys", { token: adminToken, method: "POST", body: { name: "npm start", scopes: ["read", "write", "execute"] } });
  if (k.status !== 201) throw new Error(`could not create a dev key: ${JSON.stringify(k.body)}`);
  writeFileSync(DEV_STATE, JSON.stringify({ tenant: "dev", key: k.body.key }, null, 2), { mode: 0o600 });
  return k.body.key;
}

/**
 * The bash runner, bundled for Node and started on 127.0.0.1:RUNNER_PORT. It answers only invocations
 * signed with TOOLSHED_RUNNER_SECRET whose sync endpoint is this API (TOOLSHED_PUBLIC_URL).
 */
function startRunner(runnerSecret) {
  const built = spawnSync("node", ["infra/container/build.mjs"], { encoding: "utf8" });
  if (built.status !== 0) throw new Error(`building the bash runner failed (node infra/container/build.mjs):\n${built.stderr}`);
  return spawn("node", ["dist/container/local-server.mjs"], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, TOOLSHED_INVOKE_PORT: String(RUNNER_PORT), TOOLSHED_RUNNER_ROOT: ".wrangler/runner", TOOLSHED_RUNNER_SECRET: runnerSecret, TOOLSHED_PUBLIC_URL: BASE },
  });
}

/** Whether 127.0.0.1:port can be listened on now (EADDRINUSE: another process holds it). */
function portFree(port) {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/**
 * Both ports are checked before anything starts or is written: a port in use would end in wrangler's
 * "specify a different port with --port" (npm start takes PORT) or a runner that dies with a stack
 * trace while the banner still points bash at whatever holds its port. The message names a free one.
 */
async function requireFreePorts() {
  if (PORT === RUNNER_PORT) throw new Error(`PORT and TOOLSHED_INVOKE_PORT are both ${PORT}: the API and the bash runner need a port each.`);
  const busy = [];
  for (const [name, port, what] of [["PORT", PORT, "the API"], ["TOOLSHED_INVOKE_PORT", RUNNER_PORT, "the bash runner"]]) {
    if (!(await portFree(port))) busy.push({ name, port, what });
  }
  if (busy.length === 0) return;
  const taken = new Set([PORT, RUNNER_PORT]);
  for (const b of busy) {
    let free = b.port + 1;
    while (free < b.port + 100 && (taken.has(free) || !(await portFree(free)))) free++;
    taken.add((b.free = free));
  }
  const ports = busy.map((b) => `${b.port} (${b.what}, ${b.name})`).join(" and ");
  // The command to copy: each busy port moved to a free one, and a port the user set that is free kept as set.
  const vars = [["PORT", PORT], ["TOOLSHED_INVOKE_PORT", RUNNER_PORT]].flatMap(([name, port]) => {
    const b = busy.find((x) => x.name === name);
    return b ? [`${name}=${b.free}`] : process.env[name] !== undefined ? [`${name}=${port}`] : [];
  });
  throw new Error(`${busy.length > 1 ? "ports" : "port"} ${ports} ${busy.length > 1 ? "are" : "is"} already in use on 127.0.0.1, perhaps by another npm start. Stop that process, or start on free ports: ${vars.join(" ")} npm start`);
}

try {
  await requireFreePorts();
} catch (e) {
  console.error(`npm start failed: ${e.message}`);
  process.exit(1);
}
const vars = ensureVars();
const started = Date.now();
const hasBwrap = spawnSync("sh", ["-c", "command -v bwrap"]).status === 0;
const runner = startRunner(vars.TOOLSHED_RUNNER_SECRET);
const wrangler = spawn(
  "wrangler",
  [
    "dev", "--ip", "127.0.0.1", "--port", String(PORT), "--persist-to", ".wrangler/state", "--show-interactive-dev-session=false", "--log-level", "warn",
    "--var", `TOOLSHED_RUNNER_URL:http://127.0.0.1:${RUNNER_PORT}`, "--var", `TOOLSHED_PUBLIC_URL:${BASE}`,
  ],
  // CLOUDFLARE_CF_FETCH_ENABLED=false: request.cf is miniflare's built-in placeholder instead of a
  // download from Cloudflare (which, offline, printed a stack trace per runtime). Nothing here reads cf.
  { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" } },
);
let stopping = false;
const stop = () => {
  stopping = true;
  wrangler.kill("SIGTERM");
  runner.kill("SIGTERM");
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
wrangler.on("exit", (code) => {
  runner.kill("SIGTERM");
  process.exit(stopping ? (process.exitCode ?? 0) : (code ?? 1));
});
// Without its runner the API would answer every bash call UNAVAILABLE: a runner that dies stops npm start, saying so.
runner.on("exit", (code, signal) => {
  if (stopping) return;
  console.error(`npm start failed: the bash runner (dist/container/local-server.mjs) exited (${signal ?? `code ${code}`}); see its error above.`);
  stop();
  process.exitCode = 1;
});

try {
  await waitForServer(wrangler);
  const key = await ensureDevKey(vars.TOOLSHED_ADMIN_TOKEN);
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`
Toolshed is running on ${BASE} (ready in ${secs}s; local R2 and KV in .wrangler/state)

  dev tenant:   dev
  API key:      ${key}
  admin token:  in .dev.vars (TOOLSHED_ADMIN_TOKEN)
  docs:         ${BASE}/docs    tools: ${BASE}/v1/tools  (?format=openai|anthropic|mcp)
  MCP:          ${BASE}/v1/workspaces/demo/mcp  (header  Authorization: Bearer ${key}; after the first curl below makes "demo")
  bash runner:  http://127.0.0.1:${RUNNER_PORT} (${hasBwrap ? "sandboxed with bubblewrap" : "bubblewrap is missing: bash answers with how to install it (apt-get install bubblewrap)"})

Try:
  export TOOLSHED_KEY=${key}
  curl -s -X POST ${BASE}/v1/workspaces -H "Authorization: Bearer $TOOLSHED_KEY" -H 'content-type: application/json' -d '{"id":"demo"}'
  curl -s -X POST ${BASE}/v1/workspaces/demo/tools/write -H "Authorization: Bearer $TOOLSHED_KEY" -H 'content-type: application/json' -d '{"file_path":"hello.txt","content":"hello world\\n"}'
  curl -s -X POST ${BASE}/v1/workspaces/demo/tools/read -H "Authorization: Bearer $TOOLSHED_KEY" -H 'content-type: application/json' -d '{"file_path":"hello.txt"}'
  curl -s -X POST ${BASE}/v1/workspaces/demo/tools/bash -H "Authorization: Bearer $TOOLSHED_KEY" -H 'content-type: application/json' -d '{"command":"ls -la && wc -l hello.txt"}'
`);
  if (process.env.TOOLSHED_DEV_EXIT_WHEN_READY) stop();
} catch (e) {
  console.error(`npm start failed: ${e.message}`);
  stop();
  process.exitCode = 1;
}
