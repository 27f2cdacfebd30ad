/**
 * git out of the box in the real bubblewrap sandbox: a default identity and a HOME with a
 * .gitconfig (the tenant's identity comes in the run request), and Toolshed's own files
 * (.toolshed/conflicts copies) invisible to git without any change to
 * the repository.
 */
import { afterAll, describe, expect, it } from "vitest";
import { setup } from "./helpers.js";

const t = setup({}, "t-git", "w-git");
afterAll(() => t.cleanup());
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("git in the sandbox", () => {
  it("git init, add, commit work in a fresh workspace, as Toolshed Agent on main", async () => {
    await t.write("README.md", "hello\n");
    const r = await t.run("git init -q && git add -A && git commit -qm first && git log --format='%an <%ae>|%cn' && git branch --show-current && git status --porcelain");
    expect(r.exit_code, r.output).toBe(0);
    expect(r.stdout).toBe("Toolshed Agent <agent@toolshed.invalid>|Toolshed Agent\nmain\n");
  });

  it("the identity of the request shows in git log; a repository's own config still wins", async () => {
    const git = { name: 'Ada "the" Lovelace', email: "ada@example.com" };
    const r = await t.run("echo two >> README.md && git commit -qam second && git log -1 --format='%an <%ae>'", { git });
    expect(r.stdout).toBe('Ada "the" Lovelace <ada@example.com>\n');
    const own = await t.run("git config user.name Local && echo three >> README.md && git commit -qam third && git log -1 --format=%an", { git });
    expect(own.stdout).toBe("Local\n");
  });

  it("a bad identity in the request is refused before anything runs", async () => {
    await expect(t.run("touch never.txt", { git: { name: "x\ny", email: "a@b" } })).rejects.toThrow(/INVALID_ARGUMENT: git.name/);
    expect(await t.read("never.txt")).toBeNull();
  });

  it("conflict copies never show in git status, nor get committed by git add -A", async () => {
    // A conflict copy: a tool writes the file while the command changes it.
    const running = t.run("sleep 1.5; echo from-command > README.md");
    await sleep(700);
    await t.write("README.md", "from-tool\n");
    const raced = await running;
    expect(raced.conflicts[0]?.saved_as).toMatch(/^\.toolshed\/conflicts\//);
    const r = await t.run("ls .toolshed; git add -A; git status --porcelain; git ls-files; cat .gitignore .git/info/exclude 2>/dev/null | grep -c toolshed");
    expect(r.stdout).toBe("conflicts\nM  README.md\nREADME.md\n0\n");
  });
});
