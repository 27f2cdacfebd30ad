/**
 * Symlinks a command makes survive to the next call, in the same slot and in a new execution
 * environment (docs/symlinks.md): relative, nested, dangling and absolute targets alike. They
 * live in the workspace's modes table, never as file objects.
 */
import { existsSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { readModes } from "../../../lib/layout/modes.js";
import type { RunResult } from "../../../lib/exec/types.js";
import { setup } from "./helpers.js";

const t = setup({}, "acme", "links");
afterAll(() => t.cleanup());
const links = async () => (await readModes(t.driver, t.tenant, t.workspace)).links ?? {};
/** A run in a new execution environment: nothing of earlier runs on its disk. */
const cold = async (command: string) => t.unwrap<RunResult>(await t.freshHandler()(t.req(command), { tenantId: t.tenant }));
const SHOW = "for l in rel nested/deep/up dangling abs dirlink; do printf '%s -> %s\\n' $l \"$(readlink $l)\"; done";
const SHOWN = "rel -> real.txt\nnested/deep/up -> ../../real.txt\ndangling -> nowhere/at/all\nabs -> /etc/hostname\ndirlink -> nested\n";

describe("symlinks across calls", () => {
  it("relative, nested, dangling, absolute and directory links survive, warm and cold; none is a file object", async () => {
    const r = await t.run("echo real > real.txt && ln -s real.txt rel && mkdir -p nested/deep && ln -s ../../real.txt nested/deep/up && ln -s nowhere/at/all dangling && ln -s /etc/hostname abs && ln -s nested dirlink && echo ok");
    expect(r.stdout).toBe("ok\n");
    expect(r.skipped).toEqual([]);
    expect(r.files_created).toEqual(["real.txt"]);
    expect(await t.paths()).toEqual(["real.txt"]); // links are not file objects
    expect(await links()).toEqual({ abs: "/etc/hostname", dangling: "nowhere/at/all", dirlink: "nested", "nested/deep/up": "../../real.txt", rel: "real.txt" });
    const warm = await t.run(`${SHOW}; cat rel nested/deep/up dirlink/deep/up`);
    expect(warm.sync.cache).toBe("warm");
    expect(warm.stdout).toBe(`${SHOWN}real\nreal\nreal\n`);
    const c = await cold(`${SHOW}; cat rel; test -L dirlink && echo dirlink-is-a-link`);
    expect(c.sync.cache).toBe("cold");
    expect(c.stdout).toBe(`${SHOWN}real\ndirlink-is-a-link\n`);
    expect(c.skipped).toEqual([]);
  });

  it("a python venv made in one call runs in the next, in a new execution environment too", async () => {
    const r = await t.run("python3 -m venv --without-pip .venv && echo made", { timeout_ms: 60_000 });
    expect(r.stdout, r.output).toBe("made\n");
    expect((await links())[".venv/bin/python"]).toBeDefined();
    expect((await t.run(".venv/bin/python -c 'import sys; print(sys.prefix != sys.base_prefix)'")).stdout).toBe("True\n");
    const c = await cold(".venv/bin/python -c 'import sys; print(sys.prefix != sys.base_prefix)'");
    expect(c.stdout, c.output).toBe("True\n");
  });

  it("npm install of a local package with a bin in one call; the bin runs in the next, cold too", async () => {
    const r = await t.run(
      "mkdir -p pkg app && printf '{\"name\":\"hello-bin\",\"version\":\"1.0.0\",\"bin\":{\"hello\":\"cli.js\"}}' > pkg/package.json && printf '#!/usr/bin/env node\\nconsole.log(\"hello from bin\")\\n' > pkg/cli.js && cd app && echo '{}' > package.json && npm install --offline --no-audit --no-fund ../pkg >/dev/null 2>&1; ls node_modules/.bin",
      { timeout_ms: 60_000 },
    );
    expect(r.stdout, r.output).toBe("hello\n");
    expect((await t.run("cd app && npx --no-install hello")).stdout).toBe("hello from bin\n");
    const c = await cold("cd app && node_modules/.bin/hello");
    expect(c.stdout, c.output).toBe("hello from bin\n");
  });

  it("removing, repointing and replacing links by files (and files by links) is saved", async () => {
    const r = await t.run("rm rel && ln -sfn real.txt dangling && rm abs && echo file > abs && rm real.txt && ln -s nested real.txt && echo ok");
    expect(r.stdout).toBe("ok\n");
    expect(r.files_created).toEqual(["abs"]);
    expect(r.files_deleted).toEqual(["real.txt"]);
    const now = await links();
    expect(now.rel).toBeUndefined();
    expect(now.dangling).toBe("real.txt");
    expect(now.abs).toBeUndefined();
    expect(now["real.txt"]).toBe("nested");
    const c = await cold("test -e rel || echo no-rel; readlink dangling real.txt; cat abs");
    expect(c.stdout).toBe("no-rel\nreal.txt\nnested\nfile\n");
    expect((await t.run("test -e rel || echo no-rel; readlink dangling real.txt; cat abs")).stdout).toBe("no-rel\nreal.txt\nnested\nfile\n");
  });

  it("a timed-out run's links are discarded and the links it removed come back", async () => {
    const r = await t.run("ln -s x new-link; rm dangling; sleep 30", { timeout_ms: 1000 });
    expect(r.timed_out).toBe(true);
    expect((await links())["new-link"]).toBeUndefined();
    expect((await t.run("test -L new-link || echo gone; readlink dangling")).stdout).toBe("gone\nreal.txt\n");
  });

  it("a link never redirects the next materialization: a file stored below a link is skipped as a path conflict", async () => {
    await t.run("ln -s /etc etc-link");
    await t.write("etc-link/b.txt", "b\n"); // a file object below the link's path
    const next = await t.run("test -L etc-link && echo still-link");
    expect(next.stdout).toBe("still-link\n");
    expect(next.skipped).toEqual([expect.objectContaining({ path: "etc-link/b.txt", reason: "path_conflict" })]);
    expect(existsSync("/etc/b.txt")).toBe(false);
    const c = await cold("test -L etc-link && echo still-link");
    expect(c.stdout).toBe("still-link\n");
    expect(existsSync("/etc/b.txt")).toBe(false);
  });
});
