/**
 * Runs Toolshed in the real Workers runtime (`wrangler dev`) on 127.0.0.1 with its own local R2/KV
 * state directory, for tests and benchmarks that need a whole server process.
 * Only node: imports, so `node bench/*.ts` can use it too (type stripping).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface WorkerProcess {
  url: string;
  adminToken: string;
  child: ChildProcess;
  /** The V8 inspector port of the Worker (wrangler's inspector proxy: GET /json lists its targets; Chrome DevTools protocol). */
  inspectorPort: number;
  /** Peak resident memory (VmHWM) and current RSS of every workerd process, in bytes. */
  memory(): { peak: number; rss: number };
  /** Everything wrangler and the Worker printed so far (stdout and stderr); the Worker's console.log lines need logLevel "log". */
  log(): string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Every descendant pid of `pid` (Linux /proc). */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {}
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

function statusField(pid: number, field: string): number {
  try {
    const m = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export async function startWorker(opts: { vars?: Record<string, string>; /** wrangler config file (default: ./wrangler.toml) */ config?: string; port?: number; /** wrangler's --log-level (default "error"; "log" also prints the Worker's console.log lines) */ logLevel?: "error" | "warn" | "info" | "log"; /** the local state directory (R2, KV, Durable Objects' storage) to use and keep at stop(): a restart over it; default a new one, removed at stop() */ state?: string } = {}): Promise<WorkerProcess> {
  const port = opts.port ?? (await freePort());
  const state = opts.state ?? mkdtempSync(join(tmpdir(), "toolshed-wrangler-"));
  const adminToken = opts.vars?.TOOLSHED_ADMIN_TOKEN ?? `admin-${Math.random().toString(36).slice(2)}`;
  const inspectorPort = await freePort();
  const vars = { TOOLSHED_ADMIN_TOKEN: adminToken, ...opts.vars };
  const args = ["dev", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", state, "--show-interactive-dev-session=false", "--log-level", opts.logLevel ?? "error", "--inspector-port", String(inspectorPort)];
  if (opts.config) args.push("--config", opts.config);
  for (const [k, v] of Object.entries(vars)) args.push("--var", `${k}:${v}`);
  const child = spawn(join(process.cwd(), "node_modules/.bin/wrangler"), args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", PATH: `${join(process.cwd(), "node_modules/.bin")}:${process.env.PATH}` },
    detached: true,
  });
  let log = "";
  child.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${log}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    if (Date.now() > until) throw new Error(`wrangler dev did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const workerd = () => descendants(child.pid!).filter((p) => readFileSync(`/proc/${p}/comm`, "utf8").trim().startsWith("workerd"));
  return {
    url,
    adminToken,
    child,
    inspectorPort,
    log: () => log,
    memory() {
      const pids = workerd();
      return { peak: pids.reduce((n, p) => n + statusField(p, "VmHWM"), 0), rss: pids.reduce((n, p) => n + statusField(p, "VmRSS"), 0) };
    },
    async stop() {
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid!, "SIGTERM");
        } catch {}
        await new Promise((r) => {
          const t = setTimeout(() => {
            try {
              process.kill(-child.pid!, "SIGKILL");
            } catch {}
            r(null);
          }, 5000);
          child.once("exit", () => {
            clearTimeout(t);
            r(null);
          });
        });
      }
      if (!opts.state) rmSync(state, { recursive: true, force: true });
    },
  };
}

/** A tenant, API key and workspace on a running worker. */
export async function setupTenant(w: WorkerProcess, tenant: string, ws = "main"): Promise<{ key: string; call: (tool: string, args: unknown, session?: string) => Promise<any>; base: string }> {
  const admin = (path: string, body: unknown) => fetch(`${w.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  await admin("/v1/admin/tenants", { id: tenant });
  const key = ((await (await admin(`/v1/admin/tenants/${tenant}/keys`, {})).json()) as { key: string }).key;
  await fetch(`${w.url}/v1/workspaces`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: ws }) });
  const base = `${w.url}/v1/workspaces/${ws}`;
  const call = async (tool: string, args: unknown, session = "s1") => {
    const r = await fetch(`${base}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
    return r.json();
  };
  return { key, call, base };
}
