/**
 * lib/client/api.generated.ts is exactly what scripts/client-types.ts renders from today's
 * /openapi.json: a route, tool schema or description changed without `npm run client:types`
 * fails here, so the typed client never describes an API the server no longer has.
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { appOpenApiDocument, GENERATED_PATH, renderClientTypes } from "../../../scripts/client-types.ts";

const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: "t" }, tools);
const liveDoc = async () => (await app.request("/openapi.json")).json() as Promise<Record<string, any>>;

it("the committed types match a fresh render of /openapi.json", async () => {
  const fresh = await renderClientTypes(await liveDoc());
  // On failure: npm run client:types, then commit lib/client/api.generated.ts.
  expect(readFileSync(GENERATED_PATH, "utf8") === fresh, `${GENERATED_PATH} is stale: run npm run client:types`).toBe(true);
});

it("a changed schema changes the render (so the check above can fail)", async () => {
  const doc = await liveDoc();
  doc.paths["/v1/workspaces/{ws}/tools/read"].post.requestBody.content["application/json"].schema.properties.file_path.description = "changed";
  expect(await renderClientTypes(doc)).not.toBe(readFileSync(GENERATED_PATH, "utf8"));
});

it("the script renders from the same document the app serves", async () => {
  expect(await appOpenApiDocument()).toEqual(await liveDoc());
});
