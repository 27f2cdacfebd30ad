/**
 * The app on AWS Lambda through response streaming (a function URL with InvokeMode RESPONSE_STREAM):
 * the answer's status, headers and cookies go first (awslambda.HttpResponseStream's metadata prelude),
 * then its body as the app writes it, and the response stream ends when the body has. Only then is the
 * work the app deferred with `waitUntil` awaited, before the handler returns: the client has its
 * answer when the stream ends, and the environment, which Lambda freezes once the handler returns,
 * stays alive for that work, bounded by the function's timeout (AFTER_ANSWER_MARGIN_MS before it).
 *
 * Why not hono/aws-lambda's streamHandle: it gives the app no executionCtx (no waitUntil) and no place
 * for code after the stream ends. Events: API Gateway v2 / function URL payloads (version "2.0").
 *
 * What a crash or timeout can lose: work still deferred when the environment dies or the function
 * times out (its answer was already sent). Past the deadline the handler returns and logs how many
 * promises were unfinished; the environment is frozen with them in flight (they go on if it is thawed
 * for a later invocation, or are lost with it). docs/usage.md "What a crash can lose".
 */
import type { Writable } from "node:stream";
import type { ExecutionContext } from "hono";

/** A function URL / API Gateway v2 event: what the adapter reads of it. */
export interface HttpEventV2 {
  version?: string;
  rawPath: string;
  rawQueryString?: string;
  headers?: Record<string, string | undefined>;
  cookies?: string[];
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: { domainName?: string; http: { method: string } };
}

/** The part of Lambda's context the adapter reads. */
export interface LambdaContextLike {
  getRemainingTimeInMillis?: () => number;
}

/** The Node.js runtime's response-streaming globals (documented contract; lambda-local implements it for tests). */
interface AwsLambdaGlobal {
  streamifyResponse(handler: (event: HttpEventV2, stream: Writable, context: LambdaContextLike) => Promise<void>): unknown;
  HttpResponseStream: { from(stream: Writable, prelude: { statusCode: number; headers: Record<string, string>; cookies: string[] }): Writable };
}

/** Deferred work stops being waited for this long before the function's timeout, so the handler returns (and logs) instead of being killed. */
export const AFTER_ANSWER_MARGIN_MS = 2_000;

export type AppFetch = (req: Request, env: undefined, ctx: ExecutionContext) => Response | Promise<Response>;

/** The app's Request for a v2 event: method, host, path and query, headers, cookies, the body (base64 when the event says so). */
export function requestOfEvent(event: HttpEventV2, signal?: AbortSignal): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers.set(k, /[^\x00-\x7F]/.test(v) ? encodeURIComponent(v) : v);
  if (event.cookies?.length) headers.set("cookie", event.cookies.join("; "));
  const host = event.requestContext.domainName ?? headers.get("host") ?? "localhost";
  const url = `https://${host}${event.rawPath}${event.rawQueryString ? `?${event.rawQueryString}` : ""}`;
  const method = event.requestContext.http.method;
  const init: RequestInit = { method, headers, ...(signal ? { signal } : {}) };
  if (event.body === undefined || event.body === null || method === "GET" || method === "HEAD") return new Request(url, init);
  const body = event.isBase64Encoded ? Buffer.from(event.body, "base64") : Buffer.from(event.body, "utf8");
  headers.set("content-length", String(body.length));
  return new Request(url, { ...init, body });
}

/** The prelude of a Response: status, headers (one value per name, as Headers joins them) and each set-cookie apart. */
export function preludeOf(res: Response): { statusCode: number; headers: Record<string, string>; cookies: string[] } {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  return { statusCode: res.status, headers, cookies: res.headers.getSetCookie() };
}

/**
 * Writes `body` into `out` chunk by chunk, waiting when `out` is full. A failed write or a closed
 * stream (the client left) cancels the body and calls `gone` (the request's signal aborts). Ends `out`.
 */
async function writeBody(body: ReadableStream<Uint8Array> | null, out: Writable, gone: () => void): Promise<void> {
  if (!body) {
    out.write(""); // the prelude goes out on the first write
    out.end();
    return;
  }
  const reader = body.getReader();
  let failed: unknown;
  const onError = (e: unknown) => (failed ??= e);
  out.on("error", onError);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (failed) throw failed;
      if (!out.write(value)) await new Promise<void>((resolve) => {
        const go = () => (out.off("drain", go), out.off("close", go), resolve());
        out.on("drain", go).on("close", go);
      });
      if (failed || out.destroyed) throw failed ?? new Error("response stream closed");
    }
    out.end();
  } catch (e) {
    gone();
    await reader.cancel(e).catch(() => {});
    if (!out.destroyed) out.end();
    console.warn("response stream: the body was not sent whole", e instanceof Error ? e.message : e);
  } finally {
    out.off("error", onError);
  }
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Awaits every deferred promise (and those they defer in turn) until none is left or `deadline` passes; returns how many were unfinished then. */
export async function settleDeferred(deferred: Set<Promise<unknown>>, deadline: number): Promise<number> {
  while (deferred.size) {
    const left = deadline - Date.now();
    if (left <= 0) return deferred.size;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // setTimeout takes at most 2^31 - 1 ms (longer fires at once): a far deadline is waited for in steps.
    const timeUp = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), Math.min(left, MAX_TIMER_MS))));
    const r = await Promise.race([Promise.allSettled([...deferred]), timeUp]);
    clearTimeout(timer);
    if (r === "late" && Date.now() >= deadline) return deferred.size;
  }
  return 0;
}

export interface StreamingOptions {
  /** Awaited after the deferred work: what the app wrote without waitUntil (AwsDeps.usageSettled). */
  settled?: () => Promise<void>;
}

/**
 * A Lambda handler (awslambda.streamifyResponse) that answers through `appFetch` (the app's fetch) with a real waitUntil.
 * Throws outside the Lambda Node.js runtime, where `awslambda` is not defined (tests load lambda-local first).
 */
export function streamingHandler(appFetch: AppFetch, opts: StreamingOptions = {}): unknown {
  const aws = (globalThis as { awslambda?: AwsLambdaGlobal }).awslambda;
  if (!aws?.streamifyResponse) throw new Error("awslambda.streamifyResponse is not defined: this handler runs on the AWS Lambda Node.js runtime with response streaming (in tests, import lambda-local first)");
  return aws.streamifyResponse(async (event, stream, context) => {
    const deferred = new Set<Promise<unknown>>();
    const ctx: ExecutionContext = {
      waitUntil(p) {
        const kept: Promise<unknown> = p.catch((e) => console.warn("work after the answer failed", e)).finally(() => deferred.delete(kept));
        deferred.add(kept);
      },
      passThroughOnException() {},
      props: {},
    };
    const left = new AbortController();
    let res: Response;
    try {
      res = await appFetch(requestOfEvent(event, left.signal), undefined, ctx);
    } catch (e) {
      console.error("request failed before the app answered", e);
      const bad = e instanceof TypeError;
      res = Response.json({ ok: false, error: { code: bad ? "INVALID_ARGUMENT" : "INTERNAL", message: bad ? "The request could not be read (its URL, headers or body)." : "An internal error occurred; retry, and report it if it persists." } }, { status: bad ? 400 : 500 });
    }
    await writeBody(res.body, aws.HttpResponseStream.from(stream, preludeOf(res)), () => left.abort());
    const deadline = Date.now() + (context.getRemainingTimeInMillis?.() ?? Infinity) - AFTER_ANSWER_MARGIN_MS;
    let unfinished = await settleDeferred(deferred, deadline);
    // What the deferred work wrote without waitUntil settles last, under the same deadline.
    if (!unfinished && opts.settled) {
      ctx.waitUntil(opts.settled());
      unfinished = await settleDeferred(deferred, deadline);
    }
    if (unfinished) console.warn(`work after the answer: ${unfinished} deferred promises unfinished ${AFTER_ANSWER_MARGIN_MS} ms before the function's timeout; returning (what they had not written is lost if this environment is not reused)`);
  });
}
