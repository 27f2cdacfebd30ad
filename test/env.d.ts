// Bindings the Workers test project sees (from wrangler.toml and vitest.config.ts).
declare namespace Cloudflare {
  interface Env {
    FILES: R2Bucket;
    KV: KVNamespace;
    USAGE: DurableObjectNamespace;
    LIMITS: DurableObjectNamespace;
    LIVE: DurableObjectNamespace;
    TOOLSHED_ADMIN_TOKEN: string;
  }
}
