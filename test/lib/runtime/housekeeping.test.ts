/**
 * The scheduled housekeeping tick (lib/runtime/housekeeping.ts) in workerd over local R2 and KV,
 * every storage operation counted (test/support/counting-stores.ts): GC's listing of a workspace's
 * undo prefix (its pack roots) is also the listing undo retention prunes, and the prune comes before
 * the records are read, so a pack only an expired record named goes in the same tick.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { undoPrefix } from "../../../lib/layout/paths.js";
import { housekeepingTick } from "../../../lib/runtime/housekeeping.js";
import { countingStores } from "../../support/counting-stores.js";
import { newTenant, testApp, type Tenant } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { importReq } from "../archive/helpers.js";

const app = testApp();
/** Past undo retention (24 h) and GC's grace period (1 h). */
const NEXT_DAY = () => Date.now() + 25 * 3600 * 1000;

async function packs(t: Tenant): Promise<string[]> {
  return (await env.FILES.list({ prefix: `t/${t.tenant}/packs/` })).objects.map((o) => o.key).sort();
}

/** A workspace whose imported file was written over (its undo record names the import's pack), then checkpointed: the pack's only root is that record. */
async function tenantWithUndoPack(): Promise<{ t: Tenant; pack: string }> {
  const t = await newTenant(app);
  const r = await importReq(t, tar([{ name: "low.txt", body: "lower bytes\n" }]), "?mode=replace");
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const [pack] = await packs(t);
  await t.call("read", { file_path: "low.txt" });
  const w = await t.call("write", { file_path: "low.txt", content: "upper bytes\n" });
  expect(w.status, JSON.stringify(w.body)).toBe(200);
  const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "c" }) });
  expect(cp.status).toBe(201);
  return { t, pack: pack! };
}

describe("housekeeping tick", () => {
  it("lists each workspace's undo prefix once: GC's roots and undo retention share it, and a pack only an expired record named is freed in that tick", async () => {
    const { t, pack } = await tenantWithUndoPack();
    const stores = countingStores({ steps: false });
    const lines: string[] = [];
    await housekeepingTick({ storage: stores.storage, kv: stores.kv }, {}, { now: NEXT_DAY, maxTenants: 10_000, log: (l) => lines.push(l) });
    const prefix = undoPrefix(t.tenant, t.ws);
    const undoLists = stores.log.filter((op, i) => op.startsWith("r2.list ") && stores.keys[i] === prefix);
    expect(undoLists).toHaveLength(1);
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.gc === t.tenant);
    expect(line).toMatchObject({ undo_calls_deleted: 1, packs_deleted: 1 });
    expect(line.housekeeping_error).toBeUndefined();
    expect(await packs(t)).not.toContain(pack);
    expect((await env.FILES.list({ prefix })).objects).toEqual([]);
  });
});
