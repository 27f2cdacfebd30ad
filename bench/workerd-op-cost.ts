/**
 * What one request, one R2 operation and one LIMITS round trip cost workerd's CPU under `wrangler dev`
 * (local R2/KV/Durable Objects), read from /proc: the unit costs behind the time-to-interactive
 * figures (docs/benchmarks/investigations-time-to-interactive.md). Starts the bench Worker
 * (bench/wrangler.toml: the app plus /__floor), then times N of each, after 20 untimed:
 *   healthz            a request that touches nothing
 *   floor read/write/ls one request + one R2 GET / PUT / LIST straight on the binding
 *   admin tenant       an admin request reading the tenant
 *   admin limits       the same shape plus one call to the tenant's LIMITS object
 * `npx node bench/workerd-op-cost.ts [--n=200]`; ms of workerd CPU per request, two rounds.
 */
import { cpuOf } from "./proc-cpu.ts";
import { descendants, freePort, startWorker } from "../test/support/wrangler-dev.ts";

const N = Number(process.argv.find((a) => a.startsWith("--n="))?.slice(4) ?? 200);
const w = await startWorker({ port: await freePort(), config: "bench/wrangler.toml" });
const workerd = () => cpuOf([w.child.pid!, ...descendants(w.child.pid!)]).by.workerd ?? 0;
const asAdmin = (method: string, path: string, body?: unknown) =>
  fetch(`${w.url}${path}`, { method, headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }).then((r) => r.text());
const floor = (body: unknown) => asAdmin("POST", "/__floor", body);
try {
  await floor({ op: "seed", tenant: "p", ws: "w", files: [{ path: "a.txt", text: "hello" }] });
  await asAdmin("POST", "/v1/admin/tenants", { id: "p" });
  const rows: [string, (i: number) => Promise<unknown>][] = [
    ["healthz", () => fetch(`${w.url}/healthz`).then((r) => r.text())],
    ["floor read (+1 R2 GET)", () => floor({ op: "read", tenant: "p", ws: "w", path: "a.txt" })],
    ["floor write (+1 R2 PUT)", (i) => floor({ op: "write", tenant: "p", ws: "w", path: `b${i % 10}.txt`, content: "x".repeat(100) })],
    ["floor ls (+1 R2 LIST)", () => floor({ op: "ls", tenant: "p", ws: "w", path: "" })],
    ["admin GET tenant", () => asAdmin("GET", "/v1/admin/tenants/p")],
    ["admin GET limits (+1 LIMITS call)", () => asAdmin("GET", "/v1/admin/tenants/p/limits")],
  ];
  for (let round = 1; round <= 2; round++)
    for (const [name, f] of rows) {
      for (let i = 0; i < 20; i++) await f(i);
      const before = workerd();
      for (let i = 0; i < N; i++) await f(i);
      console.log(`round ${round}: ${name}: ${((workerd() - before) / N).toFixed(1)} ms of workerd CPU per request`);
    }
} finally {
  await w.stop();
}
