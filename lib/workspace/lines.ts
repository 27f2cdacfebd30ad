/**
 * Pages of lines out of a byte stream, without holding the file: lines before `offset`
 * are counted at the byte level (never decoded), the page is decoded line by line, and
 * the stream is cancelled as soon as the page is full (unless counting to the end is cheap).
 */
export interface LinePage {
  /** Lines of the page, without their line terminators ("\r" of CRLF removed). */
  lines: string[];
  /** 1-based number of the first line returned. */
  start: number;
  /** Lines cut at maxLineChars. */
  cutLines: number;
  /** Why the page ended. */
  stoppedBy: "eof" | "limit" | "bytes";
  /** Lines in the file, when the whole stream was read. */
  totalLines?: number;
}

export interface LinePageOptions {
  offset: number;
  limit: number;
  /** Stop before the page's text exceeds this many bytes. */
  maxBytes: number;
  maxLineChars: number;
  /** Keep counting lines to the end when the file is at most this big (to report total_lines). */
  countBelowBytes: number;
  size: number;
}

const decoder = new TextDecoder("utf-8");

export async function readLinePage(body: ReadableStream<Uint8Array>, o: LinePageOptions): Promise<LinePage> {
  const reader = body.getReader();
  const page: LinePage = { lines: [], start: o.offset, cutLines: 0, stoppedBy: "eof" };
  let line = 1; // number of the line being read
  let pending: Uint8Array[] = []; // bytes of the current line, in the page window
  let pageBytes = 0;
  let full = false;
  let tailBytes = 0; // bytes since the last line feed

  const emit = (bytes: Uint8Array[]) => {
    let text = decoder.decode(concat(bytes));
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.length > o.maxLineChars) {
      text = `${text.slice(0, o.maxLineChars)}… [line cut: ${text.length} characters]`;
      page.cutLines++;
    }
    const cost = text.length + 8;
    if (page.lines.length > 0 && pageBytes + cost > o.maxBytes) {
      page.stoppedBy = "bytes";
      return false;
    }
    pageBytes += cost;
    page.lines.push(text);
    if (page.lines.length >= o.limit) page.stoppedBy = "limit";
    return page.lines.length < o.limit;
  };

  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let pos = 0;
      while (pos <= value.length) {
        const nl = value.indexOf(10, pos);
        const end = nl === -1 ? value.length : nl;
        if (!full && line >= o.offset) pending.push(value.subarray(pos, end));
        if (nl === -1) {
          tailBytes += value.length - pos;
          break;
        }
        tailBytes = 0;
        if (!full && line >= o.offset) {
          full = !emit(pending);
          pending = [];
        }
        line++;
        pos = nl + 1;
      }
      if (full && o.size > o.countBelowBytes) {
        await reader.cancel();
        return page;
      }
    }
    // The last line has no terminator: it counts only if it has bytes.
    const lastHasBytes = tailBytes > 0;
    if (!full && line >= o.offset && lastHasBytes) {
      full = !emit(pending);
    }
    page.totalLines = lastHasBytes ? line : line - 1;
    if (!full) page.stoppedBy = "eof";
    else if (page.start + page.lines.length - 1 >= page.totalLines) page.stoppedBy = "eof";
    return page;
  } finally {
    reader.releaseLock();
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
