/** The lexical resolution of a path through the workspace's symlinks (lib/workspace/link-resolve.ts): never leaves the workspace. */
import { describe, expect, it } from "vitest";
import { MAX_LINK_HOPS, resolveLinks } from "../../../lib/workspace/link-resolve.js";
import { normalizeFilePath } from "../../../lib/layout/paths.js";

const L = (o: Record<string, string>) => new Map(Object.entries(o));

describe("resolveLinks", () => {
  it("follows links at any prefix, relative to the link's directory, chained", () => {
    const links = L({ "a/b": "../c", c: "d/e", "x/lib64": "lib", alias: "x/lib64/python" });
    expect(resolveLinks(links, "a/b/f.txt")).toEqual({ path: "d/e/f.txt", via: { link: "a/b", target: "../c" }, endsInLink: false });
    expect(resolveLinks(links, "x/lib64/site.py")).toEqual({ path: "x/lib/site.py", via: { link: "x/lib64", target: "lib" }, endsInLink: false });
    expect(resolveLinks(links, "alias")).toMatchObject({ path: "x/lib/python", endsInLink: false });
    expect(resolveLinks(L({ p: "./q/./r/" }), "p")).toEqual({ path: "q/r", via: { link: "p", target: "./q/./r/" }, endsInLink: true });
    expect(resolveLinks(links, "plain/file")).toEqual({ path: "plain/file", via: null, endsInLink: false });
  });

  it("refuses absolute targets, climbs above the root and loops", () => {
    expect(resolveLinks(L({ pw: "/etc/passwd" }), "pw")).toEqual({ outside: { link: "pw", target: "/etc/passwd", reason: "absolute" } });
    expect(resolveLinks(L({ "a/up": "../../other/f" }), "a/up")).toMatchObject({ outside: { reason: "above_root" } });
    expect(resolveLinks(L({ "d/x": "../y", y: "d/x" }), "y")).toMatchObject({ outside: { reason: "loop" } });
    // A chain of exactly MAX_LINK_HOPS links resolves; one more is a loop.
    const chain = (n: number) => L(Object.fromEntries(Array.from({ length: n }, (_, i) => [`l${i}`, i === n - 1 ? "end" : `l${i + 1}`])));
    expect(resolveLinks(chain(MAX_LINK_HOPS), "l0")).toMatchObject({ path: "end" });
    expect(resolveLinks(chain(MAX_LINK_HOPS + 1), "l0")).toMatchObject({ outside: { reason: "loop" } });
  });

  it("fuzz: a resolution is a canonical workspace path, or refused; never above the root", () => {
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    const names = ["a", "b", "c", "..", ".", ""];
    const seg = () => names[rnd(names.length)]!;
    for (let round = 0; round < 2000; round++) {
      const links = new Map<string, string>();
      for (let i = 0; i < 1 + rnd(5); i++) links.set(["a", "b", "c"].slice(0, 1 + rnd(3)).join("/"), Array.from({ length: 1 + rnd(4) }, seg).join("/") || ".");
      const path = ["a", "b", "c", "d"].slice(0, 1 + rnd(4)).join("/");
      const r = resolveLinks(links, path);
      if ("outside" in r) continue;
      if (r.path === "") continue; // the root itself: the tools refuse it as a file path
      expect(r.path.split("/")).not.toContain("..");
      expect(normalizeFilePath(r.path)).toBe(r.path);
    }
  });
});
