/**
 * Results of recent calls by idempotency key, in memory and on local disk, so a retried
 * invocation returns the stored result instead of running the command twice. A retry that
 * arrives while the first call still runs waits for it. Scope: one execution environment
 * (see the README for retries that land elsewhere).
 */
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import { join } from "node:path";

export class ResultStore<T> {
  private mem = new Map<string, { p: Promise<T>; at: number }>();

  constructor(private readonly dir: string | null, private readonly ttlMs = 15 * 60 * 1000) {}

  private file(key: string): string | null {
    return this.dir ? join(this.dir, `${createHash("sha256").update(key).digest("hex")}.json`) : null;
  }

  private gc(now: number): void {
    for (const [k, v] of this.mem) if (now - v.at > this.ttlMs) this.mem.delete(k);
  }

  /** Runs fn once per key; `keep` says whether a result may be replayed (failures to start are not). */
  async once(key: string, fn: () => Promise<T>, keep: (v: T) => boolean): Promise<T> {
    const now = Date.now();
    this.gc(now);
    const hit = this.mem.get(key);
    if (hit) return hit.p;
    const file = this.file(key);
    // Registered before the first await: a concurrent retry finds it and waits.
    const p = (async () => {
      const st = file ? await fs.stat(file).catch(() => null) : null;
      if (file && st && now - st.mtimeMs < this.ttlMs) return JSON.parse(await fs.readFile(file, "utf8")) as T;
      const v = await fn();
      if (keep(v) && file) {
        await fs.mkdir(this.dir!, { recursive: true, mode: 0o700 });
        await fs.writeFile(file, JSON.stringify(v), { mode: 0o600 });
      }
      return v;
    })();
    this.mem.set(key, { p, at: now });
    try {
      const v = await p;
      if (!keep(v)) this.mem.delete(key);
      return v;
    } catch (e) {
      this.mem.delete(key);
      throw e;
    }
  }
}
