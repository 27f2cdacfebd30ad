/**
 * Invokes a response-streaming Lambda handler (infra/lambda.ts `handler`) the way the Lambda Node.js
 * runtime does, through lambda-local: importing it defines the `awslambda` global (streamifyResponse,
 * HttpResponseStream), so import this module before infra/lambda.ts. An invocation gives the answer's
 * prelude (status, headers, cookies) once the handler sent it, its body as a stream (the client's side:
 * it ends when the handler ends the response stream), and `returned`, which settles when the handler
 * returns (lambda-local's onInvocationEnd): what a Lambda environment does until it is frozen.
 */
import type { Readable } from "node:stream";
import { execute } from "lambda-local";

export interface StreamedInvocation {
  status: number;
  headers: Record<string, string>;
  cookies: string[];
  /** The answer's body as the client reads it. */
  body: Readable;
  /** Settles when the handler has returned (rejects with its error). */
  returned: Promise<void>;
}

export interface EventV2Options {
  token?: string;
  json?: unknown;
  body?: Uint8Array;
  headers?: Record<string, string>;
  cookies?: string[];
}

/** A function URL event (payload version 2.0) for `method` `path` (with its query). */
export function eventV2(method: string, path: string, opts: EventV2Options = {}) {
  const [rawPath, rawQueryString = ""] = path.split("?");
  const headers: Record<string, string> = { host: "toolshed.example", ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  let isBase64Encoded = false;
  if (opts.json !== undefined) {
    headers["content-type"] ??= "application/json";
    body = JSON.stringify(opts.json);
  } else if (opts.body) {
    headers["content-length"] = String(opts.body.length);
    body = Buffer.from(opts.body).toString("base64");
    isBase64Encoded = true;
  }
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath,
    rawQueryString,
    headers,
    ...(opts.cookies ? { cookies: opts.cookies } : {}),
    requestContext: {
      accountId: "123456789012",
      apiId: "api",
      domainName: "toolshed.example",
      domainPrefix: "toolshed",
      http: { method, path: rawPath, protocol: "HTTP/1.1", sourceIp: "127.0.0.1", userAgent: "vitest" },
      requestId: `req-${Math.random()}`,
      routeKey: "$default",
      stage: "$default",
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    ...(body !== undefined ? { body } : {}),
    isBase64Encoded,
  };
}

/** Invokes `handler` with `event`; resolves once the handler sent the answer's prelude. */
export async function invokeStreaming(handler: unknown, event: unknown, timeoutMs = 120_000): Promise<StreamedInvocation> {
  let ended!: (e?: unknown) => void;
  const returned = new Promise<void>((resolve, reject) => (ended = (e) => (e ? reject(e) : resolve())));
  returned.catch(() => {}); // read by the caller when it cares
  const r = (await execute({
    event,
    lambdaFunc: { handler },
    lambdaHandler: "handler",
    timeoutMs,
    verboseLevel: -1, // no START/END lines, and stdout/stderr left as they are (0 to 2 mute them)
    onInvocationEnd: ended,
  })) as { statusCode: number; headers?: Record<string, string>; cookies?: string[]; body: Readable };
  return { status: r.statusCode, headers: r.headers ?? {}, cookies: r.cookies ?? [], body: r.body, returned };
}

/** All of a body's bytes, once its stream has ended. */
export async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

/** An invocation read whole as a client would, then awaited until the handler returned: status, headers, raw body, and its JSON when it is JSON. */
export async function invokeWhole(handler: unknown, event: unknown) {
  const r = await invokeStreaming(handler, event);
  const raw = await readAll(r.body);
  await r.returned;
  let json: any = null;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {}
  return { status: r.status, headers: r.headers, cookies: r.cookies, raw, json, body: raw.toString("utf8") };
}
