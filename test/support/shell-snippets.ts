/**
 * The shell commands of markdown pages (```sh, ```bash and ```shell blocks), read the way a reader
 * pastes them: which variables they use, which they set, and which placeholders (`<id>`) a shell
 * would take for a redirection. Pure over strings, so a planted unset variable is a test input.
 */

export interface ShellBlock {
  /** 1-based line of the block's first command. */
  line: number;
  text: string;
}

const SHELL_FENCE = /^\s*```(sh|bash|shell)\s*$/;

/** The page's shell blocks, in order. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  let open: ShellBlock | null = null;
  markdown.split("\n").forEach((line, i) => {
    if (open) {
      if (/^\s*```/.test(line)) {
        blocks.push(open);
        open = null;
      } else open.text += `${line}\n`;
    } else if (SHELL_FENCE.test(line)) open = { line: i + 2, text: "" };
  });
  return blocks;
}

/**
 * A block as the shell expands it: comments dropped, single-quoted text (which the shell leaves
 * alone, across lines too) blanked, lines kept in place. Double quotes and `$(…)` stay: variables
 * expand there.
 */
function expandedText(block: string): string {
  return scanned(block).text;
}

/** The block's comments (`# …` outside quotes, to the end of the line), in order, without the `#`. */
export function shellComments(block: string): string[] {
  return scanned(block).comments;
}

/** One pass over a block: its text as the shell expands it (expandedText) and the comments it dropped. */
function scanned(block: string): { text: string; comments: string[] } {
  const comments: string[] = [];
  let out = "";
  let quote: "'" | '"' | null = null;
  let comment = false;
  for (let i = 0; i < block.length; i++) {
    const ch = block[i]!;
    if (ch === "\n") {
      comment = false;
      out += ch;
      continue;
    }
    if (comment) {
      comments[comments.length - 1] += ch;
      continue;
    }
    if (quote === "'") {
      if (ch === "'") quote = null;
      out += " ";
      continue;
    }
    if (ch === "\\" && i + 1 < block.length) {
      out += block[i + 1] === "$" ? "  " : ch + block[i + 1];
      i++;
      continue;
    }
    if (quote === null && ch === "'") {
      quote = "'";
      out += " ";
      continue;
    }
    if (ch === '"') quote = quote === '"' ? null : '"';
    if (quote === null && ch === "#" && (i === 0 || /\s/.test(block[i - 1]!))) {
      comment = true;
      comments.push("");
      continue;
    }
    out += ch;
  }
  return { text: out, comments };
}

/** Names the block reads as `$NAME` or `${NAME…}`, each with its line in the block (0-based), in order. */
export function variablesUsed(block: string): { name: string; line: number }[] {
  return expandedText(block)
    .split("\n")
    .flatMap((text, line) => [...text.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => ({ name: m[1]!, line })));
}

/** Names the block assigns: `NAME=…`, `export NAME=…`, `for NAME in …`, `read NAME`. */
export function variablesSet(block: string): Set<string> {
  const text = expandedText(block);
  const names = [
    ...text.matchAll(/(?:^|[\s;&|(])(?:export\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=/gm),
    ...text.matchAll(/\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b/g),
    ...text.matchAll(/\bread\s+(?:-\w+\s+)*([A-Za-z_][A-Za-z0-9_]*)/g),
  ];
  return new Set(names.map((m) => m[1]!));
}

/** Placeholders like `<id>` outside quotes, each with its line in the block: pasted, the shell reads them as a redirection from a file. */
export function bareAngleBrackets(block: string): { text: string; line: number }[] {
  return expandedText(block)
    .split("\n")
    .flatMap((text, line) => [...text.replace(/"[^"]*"/g, " ").matchAll(/<[A-Za-z][\w .-]*>/g)].map((m) => ({ text: m[0], line })));
}

/** Variables the block sets to a placeholder (`KEY=tsk_...`), each with its line in the block: pasted, the variable holds the dots, and a value set before (the tour's) is lost. */
export function placeholderAssignments(block: string): { name: string; line: number }[] {
  return expandedText(block)
    .split("\n")
    .flatMap((text, line) => [...text.matchAll(/(?:^|[\s;&|(])(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=("[^"]*\.\.\.[^"]*"|[^\s"]*\.\.\.\S*)/g)].map((m) => ({ name: m[1]!, line })));
}

/**
 * What a reader meets pasting a page's blocks after the README's tour: each use of a variable that
 * no block of the page sets, nor the tour (`given`: the names it sets), nor the shell itself
 * (`environment`), each bare placeholder, and each variable set to a placeholder, as `line N: …`
 * (N: the line of the page).
 */
export function unsetShellVariables(markdown: string, given: ReadonlySet<string>, environment: ReadonlySet<string>): string[] {
  const blocks = shellBlocks(markdown);
  const setOnPage = new Set(blocks.flatMap((b) => [...variablesSet(b.text)]));
  const problems: string[] = [];
  for (const b of blocks) {
    for (const { name, line } of variablesUsed(b.text)) {
      if (!setOnPage.has(name) && !given.has(name) && !environment.has(name)) problems.push(`line ${b.line + line}: $${name} is set neither on this page nor in the README's tour`);
    }
    for (const { text, line } of bareAngleBrackets(b.text)) problems.push(`line ${b.line + line}: ${text} outside quotes is a redirection from a file when pasted`);
    for (const { name, line } of placeholderAssignments(b.text)) problems.push(`line ${b.line + line}: ${name} is set to a placeholder (…): pasted, it holds the dots`);
  }
  return problems;
}

/** Names the block exports to the programs it starts: `export NAME=…`, `export NAME`. */
export function variablesExported(block: string): Set<string> {
  const words = [...expandedText(block).matchAll(/(?:^|[\s;&|(])export[ \t]+([^;&|\n]*)/g)].flatMap((m) => m[1]!.trim().split(/[ \t]+/));
  return new Set(words.flatMap((w) => /^([A-Za-z_][A-Za-z0-9_]*)(?:=|$)/.exec(w)?.[1] ?? []));
}

/** The environment variables a Python or TypeScript example reads with no default, each with its line in the block: `os.environ["X"]`, `process.env.X` (not before `??` or `||`). */
export function environmentRead(code: string): { name: string; line: number }[] {
  return code.split("\n").flatMap((text, line) => [
    ...[...text.matchAll(/os\.environ\[\s*["']([A-Za-z_][A-Za-z0-9_]*)["']\s*\]/g)].map((m) => ({ name: m[1]!, line })),
    ...[...text.matchAll(/process\.env\.([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*(?:\?\?|\|\|))/g)].map((m) => ({ name: m[1]!, line })),
  ]);
}

/**
 * What a reader meets running a page's Python and TypeScript examples from the shell of the
 * README's tour: each variable an example reads that neither the tour (`given`: the names it
 * exports) nor a shell block of the page exports, as `line N: …` (N: the line of the page).
 * A variable set but not exported (`B=…`) is not in the environment of `python3` or `node`.
 */
export function unexportedEnvironment(markdown: string, given: ReadonlySet<string>): string[] {
  const exported = new Set([...given, ...shellBlocks(markdown).flatMap((b) => [...variablesExported(b.text)])]);
  const problems: string[] = [];
  for (const m of markdown.matchAll(/^```(?:python|ts|typescript|js|javascript)\n([\s\S]*?)^```/gm)) {
    const first = markdown.slice(0, m.index).split("\n").length + 1;
    for (const { name, line } of environmentRead(m[1]!)) {
      if (!exported.has(name)) problems.push(`line ${first + line}: ${name} is read from the environment, and neither this page nor the README's tour exports it`);
    }
  }
  return problems;
}
