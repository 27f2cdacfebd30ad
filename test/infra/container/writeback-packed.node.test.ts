/**
 * Packed write-back end to end (infra/container/writeback-packed.ts): the real runner and
 * bubblewrap sandbox, the app's /v1/sync over memory storage. A run creating 500 files writes
 * them back with one stage request and one commit (not 500 PUTs), into packs; the next run sees
 * them; tools' per-file guarantees hold over them; an API without the routes gets putMany.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMeta } from "../../../lib/layers/open.js";
import { searchIndexer } from "../../../lib/search/indexer.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { runnerApp } from "../../support/runner-app.js";

describe("packed write-back through the runner", () => {
  let app: Awaited<ReturnType<typeof runnerApp>>["app"];
  let key: string;
  let close: () => Promise<void>;
  const mem = memoryDriver();
  /** Storage puts by kind, and the sync requests ("POST /v1/sync/stage"); `noStaging` answers 404 on stage/commit. */
  const log = { puts: [] as string[], sync: [] as string[], noStaging: false };
  const storage: StorageDriver = {
    ...mem,
    name: "counting",
    put(k, b, o) {
      log.puts.push(k.includes("/packs/") ? "pack" : k.includes("/manifests/") ? "manifest" : k.endsWith("/meta.json") ? "meta" : /\/w\/[^/]+\/f\//.test(k) ? "file" : k.includes("/x/index/") ? "index" : "other");
      return mem.put(k, b, o);
    },
  };
  const req = (path: string, init: RequestInit = {}, session = "s") => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": session, ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown, session = "s") => {
    const r = await req(`/v1/workspaces/main/tools/${tool}`, { method: "POST", body: JSON.stringify(args) }, session);
    return { status: r.status, body: (await r.json()) as any };
  };
  const reset = () => {
    log.puts.length = 0;
    log.sync.length = 0;
  };

  beforeAll(async () => {
    const onSync = (method: string, path: string) => {
      log.sync.push(`${method} ${path.startsWith("/v1/sync/files/") ? "/v1/sync/files" : path}`);
      return log.noStaging && (path === "/v1/sync/stage" || path === "/v1/sync/commit") ? new Response(JSON.stringify({ ok: false }), { status: 404 }) : undefined;
    };
    ({ app, key, close } = await runnerApp({ storage, onSync, deps: { listeners: [searchIndexer({ vacuumChance: 0 })] } }));
  });
  afterAll(() => close());

  it("500 new files: one stage request and one commit, no PUT per file; the next run sees them", async () => {
    expect((await readMeta(storage, "acme", "main"))!.meta.base ?? null).toBeNull(); // plain
    reset();
    const r = await call("bash", { command: "mkdir -p gen && for i in $(seq 1 500); do echo \"n $i\" > gen/f$i.txt; done && echo one > top.txt" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const sync = log.sync.filter((s) => s.startsWith("POST /v1/sync/stage") || s.startsWith("POST /v1/sync/commit") || s.startsWith("POST /v1/sync/put") || s.startsWith("PUT /v1/sync/files"));
    expect(sync).toEqual(["POST /v1/sync/put", "POST /v1/sync/stage", "POST /v1/sync/commit"]); // the hold asked first (this app counts nothing: none taken, none to release)
    // Storage: no per-file object; one pack, one manifest, one pointer switch (plus index, undo, run records).
    expect(log.puts.filter((p) => p === "file")).toEqual([]);
    expect(log.puts.filter((p) => p === "pack")).toEqual(["pack"]);
    expect(log.puts.filter((p) => p === "manifest")).toEqual(["manifest"]);
    expect(log.puts.filter((p) => p === "meta")).toEqual(["meta"]);
    expect(log.puts.length, log.puts.join(",")).toBeLessThan(20);
    expect((await readMeta(storage, "acme", "main"))!.meta.base).toBeTruthy(); // now layered
    const next = await call("bash", { command: "cat gen/f250.txt && ls gen | wc -l && cat top.txt" });
    expect(next.body.output).toBe("n 250\n500\none\n");
    const g = await call("grep", { pattern: "n 499", output_mode: "files_with_matches" });
    expect(g.body.output).toContain("gen/f499.txt");
  });

  it("20 concurrent edits of a file committed into the pack: exactly one wins", async () => {
    const sessions = Array.from({ length: 20 }, (_, i) => `e${i}`);
    for (const s of sessions) expect((await call("read", { file_path: "gen/f7.txt" }, s)).status).toBe(200);
    const rs = await Promise.all(sessions.map((s, i) => call("edit", { file_path: "gen/f7.txt", old_string: "n 7", new_string: `n ${700 + i}` }, s)));
    const wins = rs.filter((r) => r.status === 200);
    expect(wins.length, JSON.stringify(rs.map((r) => r.body.error?.code ?? "ok"))).toBe(1);
    expect(rs.filter((r) => r.status !== 200).every((r) => r.body.error.code === "FILE_MODIFIED")).toBe(true);
    const out = await call("bash", { command: "cat gen/f7.txt" });
    expect(out.body.output).toBe(`n ${700 + rs.indexOf(wins[0]!)}\n`);
  });

  it("a second packed run modifying committed files and files a tool changed: alone / conflict handled, nothing lost", async () => {
    // A tool edits gen/f8.txt (now an upper object over the lower version): the run's edit of it goes `alone`.
    expect((await call("read", { file_path: "gen/f8.txt" })).status).toBe(200);
    expect((await call("edit", { file_path: "gen/f8.txt", old_string: "n 8", new_string: "tool 8" })).status).toBe(200);
    reset();
    const r = await call("bash", { command: "for i in $(seq 1 300); do echo \"m $i\" >> gen/f$i.txt; done" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.conflicts).toEqual([]);
    expect(log.sync.filter((s) => /stage|commit|sync\/put/.test(s))).toEqual(["POST /v1/sync/put", "POST /v1/sync/stage", "POST /v1/sync/commit", "POST /v1/sync/put"]); // the hold asked, then the alone files in one put batch
    const check = await call("bash", { command: "cat gen/f8.txt gen/f300.txt gen/f301.txt" });
    expect(check.body.output).toBe("tool 8\nm 8\nn 300\nm 300\nn 301\n");
  });

  it("an API without the routes: the same run writes back through put batches", async () => {
    log.noStaging = true;
    try {
      reset();
      const r = await call("bash", { command: "mkdir -p old && for i in $(seq 1 250); do echo \"o $i\" > old/f$i.txt; done" });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(log.sync.filter((s) => s === "POST /v1/sync/stage")).toHaveLength(1);
      expect(log.sync.filter((s) => s === "POST /v1/sync/commit")).toHaveLength(0);
      expect(log.sync.filter((s) => s === "POST /v1/sync/put").length).toBeGreaterThanOrEqual(4);
      expect((await call("bash", { command: "cat old/f250.txt" })).body.output).toBe("o 250\n");
    } finally {
      log.noStaging = false;
    }
  });
});
