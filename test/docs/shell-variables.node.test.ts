/**
 * The shell commands of the README and of docs/ work as pasted after the README's tour: every
 * variable a ```sh block uses is set on its page or by the tour (`B`, `H`, `TOOLSHED_KEY`,
 * `TOOLSHED_ADMIN_TOKEN`, `MANAGE_KEY`), and no `<placeholder>` stands bare where the shell would
 * read it as a redirection. A page that says `$BASE`, `$URL` or `$ADMIN` for what the tour calls
 * `$B` and `$TOOLSHED_ADMIN_TOKEN` fails here. And every environment variable a Python or
 * TypeScript example reads without a default (`os.environ["TOOLSHED_APPROVE_KEY"]`) is exported by
 * the tour or by a shell block of its page: else the example stops at a KeyError.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { bareAngleBrackets, environmentRead, shellBlocks, shellComments, unexportedEnvironment, unsetShellVariables, variablesExported, variablesSet, variablesUsed } from "../support/shell-snippets.js";

/** Set by the shell itself, or by the reader's machine. */
const ENVIRONMENT = new Set(["PWD", "HOME", "PATH", "USER"]);

const readme = readFileSync("README.md", "utf8");
const tour = new Set(shellBlocks(readme).flatMap((b) => [...variablesSet(b.text)]));
const tourExports = new Set(shellBlocks(readme).flatMap((b) => [...variablesExported(b.text)]));
const pages = ["README.md", ...readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

describe("the shell commands of the README and docs/", () => {
  it("the README's tour sets what the pages assume of it", () => {
    expect([...tour].sort()).toEqual(expect.arrayContaining(["B", "H", "MANAGE_KEY", "TOOLSHED_ADMIN_TOKEN", "TOOLSHED_KEY"]));
  });

  for (const page of pages) {
    it(`${page}: every variable is set on the page or by the README's tour, no bare placeholder`, () => {
      expect(unsetShellVariables(readFileSync(page, "utf8"), tour, ENVIRONMENT)).toEqual([]);
    });
    it(`${page}: every environment variable its Python and TypeScript examples read is exported on the page or by the tour`, () => {
      expect(unexportedEnvironment(readFileSync(page, "utf8"), tourExports)).toEqual([]);
    });
  }
});

describe("the shell reader", () => {
  const page = [
    "# A page",
    "```sh",
    "X=1; export Y=2",
    "curl -s \"$B/v1/$X/$Y\" -H \"Authorization: Bearer $ADMIN\"   # $IN_A_COMMENT",
    "curl -s -d '{\"a\":\"$IN_SINGLE_QUOTES\",",
    "  \"b\": \"#not a comment $STILL_QUOTED\"}' ${LATER:-x} \\$ESCAPED",
    "curl -s $B/v1/checkpoints/<id> \"$B/<quoted>\"",
    "for f in a b; do echo $f; done",
    "```",
    "```json",
    "{\"$NOT_SHELL\": 1}",
    "```",
    "```bash",
    "LATER=3",
    "```",
  ].join("\n");

  it("finds a variable set nowhere and a bare placeholder, at their lines; skips comments, single quotes, escapes and other languages", () => {
    expect(unsetShellVariables(page, new Set(["B"]), new Set())).toEqual([
      "line 4: $ADMIN is set neither on this page nor in the README's tour",
      "line 7: <id> outside quotes is a redirection from a file when pasted",
    ]);
  });

  it("finds a variable set to a placeholder, which pasted would replace the tour's value with dots", () => {
    const planted = ["```sh", "export TOOLSHED_KEY=tsk_...   # your key", 'URL="https://.../v1"', "B=http://127.0.0.1:8787", "```"].join("\n");
    expect(unsetShellVariables(planted, new Set(), new Set())).toEqual([
      "line 2: TOOLSHED_KEY is set to a placeholder (…): pasted, it holds the dots",
      "line 3: URL is set to a placeholder (…): pasted, it holds the dots",
    ]);
  });

  it("reads what a block sets and uses", () => {
    const [first] = shellBlocks(page);
    expect(first!.line).toBe(3);
    expect([...variablesSet(first!.text)].sort()).toEqual(["X", "Y", "f"]);
    expect(variablesUsed(first!.text).map((u) => u.name)).toEqual(["B", "X", "Y", "ADMIN", "LATER", "B", "B", "f"]);
    expect(bareAngleBrackets(first!.text)).toEqual([{ text: "<id>", line: 4 }]);
    expect(shellComments(first!.text)).toEqual([" $IN_A_COMMENT"]);
  });

  it("finds an environment variable an example reads that no block exports; a default, or an export on the page, is enough", () => {
    const planted = [
      "```sh",
      "export TOOLSHED_URL=http://127.0.0.1:8787; B=$TOOLSHED_URL",
      "export A_KEY",
      "```",
      "```python",
      'url = os.environ["TOOLSHED_URL"]; key = os.environ["A_KEY"]',
      'app = Toolshed(os.environ.get("TOOLSHED_URL", "x"), os.environ["TOOLSHED_APPROVE_KEY"])',
      'b = os.environ["B"]',
      "```",
      "```ts",
      "createClient({ baseUrl: process.env.OTHER_URL ?? \"x\", apiKey: process.env.TOOLSHED_KEY! });",
      "```",
    ].join("\n");
    expect([...variablesExported(shellBlocks(planted)[0]!.text)].sort()).toEqual(["A_KEY", "TOOLSHED_URL"]);
    expect(environmentRead('x = os.environ["A"]\ny = process.env.B ?? "b"; z = process.env.C!').map((r) => r.name)).toEqual(["A", "C"]);
    expect(unexportedEnvironment(planted, new Set(["TOOLSHED_KEY"]))).toEqual([
      "line 7: TOOLSHED_APPROVE_KEY is read from the environment, and neither this page nor the README's tour exports it",
      "line 8: B is read from the environment, and neither this page nor the README's tour exports it",
    ]);
  });
});
