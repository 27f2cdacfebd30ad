/** The SSRF guard (lib/shared/ssrf.ts): every spelling of an internal address is refused, public ones pass. */
import { describe, expect, it } from "vitest";
import { ToolError } from "../../../lib/shared/errors.js";
import { addressBlockedReason, checkUrl, formatIPv4, nameBlockedReason, parseIPv4, parseIPv6 } from "../../../lib/shared/ssrf.js";

function refusal(url: string, opts = {}): { code: string; message: string; details: Record<string, unknown> } | null {
  try {
    checkUrl(url, opts);
    return null;
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    return { code: e.code, message: e.message, details: e.details };
  }
}

/** [url, a word the reason must contain] */
const BLOCKED: [string, RegExp][] = [
  // loopback, every way WHATWG URL lets you write it
  ["http://127.0.0.1/", /loopback/],
  ["http://127.1/", /loopback/],
  ["http://127.0.1/", /loopback/],
  ["http://0177.0.0.1/", /loopback/],
  ["http://0177.1/", /loopback/],
  ["http://0x7f.1/", /loopback/],
  ["http://0X7F.0.0.1/", /loopback/],
  ["http://0x7f000001/", /loopback/],
  ["http://2130706433/", /loopback/],
  ["http://017700000001/", /loopback/],
  ["http://127.000.000.001/", /loopback/],
  ["http://127.0.0.1./", /loopback/],
  ["http://127.255.255.254:8080/x", /loopback/],
  ["http://%31%32%37.0.0.1/", /loopback/],
  ["http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", /loopback/],
  ["http://127.0.0.1\t/", /loopback/],
  ["  http://127.0.0.1/  ", /loopback/],
  ["https://127.0.0.1:443/", /loopback/],
  ["http://[::1]/", /loopback/],
  ["http://[0:0:0:0:0:0:0:1]/", /loopback/],
  ["http://[::ffff:127.0.0.1]/", /IPv4-mapped.*loopback/],
  ["http://[::ffff:7f00:1]/", /IPv4-mapped.*loopback/],
  ["http://[0:0:0:0:0:ffff:127.0.0.1]/", /IPv4-mapped.*loopback/],
  ["http://[::127.0.0.1]/", /IPv4-compatible/],
  ["http://[::ffff:0:127.0.0.1]/", /IPv4-translated/],
  ["http://[64:ff9b::127.0.0.1]/", /NAT64.*loopback/],
  ["http://[64:ff9b::a9fe:a9fe]/", /NAT64.*link-local/],
  ["http://[64:ff9b:1::a00:1]/", /local-use NAT64/],
  ["http://[2002:7f00:1::]/", /6to4.*loopback/],
  ["http://[2002:a9fe:a9fe::1]/", /6to4.*link-local/],
  ["http://[2002:c0a8:101::1]/", /6to4.*private/],
  ["http://localhost/", /localhost/],
  ["http://LOCALHOST./", /localhost/],
  ["http://localhost:8787/v1", /localhost/],
  ["http://foo.localhost/", /localhost/],
  ["http://a.b.localhost./", /localhost/],
  // userinfo does not change the host
  ["http://evil@127.0.0.1/", /loopback/],
  ["http://example.com@127.0.0.1/", /loopback/],
  ["http://user:pw@[::1]:8080/", /loopback/],
  // cloud metadata
  ["http://169.254.169.254/latest/meta-data/", /link-local/],
  ["http://2852039166/", /link-local/],
  ["http://0xa9.0xfe.0xa9.0xfe/", /link-local/],
  ["http://0251.0376.0251.0376/", /link-local/],
  ["http://169.254.43518/", /link-local/],
  ["http://[::ffff:169.254.169.254]/", /IPv4-mapped.*link-local/],
  ["http://[::ffff:a9fe:a9fe]/", /IPv4-mapped.*link-local/],
  ["http://[fd00:ec2::254]/", /unique-local/],
  ["http://metadata.google.internal/computeMetadata/v1/", /internal/],
  ["http://instance-data.ec2.internal/", /internal/],
  // private, CGNAT, special
  ["http://10.0.0.1/", /private.*10\.0\.0\.0\/8/],
  ["http://10.255.255.255/", /private/],
  ["http://172.16.5.4/", /private.*172\.16/],
  ["http://172.31.255.255/", /private/],
  ["http://192.168.1.1/", /private.*192\.168/],
  ["http://[::ffff:10.0.0.1]/", /IPv4-mapped.*private/],
  ["http://100.64.0.1/", /carrier-grade/],
  ["http://100.127.255.254/", /carrier-grade/],
  ["http://0.0.0.0/", /this network/],
  ["http://0/", /this network/],
  ["http://0.1.2.3/", /this network/],
  ["http://224.0.0.1/", /multicast/],
  ["http://239.255.255.250/", /multicast/],
  ["http://255.255.255.255/", /broadcast/],
  ["http://240.0.0.1/", /reserved/],
  ["http://192.0.0.8/", /IETF/],
  ["http://192.0.2.1/", /documentation/],
  ["http://198.51.100.7/", /documentation/],
  ["http://203.0.113.9/", /documentation/],
  ["http://198.18.0.1/", /benchmarking/],
  ["http://[::]/", /unspecified/],
  ["http://[fe80::1]/", /link-local IPv6/],
  ["http://[febf:ffff::1]/", /link-local IPv6/],
  ["http://[fec0::1]/", /site-local/],
  ["http://[fc00::1]/", /unique-local/],
  ["http://[fdff:ffff::1]/", /unique-local/],
  ["http://[ff02::1]/", /multicast/],
  ["http://[2001:db8::1]/", /documentation/],
  ["http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", /Teredo/],
  ["http://[100::1]/", /discard/],
];

describe("checkUrl refuses internal addresses in every spelling", () => {
  it.each(BLOCKED)("%s", (url, reason) => {
    const r = refusal(url);
    expect(r, `${url} was allowed`).not.toBeNull();
    expect(r!.code).toBe("BLOCKED");
    expect(r!.message).toMatch(reason);
    expect(r!.message).toMatch(/public/);
    expect(r!.details.reason).toBeTypeOf("string");
  });

  it("has 20+ spellings of loopback and metadata alone", () => {
    expect(BLOCKED.filter(([, r]) => /loopback|localhost|link-local|internal|unique-local/.test(r.source)).length).toBeGreaterThan(40);
  });

  it("never repeats credentials from the URL in its message", () => {
    const r = refusal("http://admin:s3cret@10.1.2.3/x");
    expect(r!.code).toBe("BLOCKED");
    expect(JSON.stringify(r)).not.toContain("s3cret");
  });

  it("refuses a zone id (WHATWG rejects it as a URL; the address parser still sees the link-local address)", () => {
    expect(refusal("http://[fe80::1%25eth0]/")?.code).toBe("INVALID_ARGUMENT");
    expect(addressBlockedReason("fe80::1%eth0")).toMatch(/link-local/);
    expect(addressBlockedReason("[fe80::1%25lo]")).toMatch(/link-local/);
  });
});

const ALLOWED = [
  "https://example.com/",
  "http://example.com:8080/a?b=c#d",
  "https://docs.python.org/3/library/",
  "http://8.8.8.8/",
  "http://1.1.1.1/",
  "http://93.184.216.34/",
  "http://172.32.0.1/",
  "http://172.15.255.255/",
  "http://100.128.0.1/",
  "http://100.63.255.255/",
  "http://169.255.0.1/",
  "http://11.0.0.1/",
  "http://[2606:4700:4700::1111]/",
  "http://[::ffff:8.8.8.8]/",
  "http://[2002:808:808::1]/",
  "http://[64:ff9b::808:808]/",
  "http://localhost.example.com/",
  "http://mylocalhost/",
  "http://internal.example.com/",
  "https://xn--nxasmq6b.com/",
];

describe("checkUrl lets public addresses through", () => {
  it.each(ALLOWED)("%s", (url) => {
    expect(refusal(url)).toBeNull();
    const { url: u, host } = checkUrl(url);
    expect(u.protocol).toMatch(/^https?:$/);
    expect(host.kind === "ip" ? host.address : host.name).toBeTruthy();
  });

  it("says whether the host is an IP literal (no resolving needed) or a name", () => {
    expect(checkUrl("http://8.8.8.8/").host).toEqual({ kind: "ip", address: "8.8.8.8" });
    expect(checkUrl("http://134744072/").host).toEqual({ kind: "ip", address: "8.8.8.8" });
    expect(checkUrl("http://[2606:4700::1]/").host).toEqual({ kind: "ip", address: "2606:4700::1" });
    expect(checkUrl("https://Example.COM./x").host).toEqual({ kind: "name", name: "example.com" });
  });
});

describe("checkUrl refuses what is not an http(s) URL", () => {
  it.each(["ftp://example.com/", "file:///etc/passwd", "javascript:alert(1)", "gopher://example.com/", "data:text/html,hi", "ws://example.com/", "not a url", "//example.com/x", "/relative", "http://", "http://exa mple.com/"])("%s", (url) => {
    const r = refusal(url);
    expect(r?.code).toBe("INVALID_ARGUMENT");
    expect(r!.message).toMatch(/http/);
  });

  it("refuses credentials in a public URL, telling to use headers", () => {
    const r = refusal("https://user:pass@example.com/");
    expect(r?.code).toBe("INVALID_ARGUMENT");
    expect(r!.message).toMatch(/headers/);
    expect(JSON.stringify(r)).not.toContain("pass@");
  });
});

describe("the test-only loopback switch", () => {
  it("opens loopback and nothing else", () => {
    const opts = { allowLoopback: true };
    for (const u of ["http://127.0.0.1:3000/", "http://127.1/", "http://[::1]/", "http://localhost/", "http://[::ffff:127.0.0.1]/"]) expect(refusal(u, opts), u).toBeNull();
    for (const u of ["http://169.254.169.254/", "http://10.0.0.1/", "http://0.0.0.0/", "http://[fd00:ec2::254]/", "http://metadata.google.internal/", "http://[::]/"]) expect(refusal(u, opts)?.code, u).toBe("BLOCKED");
  });
});

describe("addressBlockedReason: what a resolver's answers are checked with", () => {
  it.each([
    ["127.0.0.1", /loopback/], ["::1", /loopback/], ["::ffff:127.0.0.1", /loopback/], ["169.254.169.254", /link-local/], ["fd00:ec2::254", /unique-local/],
    ["10.1.2.3", /private/], ["0.0.0.0", /this network/], ["fe80::abcd", /link-local/], ["2001::1", /Teredo/], ["::ffff:192.168.0.1", /private/],
  ])("%s", (addr, reason) => expect(addressBlockedReason(addr)).toMatch(reason));

  it.each(["8.8.8.8", "2606:4700:4700::1111", "142.250.74.46", "::ffff:1.1.1.1", "example.com"])("%s passes", (addr) => expect(addressBlockedReason(addr)).toBeNull());

  it("names: localhost and .internal, not look-alikes", () => {
    expect(nameBlockedReason("localhost")).toMatch(/localhost/);
    expect(nameBlockedReason("x.localhost.")).toMatch(/localhost/);
    expect(nameBlockedReason("metadata.google.internal")).toMatch(/internal/);
    expect(nameBlockedReason("localhost.com")).toBeNull();
    expect(nameBlockedReason("internal.com")).toBeNull();
  });
});

describe("the IPv4 parser agrees with WHATWG URL", () => {
  it("on fixed spellings", () => {
    for (const h of ["1.2.3.4", "0x1.0x2.0x3.0x4", "01.02.03.04", "16909060", "1.131844", "1.2.772", "0x01020304", "1.2.3.4.", "0", "0x", "4294967295"]) {
      expect(formatIPv4(parseIPv4(h)!), h).toBe(new URL(`http://${h}/`).hostname);
    }
    for (const h of ["4294967296", "1.2.3.256", "256.1.1.1", "1.2.3.4.5", "08.1.1.1", "0x1g.1.1.1", "", "a.b.c.d", "1..2.3"]) expect(parseIPv4(h), h).toBeNull();
  });

  it("on 2,000 random spellings (parts, bases, trailing dot)", () => {
    let seed = 12345;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    const spell = (n: number) => [String(n), `0x${n.toString(16)}`, `0${n.toString(8)}`][rand(3)]!;
    for (let i = 0; i < 2000; i++) {
      const v = (rand(2 ** 16) * 2 ** 16 + rand(2 ** 16)) >>> 0;
      const bytes = [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255];
      const parts = 1 + rand(4);
      const head = bytes.slice(0, parts - 1);
      const tail = bytes.slice(parts - 1).reduce((a, b) => a * 256 + b, 0);
      const host = [...head, tail].map(spell).join(".") + (rand(5) === 0 ? "." : "");
      const whatwg = new URL(`http://${host}/`).hostname;
      expect(formatIPv4(parseIPv4(host)!), host).toBe(whatwg);
      expect(whatwg).toBe(bytes.join("."));
    }
  });

  it("the IPv6 parser reads every form WHATWG writes", () => {
    for (const h of ["::1", "::", "1::", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4", "fe80::1:2", "2001:db8:0:0:1::1", "64:ff9b::10.0.0.1"]) {
      const words = parseIPv6(h)!;
      expect(words, h).toHaveLength(8);
      const canonical = new URL(`http://[${h}]/`).hostname;
      expect(parseIPv6(canonical), h).toEqual(words);
    }
    for (const h of ["1:2:3:4:5:6:7:8:9", "1::2::3", ":::", "12345::", "g::1", "1.2.3.4"]) expect(parseIPv6(h), h).toBeNull();
  });
});
