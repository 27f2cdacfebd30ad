/**
 * A local OTLP/HTTP JSON receiver on 127.0.0.1 (node:http): collects every POST to /v1/traces
 * and flattens it to spans with their service, for the tracing tests (docs/tracing.md).
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  start: bigint;
  end: bigint;
  attributes: Record<string, string | number | boolean>;
  status: { code: number; message?: string };
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Every POST seen: its path, headers and raw body. */
  posts: { path: string; headers: IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string; boolValue?: boolean; doubleValue?: number };
const valueOf = (v: AnyValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.boolValue ?? v.doubleValue ?? "");

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const posts: OtlpReceiver["posts"] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      posts.push({ path: req.url ?? "", headers: req.headers, body });
      if (req.method !== "POST" || req.url !== "/v1/traces" || !String(req.headers["content-type"]).startsWith("application/json")) {
        res.writeHead(404).end();
        return;
      }
      const parsed = JSON.parse(body) as { resourceSpans: { resource: { attributes: { key: string; value: AnyValue }[] }; scopeSpans: { spans: any[] }[] }[] };
      for (const rs of parsed.resourceSpans) {
        const service = String(valueOf(rs.resource.attributes.find((a) => a.key === "service.name")!.value));
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans)
            spans.push({
              service,
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              kind: s.kind,
              start: BigInt(s.startTimeUnixNano),
              end: BigInt(s.endTimeUnixNano),
              attributes: Object.fromEntries((s.attributes as { key: string; value: AnyValue }[]).map((a) => [a.key, valueOf(a.value)])),
              status: s.status,
            });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, posts, close: () => new Promise((r) => server.close(() => r())) };
}
