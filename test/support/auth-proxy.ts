/**
 * A pass-through HTTP proxy on 127.0.0.1 that adds `Authorization: Bearer <key>` to every request
 * and forwards it byte for byte to one upstream on 127.0.0.1 (test/support/pass-through-proxy.ts).
 * For clients that cannot send headers, such as the MCP conformance runner (its CLI takes only a URL).
 * Only node: imports.
 */
import { startPassThroughProxy, type PassThroughProxy } from "./pass-through-proxy.js";

export type AuthProxy = PassThroughProxy;

export function startAuthProxy(upstream: string, key: string): Promise<AuthProxy> {
  return startPassThroughProxy(upstream, { headers: { authorization: `Bearer ${key}` } });
}
