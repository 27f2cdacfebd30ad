/**
 * The way out of a bwrap sandbox with network. The sandbox always has its own network
 * namespace (only its own loopback); for a run with network the runner serves an egress proxy
 * (egress-proxy.ts) on a unix socket in a directory of its own, bound into the sandbox at
 * /run/toolshed/egress, and the command's shell first starts a forwarder inside: the runner's
 * own node binary (bound read-only at /run/toolshed/node) listening on the sandbox's
 * 127.0.0.1:3128 and piping each connection to the socket. HTTP_PROXY/HTTPS_PROXY (both
 * cases) point there, so curl, git, pip, npm and python's urllib go through the proxy.
 * Whatever the command does to the forwarder (kill it, dial the socket itself), every
 * connection is decided by the proxy, outside the sandbox; without the proxy there is no route.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import { opaqueName } from "./opaque-name.js";
import { startEgressProxy, type EgressBytes, type EgressProxyLimits, type EgressProxyOptions } from "./egress-proxy.js";
import type { EgressRuleOptions } from "./egress-rules.js";

/** The proxy's port on the sandbox's own loopback. */
export const EGRESS_PORT = 3128;
const IN_SANDBOX = "/run/toolshed";
const SOCKET_NAME = "proxy.sock";

/** Egress settings of a bwrap sandbox: limits, and for tests a DNS and loopback. */
export type EgressOptions = Omit<EgressRuleOptions, "apiUrl" | "hostAddresses"> & EgressProxyLimits & Pick<EgressProxyOptions, "secrets" | "tlsCa">;

/**
 * The variables that make clients use the proxy; the sandbox's own loopback is reached directly.
 * (Not NODE_USE_ENV_PROXY: Node 22 warns on every start with it; a command that needs Node's
 * own fetch through the proxy sets it, see docs/sandbox-network.md.)
 */
export function proxyEnv(): Record<string, string> {
  const proxy = `http://127.0.0.1:${EGRESS_PORT}`;
  const direct = "localhost,127.0.0.1,::1";
  return {
    HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy,
    NO_PROXY: direct, no_proxy: direct,
  };
}

/**
 * The forwarder, run by node inside the sandbox: argv = socket path, port. It says "ready"
 * once it listens. An end (FIN) is passed on as an end, so nothing buffered is lost
 * (allowHalfOpen both ways); an error on one side ends the other.
 * (No single quotes: it is one shell word.)
 */
const FORWARDER = [
  `const net = require("net");`,
  `const [sock, port] = process.argv.slice(1);`,
  `net.createServer({ allowHalfOpen: true }, (c) => {`,
  `  const u = net.connect({ path: sock, allowHalfOpen: true });`,
  `  c.on("error", () => u.destroy()); u.on("error", () => c.destroy());`,
  `  c.pipe(u); u.pipe(c);`,
  `}).listen(Number(port), "127.0.0.1", () => process.stdout.write("ready\\n"));`,
].join("\n");

/** The forwarder as limitsScript's helper (sandbox.ts): started before the gate opens, the command waits for its "ready". */
function forwarder(): { command: string; failure: string } {
  return {
    command: `exec ${IN_SANDBOX}/node -e '${FORWARDER}' ${IN_SANDBOX}/egress/${SOCKET_NAME} ${EGRESS_PORT}`,
    failure: "toolshed: the sandbox's network proxy did not start",
  };
}

export interface RunEgress {
  /** bwrap arguments: the node binary and the socket's directory, read-only. */
  args: string[];
  env: Record<string, string>;
  /** The forwarder, for limitsScript. */
  helper: { command: string; failure: string };
  /** What the run's upstream connections carried so far (EgressProxy.carried). */
  carried(): EgressBytes;
  /** Ends the proxy and its connections, removes the socket; answers what the run's upstream connections carried. */
  close(): Promise<EgressBytes>;
}

/** Starts the proxy of one run with network; its refusals go to `onRefusal` (the command's stderr). */
export async function openRunEgress(stateDir: string, apiUrl: string | undefined, opts: EgressOptions, onRefusal: (line: string) => void): Promise<RunEgress> {
  // bwrap binds it by path as the sandbox's user: every directory on the way is traversable, none listable.
  const base = join(stateDir, "egress");
  mkdirSync(base, { recursive: true, mode: 0o711 });
  const dir = join(base, opaqueName()); // the sandbox's mountinfo shows it
  const socketPath = join(dir, SOCKET_NAME);
  // Linux cuts a unix socket's path at 107 bytes without a word: the sandbox would dial a name that is not there.
  if (Buffer.byteLength(socketPath) > 107) throw new ToolError("INTERNAL", `The runner's state directory ${stateDir} is too long for the egress proxy's socket (${socketPath} is over 107 bytes). Use a shorter runner root, e.g. /tmp/toolshed (TOOLSHED_RUNNER_ROOT).`);
  mkdirSync(dir, { mode: 0o711 });
  try {
    const proxy = await startEgressProxy({ ...opts, ...(apiUrl ? { apiUrl } : {}), socketPath, onRefusal });
    return {
      args: ["--ro-bind", process.execPath, `${IN_SANDBOX}/node`, "--ro-bind", dir, `${IN_SANDBOX}/egress`],
      env: proxyEnv(),
      helper: forwarder(),
      carried: () => proxy.carried(),
      async close() {
        const carried = await proxy.close();
        rmSync(dir, { recursive: true, force: true });
        return carried;
      },
    };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}
