/**
 * One create + first `bash node -v`, traced (docs/tracing.md): wrangler dev and the local runner send
 * their spans to an in-process OTLP receiver; prints every request, storage/KV operation and runner
 * span in time order, grouped by trace. `npx node bench/tti-trace.ts [--runs=2]` (the first is a warm-up).
 */
import { LocalRunner } from "./bash-e2e.ts";
import { freePort, startWorker } from "../test/support/wrangler-dev.ts";
import { startOtlpReceiver } from "../test/support/otlp-receiver.ts";

const runs = Number(process.argv.find((a) => a.startsWith("--runs="))?.slice(7) ?? 2);
const otlp = await startOtlpReceiver();
process.env.TOOLSHED_OTLP_ENDPOINT = otlp.url;
LocalRunner.build();
const runner = new LocalRunner(await freePort());
await runner.start();
const port = await freePort();
const w = await startWorker({ port, vars: { TOOLSHED_OTLP_ENDPOINT: otlp.url, ...runner.workerVars(port, "trace") } });
try {
  const admin = async (method: string, path: string, body: unknown) => {
    const r = await fetch(`${w.url}${path}`, { method, headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status}`);
    return r.json() as Promise<any>;
  };
  await admin("POST", "/v1/admin/tenants", { id: "trace" });
  const { key } = await admin("POST", "/v1/admin/tenants/trace/keys", {});
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  for (let i = 0; i < runs; i++) {
    await new Promise((r) => setTimeout(r, 1500));
    otlp.spans.length = 0;
    const made = await fetch(`${w.url}/v1/workspaces`, { method: "POST", headers, body: JSON.stringify({ id: `w${i}` }) });
    await made.text();
    const ran = await fetch(`${w.url}/v1/workspaces/w${i}/tools/bash`, { method: "POST", headers, body: JSON.stringify({ command: "node -v" }) });
    console.log(`run ${i}: create ${made.status}, bash ${ran.status} ${(await ran.text()).slice(0, 120)}`);
    await new Promise((r) => setTimeout(r, 3000));
    const t0 = otlp.spans.reduce((m, s) => (s.start < m ? s.start : m), otlp.spans[0]!.start);
    for (const s of [...otlp.spans].sort((a, b) => (a.start < b.start ? -1 : 1))) {
      const a = s.attributes;
      const ms = (x: bigint) => (Number(x - t0) / 1e6).toFixed(1);
      console.log(`${ms(s.start).padStart(7)} +${(Number(s.end - s.start) / 1e6).toFixed(1).padStart(6)}  ${s.service.padEnd(15)} ${s.name.padEnd(36)} ${a["toolshed.key"] ?? a["http.route"] ?? ""} ${a["toolshed.conditional"] ?? ""}${a["toolshed.found"] === false ? " (none)" : ""}${a["toolshed.listed"] !== undefined ? ` listed=${a["toolshed.listed"]}` : ""}`);
    }
  }
} finally {
  await w.stop();
  await runner.stop();
  await otlp.close();
}
