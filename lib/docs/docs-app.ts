/**
 * GET /docs: an interactive API reference served entirely by this API (Workers and Lambda alike),
 * so it works offline and on networks that reach only this host. Swagger UI is vendored from a
 * pinned swagger-ui-dist (lib/docs/swagger-ui.generated.ts, made by scripts/docs-assets.ts).
 */
import { ToolError } from "../errors.js";
import { newApp } from "../routes/common.js";
import { DOCS_INIT_PATH, DOCS_INIT_SCRIPT, DOCS_PATH, docsHeaders, docsPage } from "./page.js";
import { SWAGGER_UI_DIGEST, SWAGGER_UI_FILES } from "./swagger-ui.generated.js";

export function docsApp(opts: { specUrl: string; title: string }) {
  const app = newApp();
  const page = docsPage(opts);
  app.get(DOCS_PATH, (c) => c.body(page, 200, docsHeaders("text/html; charset=utf-8", "revalidate")));
  app.get(DOCS_INIT_PATH, (c) => c.body(DOCS_INIT_SCRIPT, 200, docsHeaders("text/javascript; charset=utf-8", "revalidate")));
  app.get(`${DOCS_PATH}/assets/:digest/:file`, (c) => {
    const name = c.req.param("file");
    const file = Object.hasOwn(SWAGGER_UI_FILES, name) ? SWAGGER_UI_FILES[name] : undefined;
    if (!file || c.req.param("digest") !== SWAGGER_UI_DIGEST) {
      // An old digest means a page from before an upgrade: the current page names the current files.
      throw new ToolError("NOT_FOUND", `No such docs asset: ${c.req.path}. Reload ${DOCS_PATH}; it names the assets this version serves.`);
    }
    return c.body(file.body, 200, docsHeaders(file.type, "immutable"));
  });
  return app;
}
