/**
 * Traced storage and KV (docs/tracing.md): one decorator each, so every operation of a traced
 * call is a client span without touching a call site. An operation outside any span (GC on a
 * schedule, upkeep after the trace was exported) runs straight through.
 *
 * Attributes: the operation, the key (tenant, workspace and path are fine to show; an API key's
 * hash is not shown), sizes and outcome; never a body or a value.
 */
import type { Span, Tracer } from "../shared/trace.js";
import type { KeyValueStore, StorageDriver } from "./types.js";

/** The key as a span shows it: an API key's lookup key (its hash) is cut to its kind. */
export const shownKey = (key: string): string => (key.startsWith("apikey/") ? "apikey/…" : key);

function traced<T>(tracer: Tracer, system: string, op: string, key: string, run: (span: Span) => Promise<T>): Promise<T> {
  if (!tracer.current()) return run(NO_SPAN);
  return tracer.span(`${system}.${op}`, run, { kind: "client", attributes: { "db.system": system, "db.operation": op, "toolshed.key": shownKey(key) } });
}

const NO_SPAN: Span = { context: { traceId: "", spanId: "", flags: 0 }, set() {}, rename() {}, fail() {} };

export function tracedStorage(base: StorageDriver, tracer: Tracer): StorageDriver {
  const sys = "storage";
  return {
    name: base.name,
    ...(base.contentEtags ? { contentEtags: true } : {}),
    head: (k) => traced(tracer, sys, "head", k, async (s) => {
      const info = await base.head(k);
      s.set("toolshed.found", info !== null);
      return info;
    }),
    get: (k, o) => traced(tracer, sys, "get", k, async (s) => {
      if (o?.range) s.set("toolshed.range_offset", o.range.offset);
      const r = await base.get(k, o);
      s.set("toolshed.found", r !== null);
      return r;
    }),
    put: (k, b, o) => traced(tracer, sys, "put", k, async (s) => {
      s.set("toolshed.conditional", o?.ifMatch ? "if-match" : o?.ifNoneMatch ? "if-none-match" : undefined);
      if (typeof b === "string" || b instanceof Uint8Array) s.set("toolshed.bytes", typeof b === "string" ? b.length : b.byteLength);
      return base.put(k, b, o);
    }),
    delete: (k) => {
      const first = typeof k === "string" ? k : typeof k[0] === "string" ? k[0] : (k[0]?.key ?? "");
      return traced(tracer, sys, "delete", first, (s) => {
        if (typeof k !== "string") s.set("toolshed.keys", k.length);
        return base.delete(k);
      });
    },
    list: (o) => traced(tracer, sys, "list", o.prefix, async (s) => {
      const r = await base.list(o);
      s.set("toolshed.listed", r.objects.length);
      return r;
    }),
  };
}

export function tracedKeyValue(base: KeyValueStore, tracer: Tracer): KeyValueStore {
  const sys = "kv";
  return {
    get: (k) => traced(tracer, sys, "get", k, async (s) => {
      const v = await base.get(k);
      s.set("toolshed.found", v !== null);
      return v;
    }),
    put: (k, v, o) => traced(tracer, sys, "put", k, () => base.put(k, v, o)),
    delete: (k) => traced(tracer, sys, "delete", k, () => base.delete(k)),
    list: (o) => traced(tracer, sys, "list", o.prefix, () => base.list(o)),
  };
}
