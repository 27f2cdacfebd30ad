/**
 * The execute bit across runs and execution environments: storage keeps bytes, the
 * workspace's list (lib/layout/modes.ts) keeps which files are executable.
 */
import { afterAll, describe, expect, it } from "vitest";
import { readModes } from "../../../lib/layout/modes.js";
import { setup } from "./helpers.js";

const t = setup({}, "acme", "modes");
afterAll(() => t.cleanup());
const execList = async () => (await readModes(t.driver, t.tenant, t.workspace)).exec;
/** A run in a new execution environment: nothing of earlier runs on its disk. */
const cold = async (command: string) => {
  const h = t.freshHandler();
  return t.unwrap<import("../../../lib/exec/types.js").RunResult>(await h(t.req(command), { tenantId: t.tenant }));
};

describe("execute bits", () => {
  it("chmod +x in one run is still true in a new execution environment; other files stay 0644", async () => {
    const r = await t.run("printf '#!/bin/sh\\necho ran\\n' > run.sh && chmod +x run.sh && echo data > data.txt");
    expect(r.files_created).toEqual(["data.txt", "run.sh"]);
    expect(await execList()).toEqual(["run.sh"]);
    const c = await cold("./run.sh && stat -c '%a %n' run.sh data.txt");
    expect(c.sync.cache).toBe("cold");
    expect(c.stdout).toBe("ran\n755 run.sh\n644 data.txt\n");
  });

  it("a chmod alone (same bytes) is saved, without an upload; chmod -x is saved too", async () => {
    await t.write("tool.py", "print('hi')\n");
    const r = await t.run("chmod +x tool.py && chmod -x run.sh");
    expect(r.files_changed).toEqual([]);
    expect(r.sync.uploaded_files).toBe(0);
    expect(await execList()).toEqual(["tool.py"]);
    expect((await cold("stat -c '%a %n' run.sh tool.py")).stdout).toBe("644 run.sh\n755 tool.py\n");
    // Warm: the slot holds the same modes.
    expect((await t.run("stat -c '%a %n' run.sh tool.py")).stdout).toBe("644 run.sh\n755 tool.py\n");
  });

  it("a tool's edit of an executable file keeps it executable, warm and cold", async () => {
    await t.run("chmod +x run.sh");
    await t.write("run.sh", "#!/bin/sh\necho edited\n"); // as edit or write do: new bytes, new etag
    expect((await t.run("./run.sh")).stdout).toBe("edited\n");
    expect((await cold("./run.sh")).stdout).toBe("edited\n");
  });

  it("deleting an executable file drops it from the list; a later file of that name is not executable", async () => {
    expect(await execList()).toContain("run.sh");
    await t.run("rm run.sh");
    expect(await execList()).not.toContain("run.sh");
    await t.run("echo plain > run.sh");
    expect((await cold("stat -c %a run.sh")).stdout).toBe("644\n");
  });

  it("a timed-out run's chmod is discarded with its other changes", async () => {
    const r = await t.run("chmod +x data.txt; sleep 30", { timeout_ms: 1000 });
    expect(r.timed_out).toBe(true);
    expect(await execList()).not.toContain("data.txt");
    expect((await t.run("stat -c %a data.txt")).stdout).toBe("644\n"); // warm slot put back
  });

  it("git sees no mode changes after a cold start", async () => {
    const git = "git -c user.name=t -c user.email=t@example.com";
    const r = await t.run(`git init -q repo && cd repo && printf '#!/bin/sh\\n' > build.sh && chmod +x build.sh && echo x > readme && ${git} add -A && ${git} commit -qm init && git status --porcelain && echo clean`);
    expect(r.stdout).toBe("clean\n");
    const c = await cold("cd repo && git status --porcelain && git ls-files -s build.sh | cut -c1-6 && echo clean");
    expect(c.stdout).toBe("100755\nclean\n");
  });

  it("two runs in separate trees chmod different files at once: both bits are kept", async () => {
    await t.write("p.sh", "p\n");
    await t.write("q.sh", "q\n");
    await t.run("true"); // settle the slot with both files
    const [a, b] = await Promise.all([t.run("chmod +x p.sh; sleep 0.3"), t.run("chmod +x q.sh; sleep 0.3")]);
    expect(a.exit_code).toBe(0);
    expect(b.exit_code).toBe(0);
    expect(await execList()).toEqual(expect.arrayContaining(["p.sh", "q.sh"]));
    expect((await cold("stat -c '%a %n' p.sh q.sh")).stdout).toBe("755 p.sh\n755 q.sh\n");
  });

  it("the list is not a workspace file: runs never see it", async () => {
    const r = await t.run("find . -name 'modes*' -o -name '.toolshed' | wc -l");
    expect(r.stdout).toBe("0\n");
    expect((await t.paths()).some((p) => p.includes("modes"))).toBe(false);
  });
});
