/**
 * OTLP/HTTP JSON export of spans (opentelemetry-proto's JSON mapping: ids as hex, times as
 * nanosecond strings): a POST of `{ resourceSpans }` to `<endpoint>/v1/traces` over fetch, the
 * same on Workers, Lambda and the runner. Hand-written rather than the OpenTelemetry SDK: the
 * SDK's exporter and span processors are Node-first and pull in hundreds of KB for what is one
 * JSON body here (docs/tracing.md says more).
 *
 *   TOOLSHED_OTLP_ENDPOINT  the collector's OTLP/HTTP base URL (e.g. http://localhost:4318), or its
 *                           full traces URL (ending /v1/traces). Unset: tracing is off.
 *   TOOLSHED_OTLP_HEADERS   headers of each export, "name=value,name2=value2" (URL-encoded values),
 *                           as OTEL_EXPORTER_OTLP_HEADERS: e.g. a collector's API key.
 */
import { createTracer, type EndedSpan, type SpanKind, type Tracer } from "./trace.js";

export interface OtlpEnv {
  TOOLSHED_OTLP_ENDPOINT?: string;
  TOOLSHED_OTLP_HEADERS?: string;
}

const KIND: Record<SpanKind, number> = { internal: 1, server: 2, client: 3 };

const attr = (key: string, value: string | number | boolean) => ({
  key,
  value: typeof value === "string" ? { stringValue: value } : typeof value === "boolean" ? { boolValue: value } : Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value },
});

const nanos = (ms: number) => `${Math.round(ms)}000000`;

/** The OTLP/JSON body of these spans, from one service. */
export function otlpBody(spans: EndedSpan[], service: string) {
  return {
    resourceSpans: [
      {
        resource: { attributes: [attr("service.name", service)] },
        scopeSpans: [
          {
            scope: { name: "toolshed" },
            spans: spans.map((s) => ({
              traceId: s.context.traceId,
              spanId: s.context.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              flags: s.context.flags,
              name: s.name,
              kind: KIND[s.kind],
              startTimeUnixNano: nanos(s.startMs),
              endTimeUnixNano: nanos(s.endMs),
              attributes: Object.entries(s.attributes).flatMap(([k, v]) => (v === undefined ? [] : [attr(k, v)])),
              status: s.error ? { code: 2, message: s.error } : { code: 1 },
            })),
          },
        ],
      },
    ],
  };
}

/** "a=1,b=x%20y" → { a: "1", b: "x y" }; malformed pairs are skipped. */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const i = pair.indexOf("=");
    if (i <= 0) continue;
    const name = pair.slice(0, i).trim();
    let value = pair.slice(i + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      /* kept as written */
    }
    if (name) out[name] = value;
  }
  return out;
}

export const tracesUrl = (endpoint: string): string => (/\/v1\/traces\/?$/.test(endpoint) ? endpoint : `${endpoint.replace(/\/+$/, "")}/v1/traces`);

export interface OtlpOptions {
  endpoint: string;
  headers?: Record<string, string>;
  /** service.name of every span (toolshed-api, toolshed-runner). */
  service: string;
  fetch?: typeof fetch;
}

/** A tracer exporting to an OTLP/HTTP JSON endpoint. */
export function otlpTracer(opts: OtlpOptions): Tracer {
  const url = tracesUrl(opts.endpoint);
  const doFetch = opts.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, init));
  return createTracer({
    export: async (spans) => {
      const res = await doFetch(url, { method: "POST", headers: { ...opts.headers, "content-type": "application/json" }, body: JSON.stringify(otlpBody(spans, opts.service)) });
      await res.body?.cancel();
      if (!res.ok) throw Object.assign(new Error(`the OTLP endpoint answered ${res.status}`), { name: "OtlpExportError" });
    },
  });
}

/** The tracer the environment asks for, or undefined (tracing off) without TOOLSHED_OTLP_ENDPOINT. */
export function tracerFromEnv(env: OtlpEnv, service: string): Tracer | undefined {
  const endpoint = env.TOOLSHED_OTLP_ENDPOINT?.trim();
  if (!endpoint) return undefined;
  return otlpTracer({ endpoint, headers: parseOtlpHeaders(env.TOOLSHED_OTLP_HEADERS), service });
}
