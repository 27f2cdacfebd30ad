/**
 * Empties the workers project's local R2 bucket and KV namespace. The project runs without per-file
 * isolation (vitest.config.ts: one runtime and one module graph for the files a pool worker runs in
 * turn), so what one file wrote would otherwise be there for the next: test/support/workers-file-setup.ts
 * calls this before every file, the one place that gives each file the empty storage it had when
 * every file got its own runtime. Durable Objects are not emptied: their state is per tenant, and
 * every test makes its own tenants.
 */
import { env } from "cloudflare:workers";
import { kvKeys } from "./local-storage-keys.js";

const PAGE = 1000; // R2's most keys per list and per delete

export async function emptyLocalStorage(): Promise<void> {
  for (;;) {
    const page = await env.FILES.list({ limit: PAGE });
    if (page.objects.length === 0) break;
    await env.FILES.delete(page.objects.map((o) => o.key));
  }
  const names = await kvKeys();
  for (let i = 0; i < names.length; i += 100) await Promise.all(names.slice(i, i + 100).map((n) => env.KV.delete(n)));
}
