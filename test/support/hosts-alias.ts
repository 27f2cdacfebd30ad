/**
 * A host name this machine's resolver (getaddrinfo: /etc/hosts, then DNS) maps to one of its own
 * addresses, the way `vm` and `runsc` map to 127.0.0.1 on the development VM, and a real HTTP
 * server listening on that address: what an SSRF through a hosts-file alias would read. Node-only.
 *
 * Portable: the machine's own name (os.hostname()) first, which resolves locally almost everywhere
 * (127.0.1.1 on Debian, the container's address in Docker), then every other name in /etc/hosts.
 * The server binds the alias's own address, so the alias really reaches it, whatever that address is.
 */
import { lookup } from "node:dns/promises";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";

export interface HostsAlias {
  /** The name, e.g. "vm". */
  name: string;
  /** The address it resolves to, e.g. "127.0.0.1". */
  address: string;
  /** http://<name>:<port> of the server. */
  url: string;
  port: number;
  /** Requests the server got (method and path): a refusal must leave this empty. */
  seen: string[];
  close(): Promise<void>;
}

function hostsFileNames(): string[] {
  try {
    return readFileSync("/etc/hosts", "utf8")
      .split("\n")
      .map((l) => l.replace(/#.*/, "").trim().split(/\s+/).slice(1))
      .flat()
      .filter((n) => n && !/^localhost$|\.localhost$|^ip6-/i.test(n));
  } catch {
    return [];
  }
}

/** Binds a server on `address`, port 0; null when this machine cannot bind it. */
async function listenOn(address: string, seen: string[]): Promise<Server | null> {
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ secret: "read through a hosts-file alias", content: [{ type: "text", text: "secret" }], choices: [{ message: { role: "assistant", content: "secret" } }] }));
  });
  return new Promise((resolve) => {
    server.once("error", () => resolve(null));
    server.listen(0, address, () => resolve(server));
  });
}

/** The first name of this machine that resolves to an address we can listen on, with a server there; throws when there is none. */
export async function startHostsAlias(): Promise<HostsAlias> {
  const tried: string[] = [];
  for (const name of [...new Set([hostname(), ...hostsFileNames()])]) {
    const address = await lookup(name, { family: 4 }).then((a) => a.address, () => null);
    tried.push(`${name} → ${address ?? "no address"}`);
    if (!address) continue;
    const seen: string[] = [];
    const server = await listenOn(address, seen);
    if (!server) continue;
    const port = (server.address() as AddressInfo).port;
    return { name, address, port, url: `http://${name}:${port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
  }
  throw new Error(`No host name of this machine resolves to an address a test server can listen on (tried: ${tried.join(", ")}); add one to /etc/hosts, e.g. "127.0.0.1 toolshed-alias".`);
}
