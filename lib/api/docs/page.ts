/**
 * The interactive reference's own parts: its HTML page, the script that starts Swagger UI, and the
 * response headers of everything under /docs. Nothing here names another origin: the page, its
 * scripts and styles, and the OpenAPI document all come from this API.
 */
import { SWAGGER_UI_DIGEST } from "./swagger-ui.generated.js";

export const DOCS_PATH = "/docs";
export const DOCS_INIT_PATH = `${DOCS_PATH}/init.js`;
/** Vendored files live under their digest: a new Swagger UI gets new URLs, so old ones can be cached for good. */
export const DOCS_ASSETS_PATH = `${DOCS_PATH}/assets/${SWAGGER_UI_DIGEST}`;

/**
 * Only this origin, for everything; no inline script or style (Swagger UI sets styles through the
 * DOM, which CSP allows), and `data:` images for the icons its stylesheet embeds.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Headers of every /docs response: the page and our script are revalidated, vendored files kept a year. */
export function docsHeaders(type: string, cache: "revalidate" | "immutable"): Record<string, string> {
  return {
    "content-type": type,
    "cache-control": cache === "immutable" ? "public, max-age=31536000, immutable" : "no-cache",
    "content-security-policy": DOCS_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

export function docsPage(opts: { specUrl: string; title: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(opts.title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${DOCS_ASSETS_PATH}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-spec-url="${escapeHtml(opts.specUrl)}"></div>
<noscript>This reference needs JavaScript. The OpenAPI document itself is at <a href="${escapeHtml(opts.specUrl)}">${escapeHtml(opts.specUrl)}</a>.</noscript>
<script src="${DOCS_ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="${DOCS_INIT_PATH}"></script>
</body>
</html>
`;
}

/**
 * Starts Swagger UI on the page's element. validatorUrl: null, because Swagger UI's default sends
 * the document to an online validator; try-it-out requests go to this origin (the document names no servers).
 */
export const DOCS_INIT_SCRIPT = `"use strict";
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.specUrl,
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
`;
