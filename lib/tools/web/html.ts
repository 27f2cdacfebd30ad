/**
 * HTML → clean Markdown or plain text for web_fetch, with node-html-parser (a pure-JS parser:
 * runs in Workers, which have no DOM) and node-html-markdown. Page chrome (scripts, styles,
 * navigation, headers, footers, hidden parts) is removed first; when the page marks its main
 * content (<main>, <article>, role=main) only that is kept. Code blocks keep their language
 * (from language-x / lang-x / highlight-x classes) and a fence longer than any backtick run
 * inside; images become `[Image: alt]`.
 */
import { NodeHtmlMarkdown, type TranslatorConfigObject } from "node-html-markdown";
import { NodeType, parse, TextNode, type HTMLElement, type Node } from "node-html-parser";

/**
 * Removed before conversion: never content an agent asked for. Matched by our own walk, not
 * querySelectorAll: node-html-parser's selector engine gathers matches with a copying concat,
 * quadratic in the page's elements (a 1.8 MB page of 40,000 paragraphs took 40 s).
 */
const CHROME_TAGS = new Set(["script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas", "form", "button", "select", "input", "textarea", "nav", "header", "footer", "aside", "dialog"]);
const CHROME_ROLES = new Set(["navigation", "banner", "contentinfo", "search", "dialog"]);
const CHROME_CLASSES = ["sidebar", "toc", "skip-link"];
const CHROME_IDS = new Set(["sidebar", "toc"]);

const isChrome = (el: HTMLElement): boolean =>
  CHROME_TAGS.has(el.tagName?.toLowerCase() ?? "") ||
  CHROME_ROLES.has(el.getAttribute("role") ?? "") ||
  el.hasAttribute("hidden") ||
  el.getAttribute("aria-hidden") === "true" ||
  CHROME_IDS.has(el.id) ||
  CHROME_CLASSES.some((c) => el.classList.contains(c));

const isMain = (el: HTMLElement): boolean => el.tagName === "MAIN" || el.tagName === "ARTICLE" || el.getAttribute("role") === "main";

/**
 * The elements below `root` that `match`, in document order; a match's own descendants are
 * searched only when `inside` (else only the outermost matches). Iterative: any depth, linear.
 */
function elementsWhere(root: HTMLElement, match: (el: HTMLElement) => boolean, inside: boolean): HTMLElement[] {
  const found: HTMLElement[] = [];
  const walk: Node[] = [...root.childNodes].reverse();
  while (walk.length) {
    const el = walk.pop() as HTMLElement;
    if (el.nodeType !== NodeType.ELEMENT_NODE) continue;
    const hit = match(el);
    if (hit) found.push(el);
    if (!hit || inside) for (let i = el.childNodes.length - 1; i >= 0; i--) walk.push(el.childNodes[i]!);
  }
  return found;
}

const LANG_CLASS = /(?:^|\s)(?:language|lang|highlight|brush:?)-?([A-Za-z0-9_+#.-]+)/;

function codeLanguage(pre: HTMLElement): string {
  const code = pre.querySelector("code");
  for (let el: HTMLElement | null = code ?? pre, depth = 0; el && depth < 4; el = el.parentNode as HTMLElement | null, depth++) {
    const m = (el.getAttribute?.("class") ?? "").match(LANG_CLASS);
    if (m && !/^(source|default|none|notranslate)$/i.test(m[1]!)) return m[1]!.toLowerCase();
  }
  return "";
}

const translators: TranslatorConfigObject = {
  pre: ({ node }) => {
    const el = node as unknown as HTMLElement;
    const text = el.textContent.replace(/\n+$/, "");
    const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((r) => r.length));
    const fence = "`".repeat(longest + 1);
    return { content: `${fence}${codeLanguage(el)}\n${text}\n${fence}`, recurse: false, noEscape: true, surroundingNewlines: 2, preserveWhitespace: true };
  },
  img: ({ node }) => {
    const alt = (node.getAttribute("alt") ?? "").trim().replace(/\s+/g, " ");
    return alt ? { content: `[Image: ${alt.replace(/[[\]]/g, "")}]`, recurse: false } : { ignore: true };
  },
};

const converter = () =>
  new NodeHtmlMarkdown({ codeBlockStyle: "fenced", bulletMarker: "-", maxConsecutiveNewlines: 2, useLinkReferenceDefinitions: false, keepDataImages: false }, translators);

export interface ConvertedPage {
  title?: string;
  content: string;
}

/** The one outermost element marked as the main content, if the page marks exactly one (a list of articles keeps the body). */
function marked(root: HTMLElement): HTMLElement | null {
  const outer = elementsWhere(root, isMain, false);
  return outer.length === 1 ? outer[0]! : null;
}

/**
 * How deep elements may nest before what is below becomes plain text. Real pages stay far below it; a
 * hostile one (8,000 nested <span>s: 48 KB) made the converters recurse past the stack or, unclosed,
 * spin the parser's tag repair for minutes.
 */
export const MAX_HTML_DEPTH = 100;

/**
 * Every element at MAX_HTML_DEPTH keeps its text (one text node, all its descendants' text in order)
 * and loses the elements below it, so no later step (selectors, conversion, toString) recurses deeper.
 * Iterative: the tree may be any depth here.
 */
function flattenDeep(root: HTMLElement): void {
  const walk: [Node, number][] = [[root, 0]];
  while (walk.length) {
    const [node, depth] = walk.pop()!;
    const el = node as HTMLElement;
    if (!el.childNodes?.length) continue;
    if (depth < MAX_HTML_DEPTH) {
      for (const child of el.childNodes) walk.push([child, depth + 1]);
      continue;
    }
    let text = "";
    const below: Node[] = [...el.childNodes].reverse();
    while (below.length) {
      const n = below.pop()!;
      if (n instanceof TextNode) text += n.rawText;
      else if ((n as HTMLElement).childNodes?.length) for (let i = (n as HTMLElement).childNodes.length - 1; i >= 0; i--) below.push((n as HTMLElement).childNodes[i]!);
    }
    el.childNodes.length = 0;
    el.appendChild(new TextNode(text, el));
  }
}

/** The part of the page worth reading, chrome removed, links made absolute against `base`. */
function mainContent(html: string, base?: string): { title?: string; body: HTMLElement } {
  // parseNoneClosedTags: unclosed tags stay nested as a browser keeps them; the parser's repair of them is quadratic in their depth.
  const root = parse(html, { comment: false, parseNoneClosedTags: true, blockTextElements: { script: false, style: false, noscript: false } });
  flattenDeep(root);
  const titleText = root.querySelector("title")?.textContent.trim().replace(/\s+/g, " ");
  for (const el of elementsWhere(root, isChrome, false)) el.remove();
  const main = marked(root) ?? root.querySelector("body") ?? root;
  if (base) {
    for (const a of elementsWhere(main, (el) => el.tagName === "A" && el.hasAttribute("href"), true)) {
      const href = a.getAttribute("href")!;
      if (href.startsWith("#") || /^(javascript|data):/i.test(href)) {
        if (!href.startsWith("#")) a.removeAttribute("href");
        continue;
      }
      try {
        a.setAttribute("href", new URL(href, base).href);
      } catch {}
    }
  }
  const title = titleText || main.querySelector("h1")?.textContent.trim().replace(/\s+/g, " ") || undefined;
  return { ...(title ? { title } : {}), body: main };
}

/** HTML per conversion: node-html-markdown slows down quadratically on one large document, so large pages go in pieces. */
const CHUNK_CHARS = 32 * 1024;
/** Kept whole even when large: splitting them would break their markdown. */
const ATOMIC = new Set(["PRE", "TABLE", "UL", "OL", "DL", "BLOCKQUOTE", "P", "CODE"]);

function pieces(el: HTMLElement, out: string[] = []): string[] {
  let batch = "";
  for (const child of el.childNodes) {
    const html = child.toString();
    const node = child as HTMLElement;
    if (html.length > CHUNK_CHARS && node.childNodes?.length && !ATOMIC.has(node.tagName ?? "")) {
      if (batch) out.push(batch), (batch = "");
      pieces(node, out);
      continue;
    }
    if (batch.length + html.length > CHUNK_CHARS && batch) out.push(batch), (batch = "");
    batch += html;
  }
  if (batch) out.push(batch);
  return out;
}

/**
 * Converts piece by piece and stops once `limit` characters of markdown are made (the caller cuts
 * there anyway): `complete` says whether the whole page was converted.
 */
export function htmlToMarkdown(html: string, base?: string, limit = Infinity): ConvertedPage & { complete: boolean } {
  const { title, body } = mainContent(html, base);
  const nhm = converter();
  const out: string[] = [];
  let size = 0;
  let complete = true;
  for (const piece of pieces(body)) {
    if (size > limit) {
      complete = false;
      break;
    }
    const md = nhm.translate(piece).trim();
    if (md) out.push(md), (size += md.length + 2);
  }
  const content = out.join("\n\n").replace(/\n{3,}/g, "\n\n").trim();
  return { ...(title ? { title } : {}), content, complete };
}

/** Plain text: the markdown above without its markup (link targets, fences, emphasis, heading marks). */
export function htmlToText(html: string, limit = Infinity): ConvertedPage & { complete: boolean } {
  const { title, content, complete } = htmlToMarkdown(html, undefined, limit);
  return { ...(title ? { title } : {}), content: stripMarkdown(content), complete };
}

/** Markup is removed outside code blocks only; a code block keeps its text and loses its fences. */
function stripMarkdown(md: string): string {
  const parts = md.split(/^(`{3,})[^\n]*\n([\s\S]*?)\n\1$/m);
  let out = "";
  for (let i = 0; i < parts.length; i += 3) {
    out += stripInline(parts[i]!);
    if (i + 2 < parts.length) out += parts[i + 2]!;
  }
  return out.replace(/\n{3,}/g, "\n\n").trim();
}

const stripInline = (md: string): string =>
  md
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/^#{1,6} /gm, "")
    .replace(/\*\*(?=\S)([^\n]*?\S)\*\*/g, "$1")
    .replace(/(^|[\s(])_(?=\S)([^_\n]*?\S)_(?=[\s).,;:!?]|$)/g, "$1$2")
    .replace(/`+([^`\n]+?)`+/g, "$1")
    .replace(/\\([\\`*_{}\[\]()#+.!|-])/g, "$1");

/** The <title> of a page kept as HTML (format: "html"). */
export function htmlTitle(html: string): string | undefined {
  const m = html.match(/<title[^>]*>([\s\S]*?)<\/title>/i);
  const t = m?.[1] ? parse(m[1]).textContent.trim().replace(/\s+/g, " ") : "";
  return t || undefined;
}
