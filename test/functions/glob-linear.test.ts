/**
 * Globs run in linear time through every tool that takes one (glob, find, grep's glob and
 * type filters). A backtracking matcher (picomatch's JavaScript regex) needs seconds for
 * "*a*a*a*a*a*a*a*a*b" on one 50-character name and far longer on 250; these calls match
 * it against 40 such names and must answer about as fast as with a one-star pattern.
 */
import { describe, expect, it } from "vitest";
import { newTenant, upload, type Tenant } from "../helpers.js";
import { err, ok } from "../lib/search/helpers.js";
import { expectScaling } from "../support/scaling.js";

const PATHOLOGICAL = "*a*a*a*a*a*a*a*a*b";
const LONG = "a".repeat(250); // a file name may have 255 bytes

async function longNames(): Promise<Tenant> {
  const t = await newTenant();
  for (let k = 0; k < 40; k++) await upload(t, `d${k % 4}/${LONG}${k}`, "x");
  await upload(t, `d0/${LONG}b`, "x");
  return t;
}

describe("glob patterns are matched in linear time", { timeout: 60_000 }, () => {
  it("glob, find and grep's glob filter answer the pathological pattern on 41 names of 250+ characters about as fast as a one-star pattern", async () => {
    const t = await longNames();
    const want = [`d0/${LONG}b`];

    const g = ok(await t.call("glob", { pattern: `**/${PATHOLOGICAL}` }));
    expect(g.matches.map((m: any) => m.path)).toEqual(want);
    const f = ok(await t.call("find", { pattern: PATHOLOGICAL, type: "file" }));
    expect(f.matches.map((m: any) => m.path)).toEqual(want);
    const r = ok(await t.call("grep", { pattern: "x", glob: PATHOLOGICAL }));
    expect(r.files).toEqual(want);
    const neg = ok(await t.call("grep", { pattern: "x", glob: `!${PATHOLOGICAL}` }));
    expect(neg.files).toHaveLength(40);

    for (const [tool, slow, fast] of [
      ["glob", { pattern: `**/${PATHOLOGICAL}` }, { pattern: "**/*b" }],
      ["find", { pattern: PATHOLOGICAL }, { pattern: "*b" }],
      ["grep", { pattern: "x", glob: PATHOLOGICAL }, { pattern: "x", glob: "*b" }],
    ] as const) {
      // Linear matching adds well under a millisecond per name; backtracking would add seconds to hours.
      await expectScaling({ what: `${tool}: the pathological pattern against a one-star one`, small: () => t.call(tool, fast), large: () => t.call(tool, slow), bound: (s) => 3 * s + 1000 });
    }
  });

  it("a glob that compiles to no supported regex, or that picomatch refuses, is INVALID_ARGUMENT with what to use instead", async () => {
    const t = await newTenant();
    const e = err(await t.call("glob", { pattern: "a\\1" }), 400, "INVALID_ARGUMENT");
    expect(e.message).toContain("Use *, **, ?, [abc], {a,b}");
  });
});
