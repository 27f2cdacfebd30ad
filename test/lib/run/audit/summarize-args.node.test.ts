/**
 * What an audit entry keeps of a call's arguments (docs/audit.md "An entry"): workspace paths as
 * given, everything else as its size. An import's `prefix` is the directory its files land in, a
 * workspace path like `path`: it was logged as `prefix_bytes` (found through HTTP, 2026-12-02).
 */
import { describe, expect, it } from "vitest";
import { summarizeArgs } from "../../../../lib/run/audit/entry.js";

describe("summarizeArgs", () => {
  it("keeps an import's prefix (a workspace path) as given, beside its mode and the body's size", () => {
    expect(summarizeArgs({ ws: "w1", prefix: "app/vendor", mode: "merge", body_bytes: 127 })).toEqual({ ws: "w1", prefix: "app/vendor", mode: "merge", body_bytes: 127 });
  });

  it("still keeps contents and commands as sizes only", () => {
    expect(summarizeArgs({ file_path: "a.txt", content: "secret text" })).toEqual({ file_path: "a.txt", content_bytes: 11 });
    expect(summarizeArgs({ command: "echo hi" })).toEqual({ command_bytes: 7 });
  });
});
