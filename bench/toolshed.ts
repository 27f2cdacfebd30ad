/** HTTP client for the Toolshed under test: tenants, uploads through the raw files route, tool calls. */
import type { WorkerProcess } from "../test/support/wrangler-dev.ts";
import { setupTenant } from "../test/support/wrangler-dev.ts";
import { timed } from "./stats.ts";

export interface Envelope {
  ok: boolean;
  output?: string;
  data?: any;
  error?: { code: string; message: string };
}

export class ToolshedClient {
  readonly url: string;
  readonly key: string;
  readonly ws: string;
  constructor(url: string, key: string, ws: string) {
    this.url = url;
    this.key = key;
    this.ws = ws;
  }

  static async create(w: WorkerProcess, tenant: string, ws: string): Promise<ToolshedClient> {
    const { key } = await benchTenant(w, tenant, ws);
    return new ToolshedClient(w.url, key, ws);
  }

  /** One tool call (`headers`: more request headers, e.g. Idempotency-Key): wall time of the request and its whole JSON body. Throws on ok: false. */
  async call(tool: string, args: unknown, session = "bench", headers: Record<string, string> = {}): Promise<{ ms: number; body: Envelope }> {
    const { ms, value } = await timed(async () => {
      const r = await fetch(`${this.url}/v1/workspaces/${this.ws}/tools/${tool}`, {
        method: "POST",
        headers: { authorization: `Bearer ${this.key}`, "content-type": "application/json", "x-session-id": session, ...headers },
        body: JSON.stringify(args),
      });
      return (await r.json()) as Envelope;
    });
    if (!value.ok) throw new Error(`${tool}: ${value.error?.code}: ${value.error?.message}`);
    return { ms, body: value };
  }

  async put(path: string, content: string): Promise<void> {
    const encoded = path.split("/").map(encodeURIComponent).join("/");
    const r = await fetch(`${this.url}/v1/workspaces/${this.ws}/files/${encoded}`, { method: "PUT", headers: { authorization: `Bearer ${this.key}` }, body: content });
    if (!r.ok) throw new Error(`PUT ${path}: ${r.status} ${await r.text()}`);
    await r.arrayBuffer();
  }

  /** Uploads every file with `concurrency` requests in flight; returns the wall time. */
  async upload(files: { path: string; text: string }[], concurrency = 8, onProgress?: (done: number) => void): Promise<number> {
    let next = 0;
    let done = 0;
    const t = performance.now();
    const worker = async () => {
      while (next < files.length) {
        const f = files[next++]!;
        await this.put(f.path, f.text);
        if (++done % 1000 === 0) onProgress?.(done);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return performance.now() - t;
  }

  /** The tool names this server offers. */
  async tools(): Promise<string[]> {
    const r = await fetch(`${this.url}/v1/tools`, { headers: { authorization: `Bearer ${this.key}` } });
    const body = (await r.json()) as any;
    const list: any[] = Array.isArray(body) ? body : (body.tools ?? body.data?.tools ?? []);
    return list.map((t) => (typeof t === "string" ? t : t.name));
  }
}

/**
 * A bench's tenant: setupTenant's, with calls_per_minute raised out of the way (a bench measures
 * speed, not the default limit: one PUT per file outruns 1,200 calls a minute since the raw PUT got
 * cheaper). Every bench that uploads through the API makes its tenant here. Where the deployment has
 * no limits (TOOLSHED_BUSINESS_OFF) there is nothing to raise.
 */
export async function benchTenant(w: WorkerProcess, tenant: string, ws = "main"): ReturnType<typeof setupTenant> {
  const t = await setupTenant(w, tenant, ws);
  const r = await fetch(`${w.url}/v1/admin/tenants/${tenant}/limits`, { method: "PUT", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ calls_per_minute: 100_000 }) });
  // A deployment with limits turned off (TOOLSHED_BUSINESS_OFF, the business rows' "off" side) has none to raise.
  const off = r.status === 503 && ((await r.clone().json().catch(() => null)) as { error?: { code?: string } } | null)?.error?.code === "UNAVAILABLE";
  if (!r.ok && !off) throw new Error(`raise ${tenant}'s calls_per_minute: ${r.status} ${await r.text()}`);
  return t;
}
