/**
 * One guarded fetch for every door that reaches a URL (web_fetch, a webhook call, the model endpoint):
 * every hop's URL goes through the SSRF guard (lib/shared/ssrf.ts) and the caller's hop check (the
 * tenant's domain policy), redirects are followed by hand (at most MAX_REDIRECTS, each re-checked,
 * and its name resolved and checked again by the transport), and the body is read with a bound
 * (never more than `cap` bytes buffered). The transport and guard come from lib/tools/web/transport.ts.
 * Every hop's request and answer are counted on the caller's meter (lib/tools/web/net-bytes.ts).
 */
import { ToolError, isToolError } from "../../shared/errors.js";
import { checkUrl, safeHref } from "../../shared/ssrf.js";
import { meterExchange, replaceBody, requestBytes, type NetMeter } from "./net-bytes.js";
import type { WebAccess } from "./transport.js";

export const MAX_REDIRECTS = 5;

export interface FetchRequest {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** false: a 3xx is answered as it is (a webhook's signed body goes only where its definition says). Default true. */
  followRedirects?: boolean;
}

export interface FetchDeps extends WebAccess {
  /** Called with every hop's URL before it is fetched (the tenant's domain policy); throws to refuse. */
  checkHop?: (url: URL) => void;
  /** The tenant's secrets (lib/tools/secrets/inject.ts): added per hop, taken out of the answer. */
  secrets?: HopSecrets;
  /**
   * Whose usage the bytes of every hop are (a tool call's: its Workspace, net_bytes_in / net_bytes_out
   * of its record), or null for a fetch no call is billed for (an OAuth issuer's keys). Required, so
   * no door reaches the network unmetered by forgetting it.
   */
  meter: NetMeter | null;
}

export interface HopSecrets {
  /**
   * Headers added to one hop, decided by its own URL, after checkHop; never carried to the next hop,
   * which gets its own. Throws to refuse the hop.
   */
  headersFor(url: URL): Promise<Record<string, string>>;
  /** The answer's body with every value sent replaced as it arrives, before any reader (a conversion, a cut) sees it. */
  redactBody(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array>;
}

export interface FetchedResponse {
  response: Response;
  finalUrl: URL;
  redirects: string[];
  /** Aborts when the call's time is up; the body must be read under it. */
  signal: AbortSignal;
}

/** Headers that must not cross to another origin on a redirect. */
const CREDENTIAL_HEADERS = ["authorization", "cookie", "proxy-authorization"];

export async function guardedFetch(req: FetchRequest, deps: FetchDeps): Promise<FetchedResponse> {
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
  let { url, host } = checkUrl(req.url, deps.guard);
  let method = req.method;
  let body = req.body;
  let headers = { ...req.headers };
  const redirects: string[] = [];
  for (;;) {
    deps.checkHop?.(url);
    const sent = deps.secrets ? { ...headers, ...(await deps.secrets.headersFor(url)) } : headers;
    let response: Response;
    try {
      response = await deps.fetcher.fetch(url, { method, headers: sent, ...(body !== undefined ? { body } : {}), signal, redirect: "manual" }, host, deps.guard);
    } catch (e) {
      throw transportError(e, url, timeout.aborted, req.timeoutMs);
    }
    // Counted before any reader (the secrets' redaction, a cut): what came from the network.
    if (deps.meter) response = meterExchange(deps.meter, requestBytes(url, method, sent, body), response);
    const location = response.headers.get("location");
    if (response.status < 300 || response.status >= 400 || response.status === 304 || !location || req.followRedirects === false) return { response: deps.secrets ? redactedBody(response, deps.secrets) : response, finalUrl: url, redirects, signal };
    await response.body?.cancel().catch(() => {});
    if (redirects.length >= MAX_REDIRECTS) {
      throw new ToolError("FETCH_FAILED", `Too many redirects: ${safeHref(url)} redirected more than ${MAX_REDIRECTS} times (${[...redirects, safeHref(url)].join(" → ")}). Fetch the final page's URL directly if you know it.`, { url: req.url, redirects, status: response.status });
    }
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      throw new ToolError("FETCH_FAILED", `${safeHref(url)} redirected to an invalid URL (${JSON.stringify(location.slice(0, 200))}).`, { url: safeHref(url), status: response.status });
    }
    redirects.push(safeHref(url));
    try {
      ({ url, host } = checkUrl(next.href, deps.guard));
    } catch (e) {
      // A redirect to ftp:, file: or a URL with credentials is the site's doing, not a bad argument.
      if (isToolError(e) && e.code === "INVALID_ARGUMENT") throw new ToolError("FETCH_FAILED", `${redirects.at(-1)} redirected to a URL web_fetch does not follow (${e.message}).`, { url: redirects.at(-1), status: response.status });
      throw e;
    }
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
      method = "GET";
      body = undefined;
      headers = Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== "content-type"));
    }
    if (new URL(redirects[redirects.length - 1]!).origin !== url.origin) {
      headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !CREDENTIAL_HEADERS.includes(k.toLowerCase())));
    }
  }
}

/** The answer as it came (status, headers), its body and every way to read it going through the secrets' redaction. */
function redactedBody(response: Response, secrets: HopSecrets): Response {
  return response.body ? replaceBody(response, secrets.redactBody(response.body)) : response;
}

/** A transport failure as the agent should see it: our guard's refusal, a timeout, or the network's reason. */
export function transportError(e: unknown, url: URL, timedOut: boolean, timeoutMs: number): ToolError {
  for (let c: unknown = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) if (isToolError(c)) return c;
  if (timedOut) return timeoutError(url, timeoutMs);
  const name = (e as Error)?.name;
  if (name === "AbortError") return new ToolError("UNAVAILABLE", `The fetch of ${safeHref(url)} was cancelled (the client went away).`, { url: safeHref(url) });
  const reason = networkCause(e);
  return new ToolError("UNAVAILABLE", `Could not reach ${safeHref(url)}: ${reason}. ${UNREACHABLE_NEXT_STEP}`, { url: safeHref(url), reason });
}

/** What to do about a host that could not be reached, whatever the cause. */
export const UNREACHABLE_NEXT_STEP = "Check the host name and that the host is reachable from the public internet; if both are right, retry later.";

export const timeoutError = (url: URL, timeoutMs: number) =>
  new ToolError("TIMEOUT", `${safeHref(url)} did not answer within ${timeoutMs / 1000} s. Retry with a larger timeout (at most 120), or try another page of the site.`, { url: safeHref(url), timeout_s: timeoutMs / 1000 });

/** Error codes (Node, undici) and texts (any runtime) of network failures, as a plain cause. First match wins. */
const CAUSES: [RegExp, string][] = [
  [/\bENOTFOUND\b|NXDOMAIN|could not resolve|name (?:or service )?not known|no such host|dns (?:lookup|resolution) failed/i, "the host name does not resolve (DNS: not found)"],
  [/\bEAI_AGAIN\b|temporary failure in name resolution/i, "the DNS lookup failed for now (temporary failure)"],
  [/\bECONNREFUSED\b|connection refused/i, "the host refused the connection (nothing listens on that port)"],
  [/\bECONNRESET\b|connection reset|network connection lost|socket hang up|\bUND_ERR_SOCKET\b/i, "the connection was reset"],
  [/\bETIMEDOUT\b|\bUND_ERR_CONNECT_TIMEOUT\b|connect(?:ion)? tim(?:ed|e) ?out/i, "the connection timed out"],
  [/\bEHOSTUNREACH\b|host (?:is )?unreachable|no route to host/i, "the host is unreachable"],
  [/\bENETUNREACH\b|network (?:is )?unreachable/i, "the network is unreachable"],
  [/\bCERT_|certificate|\bTLS\b|\bSSL\b|handshake/i, "the TLS handshake failed (the site's certificate or TLS setup)"],
];

/**
 * The network's reason for a failed fetch, in plain words when the error (or one of its causes)
 * shows a DNS or connection failure; workerd's opaque "internal error; reference = …" says what
 * it usually means; else the first message as it is.
 */
export function networkCause(e: unknown): string {
  const texts: string[] = [];
  for (let c: unknown = e, i = 0; c && i < 4; c = (c as { cause?: unknown }).cause, i++) {
    const err = c as { code?: unknown; message?: unknown };
    if (typeof err.code === "string") texts.push(err.code);
    if (typeof err.message === "string" && !/^fetch failed$/i.test(err.message)) texts.push(err.message);
    else if (typeof c === "string") texts.push(c);
  }
  for (const [pattern, cause] of CAUSES) if (texts.some((t) => pattern.test(t))) return cause;
  const first = texts.find((t) => !/^[A-Z_]+$/.test(t)) ?? texts[0];
  if (!first) return "the connection failed";
  if (/^internal error; reference = /i.test(first)) return `the connection failed and the runtime gave no reason (${first.slice(0, 80)}): most often the host name does not resolve, or nothing answers at that address`;
  return first.slice(0, 200);
}

export interface BoundedBody {
  bytes: Uint8Array;
  /** True when the body had more than `cap` bytes (reading stopped there). */
  more: boolean;
}

/**
 * Reads at most `cap` bytes of a body, then cancels the rest: never buffers more than cap plus one chunk.
 * `onBytes` is told the bytes kept so far after every chunk (progress).
 */
export async function readBounded(body: ReadableStream<Uint8Array> | null, cap: number, onBytes?: (bytes: number) => void): Promise<BoundedBody> {
  if (!body) return { bytes: new Uint8Array(0), more: false };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let more = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (size + value.length > cap) {
        chunks.push(value.subarray(0, cap - size));
        size = cap;
        more = true;
        break;
      }
      chunks.push(value);
      size += value.length;
      onBytes?.(size);
    }
  } finally {
    if (more) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return { bytes, more };
}
