/**
 * lib/client/api/*.generated.ts (one file per OpenAPI tag, the shared components, the index) are
 * exactly what scripts/client-types.ts renders from today's /openapi.json: a route, tool schema,
 * tag or description changed without `npm run client:types` fails here, so the typed client never
 * describes an API the server no longer has.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { memoryLiveCoordinator } from "../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../lib/exec/live/service.js";
import { appOpenApiDocument, GENERATED_DIR, generatedFiles, renderClientTypes } from "../../../scripts/client-types.ts";

// With live sessions, as the script renders (keep_alive included: Tool.withoutLive).
const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: "t", liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS) }, tools);
const liveDoc = async () => (await app.request("/openapi.json")).json() as Promise<Record<string, any>>;
const committed = (name: string) => readFileSync(join(GENERATED_DIR, name), "utf8");
let rendered: Promise<Map<string, string>> | undefined;
/** Today's render, made once for the tests that only read it. */
const freshRender = () => (rendered ??= liveDoc().then(renderClientTypes));

it("the committed types match a fresh render of /openapi.json, file for file", async () => {
  const fresh = await freshRender();
  // On failure: npm run client:types, then commit lib/client/api/.
  expect(generatedFiles(), `${GENERATED_DIR} holds other files than a render makes: run npm run client:types`).toEqual([...fresh.keys()].sort());
  for (const [name, source] of fresh) expect(committed(name) === source, `${GENERATED_DIR}/${name} is stale: run npm run client:types`).toBe(true);
});

it("renders one file per tag, the components once, and an index over them", async () => {
  const fresh = await freshRender();
  expect([...fresh.keys()]).toEqual(expect.arrayContaining(["components.generated.ts", "index.generated.ts", "tools.generated.ts", "workspaces.generated.ts", "custom-tools.generated.ts"]));
  const declaring = [...fresh].filter(([, s]) => s.includes("export interface components")).map(([n]) => n);
  expect(declaring).toEqual(["components.generated.ts"]);
  expect(fresh.get("workspaces.generated.ts")).toContain('"/v1/workspaces/{ws}": {');
  expect(fresh.get("workspaces.generated.ts")).not.toContain('"/v1/workspaces/{ws}/tools/read"');
  expect(fresh.get("tools.generated.ts")).toContain('"/v1/workspaces/{ws}/tools/read"');
});

it("a changed schema changes the render of its tag's file only (so the check above can fail)", async () => {
  const doc = await liveDoc();
  doc.paths["/v1/workspaces/{ws}/tools/read"].post.requestBody.content["application/json"].schema.properties.file_path.description = "changed";
  const changed = [...(await renderClientTypes(doc))].filter(([name, source]) => committed(name) !== source).map(([name]) => name);
  expect(changed).toEqual(["tools.generated.ts"]);
});

it("a route with a new tag gets a file of its own and a place in the index", async () => {
  const doc = await liveDoc();
  doc.paths["/healthz"].get.tags = ["health checks"];
  const fresh = await renderClientTypes(doc);
  expect(fresh.get("health-checks.generated.ts")).toContain('"/healthz": {');
  expect(fresh.get("meta.generated.ts")).not.toContain('"/healthz"');
  expect(fresh.get("index.generated.ts")).toMatch(/import type \{ paths as healthChecksPaths \} from "\.\/health-checks\.generated\.js";/);
});

// esbuild bundles the whole app first: ~15 s on an idle 2-core machine, more when it is shared.
it("the script renders from the same document the app serves", async () => {
  expect(await appOpenApiDocument()).toEqual(await liveDoc());
}, 120_000);
