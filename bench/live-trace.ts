/**
 * Where a live call's time goes (issue #29; docs/benchmarks/investigations-live.md): the app in wrangler
 * dev as the bench runs it (bench/wrangler.toml, the LIVE Durable Object) and the local runner,
 * tracing on (docs/tracing.md) towards an OTLP/HTTP receiver in this process. A workspace of
 * `--files` files (archive import, as bench/live.ts), a session's live sandbox warmed up, then
 * `--runs` bash `true` calls with keep_alive (after an untimed PUT of `--edits` files each, when
 * set), each with its own traceparent. Per phase, the median over the runs (ms):
 *
 *   client            the call's wall time at the client
 *   api               the tool route's server span (auth to answer)
 *   api before live   from the route's start to its first live coordinator request
 *   live.<op>         each coordinator request (live.call: the runner's whole round trip)
 *   runner sync_in / command / sync_out   what the runner measured (attributes of live.call / live.run)
 *   runner other      live.call less the runner's phases: the poll's answer, the runner's status and result POST
 *   sync manifest, live result, live next  the runner's requests as the API served them
 *   storage           the call's own storage and KV operations (count and time)
 *
 *   npx node bench/live-trace.ts [--files=10000] [--runs=15] [--edits=0]
 */
import { createServer } from "node:http";
import { LocalRunner } from "./bash-e2e.ts";
import { buildCorpora } from "./corpus.ts";
import { tarGz } from "./tar-gz.ts";
import { freezeWorker } from "./freeze.ts";
import { freePort, setupTenant, startWorker } from "../test/support/wrangler-dev.ts";

const arg = (name: string, d: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? d);
const files = arg("files", 10_000);
const runs = arg("runs", 15);
const edits = arg("edits", 0);

/** What a storage key is, for the table (never the tenant or the path). */
const kindOf = (key: string) => (/\/x\/[^/]+\//.test(key) ? `x/${/\/x\/([^/]+)\//.exec(key)![1]}` : key.endsWith("/meta.json") ? "meta.json" : /\/f\//.test(key) ? "file" : key.split("/")[0]!);

interface Span { traceId: string; spanId: string; parentSpanId?: string; name: string; start: number; end: number; attrs: Record<string, string | number | boolean> }
const spans: Span[] = [];
const receiver = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    try {
      for (const rs of JSON.parse(body).resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? []) {
            const attrs: Span["attrs"] = {};
            for (const a of s.attributes ?? []) attrs[a.key] = a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : a.value.doubleValue ?? a.value.boolValue);
            spans.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, name: s.name, start: Number(BigInt(s.startTimeUnixNano) / 1000n) / 1000, end: Number(BigInt(s.endTimeUnixNano) / 1000n) / 1000, attrs });
          }
    } catch {}
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
});
const otlpPort = await freePort();
await new Promise<void>((r) => receiver.listen(otlpPort, "127.0.0.1", r));

const corpus = buildCorpora([files], "bench/.data")[0]!.files; // the bench's corpus (kept under bench/.data), made before wrangler starts
LocalRunner.build();
const runner = new LocalRunner(await freePort());
await runner.start();
const port = await freePort();
// Frozen (as the bench's): wrangler dev would otherwise rebuild and restart the Worker mid-request when a file changes.
const frozen = freezeWorker("bench/wrangler.toml");
const worker = await startWorker({
  config: frozen.config, port,
  vars: { ...runner.workerVars(port, "trace"), TOOLSHED_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}` },
});
const stopAll = async () => {
  await worker.stop().catch(() => {});
  await runner.stop().catch(() => {});
  frozen.remove();
  receiver.close();
};

try {
  const t = await setupTenant(worker, "trace");
  const auth = { authorization: `Bearer ${t.key}` };
  const ws = `live-trace-${Date.now().toString(36)}`;
  const imp = await fetch(`${worker.url}/v1/workspaces?id=${ws}`, { method: "POST", headers: { ...auth, "content-type": "application/gzip" }, body: tarGz(corpus) });
  if (imp.status !== 201) throw new Error(`import: ${imp.status} ${await imp.text()}`);
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join("");
  const call = async (traceId?: string) => {
    const t0 = performance.now();
    const r = await fetch(`${worker.url}/v1/workspaces/${ws}/tools/bash`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", "x-session-id": "trace", ...(traceId ? { traceparent: `00-${traceId}-${hex(16)}-01` } : {}) },
      body: JSON.stringify({ command: "true", keep_alive: true, timeout: 60 }),
    });
    const body = (await r.json()) as { ok: boolean; error?: unknown };
    if (!body.ok) throw new Error(JSON.stringify(body.error));
    return performance.now() - t0;
  };
  for (let i = 0; i < 3; i++) await call();
  const samples: { traceId: string; client: number; from: number; to: number }[] = [];
  for (let i = 0; i < runs; i++) {
    for (let e = 0; e < edits; e++) await fetch(`${worker.url}/v1/workspaces/${ws}/files/live-trace/e${e}.txt`, { method: "PUT", headers: auth, body: `edit ${i}\n` });
    const traceId = hex(32);
    const from = Date.now();
    const client = await call(traceId);
    samples.push({ traceId, client, from, to: Date.now() });
  }
  await new Promise((r) => setTimeout(r, 1500)); // the last exports (after the answers)
  await fetch(`${worker.url}/v1/workspaces/${ws}/sessions/trace/sandbox`, { method: "DELETE", headers: auth }).catch(() => {});

  const rows = new Map<string, number[]>();
  const add = (k: string, v: number) => rows.set(k, [...(rows.get(k) ?? []), v]);
  for (const s of samples) {
    add("client", s.client);
    const own = spans.filter((x) => x.traceId === s.traceId);
    const root = own.find((x) => !x.parentSpanId || !own.some((y) => y.spanId === x.parentSpanId));
    if (!root) continue;
    add("api (route span)", root.end - root.start);
    const lives = own.filter((x) => x.name.startsWith("live.")).sort((a, b) => a.start - b.start);
    if (lives[0]) add("api before live", lives[0].start - root.start);
    if (lives.at(-1)) add("api after live", root.end - lives.at(-1)!.end);
    for (const l of lives) {
      add(l.name, l.end - l.start);
      const phases = ["sync_in_ms", "command_ms", "sync_out_ms"].map((p) => l.attrs[`toolshed.runner.${p}`]);
      if (phases.every((p) => typeof p === "number")) {
        const [i, c, o] = phases as number[];
        add("runner sync_in", i!);
        add("runner command", c!);
        add("runner sync_out", o!);
        add(`${l.name} less the runner's phases`, l.end - l.start - i! - c! - o!);
      }
    }
    const stores = own.filter((x) => /^(r2|kv|s3|storage)\./.test(x.name) || x.attrs["db.system"] !== undefined);
    add("storage ops (count)", stores.length);
    for (const o of stores) add(`storage ${o.name} ${kindOf(String(o.attrs["toolshed.key"] ?? ""))}`, o.end - o.start);
    // The runner's requests during this call (their own traces: the live runner sends no traceparent).
    for (const x of spans) {
      if (x.traceId === s.traceId || x.start < root.start || x.end > root.end + 1) continue;
      if (/^POST \/v1\/sync\//.test(x.name) && !x.parentSpanId) add(`runner request: ${x.name}`, x.end - x.start);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const { execSync } = await import("node:child_process");
  console.log(`commit ${execSync("git rev-parse --short HEAD").toString().trim()}; ${execSync("uptime").toString().trim()}`);
  console.log(`${files} files, ${runs} live no-change calls${edits ? ` (after ${edits} edited files each)` : ""}; median (n) per phase, ms:`);
  for (const [k, xs] of rows) console.log(`  ${k.padEnd(58)} ${med(xs).toFixed(1).padStart(8)}  (${xs.length})`);
} finally {
  await stopAll();
}
