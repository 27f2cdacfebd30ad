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

/** The SyntaxError python3 reports for each of `blocks` ("" when it compiles): one python3 process for them all (a process each timed out under load). */
function compileErrors(blocks: { code: string; name: string }[]): string[] {
  const script = "import sys, json\nfor b in json.load(sys.stdin):\n  try:\n    compile(b['code'], b['name'], 'exec'); print(json.dumps(''))\n  except SyntaxError as e:\n    print(json.dumps(f'{e.msg} (line {e.lineno})'))";
  const r = spawnSync("python3", ["-c", script], { input: JSON.stringify(blocks), encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim().split("\n").map((l) => JSON.parse(l) as string);
}

describe("the Python examples of the README and docs/", () => {
  for (const page of pages) {
    const blocks = pythonBlocks(readFileSync(page, "utf8"));
    if (blocks.length === 0) continue;
    it(`${page}: every python block compiles as a script`, () => {
      const errors = compileErrors(blocks.map((b) => ({ code: b.code, name: `${page}:${b.line}` })));
      expect(errors).toHaveLength(blocks.length);
      expect(blocks.map((b, i) => ({ line: b.line, error: errors[i] })).filter((b) => b.error)).toEqual([]);
    });
  }

  it("the reader finds a block and python3 names a top-level await", () => {
    const [block] = pythonBlocks("text\n```python\nx = await f()\n```\n");
    expect(block!.line).toBe(2);
    expect(compileErrors([{ code: "x = 1", name: "fine" }, { code: block!.code, name: "example" }])).toEqual(["", expect.stringMatching(/'await' outside function/)]);
  });
});
