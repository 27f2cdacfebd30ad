/** lib/runtime/aws.ts: the usage and limits stores exist only with TOOLSHED_TABLE, each unless TOOLSHED_BUSINESS_OFF names it. */
import { describe, expect, it } from "vitest";
import { fromAwsEnv } from "../../../lib/runtime/aws.js";

const parts = (env: Record<string, string>) => {
  const d = fromAwsEnv({ TOOLSHED_BUCKET: "b", ...env });
  return { usageStore: !!d.usageStore, limits: !!d.limits, settled: !!d.usageSettled, onUsage: !!d.onUsage };
};

describe("the AWS business layer's wiring", () => {
  it("without TOOLSHED_TABLE: usage to the logs only, nothing limited (as before)", () => {
    expect(parts({})).toEqual({ usageStore: false, limits: false, settled: false, onUsage: true });
  });
  it("with TOOLSHED_TABLE: both stores, and the entry waits for the records", () => {
    expect(parts({ TOOLSHED_TABLE: "t" })).toEqual({ usageStore: true, limits: true, settled: true, onUsage: true });
  });
  it("TOOLSHED_BUSINESS_OFF leaves out what it names", () => {
    expect(parts({ TOOLSHED_TABLE: "t", TOOLSHED_BUSINESS_OFF: "limits" })).toEqual({ usageStore: true, limits: false, settled: true, onUsage: true });
    expect(parts({ TOOLSHED_TABLE: "t", TOOLSHED_BUSINESS_OFF: "metering" })).toEqual({ usageStore: false, limits: true, settled: false, onUsage: false });
    expect(parts({ TOOLSHED_TABLE: "t", TOOLSHED_BUSINESS_OFF: "all" })).toEqual({ usageStore: false, limits: false, settled: false, onUsage: false });
    expect(() => parts({ TOOLSHED_TABLE: "t", TOOLSHED_BUSINESS_OFF: "limit" })).toThrow(/unknown part/);
  });
});
