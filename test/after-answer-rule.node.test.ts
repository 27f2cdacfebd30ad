/**
 * The rule that keeps "one way to run work after the answer" (lib/shared/after-answer.ts): no code in
 * lib, functions or infra calls a waitUntil itself. Handing it a promise runs the work's synchronous
 * prefix before the answer; afterAnswer (a thunk, started after the answer) or finishAfterAnswer
 * (work that must start before it, with the caller's reason) is the way.
 *
 * A waitUntil is found by its declaration (syntax only, TypeScript's parser; no type check): a
 * parameter, variable or member typed `WaitUntil` or `(p: Promise<unknown>) => void` (optionally
 * `| undefined` / `| null`), a member named `waitUntil`, and a local bound to one of those
 * (`const keep = scope.background`, `const bg = backgroundOf(c)`). A call of any of them outside the
 * few files that own the runtime's waitUntil is a violation. The rule is seen failing on planted code.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/dependency-rules.js";

/** The files that own the runtime's waitUntil, and why each may call it. */
const OWNERS: Record<string, string> = {
  "lib/shared/after-answer.ts": "the helper itself",
  "lib/api/routes/common.ts": "backgroundOf wraps the request's executionCtx.waitUntil as a WaitUntil",
  "lib/runtime/lambda-stream.ts": "implements waitUntil on Lambda and settles the usage sink under it",
  "infra/cloudflare.ts": "the cron's scheduled handler: there is no answer to run after",
};

const WAIT_UNTIL_TYPE = /^\(?\s*(WaitUntil|\(\s*\w+\s*:\s*Promise<unknown>\s*\)\s*=>\s*void)\s*\)?(\s*\|\s*(undefined|null))*$/;

/** Names of members typed as a waitUntil anywhere (called as `x.name(...)`). */
function memberNames(sources: readonly ts.SourceFile[]): Set<string> {
  const names = new Set(["waitUntil"]);
  const visit = (n: ts.Node): void => {
    if ((ts.isPropertySignature(n) || ts.isPropertyDeclaration(n) || ts.isParameter(n)) && n.type && WAIT_UNTIL_TYPE.test(n.type.getText()) && ts.isIdentifier(n.name)) {
      // A constructor's `private readonly x: WaitUntil` is a member too; a plain parameter is only local, but a name shared by both is the same value by convention.
      if (!ts.isParameter(n) || n.modifiers?.length) names.add(n.name.text);
    }
    ts.forEachChild(n, visit);
  };
  for (const s of sources) visit(s);
  return names;
}

/** Where `source` calls a waitUntil itself: "line: code" for each call. */
export function waitUntilCalls(source: ts.SourceFile, members: ReadonlySet<string>): string[] {
  const locals = new Set<string>();
  const isWaitUntilExpr = (e: ts.Expression): boolean => {
    if (ts.isPropertyAccessExpression(e)) return members.has(e.name.text);
    if (ts.isCallExpression(e) && ts.isIdentifier(e.expression)) return e.expression.text === "backgroundOf";
    if (ts.isIdentifier(e)) return locals.has(e.text);
    if (ts.isBinaryExpression(e) && (e.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken || e.operatorToken.kind === ts.SyntaxKind.BarBarToken)) return isWaitUntilExpr(e.left) || isWaitUntilExpr(e.right);
    if (ts.isParenthesizedExpression(e)) return isWaitUntilExpr(e.expression);
    return false;
  };
  const declare = (n: ts.Node): void => {
    if ((ts.isParameter(n) || ts.isVariableDeclaration(n)) && ts.isIdentifier(n.name)) {
      if ((n.type && WAIT_UNTIL_TYPE.test(n.type.getText())) || (ts.isVariableDeclaration(n) && n.initializer && isWaitUntilExpr(n.initializer))) locals.add(n.name.text);
    }
    ts.forEachChild(n, declare);
  };
  declare(source);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && n.arguments.length > 0) {
      // (A waitUntil always takes its promise: `call.background()`, with none, is a getter of one.)
      const callee = n.expression;
      const calls = ts.isIdentifier(callee) ? locals.has(callee.text) : ts.isPropertyAccessExpression(callee) && members.has(callee.name.text);
      if (calls) found.push(`${source.getLineAndCharacterOfPosition(n.getStart()).line + 1}: ${n.getText().slice(0, 120)}`);
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return found;
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(join(REPO_ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") && !e.name.includes(".generated."))
    .map((e) => relative(REPO_ROOT, join(e.parentPath, e.name)));
}

const parse = (path: string, text: string) => ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);

describe("one way to run work after the answer (lib/shared/after-answer.ts)", () => {
  const files = ["lib", "functions", "infra"].flatMap(sourcesUnder);
  const sources = files.map((f) => parse(f, readFileSync(join(REPO_ROOT, f), "utf8")));
  const members = memberNames(sources);

  it("finds the waitUntil members the code passes around (the rule sees what it checks)", () => {
    for (const name of ["waitUntil", "background", "later"]) expect(members).toContain(name);
  });

  it("no file but the waitUntil's owners calls a waitUntil: work goes through afterAnswer or finishAfterAnswer", () => {
    const violations = sources.flatMap((s) => (OWNERS[s.fileName] ? [] : waitUntilCalls(s, members).map((c) => `${s.fileName}:${c}`)));
    expect(violations, `call afterAnswer(waitUntil, what, () => work, otherwise) instead (or finishAfterAnswer with a comment saying why the work must start before the answer):\n${violations.join("\n")}`).toEqual([]);
    for (const owner of Object.keys(OWNERS)) expect(files, `${owner} is named as an owner but does not exist`).toContain(owner);
  });

  it("is seen failing on planted calls: a promise handed to a waitUntil by any of the names it goes by", () => {
    const planted = parse(
      "planted.ts",
      `import type { WaitUntil } from "x";
      export function f(background: WaitUntil | undefined, later?: (p: Promise<unknown>) => void, ctx?: { waitUntil(p: Promise<unknown>): void }, scope?: { background?: WaitUntil }) {
        background?.(work());
        if (later) later(work());
        ctx?.waitUntil(work());
        const keep = scope?.background;
        keep?.(work());
        const bg = backgroundOf(c);
        if (bg) bg(work());
        this.background(work());
        call.background();
        afterAnswer(background, "fine", () => work(), "await");
      }`,
    );
    const found = waitUntilCalls(planted, members);
    expect(found.map((l) => l.split(": ")[1])).toEqual(["background?.(work())", "later(work())", "ctx?.waitUntil(work())", "keep?.(work())", "bg(work())", "this.background(work())"]);
  });
});
