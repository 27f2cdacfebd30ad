/** Helpers of the search tests (glob, grep, find). */
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { filesPrefix } from "../../../lib/layout/paths.js";
import { upload, type Tenant } from "../../helpers.js";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Uploads files in order through the raw files route, a few ms apart (so "newest first" is well defined). */
export async function uploadSpaced(t: Tenant, files: Record<string, string | Uint8Array>, gapMs = 4): Promise<void> {
  for (const [p, c] of Object.entries(files)) {
    await upload(t, p, c);
    await sleep(gapMs);
  }
}

export async function rawDelete(t: Tenant, path: string): Promise<void> {
  const res = await t.req(`/v1/workspaces/${t.ws}/files/${path}`, { method: "DELETE" });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

export function ok(r: { status: number; body: any }): any {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.ok).toBe(true);
  return r.body.data;
}

export function err(r: { status: number; body: any }, status: number, code: string): any {
  expect({ status: r.status, code: r.body?.error?.code }, JSON.stringify(r.body)).toEqual({ status, code });
  expect(r.body.ok).toBe(false);
  return r.body.error;
}

/** The R2 driver with counters of every operation. */
export function countingDriver(base: StorageDriver = r2Driver(env.FILES)) {
  const counts = { get: 0, head: 0, list: 0, put: 0, delete: 0 };
  const driver: StorageDriver = {
    name: base.name,
    head: (k) => (counts.head++, base.head(k)),
    get: (k, o) => (counts.get++, base.get(k, o)),
    put: (k, b, o) => (counts.put++, base.put(k, b, o)),
    delete: (k) => (counts.delete++, base.delete(k)),
    list: (o) => (counts.list++, base.list(o)),
  };
  const snapshot = () => ({ ...counts });
  return { driver, counts, snapshot };
}

/** Source-like text: `lines` lines of words from a vocabulary, deterministic per seed. */
export function sourceText(seed: number, lines = 40): string {
  const words = ["const", "let", "function", "return", "import", "export", "class", "interface", "type", "async", "await", "value", "result", "error", "items", "index", "config", "handler", "request", "response"];
  let a = seed * 7919 + 1;
  const rnd = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
  let s = "";
  for (let l = 0; l < lines; l++) {
    const parts: string[] = [];
    for (let k = 0; k < 8; k++) {
      const r = rnd();
      parts.push(words[r % words.length]! + (r % 97));
    }
    s += `${parts.join(" ")};\n`;
  }
  return s;
}

/** R2 with every operation logged (kind and key). */
export function loggedStorage(base: StorageDriver = r2Driver(env.FILES)) {
  const ops: { op: "head" | "get" | "put" | "delete" | "list"; key: string }[] = [];
  const driver: StorageDriver = {
    name: base.name,
    head: (k) => (ops.push({ op: "head", key: k }), base.head(k)),
    get: (k, o) => (ops.push({ op: "get", key: k }), base.get(k, o)),
    put: (k, b, o) => (ops.push({ op: "put", key: k }), base.put(k, b, o)),
    delete: (k) => (ops.push({ op: "delete", key: typeof k === "string" ? k : "(many)" }), base.delete(k)),
    list: (o) => (ops.push({ op: "list", key: o.prefix }), base.list(o)),
  };
  return { driver, ops };
}

/** Runs one tool call of `t` and returns its data and the storage operations it made (`ops`: a loggedStorage's log). */
export async function measured(t: Tenant, ops: { op: string; key: string }[], tool: string, args: unknown) {
  ops.length = 0;
  const r = await t.call(tool, args);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const files = filesPrefix(t.tenant, t.ws);
  const log = [...ops];
  return {
    data: r.body.data,
    output: r.body.output as string,
    /** Listings of the workspace's files (not of the index, the links record, ...). */
    fileLists: log.filter((o) => o.op === "list" && o.key.startsWith(files)).length,
    lists: log.filter((o) => o.op === "list").length,
    gets: log.filter((o) => o.op === "get" || o.op === "head").length,
    /** Reads of single files (the per-file objects), as opposed to packs and segments. */
    fileGets: log.filter((o) => (o.op === "get" || o.op === "head") && o.key.startsWith(files)).length,
  };
}
