/** The Node transport's lookup: every resolved address is checked; the socket gets only checked ones. */
import { describe, expect, it } from "vitest";
import { ToolError } from "../../../../lib/shared/errors.js";
import { guardedLookup } from "../../../../lib/tools/web/node-fetcher.js";
import type { Resolver } from "../../../../lib/shared/ssrf.js";

const dns = (answers: Record<string, { address: string; family: number }[]>): Resolver => async (name) => {
  if (!answers[name]) throw Object.assign(new Error(`ENOTFOUND ${name}`), { code: "ENOTFOUND" });
  return answers[name]!;
};

function look(resolve: Resolver, host: string, options: { family?: number; all?: boolean }, guard = {}) {
  return new Promise<{ err: Error | null; address?: unknown; family?: number }>((r) => guardedLookup(resolve, guard)(host, options, (err, address, family) => r({ err, address, family })));
}

const table = dns({
  "public.test": [{ address: "93.184.216.34", family: 4 }, { address: "2606:2800:220:1::1", family: 6 }],
  "rebind.test": [{ address: "93.184.216.34", family: 4 }, { address: "169.254.169.254", family: 4 }],
  "mapped.test": [{ address: "::ffff:127.0.0.1", family: 6 }],
  "loop.test": [{ address: "127.0.0.1", family: 4 }],
  "v6only.test": [{ address: "2606:2800:220:1::1", family: 6 }],
});

describe("guardedLookup", () => {
  it("answers a checked address, one or all, honouring the family asked for", async () => {
    expect(await look(table, "public.test", {})).toEqual({ err: null, address: "93.184.216.34", family: 4 });
    expect(await look(table, "public.test", { family: 6 })).toEqual({ err: null, address: "2606:2800:220:1::1", family: 6 });
    expect((await look(table, "public.test", { all: true })).address).toEqual([{ address: "93.184.216.34", family: 4 }, { address: "2606:2800:220:1::1", family: 6 }]);
  });

  it("refuses the name when any address is refused (no picking the public one)", async () => {
    const r = await look(table, "rebind.test", { all: true });
    expect(r.err).toBeInstanceOf(ToolError);
    expect((r.err as ToolError).code).toBe("BLOCKED");
    expect(r.err!.message).toMatch(/rebind\.test: it resolves to 169\.254\.169\.254, which is a link-local address/);
    expect(r.address).toBeUndefined();
  });

  it("names what is being reached: web_fetch by default, else the webhook URL or the model endpoint", async () => {
    expect((await look(table, "rebind.test", {})).err!.message).toMatch(/^Refused to fetch rebind\.test: .*\. web_fetch reaches only public internet addresses/);
    const hook = (await look(table, "rebind.test", {}, { subject: "webhook" })).err as ToolError;
    expect(hook.message).toMatch(/^Refused to call the webhook URL rebind\.test: it resolves to 169\.254\.169\.254, .*\. A custom tool's webhook URL must be on the public internet/);
    expect(hook.details).toMatchObject({ subject: "webhook", host: "rebind.test" });
    expect((await look(table, "loop.test", {}, { subject: "model_endpoint" })).err!.message).toMatch(/^Refused to use the model endpoint's base_url loop\.test: .*\. The model endpoint's base_url must be on the public internet/);
  });

  it("checks IPv6 answers that carry IPv4, and loopback only opens with the test switch", async () => {
    expect(((await look(table, "mapped.test", {})).err as ToolError).code).toBe("BLOCKED");
    expect(((await look(table, "loop.test", {})).err as ToolError).code).toBe("BLOCKED");
    expect(await look(table, "loop.test", {}, { allowLoopback: true })).toEqual({ err: null, address: "127.0.0.1", family: 4 });
  });

  it("no answer, or none of the family, is ENOTFOUND", async () => {
    expect((await look(table, "nowhere.test", {})).err).toMatchObject({ code: "ENOTFOUND" });
    expect((await look(table, "v6only.test", { family: 4 })).err).toMatchObject({ code: "ENOTFOUND" });
  });
});
