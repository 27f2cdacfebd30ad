/**
 * Traces (docs/tracing.md): a narrow Tracer the app, the storage decorators, the executor and the
 * runner are handed through their deps, and a W3C traceparent reader/writer. Off by default: with
 * no tracer in the deps nothing is wrapped, so a call allocates no span and pays nothing.
 *
 * The current span follows the call through awaits in an AsyncLocalStorage (Node, and Workers with
 * nodejs_compat), made per tracer, never at module level. Ended spans wait in a bounded buffer
 * until flush() hands them to the exporter (OTLP/HTTP JSON, lib/shared/otlp.ts).
 */
import { AsyncLocalStorage } from "node:async_hooks";

export interface SpanContext {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** Trace flags; bit 0: sampled (a span of an unsampled trace is not recorded). */
  flags: number;
}

export type AttrValue = string | number | boolean;
export type Attributes = Record<string, AttrValue | undefined>;
export type SpanKind = "internal" | "server" | "client";

export interface Span {
  readonly context: SpanContext;
  /** Sets an attribute (undefined: not set). Never a credential or file contents. */
  set(key: string, value: AttrValue | undefined): void;
  /** Names the span anew (a route known only once the request was routed). */
  rename(name: string): void;
  /** Marks the span failed with an error code or type (never a message that could hold data). */
  fail(code: string): void;
}

export interface OpenSpan extends Span {
  /** Ends the span (again: nothing). */
  end(): void;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** A remote parent (an incoming traceparent); default: the current span; none: a new trace. */
  parent?: SpanContext | null;
}

/** A finished span, as the exporter takes it. */
export interface EndedSpan {
  name: string;
  kind: SpanKind;
  context: SpanContext;
  parentSpanId?: string;
  startMs: number;
  endMs: number;
  attributes: Attributes;
  error?: string;
}

export interface Tracer {
  /** Runs fn inside a new span (see SpanOptions.parent); the span ends when fn settles, failed if it throws. */
  span<T>(name: string, fn: (span: Span) => Promise<T> | T, opts?: SpanOptions): Promise<T>;
  /** Opens a span that is not made current (its children name it as parent); it ends at end(). */
  start(name: string, opts?: SpanOptions): OpenSpan;
  /** The current span's context, if a span is open here. */
  current(): SpanContext | undefined;
  /** The traceparent header of the current span, if any. */
  traceparent(): string | undefined;
  /** A fetch that sends the current span's traceparent with every request. */
  propagating(base: typeof fetch): typeof fetch;
  /** Exports the ended spans; never throws (an export failure is logged once, without headers). */
  flush(): Promise<void>;
}

export type SpanExporter = (spans: EndedSpan[]) => Promise<void>;

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

/** The context of a W3C traceparent (version 00 and later versions' first four fields), or null. */
export function parseTraceparent(header: string | null | undefined): SpanContext | null {
  if (typeof header !== "string") return null;
  const parts = header.trim().toLowerCase().split("-");
  if (parts.length < 4) return null;
  const [version, traceId, spanId, flags] = parts as [string, string, string, string];
  if (!/^[0-9a-f]{2}$/.test(version) || version === "ff" || (version === "00" && parts.length !== 4)) return null;
  if (!HEX32.test(traceId) || !HEX16.test(spanId) || !/^[0-9a-f]{2}$/.test(flags)) return null;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId, flags: parseInt(flags, 16) };
}

export const formatTraceparent = (ctx: SpanContext): string => `00-${ctx.traceId}-${ctx.spanId}-${(ctx.flags & 0xff).toString(16).padStart(2, "0")}`;

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Random ids from a pool refilled 4 KiB at a time: one getRandomValues call (~25 µs in Node) per ~170 spans. */
function randomIds(): (bytes: number) => string {
  const pool = new Uint8Array(4096);
  let at = pool.length;
  return (bytes) => {
    if (at + bytes > pool.length) {
      crypto.getRandomValues(pool);
      at = 0;
    }
    let s = "";
    for (let i = 0; i < bytes; i++) s += HEX[pool[at++]!];
    return s;
  };
}

/** The code of a thrown value: a ToolError's code, else the error's name. */
const codeOf = (e: unknown): string => {
  const err = e as { code?: unknown; name?: unknown } | null;
  return typeof err?.code === "string" ? err.code : typeof err?.name === "string" ? err.name : "Error";
};

export interface TracerOptions {
  export: SpanExporter;
  /** Most ended spans held between flushes (default 4096); past it spans are dropped and counted. */
  maxBuffered?: number;
  now?: () => number;
}

export function createTracer(opts: TracerOptions): Tracer & { dropped(): number } {
  const store = new AsyncLocalStorage<SpanContext>();
  const max = opts.maxBuffered ?? 4096;
  const now = opts.now ?? Date.now;
  const randomHex = randomIds();
  let buffer: EndedSpan[] = [];
  let dropped = 0;
  let warned = false;

  const tracer: Tracer & { dropped(): number } = {
    start(name: string, o: SpanOptions = {}): OpenSpan {
      const parent = o.parent === undefined ? store.getStore() : o.parent;
      const context: SpanContext = { traceId: parent?.traceId ?? randomHex(16), spanId: randomHex(8), flags: parent ? parent.flags : 1 };
      const attributes: Attributes = { ...o.attributes };
      let error: string | undefined;
      let ended = false;
      const startMs = now();
      return {
        context,
        set: (k, v) => void (attributes[k] = v),
        rename: (n) => void (name = n),
        fail: (code) => void (error ??= code),
        end() {
          if (ended || !(context.flags & 1)) return;
          ended = true;
          if (buffer.length >= max) dropped++;
          else buffer.push({ name, kind: o.kind ?? "internal", context, ...(parent ? { parentSpanId: parent.spanId } : {}), startMs, endMs: now(), attributes, ...(error ? { error } : {}) });
        },
      };
    },
    async span<T>(name: string, fn: (span: Span) => Promise<T> | T, o: SpanOptions = {}): Promise<T> {
      const span = tracer.start(name, o);
      try {
        return await store.run(span.context, () => fn(span));
      } catch (e) {
        span.fail(codeOf(e));
        throw e;
      } finally {
        span.end();
      }
    },
    current: () => store.getStore(),
    traceparent() {
      const ctx = store.getStore();
      return ctx ? formatTraceparent(ctx) : undefined;
    },
    propagating(base: typeof fetch): typeof fetch {
      return ((input: RequestInfo | URL, init?: RequestInit) => {
        const ctx = store.getStore();
        if (!ctx) return base(input, init);
        const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
        headers.set("traceparent", formatTraceparent(ctx));
        return base(input, { ...init, headers });
      }) as typeof fetch;
    },
    async flush() {
      if (!buffer.length) return;
      const spans = buffer;
      buffer = [];
      try {
        await opts.export(spans);
      } catch (e) {
        if (!warned) console.warn(JSON.stringify({ level: "warn", msg: "trace export failed; spans dropped", error: codeOf(e), detail: String((e as Error)?.message ?? e).slice(0, 200) }));
        warned = true;
      }
    },
    dropped: () => dropped,
  };
  return tracer;
}
