/**
 * The tracer and its OTLP/HTTP JSON exporter (docs/tracing.md) against a receiver on 127.0.0.1:
 * traceparent in and out, parent links, sampling, TOOLSHED_OTLP_HEADERS on the wire, bounded
 * buffering, an export failure that never fails the call, and no tracer without an endpoint.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commonDeps } from "../../../lib/runtime/workers.js";
import { otlpTracer, parseOtlpHeaders, tracerFromEnv, tracesUrl } from "../../../lib/shared/otlp.js";
import { createTracer, formatTraceparent, parseTraceparent } from "../../../lib/shared/trace.js";
import { tracedFetcher } from "../../../lib/tools/web/traced.js";
import type { WebFetcher } from "../../../lib/tools/web/transport.js";
import { startWebServer, type WebServer } from "../../support/web-server.js";
import { startOtlpReceiver, type OtlpReceiver } from "../../support/otlp-receiver.js";

let receiver: OtlpReceiver;
beforeAll(async () => void (receiver = await startOtlpReceiver()));
afterAll(() => receiver.close());

const TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe("traceparent", () => {
  it("reads W3C version 00 (and later versions' first fields), refuses the malformed", () => {
    expect(parseTraceparent(TP)).toEqual({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", flags: 1 });
    expect(parseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra")?.flags).toBe(0);
    for (const bad of [undefined, "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", "00-zzf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"])
      expect(parseTraceparent(bad), String(bad)).toBeNull();
    expect(formatTraceparent(parseTraceparent(TP)!)).toBe(TP);
  });
});

describe("the OTLP exporter", () => {
  it("sends a span tree with the configured headers; the propagating fetch carries the current span", async () => {
    const tracer = tracerFromEnv({ TOOLSHED_OTLP_ENDPOINT: `${receiver.url}/`, TOOLSHED_OTLP_HEADERS: "x-collector-key=k%20v , bad ,x-team=ops" }, "svc-a")!;
    let seen: string | null = null;
    const echo = (async (_i: RequestInfo | URL, init?: RequestInit) => ((seen = new Headers(init?.headers).get("traceparent")), new Response("ok"))) as typeof fetch;
    await tracer.span("outer", async (outer) => {
      outer.set("n", 3);
      await tracer.span("inner", () => tracer.propagating(echo)("http://api.test/x"), { kind: "client" });
    }, { kind: "server", parent: parseTraceparent(TP) });
    await tracer.flush();
    const post = receiver.posts.at(-1)!;
    expect(post.path).toBe("/v1/traces");
    expect(post.headers["x-collector-key"]).toBe("k v");
    expect(post.headers["x-team"]).toBe("ops");
    const spans = receiver.spans.filter((s) => s.service === "svc-a");
    const outer = spans.find((s) => s.name === "outer")!;
    const inner = spans.find((s) => s.name === "inner")!;
    expect(outer).toMatchObject({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", parentSpanId: "00f067aa0ba902b7", kind: 2, attributes: { n: 3 } });
    expect(inner).toMatchObject({ traceId: outer.traceId, parentSpanId: outer.spanId, kind: 3 });
    expect(seen).toBe(`00-${inner.traceId}-${inner.spanId}-01`);
    expect(inner.start >= outer.start && inner.end <= outer.end).toBe(true);
  });

  it("marks a failed span with the error's code, records nothing of an unsampled trace, and a dead collector fails no call", async () => {
    const tracer = otlpTracer({ endpoint: receiver.url, service: "svc-b" });
    await expect(tracer.span("boom", () => Promise.reject(Object.assign(new Error("secret-ish message"), { code: "FILE_NOT_FOUND" })))).rejects.toThrow();
    await tracer.span("unsampled", () => tracer.span("child", () => 1), { parent: parseTraceparent(TP.replace(/-01$/, "-00")) });
    await tracer.flush();
    const spans = receiver.spans.filter((s) => s.service === "svc-b");
    expect(spans.map((s) => s.name)).toEqual(["boom"]);
    expect(spans[0]!.status).toEqual({ code: 2, message: "FILE_NOT_FOUND" });
    expect(JSON.stringify(receiver.posts)).not.toContain("secret-ish");

    const dead = otlpTracer({ endpoint: "http://127.0.0.1:9/", service: "svc-c" });
    expect(await dead.span("x", () => 42)).toBe(42);
    await expect(dead.flush()).resolves.toBeUndefined();
  });

  it("holds a bounded number of spans between flushes", async () => {
    const sent: number[] = [];
    const tracer = createTracer({ export: async (s) => void sent.push(s.length), maxBuffered: 5 });
    for (let i = 0; i < 8; i++) await tracer.span(`s${i}`, () => i);
    expect(tracer.dropped()).toBe(3);
    await tracer.flush();
    expect(sent).toEqual([5]);
  });

  it("is off without TOOLSHED_OTLP_ENDPOINT; headers and URLs are read as documented", () => {
    expect(tracerFromEnv({}, "x")).toBeUndefined();
    expect(tracerFromEnv({ TOOLSHED_OTLP_ENDPOINT: "  " }, "x")).toBeUndefined();
    expect(commonDeps({}).tracer).toBeUndefined();
    expect(commonDeps({ TOOLSHED_OTLP_ENDPOINT: "http://localhost:4318" }).tracer).toBeDefined();
    expect(tracesUrl("http://c:4318")).toBe("http://c:4318/v1/traces");
    expect(tracesUrl("https://c.example/otlp/v1/traces")).toBe("https://c.example/otlp/v1/traces");
    expect(parseOtlpHeaders("a=1,b=x%3Dy,=z,c")).toEqual({ a: "1", b: "x=y" });
  });
});

describe("web requests", () => {
  let web: WebServer;
  beforeAll(async () => void (web = await startWebServer()));
  afterAll(() => web.close());

  it("web.fetch is a client span under the call with method, host and status, never the path or query", async () => {
    const spans: { name: string; parentSpanId?: string; attributes: Record<string, unknown> }[] = [];
    const tracer = createTracer({ export: async (s) => void spans.push(...s) });
    const base: WebFetcher = { check: async () => {}, fetch: (url, init) => fetch(url, { ...init, redirect: "manual" }) };
    const traced = tracedFetcher(base, tracer);
    const url = new URL(`${web.url}/docs/nothing-here?token=sekrit-query`);
    const status = await tracer.span("call", async () => (await traced.fetch(url, { method: "GET" }, { kind: "ip", address: "127.0.0.1" }, { allowLoopback: true, subject: "web_fetch" } as never)).status);
    expect(status).toBe(404);
    expect((await traced.fetch(url, {}, { kind: "ip", address: "127.0.0.1" }, {} as never)).status).toBe(404); // outside a span: no span
    await tracer.flush();
    const call = spans.find((s) => s.name === "call")!;
    const f = spans.filter((s) => s.name === "web.fetch");
    expect(f).toHaveLength(1);
    expect(f[0]).toMatchObject({ parentSpanId: (call as { context?: { spanId: string } }).context?.spanId, attributes: { "http.request.method": "GET", "server.address": "127.0.0.1", "http.response.status_code": 404 } });
    expect(JSON.stringify(spans)).not.toMatch(/sekrit|nothing-here/);
  });
});
