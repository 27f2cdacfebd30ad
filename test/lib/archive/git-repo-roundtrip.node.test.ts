/**
 * A coding agent's ordinary day, end to end through the real sandbox: a git repository (a symlink
 * to a file, one to a directory, a dangling one, executables 0755 and 0700, an empty directory
 * kept by .gitkeep, a hard link (GNU tar's link entry), a submodule's gitlink with its empty directory and .gitmodules, CRLF, binary
 * with NUL, unicode and leading-dash names) is imported, `git status` is clean in bash, the edit
 * tool changes a file, bash makes files, links, an executable and a directory and commits, and
 * the export, untarred here by GNU tar, passes `git fsck --strict`, is clean for `git status`
 * and holds the sandbox's tree entry for entry (kind, execute bit, link target, bytes).
 * Both in fresh sandboxes and in a live one (keep_alive).
 */
import { execFileSync } from "node:child_process";
import { chmodSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../lib/exec/live/service.js";
import { sandboxApp } from "../doors/sandbox-app.js";

const GIT_ENV = { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" };
const git = (dir: string, ...args: string[]) => execFileSync("git", ["-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main", "-c", "core.autocrlf=false", ...args], { cwd: dir, env: GIT_ENV, encoding: "utf8" });

/** The repository, committed; as a tar.gz made by GNU tar (its default format: GNU long names). */
function repository(dir: string): Uint8Array {
  const w = (p: string, body: string | Uint8Array, mode = 0o644) => {
    mkdirSync(join(dir, p, ".."), { recursive: true });
    writeFileSync(join(dir, p), body);
    chmodSync(join(dir, p), mode);
  };
  git(dir, "init", "-q");
  w("README.md", "# repo\n\nline\n");
  w("src/main.c", "int main(void) { return 0; }\n");
  w("bin/run.sh", "#!/bin/sh\necho ran\n", 0o755);
  w("bin/private.sh", "#!/bin/sh\necho private\n", 0o700);
  w("docs/win.txt", "one\r\ntwo\r\n");
  w("data.bin", new Uint8Array([0, 1, 2, 0, 255, 0]));
  w("-dash.txt", "dash\n");
  w("caf\u00e9.txt", "nfc\n");
  w("empty.txt", "");
  w("keep/.gitkeep", "");
  w(`${"deep/".repeat(30)}${"n".repeat(150)}.txt`, "a long path\n");
  linkSync(join(dir, "bin/run.sh"), join(dir, "bin/run-hard.sh")); // GNU tar writes the second name as a hard link entry
  symlinkSync("README.md", join(dir, "readme-link"));
  symlinkSync("../src", join(dir, "docs/src-link"));
  symlinkSync("no/such/file", join(dir, "dangling"));
  symlinkSync(`../${"t".repeat(140)}/far`, join(dir, "long-target"));
  w(".gitmodules", '[submodule "vendor/lib"]\n\tpath = vendor/lib\n\turl = ../lib.git\n');
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "first");
  // A submodule's gitlink (mode 160000) and the empty directory git leaves for it until it is initialised.
  mkdirSync(join(dir, "vendor/lib"), { recursive: true });
  git(dir, "update-index", "--add", "--cacheinfo", `160000,${git(dir, "rev-parse", "HEAD").trim()},vendor/lib`);
  git(dir, "commit", "-qm", "submodule");
  return new Uint8Array(execFileSync("tar", ["-C", dir, "-czf", "-", "."]));
}

/** Every entry below the working tree but .git: kind, owner's execute bit, link target, sha-256 of a file's bytes. */
const TREE = `find . -path ./.git -prune -o -mindepth 1 -printf '%y %p %l\\n' | LC_ALL=C sort | while read -r kind path rest; do
  case $kind in f) printf '%s %s %s %s\\n' "$kind" "$path" "$(test -x "$path" && echo x || echo -)" "$(sha256sum < "$path" | cut -c1-16)";; *) printf '%s %s %s\\n' "$kind" "$path" "$rest";; esac
done`;

for (const live of [false, true]) {
  describe(live ? "a git repository's round trip, in a live sandbox (keep_alive)" : "a git repository's round trip, in fresh sandboxes", () => {
    const { call, tenant, close } = sandboxApp(live ? { liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS) } : {});
    const dirs: string[] = [];
    const temp = (name: string) => {
      const d = mkdtempSync(join(tmpdir(), `toolshed-gitrt-${name}-`));
      dirs.push(d);
      return d;
    };
    afterAll(async () => {
      await close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    it("import → git status clean → edit tool → bash makes files and commits → export: git fsck and git status clean, the tree entry for entry", async () => {
      const t = await tenant(live ? "gitrt-live" : "gitrt-fresh", []);
      const tool = async (name: string, args: Record<string, unknown>) => {
        const r = await call(`/v1/workspaces/repo/tools/${name}`, { method: "POST", headers: { "x-session-id": "s1" }, body: JSON.stringify(name === "bash" && live ? { ...args, keep_alive: true } : args) }, t.key);
        const body = (await r.json()) as any;
        expect(r.status, JSON.stringify(body).slice(0, 2000)).toBe(200);
        return body;
      };
      const bash = async (command: string) => {
        const r = await tool("bash", { command });
        expect(r.data.exit_code, r.output).toBe(0);
        return (r.output as string).replace(/^\[live sandbox started[^\n]*\n/, "");
      };

      const src = temp("src");
      const archive = repository(src);
      const created = await call("/v1/workspaces?id=repo", { method: "POST", headers: { "content-type": "application/gzip" }, body: archive }, t.key);
      const report = ((await created.json()) as any).import;
      expect(created.status, JSON.stringify(report)).toBe(201);
      expect(report.skipped_count, report.message).toBe(0);
      expect(report.symlinks).toBe(4);

      // The sandbox's tree is the repository's, and git agrees.
      const onHost = execFileSync("sh", ["-c", TREE], { cwd: src, encoding: "utf8" });
      for (const line of ["l ./readme-link README.md", "l ./docs/src-link ../src", "d ./vendor/lib ", "f ./bin/private.sh x ", "f ./keep/.gitkeep - ", "f ./bin/run-hard.sh x "]) expect(onHost).toContain(line);
      expect(await bash(TREE)).toBe(onHost);
      expect(await bash("git status --porcelain=v1 --untracked-files=all; git fsck --strict --no-progress && echo fsck-ok")).toBe("fsck-ok\n");

      // The edit tool, then bash: new files, links, an executable, an empty directory kept, a commit.
      await tool("read", { file_path: "README.md" });
      await tool("edit", { file_path: "README.md", old_string: "line\n", new_string: "line\nedited by the tool\n" });
      await tool("read", { file_path: "docs/win.txt" });
      await tool("edit", { file_path: "docs/win.txt", old_string: "two", new_string: "TWO" });
      expect(await bash("git status --porcelain=v1")).toBe(" M README.md\n M docs/win.txt\n");
      const made = await bash([
        "printf 'a\\r\\nb\\r\\n' > made-crlf.txt",
        "ln -s ../README.md docs/up-link && ln -s src/main.c main-link",
        "chmod +x src/main.c && chmod -x bin/run.sh",
        "mkdir -p made/empty && touch made/empty/.gitkeep && mkdir -p untracked/empty",
        "git add -A && git commit -qm 'edit and make' && git status --porcelain=v1 --untracked-files=all && git fsck --strict --no-progress && echo committed",
      ].join(" && "));
      // The two files whose bytes did not change but whose execute bit did are named for the model (undo puts them back), and so are
      // the links and the empty directory the command made (not git's own inside .git).
      expect(made).toMatch(/^committed\n\n\[execute bit changed: bin\/run\.sh, src\/main\.c\]\n\[symlinks made or repointed: docs\/up-link, main-link\]\n\[empty directories kept: untracked\/empty\/\]\n?$/);
      const inSandbox = await bash(TREE);
      const lsFiles = await bash("git ls-files -s --abbrev=12 && git log --format=%s");
      expect(lsFiles).toContain("120000");
      expect(lsFiles).toMatch(/^160000 [0-9a-f]{12} 0\tvendor\/lib$/m);

      // The export, untarred by GNU tar: the same tree, git fsck and git status clean, the same index and log.
      const res = await call("/v1/workspaces/repo/export", {}, t.key);
      expect(res.status).toBe(200);
      const out = temp("out");
      execFileSync("tar", ["-C", out, "-xzf", "-"], { input: Buffer.from(await res.arrayBuffer()) });
      expect(execFileSync("sh", ["-c", TREE], { cwd: out, encoding: "utf8" })).toBe(inSandbox);
      expect(git(out, "status", "--porcelain=v1", "--untracked-files=all")).toBe("");
      expect(git(out, "fsck", "--strict", "--no-progress")).toBe("");
      expect(git(out, "ls-files", "-s", "--abbrev=12") + git(out, "log", "--format=%s")).toBe(lsFiles);
      expect(git(out, "show", "--stat", "--format=%s", "HEAD")).toMatch(/edit and make/);

      // A checkpoint, a fork of it (fresh sandboxes) and a restore after damage: the same tree each time.
      const cp = await call("/v1/workspaces/repo/checkpoints", { method: "POST", body: JSON.stringify({ name: "committed" }) }, t.key);
      const checkpoint = ((await cp.json()) as any).id as string;
      expect(cp.status).toBe(201);
      const fork = await call("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "forked", from_workspace: "repo", checkpoint }) }, t.key);
      expect(fork.status, await fork.clone().text()).toBe(201);
      const inFork = await call("/v1/workspaces/forked/tools/bash", { method: "POST", body: JSON.stringify({ command: `${TREE}; git status --porcelain=v1 --untracked-files=all` }) }, t.key);
      expect(((await inFork.json()) as any).output).toBe(inSandbox);
      await bash("rm readme-link main-link bin/private.sh && chmod -x src/main.c && rm made/empty/.gitkeep && rmdir made/empty made && ln -s /etc etc-link && echo x > keep/new && git add -A && git commit -qm damage");
      const restored = await call(`/v1/workspaces/repo/checkpoints/${checkpoint}/restore`, { method: "POST" }, t.key);
      expect(restored.status, await restored.clone().text()).toBe(200);
      expect(await bash(`${TREE}; git status --porcelain=v1 --untracked-files=all; git log -1 --format=%s`)).toBe(`${inSandbox}edit and make\n`);
    }, 120_000);
  });
}
