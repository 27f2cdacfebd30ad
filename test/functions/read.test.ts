import { describe, expect, it } from "vitest";
import { newTenant, upload } from "../helpers.js";

describe("read", () => {
  it("returns numbered lines and records the read", async () => {
    const t = await newTenant();
    await upload(t, "src/a.ts", "one\ntwo\nthree\n");
    const r = await t.call("read", { file_path: "/src/a.ts" });
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(true);
    expect(r.body.output).toBe("     1\tone\n     2\ttwo\n     3\tthree");
    expect(r.body.data).toMatchObject({ file_path: "src/a.ts", start_line: 1, lines_returned: 3, total_lines: 3, truncated: false, next_offset: null });
  });
});
