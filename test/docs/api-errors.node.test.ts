/**
 * The error table of docs/api.md is the registry (lib/shared/errors.ts), code for code and status for status:
 * a code added to the registry without its row, or a row whose status drifted, fails here.
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { ERROR_CODES } from "../../lib/shared/errors.js";

it("docs/api.md lists every error code of lib/shared/errors.ts with its HTTP status, and no other", () => {
  const page = readFileSync("docs/api.md", "utf8");
  const rows = [...page.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1]!, Number(m[2])] as const);
  expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(Object.entries(ERROR_CODES).map(([code, e]) => [code, e.status])));
});
