/**
 * Network bytes in usage (docs/usage.md, lib/tools/web/net-bytes.ts): web_fetch, web_search, a
 * webhook custom tool and an approved web_fetch against a real HTTP server on 127.0.0.1 that counts
 * the bytes on its own sockets, through the HTTP API with a usage store; the records and the
 * aggregates carry what the server sent. The app lets loopback through (the test-only switch).
 */
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import { heldUsageStore } from "../../../../lib/run/metering/held-store.js";
import { MemoryUsageStore } from "../../../../lib/run/metering/memory-store.js";
import type { StoredRecord } from "../../../../lib/run/metering/store.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { nodeFetcher } from "../../../../lib/tools/web/node-fetcher.js";
import { braveProvider } from "../../../../lib/tools/web/search/brave.js";

const ADMIN = "admin-net-bytes-test";
/** What the server's sockets carried: bytes written (answers) and read (requests), over every socket. */
const sockets = new Set<Socket>();
const wire = () => {
  let written = 0;
  let read = 0;
  for (const s of sockets) (written += s.bytesWritten), (read += s.bytesRead);
  return { written, read };
};
/** The bytes of the first part of /cut's answer (head and the first 4,000 body bytes), as its socket wrote them. */
let cutFirstPart = 0;
let server: Server;
let base = "";

const text = (n: number) => "abcdefghij\n".repeat(Math.ceil(n / 11)).slice(0, n);
/** A JSON answer with its length (a chunked one's framing is not counted: lib/tools/web/net-bytes.ts). */
const json = (value: unknown) => {
  const body = JSON.stringify(value);
  return [{ "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }, body] as const;
};

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume(); // a request's bytes are counted on its socket; its body is not needed here
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://x");
      const n = Number(url.searchParams.get("n") ?? 1000);
      switch (url.pathname) {
        case "/bytes":
          return void res.writeHead(200, { "content-type": "text/plain", "content-length": String(n) }).end(text(n));
        case "/cut": {
          // 4,000 bytes, then, well after the client has cut its read, the rest.
          const socket = res.socket!;
          const before = socket.bytesWritten;
          res.writeHead(200, { "content-type": "text/plain", "content-length": String(n) });
          res.write(text(4_000), () => (cutFirstPart = socket.bytesWritten - before));
          return void setTimeout(() => res.end(text(n - 4_000)), 1_500).unref();
        }
        case "/gzip": {
          const body = gzipSync(text(n));
          return void res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip", "content-length": String(body.length), "x-gzip-length": String(body.length) }).end(body);
        }
        case "/redirect":
          return void res.writeHead(302, { location: `/bytes?n=${n}`, "content-length": "0" }).end();
        case "/hook": {
          const [headers, body] = json({ content: [{ type: "text", text: "received" }] });
          return void res.writeHead(200, headers).end(body);
        }
        case "/res/v1/web/search": {
          const [headers, body] = json({ web: { results: [{ title: "Rust", url: "https://www.rust-lang.org/", description: "A language." }] } });
          return void res.writeHead(200, headers).end(body);
        }
        default:
          return void res.writeHead(404, { "content-length": "0" }).end();
      }
    });
  });
  server.on("connection", (s) => sockets.add(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function setup() {
  const store = new MemoryUsageStore();
  const sink = heldUsageStore(store, { log: false });
  const app = createApp({
    storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, usageStore: store, onUsage: sink,
    webFetch: { fetcher: nodeFetcher(), allowLoopback: true }, search: braveProvider({ apiKey: "k", endpoint: `${base}/res/v1/web/search` }),
  }, tools);
  const adm = async (path: string, body: unknown, method = "POST") => (await app.request(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  const tenant = `t${Math.random().toString(36).slice(2, 10)}`;
  await adm("/v1/admin/tenants", { id: tenant });
  const key = (await adm(`/v1/admin/tenants/${tenant}/keys`, { scopes: ["read", "write", "network", "manage"] })).key as string;
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  await app.request("/v1/workspaces", { method: "POST", headers: h, body: JSON.stringify({ id: "main" }) });
  const call = async (tool: string, args: unknown) => (await app.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: h, body: JSON.stringify(args) })).json() as Promise<any>;
  /** Every record of the tenant so far, in order. */
  const records = async (): Promise<StoredRecord[]> => {
    await sink.settled();
    return (await store.exportRecords(tenant, { from: 0, to: Date.now() + 1 })).records;
  };
  const last = async () => (await records()).at(-1)!;
  const usage = async (groupBy: string) => (await app.request(`/v1/usage?${groupBy ? `group_by=${groupBy}&` : ""}from=${Date.now() - 3_600_000}`, { headers: h })).json() as Promise<any>;
  return { app, adm, tenant, h, call, records, last, usage };
}

/** Runs `f` and returns what the server's sockets carried meanwhile. */
async function carried<T>(f: () => Promise<T>): Promise<{ result: T; written: number; read: number }> {
  const before = wire();
  const result = await f();
  await new Promise((r) => setTimeout(r, 20)); // the server's write callbacks have run
  const after = wire();
  return { result, written: after.written - before.written, read: after.read - before.read };
}

describe("network bytes in usage", () => {
  it("web_fetch: in is every byte the server sent (head and body), out what the call sent; the record and GET /v1/usage carry them", async () => {
    const t = await setup();
    const { result, written, read } = await carried(() => t.call("web_fetch", { url: `${base}/bytes?n=40000`, format: "text" }));
    expect(result.ok, JSON.stringify(result).slice(0, 300)).toBe(true);
    const r = await t.last();
    expect(r).toMatchObject({ tool: "web_fetch", ok: true, net_bytes_in: written });
    expect(written).toBeGreaterThan(40_000);
    // Out: the request line, Host, the headers web_fetch set; the runtime adds a few of its own (accept-encoding, connection, …) that are not counted.
    expect(r.net_bytes_out).toBeGreaterThan(50);
    expect(r.net_bytes_out).toBeLessThanOrEqual(read);
    expect(read - r.net_bytes_out!).toBeLessThan(200);
    const [row] = (await t.usage("tool")).rows.filter((x: any) => x.tool === "web_fetch");
    expect(row).toMatchObject({ calls: 1, net_bytes_in: written, net_bytes_out: r.net_bytes_out });
  });

  it("a body cut by max_bytes counts what was received, not what the model got", async () => {
    const t = await setup();
    const { result } = await carried(() => t.call("web_fetch", { url: `${base}/cut?n=300000`, max_bytes: 1000 }));
    expect(result.data).toMatchObject({ truncated: true });
    expect(result.data.content.length).toBeLessThanOrEqual(1000);
    // The first 4,000 body bytes came (one chunk on loopback) and were read; the rest was never sent before the cut.
    expect((await t.last()).net_bytes_in).toBe(cutFirstPart);
    expect(cutFirstPart).toBeGreaterThan(4_000);
  });

  it("a redirect counts both hops; a compressed body counts decoded (the runtime decodes before a byte is seen)", async () => {
    const t = await setup();
    const hop = await carried(() => t.call("web_fetch", { url: `${base}/redirect?n=5000` }));
    expect(hop.result.data.redirects).toHaveLength(1);
    const r = await t.last();
    expect(r.net_bytes_in).toBe(hop.written);
    // Two requests went out, each counted.
    const direct = await carried(() => t.call("web_fetch", { url: `${base}/bytes?n=5000` }));
    expect(r.net_bytes_out).toBeGreaterThan((await t.last()).net_bytes_out!);
    expect(direct.written).toBeLessThan(hop.written);

    const gz = await carried(() => t.call("web_fetch", { url: `${base}/gzip?n=100000`, max_bytes: 102_400 }));
    expect(gz.result.data.bytes).toBe(100_000);
    const zipped = (await t.last()).net_bytes_in!;
    // The server's head + the decoded 100,000, where the wire carried the head + the gzip (far less).
    const gzipLength = gzipSync(text(100_000)).length;
    expect(zipped).toBe(gz.written - gzipLength + 100_000);
    expect(gz.written).toBeLessThan(20_000);
  });

  it("web_search, a webhook custom tool and an approved web_fetch carry theirs; a call that reached no network has none", async () => {
    const t = await setup();
    const search = await carried(() => t.call("web_search", { query: "rust" }));
    expect(search.result.ok, JSON.stringify(search.result)).toBe(true);
    expect(await t.last()).toMatchObject({ tool: "web_search", net_bytes_in: search.written });

    const added = await t.adm(`/v1/admin/tenants/${t.tenant}/tools/custom`, { name: "acme_hook", description: "hook", input_schema: { type: "object", properties: { message: { type: "string" } } }, backend: { type: "webhook", url: `${base}/hook`, secret: "whsec_net_bytes_test_0123456789" } });
    expect(added.name).toBe("acme_hook");
    const message = "x".repeat(10_000);
    const hook = await carried(() => t.call("acme_hook", { message }));
    expect(hook.result.ok, JSON.stringify(hook.result)).toBe(true);
    const h = await t.last();
    expect(h).toMatchObject({ tool: "acme_hook", net_bytes_in: hook.written });
    expect(h.net_bytes_out).toBeGreaterThan(10_000);
    expect(h.net_bytes_out).toBeLessThanOrEqual(hook.read);

    // Outside allowed_domains: held, nothing fetched, no bytes; approved: the call that runs carries them.
    await t.adm(`/v1/admin/tenants/${t.tenant}/policy`, { web: { allowed_domains: ["docs.example.org"] } }, "PUT");
    const held = await t.call("web_fetch", { url: `${base}/bytes?n=3000` });
    expect(held.error.code).toBe("NEEDS_APPROVAL");
    expect((await t.last()).net_bytes_in).toBeUndefined();
    const approver = (await t.adm(`/v1/admin/tenants/${t.tenant}/keys`, { name: "app", scopes: ["read", "approve"] })).key as string;
    const approved = await carried(async () => t.app.request(`/v1/workspaces/main/pending/${held.error.details.pending_id}`, { method: "POST", headers: { authorization: `Bearer ${approver}`, "content-type": "application/json" }, body: JSON.stringify({ approved: true }) }));
    expect(approved.result.status).toBe(200);
    const ran = (await t.records()).filter((r) => r.tool === "web_fetch").at(-1)!;
    expect(ran).toMatchObject({ ok: true, net_bytes_in: approved.written });
    expect((await t.records()).at(-1)).toMatchObject({ route: "POST pending" });
    expect((await t.records()).at(-1)!.net_bytes_in).toBeUndefined();

    await t.adm(`/v1/admin/tenants/${t.tenant}/policy`, {}, "PUT");
    await t.call("write", { file_path: "a.txt", content: "hello\n" });
    const w = await t.last();
    expect([w.tool, w.net_bytes_in, w.net_bytes_out]).toEqual(["write", undefined, undefined]);
    // Refused before any request (the SSRF guard): none either.
    expect((await t.call("web_fetch", { url: "http://169.254.169.254/latest/meta-data/" })).error.code).toBe("BLOCKED");
    expect((await t.last()).net_bytes_in).toBeUndefined();
  });

  it("concurrent calls: the aggregates are the sum of the records, for every group_by", async () => {
    const t = await setup();
    const sizes = Array.from({ length: 12 }, (_, i) => 1_000 + i * 997);
    const { written } = await carried(() => Promise.all(sizes.map((n, i) => t.call(i % 3 === 2 ? "read" : "web_fetch", i % 3 === 2 ? { file_path: "none.txt" } : { url: `${base}/bytes?n=${n}` }))));
    const records = await t.records();
    const fetched = records.filter((r) => r.tool === "web_fetch");
    expect(fetched).toHaveLength(8);
    const sumIn = records.reduce((s, r) => s + (r.net_bytes_in ?? 0), 0);
    const sumOut = records.reduce((s, r) => s + (r.net_bytes_out ?? 0), 0);
    expect(sumIn).toBe(written);
    for (const groupBy of ["", "tool", "workspace", "key", "hour", "day", "tool,key"]) {
      const report = await t.usage(groupBy);
      expect(report.totals, groupBy).toMatchObject({ net_bytes_in: sumIn, net_bytes_out: sumOut });
      expect(report.rows.reduce((s: number, r: any) => s + r.net_bytes_in, 0), groupBy).toBe(sumIn);
    }
  });
});
