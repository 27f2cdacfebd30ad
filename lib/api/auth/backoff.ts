/**
 * Backoff for failed authentication, per throttle key. Which key a request counts under is one
 * rule, throttleKeyOf (lib/api/auth/middleware.ts): a key-shaped bearer (`tsk_<key id>_<secret>`)
 * counts under its key id from this client address, anything else under the client address. So
 * one tenant's revoked key retrying slows that key alone, never another tenant's valid key
 * behind the same address.
 *
 * The first `freeFailures` wrong credentials under one throttle key cost nothing (401); each
 * failure after them (the 11th by default, itself still a 401) starts a window in which that
 * throttle key is refused with RATE_LIMITED, doubling with each further failure (1 s, 2 s, 4 s,
 * ... up to `maxDelayMs`). So by default the 12th request after 11 wrong ones is the first 429.
 * A successful authentication forgets its throttle key.
 *
 * The state lives in the object createApp makes (or AppDeps.authBackoff), so it is per isolate:
 * on a fleet of Workers or Lambda instances a client is only slowed where its requests land.
 * That is best effort, and still useful: one guessing client is pinned to a few isolates by
 * keep-alive and locality, each of them slows it down exponentially, and a refused guess costs
 * no KV read. A missing credential is not a failure (it guesses nothing).
 */
import { ToolError } from "../../shared/errors.js";

export interface AuthBackoffOptions {
  /** Failures that cost nothing (default 10); the next one starts the first wait. */
  freeFailures?: number;
  /** First wait (default 1 s); doubles with each further failure. */
  baseDelayMs?: number;
  /** Longest wait (default 15 min). */
  maxDelayMs?: number;
  /** Clients remembered at most (oldest forgotten first; default 10,000). */
  maxClients?: number;
  /** A client with no failure for this long is forgotten (default 1 h). */
  forgetAfterMs?: number;
  now?: () => number;
}

export interface AuthBackoff {
  /** Throws RATE_LIMITED (with retry_after) while the client must wait. */
  check(client: string): void;
  failed(client: string): void;
  succeeded(client: string): void;
}

interface ClientState {
  failures: number;
  blockedUntil: number;
  last: number;
}

export function createAuthBackoff(opts: AuthBackoffOptions = {}): AuthBackoff {
  const free = opts.freeFailures ?? 10;
  const base = opts.baseDelayMs ?? 1000;
  const max = opts.maxDelayMs ?? 15 * 60 * 1000;
  const maxClients = opts.maxClients ?? 10_000;
  const forgetAfter = opts.forgetAfterMs ?? 60 * 60 * 1000;
  const now = opts.now ?? Date.now;
  const clients = new Map<string, ClientState>();

  const current = (client: string): ClientState | undefined => {
    const s = clients.get(client);
    if (s && now() - s.last > forgetAfter && s.blockedUntil <= now()) {
      clients.delete(client);
      return undefined;
    }
    return s;
  };

  return {
    check(client) {
      const s = current(client);
      const wait = s ? s.blockedUntil - now() : 0;
      if (wait > 0) {
        const seconds = Math.ceil(wait / 1000);
        throw new ToolError(
          "RATE_LIMITED",
          `Too many failed authentication attempts with this credential. Wait ${seconds} s, then retry with a valid key; each further failure doubles the wait.`,
          { retry_after: seconds },
        );
      }
    },
    failed(client) {
      const s = current(client) ?? { failures: 0, blockedUntil: 0, last: 0 };
      s.failures++;
      s.last = now();
      if (s.failures > free) s.blockedUntil = s.last + Math.min(max, base * 2 ** Math.min(s.failures - free - 1, 30));
      clients.delete(client); // re-insert: the Map's order is then least recently failed first
      clients.set(client, s);
      while (clients.size > maxClients) clients.delete(clients.keys().next().value!);
    },
    succeeded(client) {
      clients.delete(client);
    },
  };
}

/** The client address a request comes from: cf-connecting-ip, else the first hop of x-forwarded-for, else "unknown". */
export function clientOf(headers: Headers): string {
  const cf = headers.get("cf-connecting-ip")?.trim();
  if (cf) return cf;
  const xff = headers.get("x-forwarded-for")?.split(",")[0]?.trim();
  return xff || "unknown";
}
