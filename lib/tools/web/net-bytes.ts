/**
 * Network bytes of a call (its usage record's net_bytes_in / net_bytes_out, docs/usage.md): what a
 * call's own tool sent to and received from hosts outside Toolshed. Counted here only, by the
 * guarded fetch (lib/tools/web/fetch.ts: web_fetch and every redirect hop, a webhook, the model
 * endpoint) and by the search providers' one request (lib/tools/web/search/http.ts), which do not
 * pass the guard (the deployment's fixed URL).
 *
 * What a byte is: the HTTP/1.1 form of the exchange as the runtime hands it to us and takes it from
 * us. Sent: the request line, the Host header and the headers we set, the blank line, the body.
 * Received: the status line, the answer's headers, the blank line, and the body as the runtime's
 * reader hands it over, counted chunk by chunk as it is read: a body cut by a bound (max_bytes, a
 * read cap) counts what was read of it, its last chunk whole, not what the model got; a compressed
 * body counts decoded (every runtime's fetch decodes it before we see a byte, and Workers tell no
 * wire length). Not seen, so not counted: TLS, TCP and HTTP/2 framing, headers the runtime adds.
 * A request counts once its answer's head came (a refused or timed-out request counts nothing: the
 * usage store undercounts, never overcounts).
 */
import { utf8 } from "../../shared/text.js";
import { countedStream } from "../../shared/counted-stream.js";

/** Where one call's network bytes are counted: the call's Workspace (lib/workspace/workspace.ts). */
export interface NetMeter {
  netBytesIn: number;
  netBytesOut: number;
}

const CRLF = 2;

/** The bytes of a request as HTTP/1.1 carries it: request line, Host, the headers given, blank line, body. */
export function requestBytes(url: URL, method: string, headers: Record<string, string>, body: string | undefined): number {
  let n = utf8.encode(`${method} ${url.pathname}${url.search} HTTP/1.1`).length + CRLF + utf8.encode(`host: ${url.host}`).length + CRLF;
  for (const [name, value] of Object.entries(headers)) n += utf8.encode(`${name}: ${value}`).length + CRLF;
  return n + CRLF + (body === undefined ? 0 : utf8.encode(body).length);
}

/** The bytes of an answer's head as HTTP/1.1 carries it: status line, headers, blank line. */
export function headBytes(response: Response): number {
  let n = utf8.encode(`HTTP/1.1 ${response.status} ${response.statusText}`).length + CRLF;
  response.headers.forEach((value, name) => (n += utf8.encode(`${name}: ${value}`).length + CRLF));
  return n + CRLF;
}

/**
 * Counts one exchange on `meter`: the request (`sent` bytes) and the answer's head at once, the
 * answer's body as it is read. Returns the response whose body counts (the same object).
 */
export function meterExchange(meter: NetMeter, sent: number, response: Response): Response {
  meter.netBytesOut += sent;
  meter.netBytesIn += headBytes(response);
  return response.body ? replaceBody(response, countedStream(response.body, (n) => (meter.netBytesIn += n)).body) : response;
}

/**
 * The answer as it came (status, headers) with `body` in place of its own, and every way to read it
 * reading `body`. The same object, so any status the server sent stays (a Response built anew refuses some).
 */
export function replaceBody(response: Response, body: ReadableStream<Uint8Array>): Response {
  const replaced = new Response(body);
  Object.defineProperty(response, "body", { value: replaced.body, configurable: true });
  for (const read of ["text", "json", "arrayBuffer", "bytes", "blob", "formData"] as const) {
    Object.defineProperty(response, read, { value: () => (replaced[read] as () => Promise<unknown>).call(replaced), configurable: true });
  }
  return response;
}
