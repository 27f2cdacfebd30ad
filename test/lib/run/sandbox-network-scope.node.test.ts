/**
 * The sandbox's network is the `network` scope at work, so the one authorization rule decides it
 * (DESIGN invariant 12, lib/run/toolset.ts): a command gets the egress proxy only when the key holds
 * `network` AND neither the key's tool list nor the workspace's bounds it away. Real bubblewrap sandbox.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, sandboxApp } from "../doors/sandbox-app.js";

let s: ReturnType<typeof sandboxApp>;
let key = "";

beforeAll(async () => {
  s = sandboxApp();
  expect((await s.post("/v1/admin/tenants", { id: "acme" }, ADMIN)).status).toBe(201);
  expect((await s.post("/v1/admin/tenants/acme/policy", { gate: [] }, ADMIN, "PUT")).status).toBe(200);
  // A key that may use every tool, network included.
  key = (await s.post("/v1/admin/tenants/acme/keys", { scopes: ["read", "write", "execute", "network"] }, ADMIN)).body.key as string;
  // A custom tool that needs the network (a webhook: saved, never called here), named in a workspace's list below.
  const hook = { name: "acme_hook", description: "A hook.", input_schema: { type: "object" }, backend: { type: "webhook", url: "https://1.1.1.1/hook" } };
  expect((await s.post("/v1/admin/tenants/acme/tools/custom", hook, ADMIN)).status).toBe(201);
  for (const [id, tools] of [["open", undefined], ["coding", "coding"], ["readonly_bash", ["readonly", "bash"]], ["coding_hook", ["coding", "acme_hook"]]] as const) {
    expect((await s.post("/v1/workspaces", { id, ...(tools ? { tools } : {}) }, key)).status, id).toBe(201);
  }
}, 60_000);
afterAll(() => s?.close());

const proxyIn = async (ws: string) => {
  const r = await s.post(`/v1/workspaces/${ws}/tools/bash`, { command: 'echo "proxy=${HTTPS_PROXY:-none}"' }, key);
  expect(r.body.ok, JSON.stringify(r.body)).toBe(true);
  return /proxy=none/.test(r.body.output) ? "none" : "proxy";
};

describe("the sandbox's network follows the one authorization rule", () => {
  it("a network key's command reaches the network in a workspace whose tools allow it, and not in one whose tools need no network (coding, [readonly, bash])", async () => {
    expect(await proxyIn("open")).toBe("proxy");
    expect(await proxyIn("coding")).toBe("none");
    expect(await proxyIn("readonly_bash")).toBe("none");
  });

  it("a custom tool named in the workspace's list counts with its scope: [coding, a webhook tool] needs the network, so its commands get it", async () => {
    expect(await proxyIn("coding_hook")).toBe("proxy");
  });
});
