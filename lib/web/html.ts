/**
 * HTML → clean Markdown or plain text for web_fetch, with node-html-parser (a pure-JS parser:
 * runs in Workers, which have no DOM) and node-html-markdown. Page chrome (scripts, styles,
 * navigation, headers, footers, hidden parts) is removed first; when the page marks its main
 * content (<main>, <article>, role=main) only that is kept. Code blocks keep their language
 * (from language-x / lang-x / highlight-x classes) and a fence longer than any backtick run
 * inside; images become `[Image: alt]`.
 */
import { NodeHtmlMarkdown, type TranslatorConfigObject } from "node-html-markdown";
import { parse, type HTMLElement } from "node-html-parser";

/** Removed before conversion: never content an agent asked for. */
const CHROME = [
  "script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas", "form", "button", "select", "input", "textarea",
  "nav", "header", "footer", "aside", "dialog", "[role=navigation]", "[role=banner]", "[role=contentinfo]", "[role=search]", "[role=dialog]",
  "[hidden]", "[aria-hidden=true]", ".sidebar", ".toc", "#sidebar", "#toc", ".skip-link",
].join(",");

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

/** The part of the page worth reading, chrome removed, links made absolute against `base`. */
function mainContent(html: string, base?: string): { title?: string; body: HTMLElement } {
  const root = parse(html, { comment: false, blockTextElements: { script: false, style: false, noscript: false, pre: true } });
  const titleText = root.querySelector("title")?.textContent.trim().replace(/\s+/g, " ");
  for (const el of root.querySelectorAll(CHROME)) el.remove();
  const main = root.querySelector("main, article, [role=main]") ?? root.querySelector("body") ?? root;
  if (base) {
    for (const a of main.querySelectorAll("a[href]")) {
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

export function htmlToMarkdown(html: string, base?: string): ConvertedPage {
  const { title, body } = mainContent(html, base);
  const content = converter().translate(body.innerHTML).replace(/\n{3,}/g, "\n\n").trim();
  return { ...(title ? { title } : {}), content };
}

export function htmlToText(html: string): ConvertedPage {
  const { title, body } = mainContent(html);
  const content = body.structuredText.replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
  return { ...(title ? { title } : {}), content };
}

/** The <title> of a page kept as HTML (format: "html"). */
export function htmlTitle(html: string): string | undefined {
  const m = html.match(/<title[^>]*>([\s\S]*?)<\/title>/i);
  const t = m?.[1] ? parse(m[1]).textContent.trim().replace(/\s+/g, " ") : "";
  return t || undefined;
}
