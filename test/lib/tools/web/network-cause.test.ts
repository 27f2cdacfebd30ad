/** The network's reason for a failed fetch (lib/tools/web/fetch.ts networkCause), as web_fetch, webhooks and task show it. */
import { describe, expect, it } from "vitest";
import { networkCause, transportError } from "../../../../lib/tools/web/fetch.js";

/** undici's shape: TypeError("fetch failed") with the system error as its cause. */
const undici = (code: string, message: string) => Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error(message), { code }) });

describe("networkCause", () => {
  it("recognises DNS and connection failures by code, in a cause, or by their text", () => {
    expect(networkCause(undici("ENOTFOUND", "getaddrinfo ENOTFOUND nothing.invalid"))).toBe("the host name does not resolve (DNS: not found)");
    expect(networkCause(undici("EAI_AGAIN", "getaddrinfo EAI_AGAIN x.example"))).toBe("the DNS lookup failed for now (temporary failure)");
    expect(networkCause(undici("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:9"))).toBe("the host refused the connection (nothing listens on that port)");
    expect(networkCause(undici("UND_ERR_CONNECT_TIMEOUT", "Connect Timeout Error"))).toBe("the connection timed out");
    expect(networkCause(new Error("DNS lookup failed"))).toBe("the host name does not resolve (DNS: not found)");
    expect(networkCause(new Error("Network connection lost."))).toBe("the connection was reset");
    expect(networkCause(new Error("connect EHOSTUNREACH 10.1.2.3:443"))).toBe("the host is unreachable");
    expect(networkCause(undici("CERT_HAS_EXPIRED", "certificate has expired"))).toBe("the TLS handshake failed (the site's certificate or TLS setup)");
  });

  it("workerd's opaque text says what it usually means; anything else is shown as it is", () => {
    expect(networkCause(new Error("internal error; reference = abc123"))).toBe("the connection failed and the runtime gave no reason (internal error; reference = abc123): most often the host name does not resolve, or nothing answers at that address");
    expect(networkCause(new Error("something odd"))).toBe("something odd");
    expect(networkCause(new TypeError("fetch failed"))).toBe("the connection failed");
  });

  it("the error always ends with a next step", () => {
    for (const e of [undici("ENOTFOUND", "getaddrinfo ENOTFOUND a.invalid"), new Error("internal error; reference = r1"), new Error("odd")]) {
      const err = transportError(e, new URL("https://a.invalid/x"), false, 30_000);
      expect(err.code).toBe("UNAVAILABLE");
      expect(err.message).toMatch(/^Could not reach https:\/\/a\.invalid\/x: .+\. Check the host name and that the host is reachable from the public internet; if both are right, retry later\.$/);
    }
  });
});
