/**
 * The SSRF guard holds only if no door reaches a URL but through lib/tools/web/transport.ts (webAccess →
 * guardedFetch / checkReachable). This walks every source file the app is built from and lists the
 * ones that call the runtime's fetch: a new door that calls it directly fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";

const ROOTS = ["lib", "functions", "infra/cloudflare.ts", "infra/lambda.ts"];
/** Who may call the runtime's fetch, and why. */
const ALLOWED: Record<string, string> = {
  "lib/tools/web/transport.ts": "the transports themselves, behind the guard",
  "lib/tools/web/search/brave.ts": "the deployment's search provider, a fixed URL",
  "lib/tools/web/search/tavily.ts": "the deployment's search provider, a fixed URL",
  "lib/shared/otlp.ts": "the deployment's trace collector (TOOLSHED_OTLP_ENDPOINT), a fixed URL the operator sets, never a tenant's",
  "lib/client/index.ts": "the typed client of our own API (runs in the agent's app, not on our servers)",
};

function sources(path: string): string[] {
  if (path.endsWith(".ts")) return [path];
  return readdirSync(path, { withFileTypes: true }).flatMap((d) => sources(join(path, d.name)));
}

/** A call of the global fetch: not a method (x.fetch), not a definition (`fetch(req) {` at a line's start), not in a comment. */
const calls = (code: string) =>
  code
    .replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "")
    .split("\n")
    .some((line) => !/^\s*(?:async\s+)?fetch\(/.test(line) && /(?<![.\w$])fetch\(/.test(line));

it("only the transports (and fixed-URL clients) call the runtime's fetch", () => {
  const callers = ROOTS.flatMap(sources)
    .filter((f) => !f.endsWith(".generated.ts"))
    .filter((f) => calls(readFileSync(f, "utf8")));
  expect(callers.sort()).toEqual(Object.keys(ALLOWED).sort());
});
