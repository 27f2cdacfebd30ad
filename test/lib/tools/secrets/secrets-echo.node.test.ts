/**
 * A bound host that echoes its credential back, in the forms real servers use: in an HTML page (the
 * markdown step escapes `_`), in JSON (which escapes `"` and `\`), in a text or an error page cut
 * at max_bytes or at the error's excerpt (a cut through the value would keep its first characters),
 * in a webhook's JSON answer. No piece of the value (8 characters of it, backslashes aside) reaches
 * the model: the body is redacted as it arrives (lib/tools/secrets/redact-stream.ts), before any
 * conversion or cut. A real HTTPS server on 127.0.0.1, reached through nodeFetcher with a fake DNS.
 */
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { nodeFetcher } from "../../../../lib/tools/web/node-fetcher.js";
import { redactStream } from "../../../../lib/tools/secrets/redact-stream.js";
import { makeCertificate } from "../../../support/tls-server.js";

/** A value with the characters markdown and JSON escape. */
const VALUE = 'sk_live_"Q7\\x_91c4e2a7d0b35f18e6';
let server: Server;
let base = "";
let ca = "";

beforeAll(async () => {
  const cert = makeCertificate(["api.secret.test"]);
  ca = cert.cert;
  server = createServer(cert, (req, res) => {
    const url = new URL(req.url!, "https://x");
    const pad = "p".repeat(Number(url.searchParams.get("pad") ?? 0));
    const auth = String(req.headers.authorization ?? "");
    const send = (status: number, type: string, body: string) => res.writeHead(status, { "content-type": type }).end(body);
    if (url.pathname === "/html") return send(200, "text/html", `<html><body><h1>Your request</h1><p>${pad}you sent <b>${auth}</b></p></body></html>`);
    if (url.pathname === "/text") return send(200, "text/plain", `${pad}${auth} and more text after it`);
    if (url.pathname === "/json") return send(200, "application/json", JSON.stringify({ headers: { authorization: auth } }));
    if (url.pathname === "/401") return send(401, "text/plain", `${pad}bad token ${auth}, try another`);
    if (url.pathname === "/hook") return send(200, "application/json", JSON.stringify({ echo: auth }));
    if (url.pathname === "/hook-500") return send(500, "text/plain", `${pad}bad token ${auth}`);
    send(404, "text/plain", "no");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `https://api.secret.test:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));

async function setup() {
  const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: "A", secretsKey: "k".repeat(40), webFetch: { fetcher: nodeFetcher({ resolve: async () => [{ address: "127.0.0.1", family: 4 }], ca }), allowLoopback: true } }, tools);
  const adm = (path: string, body: unknown) => app.request(path, { method: "POST", headers: { authorization: "Bearer A", "content-type": "application/json" }, body: JSON.stringify(body) });
  await adm("/v1/admin/tenants", { id: "acme" });
  const key = ((await (await adm("/v1/admin/tenants/acme/keys", { scopes: ["read", "write", "network", "manage"] })).json()) as { key: string }).key;
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const api = (path: string, body: unknown, method = "POST") => app.request(path, { method, headers: h, body: JSON.stringify(body) });
  await api("/v1/workspaces", { id: "main" });
  expect((await api("/v1/secrets/API_TOKEN", { value: VALUE, destinations: [{ host: "api.secret.test", header: "Authorization", format: "Bearer {value}" }] }, "PUT")).status).toBe(201);
  const call = async (tool: string, args: unknown) => {
    const text = await (await api(`/v1/workspaces/main/tools/${tool}`, args)).text();
    return { text, body: JSON.parse(text) as any };
  };
  return { api, call };
}

/** Every string of an answer, joined, backslashes dropped (a markdown or JSON escape does not hide a value). */
function strings(v: unknown): string {
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map(strings).join("\n");
  if (v && typeof v === "object") return Object.values(v).map(strings).join("\n");
  return "";
}
const plain = (s: string) => s.replace(/\\/g, "");
/** Fails when any 8 characters of the value show in the answer. */
function noPieceOfValue(answer: { text: string; body: unknown }) {
  const seen = `${plain(answer.text)}\n${plain(strings(answer.body))}`;
  const value = plain(VALUE);
  for (let i = 0; i + 8 <= value.length; i++) expect(seen, `piece ${JSON.stringify(value.slice(i, i + 8))} of the value shows`).not.toContain(value.slice(i, i + 8));
}

describe("a bound host that echoes its credential", () => {
  it("in an HTML page converted to markdown or text, or kept as HTML", async () => {
    const { call } = await setup();
    for (const format of ["markdown", "text", "html"]) {
      const r = await call("web_fetch", { url: `${base}/html`, format });
      expect(r.body.ok, r.text).toBe(true);
      // markdown escapes the placeholder's "_": the model still reads which secret it was
      expect(r.body.data.content).toMatch(/Bearer \{\{secret:API\\?_TOKEN\}\}/);
      noPieceOfValue(r);
    }
  });

  it("in JSON, escaped as JSON escapes it", async () => {
    const { call } = await setup();
    const r = await call("web_fetch", { url: `${base}/json` });
    expect(JSON.parse(r.body.data.content)).toEqual({ headers: { authorization: "Bearer {{secret:API_TOKEN}}" } });
    noPieceOfValue(r);
  });

  it("cut at max_bytes anywhere in the value", async () => {
    const { call } = await setup();
    // The text is pad + "Bearer " + value; max_bytes 120 cuts it at every position of the value in turn.
    for (let pad = 120 - 7 - VALUE.length; pad <= 120 - 7; pad++) {
      const r = await call("web_fetch", { url: `${base}/text?pad=${pad}`, max_bytes: 120 });
      expect(r.body.data.truncated).toBe(true);
      noPieceOfValue(r);
    }
  });

  it("in an error page whose excerpt is cut anywhere in the value", async () => {
    const { call } = await setup();
    // The excerpt keeps 300 characters of pad + "bad token Bearer " + value.
    for (let pad = 300 - 17 - VALUE.length; pad <= 300 - 17; pad++) {
      const r = await call("web_fetch", { url: `${base}/401?pad=${pad}` });
      expect(r.body.error.code).toBe("FETCH_FAILED");
      noPieceOfValue(r);
    }
  });

  it("in a webhook's JSON answer (shown as JSON) and in its error (cut at 500 characters)", async () => {
    const { api, call } = await setup();
    for (const [name, path] of [["echo_hook", "/hook"], ["echo_fail", "/hook-500"]]) {
      expect((await api("/v1/tools/custom", { name, description: "echo", input_schema: { type: "object", properties: {} }, backend: { type: "webhook", url: `${base}${path}` } })).status).toBe(201);
    }
    const ok = await call("echo_hook", {});
    expect(ok.body.output).toContain("Bearer {{secret:API_TOKEN}}");
    noPieceOfValue(ok);
    const failed = await call("echo_fail", {});
    expect(failed.body.error.code).toBe("FETCH_FAILED");
    noPieceOfValue(failed);
  });
});

it("the body's redaction finds a value split across chunks at any byte, and holds back no more than it must", async () => {
  const body = `head ${VALUE} middle ${JSON.stringify(VALUE).slice(1, -1)} tail ${VALUE}`;
  const bytes = new TextEncoder().encode(body);
  for (const size of [1, 2, 3, 5, 7, 13, 64]) {
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.slice(i, i + size));
    const source = new ReadableStream<Uint8Array>({ pull: (c) => void (chunks.length ? c.enqueue(chunks.shift()!) : c.close()) });
    const out = await new Response(redactStream(source, () => [{ find: VALUE, put: "{{secret:T}}" }])).text();
    expect(out, `chunks of ${size}`).toBe("head {{secret:T}} middle {{secret:T}} tail {{secret:T}}");
  }
  const none = await new Response(redactStream(new Response("untouched").body!, () => [])).text();
  expect(none).toBe("untouched");
});

it("the value in its other encodings is found too: percent-encoded (either hex case), and inside base64 or base64url text at any alignment", async () => {
  const redacted = (body: string) => new Response(redactStream(new Response(body).body!, () => [{ find: VALUE, put: "{{secret:T}}" }])).text();
  const percent = encodeURIComponent(VALUE);
  expect(await redacted(`Location: https://x.test/cb?token=${percent}&a=1`)).toBe("Location: https://x.test/cb?token={{secret:T}}&a=1");
  expect(await redacted(`?t=${percent.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase())}`)).toBe("?t={{secret:T}}");
  for (const before of ["", "a", "ab", "Authorization: Bearer "]) {
    const b64 = Buffer.from(`${before}${VALUE} and after`).toString("base64");
    for (const text of [b64, b64.replace(/\+/g, "-").replace(/\//g, "_")]) {
      const out = await redacted(`{"data":"${text}"}`);
      expect(out, `${before} ${text}`).toContain("{{secret:T}}");
      // What is left of the base64 decodes to no 8 characters of the value.
      const left = Buffer.from(out.replace(/\{\{secret:T\}\}/g, "").replace(/["{}:]|data/g, ""), "base64").toString("latin1");
      for (let i = 0; i + 8 <= VALUE.length; i++) expect(left, `${before}: ${VALUE.slice(i, i + 8)}`).not.toContain(VALUE.slice(i, i + 8));
    }
  }
});
