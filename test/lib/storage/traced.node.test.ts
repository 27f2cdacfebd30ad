/**
 * Traced storage (lib/storage/traced.ts, docs/tracing.md): what a delete's span says it deletes. A
 * delete of several keys (a run record's claim and result, GC's batches) names them after their common
 * folder, not as its first key alone.
 */
import { describe, expect, it } from "vitest";
import { createTracer, type EndedSpan } from "../../../lib/shared/trace.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { tracedStorage } from "../../../lib/storage/traced.js";

async function deleteSpans(run: (storage: ReturnType<typeof tracedStorage>) => Promise<void>): Promise<EndedSpan[]> {
  const ended: EndedSpan[] = [];
  const tracer = createTracer({ export: async (spans) => void ended.push(...spans) });
  const storage = tracedStorage(memoryDriver(), tracer);
  await tracer.span("call", () => run(storage));
  await tracer.flush();
  return ended.filter((s) => s.name === "storage.delete");
}

describe("traced storage: a delete's span", () => {
  it("names every key it deletes: one as it is, several after their common folder (three, then …), an API key's hash never", async () => {
    const run = "t/acme/w/main/x/runs/r0123456789abcde/";
    const spans = await deleteSpans(async (s) => {
      await s.delete(`${run}claim.json`);
      await s.delete([`${run}claim.json`, `${run}result.json`]);
      await s.delete([{ key: "t/acme/packs/p1" }, "t/acme/packs/p2", "t/acme/packs/q3", "t/acme/packs/q4"]);
      await s.delete(["t/acme/w/a/meta.json", "t/acme/w/b/meta.json"]);
      await s.delete(["apikey/0f1e2d", "apikey/3c4b5a"]);
    });
    expect(spans.map((s) => [s.attributes["toolshed.key"], s.attributes["toolshed.keys"]])).toEqual([
      [`${run}claim.json`, undefined],
      [`${run}{claim.json,result.json}`, 2],
      ["t/acme/packs/{p1,p2,q3,…}", 4],
      ["t/acme/w/{a/meta.json,b/meta.json}", 2],
      ["apikey/…", 2],
    ]);
  });
});
