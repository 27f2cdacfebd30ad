/** Backoff after failed authentication, per presented key id (else per client address; lib/api/auth/backoff.ts, throttleKeyOf), alone and through HTTP. */
import { describe, expect, it } from "vitest";
import { clientOf, createAuthBackoff } from "../../../../lib/api/auth/backoff.js";
import { keyIdOf } from "../../../../lib/api/auth/keys.js";
import { ToolError } from "../../../../lib/shared/errors.js";
import { ADMIN, admin, newTenant, testApp } from "../../../helpers.js";

const waitOf = (f: () => void): number | null => {
  try {
    f();
    return null;
  } catch (e) {
    expect(e).toBeInstanceOf(ToolError);
    expect((e as ToolError).code).toBe("RATE_LIMITED");
    return (e as ToolError).details.retry_after as number;
  }
};

describe("createAuthBackoff", () => {
  it("lets the free failures through, then waits 1 s, 2 s, 4 s ... up to the cap; success forgets", () => {
    let now = 1_000_000;
    const b = createAuthBackoff({ freeFailures: 3, baseDelayMs: 1000, maxDelayMs: 8000, now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(waitOf(() => b.check("c"))).toBeNull();
      b.failed("c");
    }
    expect(waitOf(() => b.check("c"))).toBeNull();
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) {
      b.failed("c");
      waits.push(waitOf(() => b.check("c"))!);
      now += waits.at(-1)! * 1000; // wait it out
      expect(waitOf(() => b.check("c"))).toBeNull();
    }
    expect(waits).toEqual([1, 2, 4, 8, 8, 8]);
    // Others are not affected.
    b.failed("c");
    expect(waitOf(() => b.check("c"))).toBe(8);
    expect(waitOf(() => b.check("d"))).toBeNull();
    // A success resets the count.
    now += 8000;
    b.succeeded("c");
    for (let i = 0; i < 3; i++) b.failed("c");
    expect(waitOf(() => b.check("c"))).toBeNull();
  });

  it("forgets idle clients and holds at most maxClients", () => {
    let now = 0;
    const b = createAuthBackoff({ freeFailures: 1, forgetAfterMs: 60_000, maxClients: 3, now: () => now });
    b.failed("old");
    now += 61_000;
    b.failed("old"); // the first failure was forgotten: this is failure 1 again
    expect(waitOf(() => b.check("old"))).toBeNull();
    for (const c of ["a", "b", "c", "d"]) {
      b.failed(c);
      b.failed(c);
    }
    // "old" and then "a" were the least recently failing: dropped to keep 3.
    expect(waitOf(() => b.check("a"))).toBeNull();
    expect(waitOf(() => b.check("d"))).toBe(1);
  });

  it("knows a client by cf-connecting-ip, else the first hop of x-forwarded-for, else 'unknown'", () => {
    expect(clientOf(new Headers({ "cf-connecting-ip": "203.0.113.9", "x-forwarded-for": "198.51.100.1" }))).toBe("203.0.113.9");
    expect(clientOf(new Headers({ "x-forwarded-for": " 198.51.100.1 , 10.0.0.1" }))).toBe("198.51.100.1");
    expect(clientOf(new Headers())).toBe("unknown");
  });
});

describe("through HTTP (the backoff createApp makes)", () => {
  const ip = (n: string) => ({ "cf-connecting-ip": n });

  it("a key id's failures: 10 are free, the 11th starts the wait: its 12th request gets 429 RATE_LIMITED with Retry-After, even with its right secret; other keys and clients go on", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const other = await newTenant(app);
    const id = keyIdOf(t.key)!;
    const get = (key: string, client: string) => app.request("/v1/workspaces", { headers: { authorization: `Bearer ${key}`, ...ip(client) } });
    for (let i = 0; i < 10; i++) expect((await get(`tsk_${id}_wrongsecret${i}`, "203.0.113.1")).status, `failure ${i + 1}`).toBe(401);
    expect((await get(`tsk_${id}_wrongsecretx`, "203.0.113.1")).status).toBe(401); // the 11th failure starts the wait
    const limited = await get(t.key, "203.0.113.1");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("1");
    const body = (await limited.json()) as any;
    expect(body.error.code).toBe("RATE_LIMITED");
    expect(body.error.message).toMatch(/Wait 1 s/);
    expect(body.error.details.retry_after).toBe(1);
    // Another key behind the same address, and the same key from another address: fine.
    expect((await get(other.key, "203.0.113.1")).status).toBe(200);
    expect((await get(t.key, "203.0.113.2")).status).toBe(200);
    // Tool routes too (a refused call reaches no tenant: it still carries usage).
    const tool = await app.request(`/v1/workspaces/${t.ws}/tools/ls`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", ...ip("203.0.113.1") }, body: "{}" });
    expect(tool.status).toBe(429);
    expect(((await tool.json()) as any).usage).toBeDefined();
  });

  it("two tenants behind one address: one hammering its revoked key is throttled, the other's valid key keeps getting 200 (issue #25)", async () => {
    const app = testApp();
    const a = await newTenant(app);
    const b = await newTenant(app);
    const revoked = await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { name: "old" });
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/keys/${revoked.body.key_id}`, undefined, "DELETE")).status).toBe(200);
    const nat = ip("198.51.100.200");
    const get = (key: string) => app.request(`/v1/workspaces/main`, { headers: { authorization: `Bearer ${key}`, ...nat } });
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      statuses.push((await get(revoked.body.key)).status);
      const ok = await get(b.key);
      expect(ok.status, `tenant B's valid key after ${i + 1} failures of A's revoked key`).toBe(200);
      expect(((await ok.json()) as any).id).toBe("main");
    }
    // The revoked key: 11 answered 401, then throttled (each 429 is no new failure, so the window holds).
    expect(statuses.slice(0, 11)).toEqual(Array(11).fill(401));
    expect(statuses.slice(11).every((s) => s === 429), statuses.join(",")).toBe(true);
    // Tenant A's own valid key (another key id) behind the same address: also fine.
    expect((await get(a.key)).status).toBe(200);
    // Garbage that is not key-shaped counts under the address, and does not touch keys either.
    for (let i = 0; i < 12; i++) await get("not-a-key");
    expect((await get("not-a-key")).status).toBe(429);
    expect((await get(b.key)).status).toBe(200);
  });

  it("no oracle: a key id that exists and one that does not are counted and refused alike", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const real = keyIdOf(t.key)!;
    const made = real.replace(/^./, (c) => (c === "a" ? "b" : "a"));
    const run = async (id: string) => {
      const seen: string[] = [];
      for (let i = 0; i < 13; i++) {
        const r = await app.request("/v1/workspaces", { headers: { authorization: `Bearer tsk_${id}_wrong${i}`, ...ip("192.0.2.33") } });
        const b = (await r.json()) as any;
        seen.push(`${r.status} ${b.error.code} ${b.error.message}`);
      }
      return seen;
    };
    expect(await run(made)).toEqual(await run(real));
  });

  it("the admin token: the same, per client; x-forwarded-for names the client behind a proxy", async () => {
    const app = testApp();
    const post = (token: string, headers: Record<string, string>) => app.request("/v1/admin/tenants", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers }, body: "{}" });
    for (let i = 0; i < 11; i++) expect((await post("wrong", { "x-forwarded-for": "198.51.100.7, 10.0.0.1" })).status).toBe(401);
    const r = await post(ADMIN, { "x-forwarded-for": "198.51.100.7, 10.0.0.2" });
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBe("1");
    expect((await post(ADMIN, { "x-forwarded-for": "198.51.100.8" })).status).toBe(201);
  });

  it("a success resets the count; a missing key is not a failure", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const id = keyIdOf(t.key)!;
    const get = (authorization: string | undefined) => app.request("/v1/workspaces", { headers: { ...(authorization ? { authorization } : {}), ...ip("203.0.113.50") } });
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10; i++) expect((await get(`Bearer tsk_${id}_mistyped${i}`)).status).toBe(401);
      expect((await get(`Bearer ${t.key}`)).status, `round ${round}`).toBe(200);
    }
    for (let i = 0; i < 30; i++) expect((await get(undefined)).status).toBe(401);
    expect((await get(`Bearer ${t.key}`)).status).toBe(200);
  });

  it("the wait doubles with each further failure (injected clock)", async () => {
    let now = 5_000_000;
    const app = testApp({ authBackoff: createAuthBackoff({ now: () => now }) });
    const get = (key: string) => app.request("/v1/workspaces", { headers: { authorization: `Bearer ${key}`, ...ip("203.0.113.99") } });
    for (let i = 0; i < 10; i++) await get("tsk_wrong");
    const waits: string[] = [];
    for (let i = 0; i < 5; i++) {
      expect((await get("tsk_wrong")).status).toBe(401);
      const r = await get("tsk_wrong");
      expect(r.status).toBe(429);
      waits.push(r.headers.get("retry-after")!);
      now += Number(waits.at(-1)) * 1000;
    }
    expect(waits).toEqual(["1", "2", "4", "8", "16"]);
  });
});
