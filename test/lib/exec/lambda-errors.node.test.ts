/**
 * The Invoke API's errors as the agent reads them (lib/exec/lambda.ts invokeError): the API's own
 * text names the operator's account, roles, functions and private addresses, so it goes to the log
 * and the agent gets the error's name and what to do. Each case is an error as the AWS SDK throws it.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { invokeError } from "../../../lib/exec/lambda.js";

const ACCOUNT = "123456789012";
const FN = "toolshed-prod-runner-Abc123";
const aws = (name: string, message: string, status: number, extra: object = {}) => Object.assign(new Error(message), { name, $metadata: { httpStatusCode: status }, ...extra });

afterEach(() => vi.restoreAllMocks());

describe("an Invoke error never hands the agent the operator's account, roles or addresses", () => {
  it.each([
    ["AccessDeniedException", aws("AccessDeniedException", `User: arn:aws:sts::${ACCOUNT}:assumed-role/toolshed-api-role/toolshed-api is not authorized to perform: lambda:InvokeFunction on resource: arn:aws:lambda:us-east-1:${ACCOUNT}:function:${FN} because no identity-based policy allows the lambda:InvokeFunction action`, 403), "INTERNAL"],
    ["KMSAccessDeniedException", aws("KMSAccessDeniedException", `Lambda was unable to decrypt the environment variables because KMS access was denied. KMS key arn:aws:kms:us-east-1:${ACCOUNT}:key/0f1e2d3c`, 502), "UNAVAILABLE"],
    ["ServiceException", aws("ServiceException", `Internal error on arn:aws:lambda:us-east-1:${ACCOUNT}:function:${FN}`, 500), "UNAVAILABLE"],
    ["ResourceNotFoundException", aws("ResourceNotFoundException", `Function not found: arn:aws:lambda:us-east-1:${ACCOUNT}:function:${FN}`, 404), "UNAVAILABLE"],
    ["ECONNREFUSED", Object.assign(new Error("connect ECONNREFUSED 10.0.12.7:443"), { code: "ECONNREFUSED" }), "UNAVAILABLE"],
    ["TooManyRequestsException", aws("TooManyRequestsException", `Rate exceeded for arn:aws:lambda:us-east-1:${ACCOUNT}:function:${FN}`, 429), "RATE_LIMITED"],
  ])("%s: its code and name, nothing of its text; the text is logged", (_, e, code) => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const t = invokeError(e, FN);
    expect(t.code).toBe(code);
    const shown = JSON.stringify({ message: t.message, details: t.details });
    // A function not deployed is named by our setting (the operator's to fix), never by the API's text.
    for (const secret of [ACCOUNT, "arn:", "10.0.12.7", "toolshed-api-role", ...(code === "UNAVAILABLE" && _ === "ResourceNotFoundException" ? [] : [FN])]) expect(shown).not.toContain(secret);
    expect(t.message).toMatch(/Retry|deploy|report/);
    if (code !== "RATE_LIMITED") expect(logged.mock.calls.flat().join(" ")).toContain(e.message);
  });

  it("the local stand-in's per-tenant share keeps its own message, which is ours and says what to do", () => {
    const e = Object.assign(new Error("This tenant already runs 4 commands at once (its share of the runners); retry when one ends."), { name: "TooManyRequestsException", Reason: "TenantConcurrencyLimitExceeded" });
    expect(invokeError(e, FN)).toMatchObject({ code: "RATE_LIMITED", message: e.message, details: { scope: "tenant" } });
  });
});
