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

/** `key`: the key, or what makes the shown one (only under a span). */
function traced<T>(tracer: Tracer, system: string, op: string, key: string | (() => string), run: (span: Span) => Promise<T>): Promise<T> {
  if (!tracer.current()) return run(NO_SPAN);
  return tracer.span(`${system}.${op}`, run, { kind: "client", attributes: { "db.system": system, "db.operation": op, "toolshed.key": typeof key === "string" ? shownKey(key) : key() } });
}

/** Names a batch delete shows after its keys' common folder (the count is `toolshed.keys`). */
const SHOWN_NAMES = 3;

/**
 * The keys of a delete as its span shows them: one key as it is; several as their common folder and
 * their names, `t/acme/w/main/x/runs/r…/{claim.json,result.json}` (the first SHOWN_NAMES, then `…`).
 */
function shownKeys(keys: string[]): string {
  if (keys.length <= 1) return shownKey(keys[0] ?? "");
  if (keys.some((k) => k.startsWith("apikey/"))) return "apikey/…";
  let common = keys[0]!;
  for (const k of keys) while (!k.startsWith(common)) common = common.slice(0, -1);
  const folder = common.slice(0, common.lastIndexOf("/") + 1);
  const names = keys.slice(0, SHOWN_NAMES).map((k) => k.slice(folder.length));
  return `${folder}{${names.join(",")}${keys.length > SHOWN_NAMES ? ",…" : ""}}`;
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
      const shown = () => shownKeys(typeof k === "string" ? [k] : k.map((t) => (typeof t === "string" ? t : t.key)));
      return traced(tracer, sys, "delete", shown, (s) => {
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
