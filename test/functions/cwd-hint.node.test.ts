/**
 * File tools take paths from the workspace's root while bash keeps its working directory from call
 * to call: after `cd src` in bash, `read app.ts` misses. The miss names the file below the session's
 * working directory (lib/run/cwd-hint.ts), for every tool that opens one file, only in that session,
 * and only when the file is there. Real sandbox (local executor), the HTTP tool route.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { runnerApp } from "../support/runner-app.js";

let r: Awaited<ReturnType<typeof runnerApp>>;

const call = async (tool: string, args: unknown, session = "s1"): Promise<{ status: number; body: any }> => {
  const res = await r.app.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${r.key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
  return { status: res.status, body: (await res.json()) as any };
};

beforeAll(async () => {
  r = await runnerApp({ storage: memoryDriver() });
});
afterAll(() => r.close());

describe("a file tool's miss after bash changed directory", () => {
  it("names the file below the session's working directory, for read, edit, multi_edit and insert, and changes nothing", async () => {
    const b = await call("bash", { command: "mkdir -p src/lib && printf 'one\\ntwo\\n' > src/lib/app.ts && cd src" });
    expect(b.status, JSON.stringify(b.body)).toBe(200);

    const r = await call("read", { file_path: "lib/app.ts" });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("NOT_FOUND");
    expect(r.body.error.message).toContain("not from bash's working directory (src/");
    expect(r.body.error.message).toContain("did you mean src/lib/app.ts?");
    expect(r.body.error.details).toMatchObject({ path: "lib/app.ts", working_directory: "src" });
    expect(r.body.error.details.similar[0]).toBe("src/lib/app.ts");

    for (const [tool, args] of [
      ["edit", { file_path: "lib/app.ts", old_string: "one", new_string: "uno" }],
      ["multi_edit", { file_path: "lib/app.ts", edits: [{ old_string: "one", new_string: "uno" }] }],
      ["insert", { file_path: "lib/app.ts", insert_line: 0, text: "zero\n" }],
    ] as const) {
      const e = await call(tool, args);
      expect(e.status, tool).toBe(404);
      expect(e.body.error.message, tool).toContain("did you mean src/lib/app.ts?");
    }
    // Nothing was written anywhere: the file is as bash left it.
    const back = await call("read", { file_path: "src/lib/app.ts" });
    expect(back.status).toBe(200);
    expect(back.body.output).toBe("     1\tone\n     2\ttwo");
  });

  it("says nothing of the kind in another session, for a file that is not there either, or once bash is back at the root", async () => {
    const other = await call("read", { file_path: "lib/app.ts" }, "s2");
    expect(other.status).toBe(404);
    expect(other.body.error.message).not.toContain("working directory");

    const absent = await call("read", { file_path: "lib/none.ts" });
    expect(absent.status).toBe(404);
    expect(absent.body.error.message).not.toContain("working directory");

    expect((await call("bash", { command: "cd .." })).status).toBe(200);
    const atRoot = await call("read", { file_path: "lib/app.ts" });
    expect(atRoot.status).toBe(404);
    expect(atRoot.body.error.message).not.toContain("working directory");
  });
});
