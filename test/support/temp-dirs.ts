/** Temporary directories of one test file, removed when the file's tests are done. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

/** A maker of fresh directories named `toolshed-<prefix>-…` under the system temp dir; all are removed after the file's tests. */
export function tempDirs(prefix: string): (name?: string) => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return (name) => {
    const d = mkdtempSync(join(tmpdir(), `toolshed-${prefix}-${name ? `${name}-` : ""}`));
    dirs.push(d);
    return d;
  };
}
