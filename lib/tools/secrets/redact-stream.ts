/**
 * Secret values taken out of a response body as its bytes arrive, before anything reads them: the
 * HTML → markdown step (which escapes `_` and `*`), the cut at max_bytes or at an error's excerpt
 * (which would keep a value's first characters), a JSON answer (which escapes `"` and `\`) never see
 * one. Each value, in each form it takes in an answer (formsOf), becomes its placeholder. The last
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

/** A base64 run shorter than this is not taken for a value's (too likely to occur by chance). */
const MIN_BASE64_RUN = 12;

/**
 * The forms a value takes in an answer, longest first: as it is; JSON-escaped; percent-encoded (a
 * query string, a redirect's Location: upper- and lower-case hex); base64 and base64url. A value
 * inside base64 text has one of 3 alignments to its 3-byte groups; for each, the run of characters
 * made of the value's bytes alone (no neighbour's bits) is the form, when it is long enough.
 */
export function formsOf(value: string): string[] {
  if (!value) return [];
  const forms = new Set([value, JSON.stringify(value).slice(1, -1)]);
  const percent = encodeURIComponent(value);
  forms.add(percent).add(percent.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()));
  const bytes = utf8.encode(value);
  for (let lead = 0; lead < 3; lead++) {
    const aligned = new Uint8Array(lead + bytes.length);
    aligned.set(bytes, lead);
    let binary = "";
    for (const b of aligned) binary += String.fromCharCode(b);
    // A group with a neighbour's byte in it is left out: the first when the value starts mid-group, the last partial one.
    const run = btoa(binary).slice(lead ? 4 : 0, Math.floor(aligned.length / 3) * 4);
    if (run.length >= MIN_BASE64_RUN) forms.add(run).add(run.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/** Every byte pattern of the replacements: each form of each value (formsOf). */
function patterns(replacements: readonly Replacement[]): { find: Uint8Array; put: Uint8Array }[] {
  const out: { find: Uint8Array; put: Uint8Array }[] = [];
  for (const r of replacements) {
    const put = utf8.encode(r.put);
    for (const form of formsOf(r.find)) out.push({ find: utf8.encode(form), put });
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
  for (const r of replacements) for (const form of formsOf(r.find)) out = out.split(form).join(r.put);
  return out;
}
