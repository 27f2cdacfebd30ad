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
    const { key } = await setupTenant(w, tenant, ws);
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
