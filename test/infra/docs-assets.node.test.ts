/**
 * The vendored Swagger UI: the committed lib/api/docs/swagger-ui.generated.ts is exactly what
 * scripts/docs-assets.ts makes from the installed swagger-ui-dist, whose version package.json pins
 * exactly; and the Lambda entry, bundled by esbuild with no loader rule, serves the same bytes.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { expect, it } from "vitest";
import { SWAGGER_UI_DIGEST, SWAGGER_UI_FILES, SWAGGER_UI_VERSION } from "../../lib/api/docs/swagger-ui.generated.js";
import { GENERATED_PATH, renderSwaggerUiModule, swaggerUiDistDir } from "../../scripts/docs-assets.ts";
import { eventV2, invokeWhole } from "../support/lambda-invoke.ts";

it("matches what scripts/docs-assets.ts makes from the installed, exactly pinned swagger-ui-dist", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  const pinned = pkg.devDependencies?.["swagger-ui-dist"] ?? pkg.dependencies?.["swagger-ui-dist"];
  expect(pinned, "swagger-ui-dist must be pinned to an exact version").toMatch(/^\d+\.\d+\.\d+$/);
  expect(SWAGGER_UI_VERSION).toBe(pinned);
  const fresh = renderSwaggerUiModule(swaggerUiDistDir());
  // On failure: npm run docs:assets, then commit lib/api/docs/swagger-ui.generated.ts.
  expect(readFileSync(GENERATED_PATH, "utf8") === fresh, `${GENERATED_PATH} is stale: run npm run docs:assets`).toBe(true);
});

it("ships no source map reference (nothing that makes a browser ask for a file we do not serve)", () => {
  for (const [name, f] of Object.entries(SWAGGER_UI_FILES)) expect(f.body, name).not.toContain("sourceMappingURL");
});

it("is served by the Lambda entry as bundled by esbuild", async () => {
  const out = mkdtempSync(join(tmpdir(), "toolshed-lambda-docs-"));
  try {
    await build({
      entryPoints: ["infra/lambda.ts"],
      outfile: join(out, "lambda.mjs"),
      bundle: true,
      platform: "node",
      target: "node22",
      format: "esm",
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
      logLevel: "error",
    });
    // Never contacted: /docs touches no storage.
    Object.assign(process.env, { TOOLSHED_BUCKET: "docs-test", AWS_REGION: "us-east-1", S3_ENDPOINT: "http://127.0.0.1:1", AWS_ACCESS_KEY_ID: "unused", AWS_SECRET_ACCESS_KEY: "unused" });
    // The bundle's handler streams (awslambda.streamifyResponse): lambda-local's runtime shim invokes it.
    const { handler } = (await import(pathToFileURL(join(out, "lambda.mjs")).href)) as { handler: unknown };
    const get = async (path: string) => {
      const r = await invokeWhole(handler, eventV2("GET", path));
      return { statusCode: r.status, headers: r.headers, body: r.body };
    };
    const page = await get("/docs");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`/docs/assets/${SWAGGER_UI_DIGEST}/swagger-ui-bundle.js`);
    for (const name of ["swagger-ui-bundle.js", "swagger-ui.css"]) {
      const r = await get(`/docs/assets/${SWAGGER_UI_DIGEST}/${name}`);
      expect(r.statusCode, name).toBe(200);
      expect(r.body === SWAGGER_UI_FILES[name]!.body, `${name} served as is`).toBe(true);
      expect(r.headers?.["cache-control"]).toBe("public, max-age=31536000, immutable");
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 60_000);
