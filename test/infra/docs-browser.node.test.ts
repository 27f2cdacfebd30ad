/**
 * /docs in a real browser with the network cut: headless Chromium (Debian's /usr/bin/chromium,
 * driven by playwright-core) loads the page from `wrangler dev`. Two cuts at once: Chromium's proxy
 * is a closed loopback port (so no request can leave this machine, whatever asks for it), and every
 * request the page makes to anything but 127.0.0.1 is aborted and counted. The page must render the
 * API's operations with that count at 0, no CSP violation and no script error.
 *
 * TOOLSHED_DOCS_SCREENSHOT=/tmp/docs.png also saves a screenshot, to look at.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort, startWorker, type WorkerProcess } from "../support/wrangler-dev.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
let w: WorkerProcess;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH).`);
  const deadProxy = await freePort(); // closed: nothing listens there
  [w, browser] = await Promise.all([
    startWorker(),
    chromium.launch({ executablePath: CHROMIUM, proxy: { server: `http://127.0.0.1:${deadProxy}`, bypass: "127.0.0.1" } }),
  ]);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await w?.stop();
});

it("renders the API's operations from this server alone, with the network cut", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const outside: string[] = [];
  const served: string[] = [];
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === "data:" || url.hostname === "127.0.0.1") {
      served.push(url.pathname);
      return route.continue();
    }
    outside.push(url.href);
    return route.abort("internetdisconnected");
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" || /Content Security Policy/i.test(m.text())) problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));

  const started = Date.now();
  const r = await page.goto(`${w.url}/docs`);
  expect(r?.status()).toBe(200);
  // Swagger UI puts each operation's path in data-path once it has fetched and rendered /openapi.json.
  const read = page.locator('.opblock-summary-path[data-path="/v1/workspaces/{ws}/tools/read"]');
  const renderedIn = await read.first().waitFor({ state: "visible", timeout: 30_000 }).then(() => Date.now() - started, () => null);
  // What went out (or was refused) is the first thing to know when the page did not render.
  expect(outside).toEqual([]);
  expect(problems).toEqual([]);
  expect(renderedIn, "the tools/read operation never appeared").not.toBeNull();
  if (process.env.TOOLSHED_DOCS_SCREENSHOT) await page.screenshot({ path: process.env.TOOLSHED_DOCS_SCREENSHOT });
  const operations = await page.locator(".opblock").count();
  const title = await page.locator(".info .title").first().innerText();
  console.log(`/docs rendered ${operations} operations in ${renderedIn} ms; requests served locally: ${served.length}, outside: ${outside.length}`);

  // An operation opens and shows its request body schema (the UI works, not just its first paint).
  await read.first().click();
  await page.locator(".opblock.is-open .opblock-body").first().waitFor({ state: "visible", timeout: 10_000 });
  expect(await page.locator(".opblock.is-open").first().innerText()).toContain("file_path");

  expect(outside).toEqual([]);
  expect(problems).toEqual([]);
  expect(title).toContain("Toolshed");
  expect(operations).toBeGreaterThan(20);
  expect(served).toEqual(expect.arrayContaining(["/docs", "/openapi.json", "/docs/init.js"]));
  await context.close();
}, 90_000);
