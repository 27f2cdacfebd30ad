/**
 * The sync PUT of a write-back hands small files' bytes to the search index, which then does
 * not read the file back from storage (one GET per written file less); large files stream.
 */
import { describe, expect, it } from "vitest";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { searchIndexer } from "../../../lib/search/indexer.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import type { StorageDriver } from "../../../lib/storage/types.js";

const SECRET = "sync-put-secret-0123456789";

describe("sync PUT", () => {
  it("a small file is indexed from the bytes sent (no GET of it); a large one streams and is read back", async () => {
    const gets: string[] = [];
    const base = memoryDriver();
    const driver: StorageDriver = { ...base, get: (key, o) => (gets.push(key), base.get(key, o)) };
    const kv = storageKeyValue(memoryDriver(), "kv/");
    await workspaceRecord(base, "t1", "w1");
    const fetchVia = ((url: string, init: RequestInit) => handleSync(new Request(url, init), { driver, kv, secret: SECRET, listeners: [searchIndexer({ vacuumChance: 0 })] })) as typeof fetch;
    const sync = httpSyncClient({ url: "http://api.test", token: await mintSyncToken(SECRET, { t: "t1", w: "w1", r: "k" }, 60), fetch: fetchVia });
    expect((await sync.put("src/a.ts", new TextEncoder().encode("export const a = 1;\n"), { ifNoneMatch: "*", size: 20 })).ok).toBe(true);
    expect(gets.filter((k) => k.endsWith("/f/src/a.ts"))).toEqual([]);
    const big = new Uint8Array(2 * 1024 * 1024).fill(0x61);
    expect((await sync.put("big.txt", big, { ifNoneMatch: "*", size: big.length })).ok).toBe(true);
    expect(gets.filter((k) => k.endsWith("/f/big.txt"))).toHaveLength(1); // control: a streamed file is read back (its head)
    expect(await new Response((await sync.fetch("src/a.ts"))!.body).text()).toBe("export const a = 1;\n");
  });
});
