/**
 * The `ops` workload of bench/cpu-profile.ts (#31 §5): `read`, `write` and `edit` in the bench's
 * shapes (bench/ops.ts: repeat reads of 16 files in one session, a 4 KB overwrite, a 16 KB file's
 * counter edited after an untimed read) beside the floor's same storage operations (POST /__floor,
 * bench/floor-ops.ts), the floor's write with the two objects a write adds (`floor-write+2`: its undo
 * record and audit entry, PUT beside it) and a request that does nothing (GET /healthz through the app), in the bench's
 * Worker (bench/wrangler.toml: the business layer as deployed).
 *
 *   npx node bench/cpu-profile.ts ops [--calls=200] [--rounds=3] [--only=noop,read,floor-read,…] [--read-kb=8] [--layered] [--cpu-only]
 *   npx node bench/cpu-profile.ts ops --profile=read,write,edit [--calls=300] [--top=40] [--out=…]
 *
 * --cpu-only: each variant's `--calls` calls in turn, `--rounds` times, with the CPU of every process of
 * `wrangler dev` (/proc) per call, workerd's apart, counted until 1.2 s after the block's last answer
 * (the work after the answers, held up to a second, included). `edit` is the bench's cycle (the untimed
 * read and the edit); its line also gives the cycle less a read's CPU. --layered: the workspace checkpointed
 * after its files are put (they move into a pack; the write and edit targets' later versions are upper
 * objects over it), as the bench's raw uploads are sealed in the background before its rows. Otherwise a V8 profile of the
 * Worker over `--calls` rounds of the `--profile` tools (Toolshed's only).
 */
import { cpuOf } from "./proc-cpu.ts";
import { descendants, freePort, startWorker, type WorkerProcess } from "../test/support/wrangler-dev.ts";

export interface OpsDeps<Profile> {
  arg: (name: string, dflt: string) => string;
  tenant: (w: WorkerProcess, limits?: unknown, id?: string) => Promise<string>;
  profiled: (w: WorkerProcess, work: () => Promise<void>) => Promise<Profile>;
}

/** ~`bytes` of source-like lines. */
const source = (bytes: number, tag: string) => Array.from({ length: Math.ceil(bytes / 50) }, (_, i) => `export const ${tag}${i} = ${i}; // some line of code here`).join("\n") + "\n";

export async function ops<Profile>({ arg, tenant, profiled }: OpsDeps<Profile>): Promise<Profile | null> {
  const calls = Number(arg("calls", "200")), rounds = Number(arg("rounds", "3")), readKb = Number(arg("read-kb", "8"));
  const w = await startWorker({ port: await freePort(), config: "bench/wrangler.toml" });
  try {
    const tenantName = `ops${Date.now().toString(36)}`;
    const key = await tenant(w, { calls_per_minute: 1_000_000 }, tenantName);
    const t = "ws";
    await fetch(`${w.url}/v1/workspaces`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: t }) });
    const targets = Array.from({ length: 16 }, (_, i) => ({ path: `src/f${i}.ts`, text: source(readKb * 1024, `v${i}_`) }));
    const editSeed = `${source(16 * 1024, "e")}// bench counter 0\n`;
    const writeBody = source(4 * 1024, "w");
    const undoLike = JSON.stringify({ v: 1, call_id: "c".repeat(20), tool: "write", session: "bench", at: new Date().toISOString(), changes: [{ path: "zz-bench/write-toolshed.txt", before: { etag: "e".repeat(32), size: writeBody.length, inline: Buffer.from(writeBody).toString("base64") }, after: "f".repeat(32) }] });
    const auditLike = JSON.stringify({ at: new Date().toISOString(), tenant: tenantName, workspace: t, key: "k".repeat(12), tool: "write", ok: true, call_id: "c".repeat(20), paths: ["zz-bench/write-toolshed.txt"], ms: 5, bytes_written: writeBody.length });
    const h = { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "bench" };
    const put = (path: string, text: string) => fetch(`${w.url}/v1/workspaces/${t}/files/${path}`, { method: "PUT", headers: { authorization: `Bearer ${key}` }, body: text }).then((r) => r.text());
    for (const f of targets) await put(f.path, f.text);
    await put("zz-bench/edit-toolshed.js", editSeed);
    const floor = async (body: Record<string, unknown>) => {
      const r = await fetch(`${w.url}/__floor`, { method: "POST", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ ...body, tenant: tenantName, ws: t }) });
      const j = (await r.json()) as { ok: boolean; error?: string };
      if (!j.ok) throw new Error(`floor ${String(body.op)}: ${j.error}`);
    };
    await floor({ op: "seed", files: [...targets, { path: "zz-bench/edit-floor.js", text: editSeed }] });
    // --layered: the files sealed into a lower layer (a checkpoint), as the bench's raw uploads are by the time its rows run.
    if (process.argv.includes("--layered")) {
      const cp = await fetch(`${w.url}/v1/workspaces/${t}/checkpoints`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ name: "base" }) });
      if (cp.status !== 201) throw new Error(`checkpoint: ${cp.status} ${await cp.text()}`);
    }
    const call = async (tool: string, args: unknown) => {
      const r = await fetch(`${w.url}/v1/workspaces/${t}/tools/${tool}`, { method: "POST", headers: h, body: JSON.stringify(args) });
      const j = (await r.json()) as { ok: boolean };
      if (!j.ok) throw new Error(`${tool}: ${JSON.stringify(j).slice(0, 300)}`);
    };
    const counter = { toolshed: 0, floor: 0 };
    const variants: Record<string, (i: number) => Promise<void>> = {
      noop: async () => void (await (await fetch(`${w.url}/healthz`)).text()),
      "floor-read": (i) => floor({ op: "read", path: targets[i % 16]!.path }),
      read: (i) => call("read", { file_path: targets[i % 16]!.path }),
      "floor-write": (i) => floor({ op: "write", path: "zz-bench/write-floor.txt", content: `${writeBody}// write ${i}\n` }),
      // The floor's write with the two objects a Toolshed write adds, as one request's 3 PUTs side by side: its undo
      // record (the replaced 4 KB inline, base64) and its audit entry (after the answer): the storage part of write's CPU.
      "floor-write+2": (i) => floor({ op: "seed", files: [{ path: "zz-bench/write-floor.txt", text: `${writeBody}// write ${i}\n` }, { path: `zz-bench/undo-${i % 64}.json`, text: undoLike }, { path: `zz-bench/audit-${i % 64}.json`, text: auditLike }] }),
      write: (i) => call("write", { file_path: "zz-bench/write-toolshed.txt", content: `${writeBody}// write ${i}\n` }),
      "floor-edit": async () => {
        await floor({ op: "edit", path: "zz-bench/edit-floor.js", old_string: `// bench counter ${counter.floor}`, new_string: `// bench counter ${counter.floor + 1}` });
        counter.floor++;
      },
      edit: async () => {
        const file_path = "zz-bench/edit-toolshed.js";
        await call("read", { file_path });
        await call("edit", { file_path, old_string: `// bench counter ${counter.toolshed}`, new_string: `// bench counter ${counter.toolshed + 1}` });
        counter.toolshed++;
      },
    };
    for (const v of Object.values(variants)) for (let i = 0; i < 20; i++) await v(i); // warm-up: every target read once by the session
    if (!process.argv.includes("--cpu-only")) {
      const which = arg("profile", "read,write,edit").split(",").filter((n) => variants[n]);
      return await profiled(w, async () => {
        for (let i = 0; i < calls; i++) for (const n of which) await variants[n]!(i);
        await new Promise((r) => setTimeout(r, 1200)); // the work after the last answers
      });
    }
    const only = arg("only", "").split(",").filter(Boolean);
    const names = Object.keys(variants).filter((n) => !only.length || only.includes(n));
    const pids = [w.child.pid!, ...descendants(w.child.pid!)];
    const res = Object.fromEntries(names.map((n) => [n, { ms: [] as number[], cpu: [] as number[], workerd: [] as number[] }]));
    for (let r = 0; r < rounds; r++) {
      for (const n of names) {
        const c0 = cpuOf(pids);
        for (let i = 0; i < calls; i++) {
          const s = performance.now();
          await variants[n]!(i);
          res[n]!.ms.push(performance.now() - s);
        }
        await new Promise((ok) => setTimeout(ok, 1200));
        const c1 = cpuOf(pids);
        res[n]!.cpu.push((c1.total - c0.total) / calls);
        res[n]!.workerd.push(((c1.by.workerd ?? 0) - (c0.by.workerd ?? 0)) / calls);
      }
    }
    const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`${calls} calls x ${rounds} rounds per variant; CPU ms per call (every process of wrangler dev; workerd alone), each round's figure in []`);
    for (const n of names) {
      const v = res[n]!;
      const less = n === "edit" && res.read ? `  (cycle less a read: ${(mean(v.cpu) - mean(res.read.cpu)).toFixed(2)}, workerd ${(mean(v.workerd) - mean(res.read.workerd)).toFixed(2)})` : "";
      console.log(`${n.padEnd(12)} p50 ${p50(v.ms).toFixed(2).padStart(6)} ms  cpu ${mean(v.cpu).toFixed(2)} [${v.cpu.map((x) => x.toFixed(2)).join(" ")}]  workerd ${mean(v.workerd).toFixed(2)} [${v.workerd.map((x) => x.toFixed(2)).join(" ")}]${less}`);
    }
    return null;
  } finally {
    await w.stop();
  }
}
