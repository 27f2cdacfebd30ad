/**
 * The egress proxy of one sandboxed run with network: an HTTP forward proxy served by the
 * runner, outside the sandbox, on a unix socket that only this run's sandbox sees (bound into
 * it; egress-forwarder.ts makes it the sandbox's 127.0.0.1:3128). The sandbox has its own
 * network namespace with nothing but loopback, so this is its only way out.
 * - CONNECT host:port (https, and any TCP protocol a client tunnels): checked, then a tunnel;
 *   with the tenant's domain lists, the name its first bytes ask for too (egress-tunnel-check.ts).
 * - absolute-form plain HTTP (GET http://host/path): checked, then forwarded, one upstream
 *   connection per request.
 * Every target is checked by egress-rules.ts (web_fetch's SSRF rules, the API's host, this
 * host's addresses), names are resolved there and only checked addresses are dialled. A
 * refusal answers 403 with one line saying why, and the same line goes to the command's
 * stderr (onRefusal): curl does not print a refused CONNECT's body. Bounded: open and total
 * connections per run, connect and idle timeouts; close() ends every connection and says how many
 * bytes the run's upstream connections carried (the call's net_bytes_in / net_bytes_out: docs/usage.md).
 */
import { chmod } from "node:fs/promises";
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import type { EgressSecret } from "../../lib/exec/types.js";
import { secretsFor, type SecretsForHost } from "./egress-secrets.js";
import type { Duplex } from "node:stream";
import { plainAnswer, withoutHop } from "./egress-http.js";
import { EgressRefused, egressRules, parseAuthority, type CheckedAddress, type EgressRuleOptions } from "./egress-rules.js";
import { readTunnelFirstBytes, TLS_ACCESS_DENIED, tunnelRefusal } from "./egress-tunnel-check.js";

export interface EgressProxyLimits {
  /** Upstream connections open at once (default 64). */
  maxOpen?: number;
  /** Upstream connections over the whole run (default 4096). */
  maxTotal?: number;
  /** A connection with no traffic either way for this long is closed (default 120 s). */
  idleMs?: number;
  /** Longest wait for an upstream TCP connection (default 15 s). */
  connectTimeoutMs?: number;
}

export interface EgressProxyOptions extends EgressRuleOptions, EgressProxyLimits {
  /** Where to listen (a unix socket path; its directory exists). */
  socketPath: string;
  /** A one-line refusal for the command's output. */
  onRefusal(line: string): void;
  /** The tenant's secrets (egress-secrets.ts): added to plain-http requests of their hosts, sent on over TLS. */
  secrets?: EgressSecret[];
  /** Test-only: a CA (PEM) trusted for those TLS connections besides the system's. */
  tlsCa?: string;
}

/** What a run's upstream connections carried: TCP payload bytes (TLS as it went, encrypted), read from and written to the hosts it reached. */
export interface EgressBytes {
  bytesIn: number;
  bytesOut: number;
}

export interface EgressProxy {
  /** What the upstream connections carried so far: those closed, and those still open as they stand (a live sandbox's command takes its share). */
  carried(): EgressBytes;
  /** CONNECT tunnels whose first bytes the proxy read to check the name they ask for: none without the tenant's domain lists. */
  tunnelsRead(): number;
  /** Ends every connection and stops listening; reports refusals not yet told; answers what the upstream connections carried. */
  close(): Promise<EgressBytes>;
}

/** Refusals told one by one in the output; the rest are counted in one line at close. */
const TOLD_REFUSALS = 20;
export async function startEgressProxy(opts: EgressProxyOptions): Promise<EgressProxy> {
  const rules = egressRules(opts);
  const maxOpen = opts.maxOpen ?? 64;
  const maxTotal = opts.maxTotal ?? 4096;
  const idleMs = opts.idleMs ?? 120_000;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 15_000;
  const sockets = new Set<Duplex>();
  let open = 0;
  let total = 0;
  let refused = 0;
  /** CONNECT tunnels whose first bytes were read (only with the tenant's domain lists). */
  let tunnelsRead = 0;
  let closed = false;
  /** Bytes of the upstream connections: added as each closes, and for those still open at close(). */
  const carried: EgressBytes = { bytesIn: 0, bytesOut: 0 };
  const upstream = new Set<Socket>();
  const count = (s: Socket) => {
    if (!upstream.delete(s)) return;
    carried.bytesIn += s.bytesRead;
    carried.bytesOut += s.bytesWritten;
  };

  const track = <T extends Duplex>(s: T): T => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    if ("setTimeout" in s) (s as unknown as Socket).setTimeout(idleMs, () => s.destroy());
    return s;
  };

  const secrets: SecretsForHost = secretsFor(opts.secrets ?? []);
  const tell = (line: string) => {
    if (++refused <= TOLD_REFUSALS) opts.onRefusal(`toolshed egress: ${secrets.redact(line)}`);
  };
  const hinted = new Set<string>();
  /** Once per host: a CONNECT to a host with a secret goes through without it; say how to get it. */
  const hintTunnel = (host: string) => {
    const names = secrets.namesFor(host);
    if (!names.length || hinted.has(host)) return;
    hinted.add(host);
    opts.onRefusal(`toolshed egress: ${host} has the tenant's secret ${names.map((n) => `{{secret:${n}}}`).join(", ")}, added only to requests sent as http://${host}/... through this proxy (it sends them on over https and adds the header); this https:// connection is tunnelled as it is, without it.`);
  };

  /** A connected upstream socket to a checked address of host:port. */
  async function dial(host: string, port: number): Promise<Socket> {
    if (closed) throw new EgressRefused("The run is over; no new connections.", 503);
    if (open >= maxOpen) throw new EgressRefused(`Refused to connect to ${host}:${port}: this command already has ${maxOpen} connections open, the most one run may. Close some, or reuse connections.`, 503);
    if (total >= maxTotal) throw new EgressRefused(`Refused to connect to ${host}:${port}: this command has opened ${maxTotal} connections, the most one run may.`, 503);
    open++;
    total++;
    try {
      const addresses: CheckedAddress[] = await rules.check(host, port);
      let last: Error | null = null;
      for (const a of addresses) {
        try {
          const s = await connectTo(a, port);
          upstream.add(s);
          s.on("close", () => {
            open--;
            count(s);
          });
          return track(s);
        } catch (e) {
          last = e as Error;
        }
      }
      throw new EgressRefused(`Could not connect to ${host}:${port} (${(last as NodeJS.ErrnoException | null)?.code ?? last?.message ?? "no address"}). Check the host and port, or retry later.`, 502);
    } catch (e) {
      open--;
      throw e;
    }
  }

  const connectTo = (a: CheckedAddress, port: number) =>
    new Promise<Socket>((resolve, reject) => {
      // An address, never a name: nothing is resolved again here.
      const s = connect({ host: a.address, port, family: a.family, allowHalfOpen: true });
      const timer = setTimeout(() => s.destroy(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })), connectTimeoutMs);
      s.once("connect", () => {
        clearTimeout(timer);
        s.removeListener("error", reject);
        resolve(s);
      });
      s.once("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });

  /**
   * Bytes both ways; an end (FIN) is passed on as an end, so what is still buffered is
   * delivered (both sides are half-open capable); a failure on one side ends the other.
   */
  const splice = (a: Duplex, b: Duplex) => {
    a.pipe(b);
    b.pipe(a);
    failTogether(a, b);
  };
  const failTogether = (a: Duplex, b: Duplex) => {
    a.on("close", (failed: boolean) => failed && b.destroy());
    b.on("close", (failed: boolean) => failed && a.destroy());
  };

  /** TLS over a dialled socket, the certificate checked for `servername` (the system's CAs, plus tlsCa in tests). */
  const secure = (raw: Socket, servername: string) =>
    new Promise<TLSSocket>((resolve, reject) => {
      const s = tlsConnect({ socket: raw, servername, ...(opts.tlsCa ? { ca: opts.tlsCa } : {}) });
      const timer = setTimeout(() => s.destroy(Object.assign(new Error("TLS handshake timed out"), { code: "ETIMEDOUT" })), connectTimeoutMs);
      s.once("secureConnect", () => {
        clearTimeout(timer);
        s.removeListener("error", reject);
        resolve(track(s));
      });
      s.once("error", (e) => {
        clearTimeout(timer);
        raw.destroy();
        reject(new EgressRefused(`Could not open https to ${servername} for its secret: ${e.message}. The secret is sent only over TLS with a valid certificate.`, 502));
      });
    });

  const failureOf = (e: unknown, what: string): EgressRefused =>
    e instanceof EgressRefused ? e : new EgressRefused(`Could not reach ${what}: ${(e as Error).message}`, 502);

  const server = createServer({ requestTimeout: 0, headersTimeout: 30_000 }, (req, res) => void forward(req, res));
  server.on("connection", (s: Socket) => track(s));
  server.on("connect", (req: IncomingMessage, client: Duplex, head: Buffer) => void tunnel(req, client, head));
  server.on("clientError", (_e, s: Duplex) => s.destroy());

  async function tunnel(req: IncomingMessage, client: Duplex, head: Buffer) {
    const target = parseAuthority(req.url ?? "");
    if (!target) {
      const line = `CONNECT needs host:port, not ${JSON.stringify((req.url ?? "").slice(0, 200))}.`;
      tell(line);
      client.end(plainAnswer(400, line));
      return;
    }
    hintTunnel(target.host);
    try {
      const up = await dial(target.host, target.port);
      if (client.destroyed) return void up.destroy();
      client.write("HTTP/1.1 200 Connection established\r\n\r\n");
      if (!opts.domains) {
        if (head.length) up.write(head);
        return splice(client, up);
      }
      // The tenant's lists apply: the name the tunnel asks for is read and checked before a byte goes up (egress-tunnel-check.ts).
      tunnelsRead++;
      up.pipe(client); // a server that speaks first is heard meanwhile
      failTogether(client, up);
      const first = await readTunnelFirstBytes(client, head);
      const refusal = first.closed ? null : tunnelRefusal(target, first.start, opts.domains);
      if (first.closed || refusal) {
        up.destroy();
        if (refusal) tell(refusal.line);
        return void client.end(refusal ? (refusal.http ? plainAnswer(403, refusal.line) : TLS_ACCESS_DENIED) : undefined);
      }
      for (const name of "names" in first.start ? first.start.names : []) hintTunnel(name);
      up.write(first.bytes);
      if (first.ended) up.end();
      client.pipe(up);
    } catch (e) {
      const f = failureOf(e, req.url ?? "");
      tell(f.message);
      client.end(plainAnswer(f.status, f.message));
    }
  }

  async function forward(req: IncomingMessage, res: ServerResponse) {
    const answer = (status: number, line: string) => {
      tell(line);
      if (!res.headersSent) res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "x-toolshed-egress": "refused", connection: "close" });
      res.end(`${line}\n`);
    };
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      return answer(400, "This is the sandbox's HTTP proxy: send absolute URLs (http://host/path) or CONNECT host:port; HTTP_PROXY and HTTPS_PROXY are set for that.");
    }
    if (url.protocol !== "http:") return answer(400, `Only http:// URLs are forwarded as plain requests, not ${url.protocol}; https goes through CONNECT (HTTPS_PROXY).`);
    // A host with a secret: the request goes on over TLS (to the URL's port, else 443) with the secret's header.
    const injected = secrets.headersFor(url.hostname);
    const upgrade = injected !== null;
    const port = Number(url.port || (upgrade ? 443 : 80));
    let up: Socket | TLSSocket;
    try {
      up = await dial(url.hostname, port);
      if (upgrade) up = await secure(up, url.hostname);
    } catch (e) {
      const f = failureOf(e, url.host);
      return answer(f.status, f.message);
    }
    const headers = { ...withoutHop(req.headers), ...(injected ?? {}), host: url.host, connection: "close" };
    const out = httpRequest({ createConnection: () => up, method: req.method, path: `${url.pathname}${url.search}`, headers, setHost: false });
    out.on("response", (r) => {
      res.writeHead(r.statusCode ?? 502, r.statusMessage, withoutHop(r.headers));
      r.pipe(res);
      r.on("error", () => res.destroy());
    });
    out.on("error", (e) => (res.headersSent ? res.destroy() : answer(502, `Could not reach ${url.host}: ${e.message}`)));
    res.on("close", () => up.destroy());
    req.pipe(out);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.socketPath, () => resolve());
  });
  // The sandbox's user connects to it (it sees only this socket's directory).
  await chmod(opts.socketPath, 0o666);

  return {
    tunnelsRead: () => tunnelsRead,
    carried() {
      let { bytesIn, bytesOut } = carried;
      for (const s of upstream) (bytesIn += s.bytesRead), (bytesOut += s.bytesWritten);
      return { bytesIn, bytesOut };
    },
    async close() {
      if (closed) return carried;
      closed = true;
      const stopped = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      for (const s of upstream) count(s);
      await stopped;
      if (refused > TOLD_REFUSALS) opts.onRefusal(`toolshed egress: ${refused - TOLD_REFUSALS} more connections were refused (the first ${TOLD_REFUSALS} are above).`);
      return carried;
    },
  };
}
