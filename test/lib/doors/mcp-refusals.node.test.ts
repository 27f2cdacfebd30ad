/**
 * The JSON-RPC error a refusal outside a tool's result answers, one mapping for both MCP doors
 * (lib/doors/json-rpc.ts refusalAsRpcError): bad params -32602, a refusal (QUOTA_EXCEEDED,
 * RATE_LIMITED, CONFLICT, ...) -32000 with its actionable message and data.code, -32603 only for a
 * real internal error. Through the official 2.x client on the 2026-07-28 door, as the tasks tests
 * do; the refusals are injected where the task layer reads its record (storage).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { ToolError, type ErrorCode } from "../../../lib/shared/errors.js";
import { refusalAsRpcError } from "../../../lib/doors/json-rpc.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { connect, getTask } from "./mcp-2026-client.js";
import { sandboxApp, type Tenant } from "./sandbox-app.js";

/** Storage whose reads of call-task records throw `inject.error` while it is set. */
function failingTaskReads(inner: StorageDriver, inject: { error: unknown }): StorageDriver {
  const failing = (key: string) => inject.error !== null && key.includes("/call-tasks/");
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "get") return async (key: string, opts?: Parameters<StorageDriver["get"]>[1]) => (failing(key) ? Promise.reject(inject.error) : target.get(key, opts));
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

const inject: { error: unknown } = { error: null };
const { app, tenant, close } = sandboxApp({ storage: failingTaskReads(memoryDriver(), inject) });
let acme: Tenant;
beforeAll(async () => {
  acme = await tenant("refusals26");
});
afterAll(close);

const TASK_ID = "caaaaaaaaaaaaaaaaaaaaaaaa";
type RpcError = { code: number; message: string; data?: { code: string; details: Record<string, unknown> } };

describe("refusals on the 2026-07-28 door's tasks methods (official 2.x client)", () => {
  it("a refusal is -32000 with its actionable message and data.code; bad params -32602; -32603 only for an internal error", async () => {
    const c = await connect(app, acme);
    const errorOf = async (error: unknown): Promise<RpcError | null> => {
      inject.error = error;
      try {
        return (await getTask(c, TASK_ID).then(() => null, (e: unknown) => e)) as RpcError | null;
      } finally {
        inject.error = null;
      }
    };
    const refusals = [
      new ToolError("QUOTA_EXCEEDED", "The tenant's storage quota is used up (10 GB of 10 GB); delete what is not needed, then retry.", { quota: "storage_bytes" }),
      new ToolError("RATE_LIMITED", "Too many requests for this key; retry after 2 seconds.", { retry_after: 2 }),
      new ToolError("CONFLICT", "Another change is in progress; retry."),
      new ToolError("UNAVAILABLE", "Storage is unavailable; retry later."),
    ];
    for (const refusal of refusals) {
      const e = await errorOf(refusal);
      expect(e, refusal.code).toMatchObject({ code: -32000, data: { code: refusal.code, details: refusal.details } });
      expect(e!.message).toContain(`${refusal.code}: ${refusal.message}`);
    }
    expect(await errorOf(null)).toMatchObject({ code: -32602, data: { code: "NOT_FOUND" } }); // an unknown task: bad params
    const internal = await errorOf(new Error("storage said: t/refusals26/w/main/x/call-tasks/secret-key"));
    expect(internal).toMatchObject({ code: -32603, data: { code: "INTERNAL" } });
    expect(internal!.message).not.toContain("call-tasks"); // its text only in the log
    await c.client.close();
  });
});

describe("refusalAsRpcError, the one mapping both doors use", () => {
  it("maps each code once: bad params, internal, every other refusal", () => {
    const codeOf = (code: ErrorCode) => refusalAsRpcError(new ToolError(code, "m"), "test").code;
    for (const c of ["NOT_FOUND", "INVALID_ARGUMENT", "PERMISSION_DENIED"] as const) expect(codeOf(c), c).toBe(-32602);
    for (const c of ["QUOTA_EXCEEDED", "RATE_LIMITED", "CONFLICT", "BLOCKED", "DENIED", "UNAUTHORIZED", "BUSY", "TIMEOUT", "UNAVAILABLE"] as const) expect(codeOf(c), c).toBe(-32000);
    expect(codeOf("INTERNAL")).toBe(-32603);
    expect(refusalAsRpcError(new Error("boom"), "test")).toMatchObject({ code: -32603, data: { code: "INTERNAL" } });
    // The 2025 door wraps the same answer in its SDK's class.
    const r = refusalAsRpcError(new ToolError("RATE_LIMITED", "slow down", { retry_after: 1 }), "test");
    expect(new McpError(r.code, r.message, r.data)).toMatchObject({ code: -32000, data: { code: "RATE_LIMITED", details: { retry_after: 1 } } });
  });
});
