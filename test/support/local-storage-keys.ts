/**
 * Every key of the workers project's local R2 bucket below a prefix, and of its KV namespace, as the
 * bindings list them (R2's hidden tombstones included): what a test that asserts "nothing else was
 * written", or "nothing was left", reads.
 */
import { env } from "cloudflare:workers";

export async function r2Keys(prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix, ...(cursor ? { cursor } : {}) });
    out.push(...page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out;
}

export async function kvKeys(prefix = ""): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.KV.list({ prefix, ...(cursor ? { cursor } : {}) });
    out.push(...page.keys.map((k) => k.name));
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
  return out;
}
