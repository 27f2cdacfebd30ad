/**
 * The Python examples of the README and of docs/ run as pasted into a file: every ```python block
 * compiles with python3 (`compile(..., "exec")`, what `python3 file.py` does first). An `await` or
 * `async with` at the top level of a block is a SyntaxError there (it works only in a notebook or
 * `python -m asyncio`), so an async example puts its body in `async def main()` and ends with
 * `asyncio.run(main())`. Compiling imports nothing: the examples' packages need not be installed.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const pages = ["README.md", ...readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

/** Each ```python block's text, with its 1-based line number on the page. */
function pythonBlocks(text: string): { line: number; code: string }[] {
  return [...text.matchAll(/^```python\n([\s\S]*?)^```/gm)].map((m) => ({ line: text.slice(0, m.index).split("\n").length, code: m[1]! }));
}

/** The SyntaxError python3 reports for `code`, or "" when it compiles. */
function compileError(code: string, name: string): string {
  const r = spawnSync("python3", ["-c", "import sys\ntry: compile(sys.stdin.read(), sys.argv[1], 'exec')\nexcept SyntaxError as e: print(f'{e.msg} (line {e.lineno})')", name], { input: code, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim();
}

describe("the Python examples of the README and docs/", () => {
  for (const page of pages) {
    const blocks = pythonBlocks(readFileSync(page, "utf8"));
    if (blocks.length === 0) continue;
    it(`${page}: every python block compiles as a script`, () => {
      expect(blocks.map((b) => ({ line: b.line, error: compileError(b.code, `${page}:${b.line}`) })).filter((b) => b.error)).toEqual([]);
    });
  }

  it("the reader finds a block and python3 names a top-level await", () => {
    const [block] = pythonBlocks("text\n```python\nx = await f()\n```\n");
    expect(block!.line).toBe(2);
    expect(compileError(block!.code, "example")).toMatch(/'await' outside function/);
  });
});
