/**
 * Issue #25's critical attack, through every door an attacker's key has: a tenant with execute +
 * network tries to invoke the command runner as another tenant, with the event's sync URL pointing
 * at a fake sync server it runs inside its own sandbox (which answers "all unchanged", so a warm
 * slot of the victim would be reused). The whole product runs for real: the app served over HTTP
 * on 127.0.0.1, lambdaExecutor → the local Invoke stand-in → the handler → bubblewrap, the sync
 * API over HTTP. Tried through bash (through the egress proxy and around it), a plugin custom tool
 * and web_fetch; and the runner itself, as if a sandbox could reach it, refuses an unsigned event.
 * The victim's secret appears in no answer and the runner receives no invocation but the API's own.
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../../infra/container/local-server.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { lambdaExecutor } from "../../../lib/exec/lambda.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { serveFetch, type Served } from "../../support/serve-fetch.js";
import { RUNNER_SECRET } from "./helpers.js";

const ADMIN = "attack-doors-admin";
const SECRET_TEXT = "victim-secret-7d1f3a";
let root = "";
let invoke: LocalInvokeServer;
let served: Served;
let app: ReturnType<typeof createApp>;
let victimKey = "";
let attackerKey = "";

const json = (key: string) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });
const adm = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: json(ADMIN), body: JSON.stringify(body) })).json() as Promise<any>;
const call = async (key: string, ws: string, tool: string, args: unknown) => {
  const r = await app.request(`/v1/workspaces/${ws}/tools/${tool}`, { method: "POST", headers: json(key), body: JSON.stringify(args) });
  return { status: r.status, body: (await r.json()) as any, text: "" };
};

/** The forged invocation: the victim's tenant and workspace, the attacker's fake sync server, no signature. */
const forgedEvent = (syncUrl: string) =>
  JSON.stringify({ version: 1, action: "run", tenant: "victim", workspace: "main", idempotency_key: "attack-1", command: "cat secret.txt", timeout_ms: 10_000, sync: { url: syncUrl, token: "forged" } });

/** A sync server inside the attacker's sandbox that says every bucket of the manifest is unchanged. */
const FAKE_SYNC = `
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("content-length") or 0); q = json.loads(self.rfile.read(n) or b"{}")
        b = q.get("buckets", 1); body = json.dumps({"v": 2, "count": 1, "buckets": b, "same": list(range(b)), "files": [], "modes": "same"}).encode()
        self.send_response(200); self.send_header("content-type", "application/json"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", 8123), H).serve_forever()
`;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-attack-doors-"));
  chmodSync(root, 0o711);
  invoke = await startLocalInvokeServer({ root: join(root, "runner"), secret: RUNNER_SECRET, functionName: "toolshed-runner" });
  const client = new LambdaClient({ endpoint: invoke.url, region: "us-east-1", maxAttempts: 1, credentials: { accessKeyId: "x", secretAccessKey: "x" } });
  const executor = lambdaExecutor({ client, functionName: "toolshed-runner", secret: RUNNER_SECRET });
  let appRef: ReturnType<typeof createApp> | undefined;
  served = await serveFetch((req) => appRef!.fetch(req));
  const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: "attack-doors-sync-secret-0123456789", syncUrl: served.url } as AppDeps;
  app = appRef = createApp(deps, tools);
  await adm("/v1/admin/tenants", { id: "victim" });
  await adm("/v1/admin/tenants", { id: "attacker" });
  victimKey = (await adm("/v1/admin/tenants/victim/keys", {})).key;
  attackerKey = (await adm("/v1/admin/tenants/attacker/keys", { scopes: ["read", "write", "execute", "network"] })).key;
  for (const [key, ws] of [[victimKey, "main"], [attackerKey, "main"]] as const) {
    expect((await app.request("/v1/workspaces", { method: "POST", headers: json(key), body: JSON.stringify({ id: ws }) })).status).toBe(201);
  }
  expect((await call(victimKey, "main", "write", { file_path: "secret.txt", content: `${SECRET_TEXT}\n` })).status).toBe(200);
  // The victim's run leaves a warm slot of victim/main in the runner.
  const warm = await call(victimKey, "main", "bash", { command: "cat secret.txt" });
  expect(warm.body.output, JSON.stringify(warm.body)).toContain(SECRET_TEXT);
  await call(attackerKey, "main", "write", { file_path: "fake_sync.py", content: FAKE_SYNC });
}, 120_000);

afterAll(async () => {
  await invoke?.close();
  await served?.close();
  rmSync(root, { recursive: true, force: true });
});

/** Since `before`, the runner received only the API's own invocations of the attacker's calls: none names the victim. */
const onlyTheApisInvocations = (before: number) => expect(invoke.invocations.slice(before).filter((i) => i.tenant !== "attacker")).toEqual([]);

describe("the cross-tenant runner attack of issue #25, through every door", () => {
  const url = () => `${invoke.url}/2015-03-31/functions/toolshed-runner/invocations`;

  it("bash with network: through the egress proxy (forced, and for names) and around it, the runner is out of reach", async () => {
    const before = invoke.invocations.length;
    const post = (proxy: string) => `curl -fsS -m 5 ${proxy} -H 'X-Amz-Tenant-Id: victim' -d '${forgedEvent("http://127.0.0.1:8123")}' ${url()}; echo "[rc=$?]"`;
    const waitForFake = "for i in $(seq 50); do curl -s -o /dev/null --noproxy '*' -d '{}' http://127.0.0.1:8123/v1/sync/manifest && break; sleep 0.1; done";
    const byName = (h: string) => `curl -fsS -m 5 -H 'X-Amz-Tenant-Id: victim' -d '{}' http://${h}:${invoke.port}/2015-03-31/functions/toolshed-runner/invocations; echo "[rc=$?]"`;
    const command = `(python3 fake_sync.py &); ${waitForFake}; ${post("--noproxy ''")}; ${post("--noproxy '*'")}; ${byName("localhost")}; ${byName("vm")}`;
    const r = await call(attackerKey, "main", "bash", { command, timeout: 60 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.output).not.toContain(SECRET_TEXT);
    expect(r.body.output.match(/\[rc=[1-9]\d*\]/g) ?? [], r.body.output).toHaveLength(4);
    expect(r.body.output).toContain("127.0.0.1 is a loopback address");
    onlyTheApisInvocations(before);
  });

  it("a plugin custom tool: the same POST from the plugin's process is refused", async () => {
    const before = invoke.invocations.length;
    const plugin = `import sys, json, urllib.request
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "call":
        try:
            req = urllib.request.Request("${url()}", data=${JSON.stringify(forgedEvent("http://127.0.0.1:8123"))}.encode(), headers={"X-Amz-Tenant-Id": "victim"})
            text = "answered: " + urllib.request.urlopen(req, timeout=5).read().decode()
        except Exception as e:
            text = "refused: " + str(e)
        print(json.dumps({"type": "result", "call_id": m["call_id"], "content": [{"type": "text", "text": text}]}), flush=True)
`;
    await call(attackerKey, "main", "write", { file_path: "tools/probe.py", content: plugin });
    const schema = { type: "object", properties: {}, additionalProperties: false };
    const made = await app.request("/v1/admin/tenants/attacker/tools/custom", { method: "POST", headers: json(ADMIN), body: JSON.stringify({ name: "probe", description: "probe", input_schema: schema, backend: { type: "plugin", command: "python3 tools/probe.py" } }) });
    expect(made.status).toBe(201);
    const r = await call(attackerKey, "main", "probe", {});
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.output).toMatch(/^refused: /);
    expect(r.body.output).not.toContain(SECRET_TEXT);
    onlyTheApisInvocations(before);
  });

  it("web_fetch: the runner's address and a name for it are BLOCKED", async () => {
    const before = invoke.invocations.length;
    for (const target of [url(), `http://localhost:${invoke.port}/2015-03-31/functions/toolshed-runner/invocations`, `http://vm:${invoke.port}/2015-03-31/functions/toolshed-runner/invocations`]) {
      const r = await call(attackerKey, "main", "web_fetch", { url: target, method: "POST", headers: { "X-Amz-Tenant-Id": "victim" }, body: forgedEvent("http://127.0.0.1:8123") });
      expect(r.body.ok, JSON.stringify(r.body)).toBe(false);
      expect(r.body.error.code).toBe("BLOCKED");
    }
    onlyTheApisInvocations(before);
  });

  it("the runner itself, as if a sandbox reached it: an unsigned event naming the victim is refused before any slot", async () => {
    const res = await fetch(url(), { method: "POST", headers: { "x-amz-tenant-id": "victim", "content-type": "application/json" }, body: forgedEvent(served.url) });
    const text = await res.text();
    expect(text).not.toContain(SECRET_TEXT);
    expect(text).toContain("invocation_unsigned");
  });
});
