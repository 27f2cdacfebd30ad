/**
 * /openapi.json validates as OpenAPI 3.1 with @seriousme/openapi-schema-validator (the official
 * OAS 3.1 JSON Schema plus its $ref checks). The validator reads its schemas from disk, so this part
 * runs in Node, over the memory driver; test/lib/api/openapi.test.ts checks the rest inside workerd.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: "t" }, tools);
let doc: any;

beforeAll(async () => {
  const r = await app.request("/openapi.json");
  expect(r.status).toBe(200);
  doc = await r.json();
});

describe("/openapi.json (official validator)", () => {
  it("validates as OpenAPI 3.1", async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const validator = new Validator();
    const res = await validator.validate(doc);
    expect(res.errors ?? []).toEqual([]);
    expect(res.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("lists every tool", () => {
    for (const t of tools) expect(doc.paths[`/v1/workspaces/{ws}/tools/${t.name}`]?.post, t.name).toBeDefined();
  });

  it("catches a broken document (so the check above can fail)", async () => {
    const noDescription = structuredClone(doc);
    noDescription.paths["/v1/tools"].get.responses = { 200: { content: {} } };
    expect((await new Validator().validate(noDescription)).valid).toBe(false);
    const badRef = structuredClone(doc);
    badRef.paths["/v1/tools"].get.responses[200].content["application/json"].schema = { $ref: "#/components/schemas/Nope" };
    expect((await new Validator().validate(badRef)).valid).toBe(false);
  });
});
