/** Client of the floor routes (bench/floor-ops.ts, inside the same Worker as Toolshed). */
import type { FloorRequest } from "../floor-ops.ts";
import { timed } from "../stats.ts";

export class FloorClient {
  readonly url: string;
  readonly adminToken: string;
  readonly tenant: string;
  readonly ws: string;
  constructor(url: string, adminToken: string, tenant: string, ws: string) {
    this.url = url;
    this.adminToken = adminToken;
    this.tenant = tenant;
    this.ws = ws;
  }

  async op(req: Omit<FloorRequest, "tenant" | "ws">): Promise<{ ms: number; data: any }> {
    const { ms, value } = await timed(async () => {
      const r = await fetch(`${this.url}/__floor`, {
        method: "POST",
        headers: { authorization: `Bearer ${this.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ ...req, tenant: this.tenant, ws: this.ws }),
      });
      const text = await r.text();
      try {
        return JSON.parse(text) as { ok: boolean; data?: any; error?: string };
      } catch {
        return { ok: false, error: `HTTP ${r.status}: ${text.slice(0, 300)}` };
      }
    });
    if (!value.ok) throw new Error(`floor ${req.op}: ${value.error}`);
    return { ms, data: value.data };
  }

  /** Puts the floor's own copy of the files (one object each, bench/floor-ops.ts), 200 per request; the time it took, ms. */
  async seed(files: { path: string; text: string }[]): Promise<number> {
    const { ms } = await timed(async () => {
      for (let i = 0; i < files.length; i += 200) await this.op({ op: "seed", files: files.slice(i, i + 200) });
    });
    return ms;
  }
}
