/**
 * A read's session record written after the answer (Workers' waitUntil; RecordStore.set with
 * `later`): the isolate that answered knows it at once, KV has it once the work after the answer
 * ran, and a KV write that failed leaves nothing known. Two apps over the same R2 and KV stand
 * for two isolates; the app is called with an execution context whose waitUntil collects the work.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { workersKeyValue } from "../../../../lib/storage/kv-workers.js";
import type { KeyValueStore } from "../../../../lib/storage/types.js";
import { newTenant, testApp, upload, workersCalls } from "../../../helpers.js";

/** An app (an isolate) called as Workers would: its work after each answer is left in `later`. */
function isolate(kv?: KeyValueStore) {
  const app = testApp(kv ? { kv } : {});
  return { app, ...workersCalls(app) };
}

describe("a read's record written after the answer", () => {
  it("the answering isolate knows it at once; another isolate once KV took it", async () => {
    // The record's KV write is held at a gate: the read must answer without waiting for it.
    const kv = workersKeyValue(env.KV);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let held = 0;
    const gated: KeyValueStore = { ...kv, put: async (k, v, o) => (k.startsWith("rec/") ? (held++, gate.then(() => kv.put(k, v, o))) : kv.put(k, v, o)) };
    const a = isolate(gated);
    const t = await newTenant(a.app);
    await upload(t, "a.txt", "one\n");
    expect((await a.call(t, "read", { file_path: "a.txt" })).status).toBe(200);
    await vi.waitFor(() => expect(held).toBe(1)); // answered; the record's write (after KV's read, after the answer) waits
    const edit = await a.call(t, "edit", { file_path: "a.txt", old_string: "one", new_string: "two" });
    expect(edit.status, JSON.stringify(edit.body)).toBe(200);
    open();
    await a.settle();

    // Another isolate: nothing known there, KV answers.
    await upload(t, "b.txt", "bee\n");
    expect((await a.call(t, "read", { file_path: "b.txt" })).status).toBe(200);
    await a.settle();
    const b = isolate();
    const other = await b.call(t, "edit", { file_path: "b.txt", old_string: "bee", new_string: "wasp" });
    expect(other.status, JSON.stringify(other.body)).toBe(200);
  });

  it("the answer waits for no KV read either: the record's read and its write both go after it, and the same version is not written twice", async () => {
    const kv = workersKeyValue(env.KV);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let gets = 0;
    let puts = 0;
    const gated: KeyValueStore = { ...kv, get: async (k) => (k.startsWith("rec/") ? (gets++, gate.then(() => kv.get(k))) : kv.get(k)), put: async (k, v, o) => ((k.startsWith("rec/") ? puts++ : 0), kv.put(k, v, o)) };
    const a = isolate(gated);
    const t = await newTenant(a.app);
    await upload(t, "a.txt", "one\n");
    expect((await a.call(t, "read", { file_path: "a.txt" })).status).toBe(200);
    expect({ gets, puts }).toEqual({ gets: 0, puts: 0 }); // answered before the record's read even starts (lib/shared/after-answer.ts)
    await vi.waitFor(() => expect({ gets, puts }).toEqual({ gets: 1, puts: 0 })); // then it starts, and waits at the gate
    open();
    await a.settle();
    expect(puts).toBe(1); // KV had no record: written after the answer
    // Another isolate reads the same version: KV already holds it, nothing is written.
    const b = isolate(gated);
    expect((await b.call(t, "read", { file_path: "a.txt" })).status).toBe(200);
    await b.settle();
    expect(puts).toBe(1);
    const edit = await b.call(t, "edit", { file_path: "a.txt", old_string: "one", new_string: "two" });
    expect(edit.status, JSON.stringify(edit.body)).toBe(200);
  });

  it("a KV write that failed is forgotten: the next edit asks KV and gets NOT_READ", async () => {
    const kv = workersKeyValue(env.KV);
    let failPuts = false;
    const flaky: KeyValueStore = { ...kv, put: async (k, v, o) => (failPuts && k.startsWith("rec/") ? Promise.reject(new Error("KV down")) : kv.put(k, v, o)) };
    const a = isolate(flaky);
    const t = await newTenant(a.app);
    await upload(t, "a.txt", "one\n");
    failPuts = true;
    expect((await a.call(t, "read", { file_path: "a.txt" })).status).toBe(200);
    await a.settle();
    const edit = await a.call(t, "edit", { file_path: "a.txt", old_string: "one", new_string: "two" });
    expect(edit.status).toBe(409);
    expect(edit.body.error.code).toBe("NOT_READ");
  });

  it("without an execution context the record is in KV before the answer (Node, Lambda)", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "one\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    const b = isolate();
    const edit = await b.call(t, "edit", { file_path: "a.txt", old_string: "one", new_string: "two" });
    expect(edit.status, JSON.stringify(edit.body)).toBe(200);
  });
});
