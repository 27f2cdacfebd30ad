/**
 * A real HTTPS server on 127.0.0.1 (or `address`) with a certificate made for the test (openssl, self-signed, valid
 * for the names given and 127.0.0.1), for the secrets tests: the caller trusts `ca` (nodeFetcher's
 * `ca`, the egress proxy's) and reaches it by those names through a fake DNS. It records every
 * request (host, path, headers, body) and answers:
 *   /private   200 "private ok" only with `authorization: Bearer <required>`, else 401 "need a token"
 *   /echo      200, the request's headers as JSON (a server that echoes what it got)
 *   /echo-401  401, the same echo (an error page that shows the header)
 *   /redirect?to=URL  302 to URL
 *   anything else     200 "ok"
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TlsServer {
  port: number;
  /** The certificate (PEM): trust it as a CA. */
  ca: string;
  seen: { host: string; path: string; headers: IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

export function makeCertificate(names: string[], address = "127.0.0.1"): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), "toolshed-tls-"));
  try {
    const san = [...names.map((n) => `DNS:${n}`), `IP:${address}`].join(",");
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=toolshed-test", "-addext", `subjectAltName=${san}`, "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
    return { cert: readFileSync(join(dir, "cert.pem"), "utf8"), key: readFileSync(join(dir, "key.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startTlsServer(names: string[], required: string, address = "127.0.0.1"): Promise<TlsServer> {
  const { cert, key } = makeCertificate(names, address);
  const seen: TlsServer["seen"] = [];
  const server: Server = createServer({ cert, key }, (req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "https://x");
      seen.push({ host: String(req.headers.host ?? ""), path: url.pathname, headers: req.headers, body });
      const send = (status: number, type: string, text: string, headers: Record<string, string> = {}) => res.writeHead(status, { "content-type": type, ...headers }).end(text);
      if (url.pathname === "/private" || url.pathname === "/hook") {
        if (req.headers.authorization !== `Bearer ${required}`) return send(401, "text/plain", "need a token");
        return url.pathname === "/hook" ? send(200, "application/json", JSON.stringify({ content: [{ type: "text", text: "hook ok" }] })) : send(200, "text/plain", "private ok");
      }
      if (url.pathname === "/echo") return send(200, "application/json", JSON.stringify(req.headers));
      if (url.pathname === "/echo-401") return send(401, "application/json", JSON.stringify(req.headers));
      if (url.pathname === "/redirect") return send(302, "text/plain", "moved", { location: url.searchParams.get("to") ?? "/" });
      send(200, "text/plain", "ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, address, r));
  return {
    port: (server.address() as AddressInfo).port,
    ca: cert,
    seen,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
