/**
 * GET /docs: an interactive API reference served entirely by this API (Workers and Lambda alike),
 * so it works offline and on networks that reach only this host. Swagger UI is vendored from a
 * pinned swagger-ui-dist (lib/api/docs/swagger-ui.generated.ts, made by scripts/docs-assets.ts).
 * Every route here is public (routes/access.ts); the page is documented, its script and assets are not.
 */
import type { AppDeps } from "../deps.js";
import { ToolError } from "../../shared/errors.js";
import { addRoute } from "../routes/access.js";
import { newApp } from "../routes/common.js";
import { DOCS_INIT_PATH, DOCS_INIT_SCRIPT, DOCS_PATH, docsHeaders, docsPage } from "./page.js";
import { SWAGGER_UI_DIGEST, SWAGGER_UI_FILES } from "./swagger-ui.generated.js";

export function docsApp(deps: AppDeps, opts: { specUrl: string; title: string }) {
  const app = newApp();
  const page = docsPage(opts);
  const open = { auth: "public" } as const;
  const asset = "a static part of the /docs page (its script, Swagger UI's files)";
  addRoute(
    app, deps,
    { method: "get", path: DOCS_PATH, access: open, doc: { tags: ["meta"], summary: "Interactive reference (HTML, served by this API; works offline)", responses: { 200: { description: "OK" } } } },
    (c) => c.body(page, 200, docsHeaders("text/html; charset=utf-8", "revalidate")),
  );
  addRoute(app, deps, { method: "get", path: DOCS_INIT_PATH, access: open, undocumented: asset }, (c) =>
    c.body(DOCS_INIT_SCRIPT, 200, docsHeaders("text/javascript; charset=utf-8", "revalidate")),
  );
  addRoute(app, deps, { method: "get", path: `${DOCS_PATH}/assets/:digest/:file`, access: open, undocumented: asset }, (c) => {
    const name = c.req.param("file") ?? "";
    const file = Object.hasOwn(SWAGGER_UI_FILES, name) ? SWAGGER_UI_FILES[name] : undefined;
    if (!file || c.req.param("digest") !== SWAGGER_UI_DIGEST) {
      // An old digest means a page from before an upgrade: the current page names the current files.
      throw new ToolError("NOT_FOUND", `No such docs asset: ${c.req.path}. Reload ${DOCS_PATH}; it names the assets this version serves.`);
    }
    return c.body(file.body, 200, docsHeaders(file.type, "immutable"));
  });
  return app;
}
