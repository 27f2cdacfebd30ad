/**
 * Secret values taken out of a response body as its bytes arrive, before anything reads them: the
 * HTML → markdown step (which escapes `_` and `*`), the cut at max_bytes or at an error's excerpt
 * (which would keep a value's first characters), a JSON answer (which escapes `"` and `\`) never see
 * one. Each value, and its JSON-escaped form when that differs, becomes its placeholder. The last
 * (longest pattern − 1) bytes are held back until the next chunk, so a value split across chunks is
 * still found; a reader that stops early (a cut) never gets a held-back tail. Pure: Workers and Node.
 */

export interface Replacement {
  /** The text to find (a secret's value). */
  find: string;
  /** What stands in for it (its placeholder). */
  put: string;
}

const utf8 = new TextEncoder();

/** Every byte pattern of the replacements: the value, and its JSON-escaped form when that differs. */
function patterns(replacements: readonly Replacement[]): { find: Uint8Array; put: Uint8Array }[] {
  const out: { find: Uint8Array; put: Uint8Array }[] = [];
  for (const r of replacements) {
    const put = utf8.encode(r.put);
    const json = JSON.stringify(r.find).slice(1, -1);
    for (const form of new Set([r.find, json])) if (form) out.push({ find: utf8.encode(form), put });
  }
  return out;
}

function startsAt(buf: Uint8Array, at: number, find: Uint8Array): boolean {
  if (at + find.length > buf.length) return false;
  for (let i = 1; i < find.length; i++) if (buf[at + i] !== find[i]) return false;
  return true;
}

/** The first whole match at or after `from`: where, and which pattern (the longest there). */
function firstMatch(buf: Uint8Array, from: number, all: { find: Uint8Array; put: Uint8Array }[]): { at: number; find: Uint8Array; put: Uint8Array } | null {
  let best: { at: number; find: Uint8Array; put: Uint8Array } | null = null;
  for (const p of all) {
    for (let at = buf.indexOf(p.find[0]!, from); at >= 0 && (!best || at <= best.at); at = buf.indexOf(p.find[0]!, at + 1)) {
      if (!startsAt(buf, at, p.find)) continue;
      if (!best || at < best.at || p.find.length > best.find.length) best = { at, ...p };
      break;
    }
  }
  return best;
}

const concat = (parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.length);
  return out;
};

/** `body` with every replacement made; `replacements` is read when the body is first pulled (the values of every hop so far). */
export function redactStream(body: ReadableStream<Uint8Array>, replacements: () => readonly Replacement[]): ReadableStream<Uint8Array> {
  let all: { find: Uint8Array; put: Uint8Array }[] | undefined;
  let hold = 0;
  let held: Uint8Array = new Uint8Array(0);
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        all ??= patterns(replacements());
        if (all.length === 0) return controller.enqueue(chunk);
        hold ||= Math.max(...all.map((p) => p.find.length)) - 1;
        const buf = held.length ? concat([held, chunk]) : chunk;
        const out: Uint8Array[] = [];
        let from = 0;
        for (let m = firstMatch(buf, 0, all); m; m = firstMatch(buf, from, all)) {
          out.push(buf.subarray(from, m.at), m.put);
          from = m.at + m.find.length;
        }
        const keep = Math.max(from, buf.length - hold);
        out.push(buf.subarray(from, keep));
        held = buf.slice(keep);
        const ready = concat(out);
        if (ready.length) controller.enqueue(ready);
      },
      flush(controller) {
        if (held.length) controller.enqueue(held);
      },
    }),
  );
}

/** The same replacements over a string (what redactStream does to bytes). */
export function redactText(text: string, replacements: readonly Replacement[]): string {
  let out = text;
  for (const r of replacements) {
    const json = JSON.stringify(r.find).slice(1, -1);
    for (const form of new Set([r.find, json])) if (form) out = out.split(form).join(r.put);
  }
  return out;
}
