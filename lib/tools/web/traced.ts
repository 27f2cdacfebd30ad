/**
 * A traced web transport (docs/tracing.md): every request web_fetch, a webhook or the model
 * endpoint sends is a client span `web.fetch`. Attributes: method, host and status; never the
 * path or query (they can hold tokens), never a header or a body.
 */
import type { Tracer } from "../../shared/trace.js";
import type { WebFetcher } from "./transport.js";

export function tracedFetcher(base: WebFetcher, tracer: Tracer): WebFetcher {
  return {
    check: (url, host, guard) => base.check(url, host, guard),
    fetch: (url, init, host, guard) => {
      if (!tracer.current()) return base.fetch(url, init, host, guard);
      const attributes = { "http.request.method": (init.method ?? "GET").toUpperCase(), "server.address": url.hostname, "url.scheme": url.protocol.replace(/:$/, "") };
      return tracer.span(
        "web.fetch",
        async (span) => {
          const res = await base.fetch(url, init, host, guard);
          span.set("http.response.status_code", res.status);
          return res;
        },
        { kind: "client", attributes },
      );
    },
  };
}
