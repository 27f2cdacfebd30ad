/// <reference types="vite/client" />
/**
 * Invariant 1, "one path function": every user-supplied path goes through normalizePath, and
 * every storage key is built by fileKey. This file tries to break both: the cases named in
 * DESIGN.md and issue 2, the CVE-2025-53110 class (sibling prefixes), a differential check
 * against node:path's POSIX normalizer, and a seeded fuzz of hostile generated paths.
 */
import { posix } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolError } from "../../../lib/shared/errors.js";
import { expectScaling } from "../../support/scaling.js";
import {
  ID_PATTERN,
  MAX_PATH_BYTES,
  MAX_SEGMENT_BYTES,
  ancestorsOf,
  baseName,
  dirMarkerKey,
  fileKey,
  filesPrefix,
  internalPrefix,
  isDirMarker,
  isHidden,
  isWithin,
  joinPath,
  markerDir,
  normalizeFilePath,
  normalizePath,
  normalizePathInFull,
  parentOf,
  tenantWorkspacesPrefix,
  workspaceMetaKey,
  workspaceOfMetaKey,
  workspacePrefix,
} from "../../../lib/layout/paths.js";
import { RecordStore } from "../../../lib/workspace/records.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { Workspace } from "../../../lib/workspace/workspace.js";
import { rng } from "../../support/prng.js";

const T = "acme";
const WS = "ws";
const EVIL = "ws-evil";
const S3_MAX_KEY_BYTES = 1024;

const utf8 = new TextEncoder();
const bytes = (s: string) => utf8.encode(s).length;

/** The error normalizePath throws for `input`, or null when it accepts it. */
function errorOf(fn: () => unknown): ToolError | null {
  try {
    fn();
    return null;
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    return e;
  }
}

function expectInvalid(input: unknown, reason?: RegExp) {
  const e = errorOf(() => normalizePath(input));
  expect(e, `expected INVALID_PATH for ${JSON.stringify(input)}`).not.toBeNull();
  expect(e!.code).toBe("INVALID_PATH");
  expect(e!.status).toBe(400);
  expect(typeof e!.details.reason).toBe("string");
  if (reason) expect(e!.message).toMatch(reason);
  // normalizeFilePath refuses the same inputs the same way.
  expect(errorOf(() => normalizeFilePath(input))?.code).toBe("INVALID_PATH");
}

/** The canonical properties every accepted path must have. */
function expectCanonical(path: string) {
  expect(path.startsWith("/")).toBe(false);
  expect(path.endsWith("/")).toBe(false);
  if (path !== "") {
    for (const seg of path.split("/")) {
      expect(seg).not.toBe("");
      expect(seg).not.toBe(".");
      expect(seg).not.toBe("..");
      expect(bytes(seg)).toBeLessThanOrEqual(MAX_SEGMENT_BYTES);
    }
  }
  expect(path.normalize("NFC")).toBe(path);
  expect(path.isWellFormed()).toBe(true);
  expect(bytes(path)).toBeLessThanOrEqual(MAX_PATH_BYTES);
  expect(normalizePath(path)).toBe(path);
}

describe("normalizePath: equivalent spellings give one canonical path", () => {
  const same: [string, string[]][] = [
    ["a/b", ["/a/b", "a/b", "./a//b/", "a/./b", "a/b/.", "//a///b//", "./././a/b", "a/b/", "/./a/./b/./", "a/c/../b", "/a/b/c/.."]],
    ["src/index.ts", ["src/index.ts", "/src/index.ts", "./src/index.ts", "src//index.ts", "src/./index.ts", "lib/../src/index.ts", "/src/x/../index.ts"]],
    ["a", ["a", "/a", "a/", "./a", "/a/", "//a//", "a/.", "a/./"]],
  ];
  for (const [canonical, forms] of same) {
    it(`all spell ${canonical}`, () => {
      for (const f of forms) expect(normalizePath(f), JSON.stringify(f)).toBe(canonical);
      expectCanonical(canonical);
    });
  }

  it("maps every spelling of the root to the empty path", () => {
    for (const f of ["", "/", ".", "./", "//", "/./", "./.", "a/..", "/a/..", "a/b/../..", "./a/../", "a/./b/.././..", "/".repeat(500)]) {
      expect(normalizePath(f), JSON.stringify(f)).toBe("");
    }
  });

  it("normalizeFilePath refuses the root with IS_DIRECTORY", () => {
    for (const f of ["", "/", ".", "a/..", "//"]) {
      const e = errorOf(() => normalizeFilePath(f));
      expect(e?.code, JSON.stringify(f)).toBe("IS_DIRECTORY");
    }
    expect(normalizeFilePath("/a/b")).toBe("a/b");
  });

  it("treats absolute paths as workspace paths (no host filesystem meaning)", () => {
    expect(normalizePath("/etc/passwd")).toBe("etc/passwd");
    expect(normalizePath("/root/.ssh/id_rsa")).toBe("root/.ssh/id_rsa");
    expect(normalizePath("/proc/self/environ")).toBe("proc/self/environ");
    expect(normalizePath("~/x")).toBe("~/x");
    expect(normalizePath("~")).toBe("~");
    expect(normalizePath("$HOME/x")).toBe("$HOME/x");
    expect(normalizePath("C:/Windows")).toBe("C:/Windows");
    expect(normalizePath("file:///etc/passwd")).toBe("file:/etc/passwd");
    expect(normalizePath("*")).toBe("*");
  });

  it("reads an absolute path under /workspace (the root as bash shows it) as the workspace's own: a relative workspace/ is a directory of that name", () => {
    for (const [f, p] of [
      ["/workspace/src/a.ts", "src/a.ts"],
      ["/workspace", ""],
      ["/workspace/", ""],
      ["//workspace//src/./a.ts", "src/a.ts"],
      ["/./workspace/a", "a"],
      ["/workspace/workspace/a", "workspace/a"],
      ["workspace/a", "workspace/a"],
      ["./workspace/a", "workspace/a"],
      ["/workspaces/a", "workspaces/a"],
      ["/src/workspace/a", "src/workspace/a"],
    ]) expect(normalizePath(f), f).toBe(p);
    expect(errorOf(() => normalizePath("/workspace/../etc/passwd"))?.code).toBe("INVALID_PATH");
  });
});

describe("normalizePath: '..'", () => {
  it("is resolved when it stays inside the workspace", () => {
    const cases: [string, string][] = [
      ["a/../b", "b"],
      ["a/b/../c", "a/c"],
      ["a/b/../../c", "c"],
      ["a/./../b", "b"],
      ["/a/../b", "b"],
      ["a/b/c/../../../d", "d"],
      ["a/../b/../c/../d", "d"],
      ["a/b/../b/../b/c", "a/b/c"],
      ["ws/../ws-evil/x", "ws-evil/x"],
    ];
    for (const [input, out] of cases) expect(normalizePath(input), input).toBe(out);
  });

  it("is refused when it would climb above the root", () => {
    const climbs = [
      "..",
      "../",
      "/..",
      "/../",
      "../x",
      "/../x",
      "./..",
      "./../x",
      "a/../..",
      "a/../../b",
      "a/b/../../../c",
      "../../../../../../etc/passwd",
      "/../../../../etc/passwd",
      "../ws-evil/f/secret",
      "x/../../ws-evil/f/x",
      "../../../t/other/w/ws/f/secret",
      "a/../../a", // climbs, then comes back: still refused
      "//..//x",
      "./a/./../.././b",
      "../".repeat(100) + "x",
    ];
    for (const c of climbs) expectInvalid(c, /leave the workspace/);
  });

  it("the error names the path and says why", () => {
    const e = errorOf(() => normalizePath("../secret"))!;
    expect(e.message).toContain("../secret");
    expect(e.details.path).toBe("../secret");
    expect(e.details.reason).toMatch(/leave the workspace/);
  });

  it("cuts long inputs in the message", () => {
    const e = errorOf(() => normalizePath(`../${"x".repeat(5000)}`))!;
    expect(e.message.length).toBeLessThan(300);
    expect(String(e.details.path).length).toBeLessThanOrEqual(120);
  });
});

describe("normalizePath: refused characters", () => {
  it("refuses non-strings", () => {
    for (const v of [undefined, null, 42, {}, [], ["a"], true, Symbol.iterator]) {
      const e = errorOf(() => normalizePath(v));
      expect(e?.code).toBe("INVALID_PATH");
    }
  });

  it("refuses NUL anywhere", () => {
    for (const c of ["\0", "a\0", "\0a", "a\0b", "a/\0/b", "a/b\0.txt", "a.txt\0.png", "\0/..", "../\0"]) expectInvalid(c);
  });

  it("refuses C0 control characters and DEL", () => {
    for (let cp = 0; cp < 0x20; cp++) expectInvalid(`a${String.fromCharCode(cp)}b`, /control character/);
    expectInvalid("a\x7fb", /control character/);
    for (const c of ["a\nb", "a\r\nb", "\tx", "x\t", "\x1b[31mred", "a/\n/b", "line\n"]) expectInvalid(c);
  });

  it("refuses C1 control characters (U+0080-U+009F)", () => {
    for (let cp = 0x80; cp <= 0x9f; cp++) expectInvalid(`a${String.fromCharCode(cp)}b`, /control character/);
  });

  it("refuses backslashes, whatever they try", () => {
    for (const c of ["a\\b", "..\\..\\x", "\\x", "a\\", "\\\\server\\share", "..\\", "a/..\\..\\b", "C:\\Windows\\system32", "\\", "a/\\/b"]) {
      expectInvalid(c, /not '\\'/);
    }
  });

  it("refuses lone surrogates (they would become U+FFFD in a key)", () => {
    for (const c of ["\ud800", "\udfff", "a\udc00b", "\ud83d", "x/\ude00", "\ude00\ud83d", "a/\ud800/b"]) expectInvalid(c, /well-formed/);
    // A proper pair is fine.
    expect(normalizePath("\ud83d\ude00.txt")).toBe("😀.txt");
    expect(normalizePath("dir/😀/𝕏")).toBe("dir/😀/𝕏");
  });

  it("refuses names made only of dots", () => {
    for (const c of ["...", "....", ".....", "a/.../b", "/.../", "a/....", "..."]) expectInvalid(c, /only dots/);
  });

  it("accepts dots inside names", () => {
    for (const c of [".a", "a.", "..a", "a..", ".hidden", "..hidden", "a...b", ".../x".replace("...", "..x"), ". .", " ..", ".. ", "a/.b/..c/d.."]) {
      const p = normalizePath(c);
      expectCanonical(p);
    }
    expect(normalizePath(".. ")).toBe(".. ");
    expect(normalizePath(" ..")).toBe(" ..");
    expect(normalizePath("..a/b")).toBe("..a/b");
  });
});

describe("dirMarkerKey: explicit directories", () => {
  it("is the directory's file key plus '/', never the root, only for canonical paths", () => {
    expect(dirMarkerKey(T, WS, "a/b")).toBe(`${fileKey(T, WS, "a/b")}/`);
    expect(isDirMarker(dirMarkerKey(T, WS, "a/b"))).toBe(true);
    expect(isDirMarker(fileKey(T, WS, "a/b"))).toBe(false);
    expect(markerDir(dirMarkerKey(T, WS, "a/b").slice(filesPrefix(T, WS).length))).toBe("a/b");
    expect(() => dirMarkerKey(T, WS, "")).toThrow(ToolError);
    for (const bad of ["a/", "/a", "a//b", "a/../b", "./a", "cafe\u0301"]) expect(() => dirMarkerKey(T, WS, bad), bad).toThrow(ToolError);
    // No canonical path gives a key ending in "/": a file key is never a marker.
    for (const p of ["a", "a/b", ".git/refs", "x/y.z"]) expect(isDirMarker(fileKey(T, WS, normalizePath(`${p}/`)))).toBe(false);
  });
});

describe("normalizePath: percent-encoding is literal", () => {
  it("never decodes %2e%2e or %2f into traversal", () => {
    const literal = ["%2e%2e", "%2E%2E", "%2e%2e/%2e%2e/x", "..%2f..%2fx", "%2e%2e%2f%2e%2e%2fetc", "a%2fb", "%2f", "%252e%252e", "%5c", "..%5c..%5cx", "%00", "%2e", "%41", "%", "%zz", "100%"];
    for (const c of literal) {
      const p = normalizePath(c);
      expect(p, c).toBe(c);
      expectCanonical(p);
      const key = fileKey(T, WS, p);
      expect(key).toBe(`t/${T}/w/${WS}/f/${c}`);
      expect(key.startsWith(filesPrefix(T, WS))).toBe(true);
    }
  });

  it("keeps percent-encoded segments from being resolved with '..'", () => {
    // The literal name "%2e%2e" is a normal directory: '..' after it pops it, nothing more.
    expect(normalizePath("%2e%2e/..")).toBe("");
    expect(normalizePath("a/%2e%2e/../b")).toBe("a/b");
    expectInvalid("%2e%2e/../..");
  });
});

describe("normalizePath: Unicode is NFC", () => {
  it("gives composed and decomposed é the same key", () => {
    const composed = "caf\u00e9/r\u00e9sum\u00e9.txt";
    const decomposed = "cafe\u0301/re\u0301sume\u0301.txt";
    expect(composed).not.toBe(decomposed);
    expect(normalizePath(decomposed)).toBe(composed);
    expect(normalizePath(composed)).toBe(composed);
    expect(fileKey(T, WS, normalizePath(decomposed))).toBe(fileKey(T, WS, normalizePath(composed)));
  });

  it("normalizes other canonical equivalents", () => {
    expect(normalizePath("\u1100\u1161")).toBe("\uac00"); // Hangul jamo → syllable
    expect(normalizePath("\u212b")).toBe("\u00c5"); // ANGSTROM SIGN → Å
    expect(normalizePath("\u2126")).toBe("\u03a9"); // OHM SIGN → Ω
    expect(normalizePath("A\u030a")).toBe("\u00c5");
    expect(normalizePath("\u1e0b\u0323")).toBe("\u1e0d\u0307"); // reordering of marks
  });

  it("does not apply compatibility folding (NFKC): look-alikes stay distinct names", () => {
    // FULLWIDTH FULL STOP, ONE DOT LEADER, FULLWIDTH SOLIDUS, DIVISION SLASH: names, not separators.
    expect(normalizePath("\uff0e\uff0e")).toBe("\uff0e\uff0e");
    expect(normalizePath("\u2024\u2024")).toBe("\u2024\u2024");
    expect(normalizePath("..\uff0fx")).toBe("..\uff0fx");
    expect(normalizePath("..\u2215..\u2215x")).toBe("..\u2215..\u2215x");
    expect(normalizePath("\ufb01le")).toBe("\ufb01le");
  });

  it("counts the NFC form against the limits", () => {
    // 200 decomposed é: 600 bytes in, 400 bytes after NFC (over the name limit either way).
    expectInvalid("e\u0301".repeat(200), /name is longer/);
    // 120 decomposed é: 360 bytes in, 240 bytes after NFC: fits.
    const p = normalizePath("e\u0301".repeat(120));
    expect(p).toBe("\u00e9".repeat(120));
    expect(bytes(p)).toBe(240);
  });
});

describe("normalizePath: lengths are counted in UTF-8 bytes", () => {
  it(`accepts a name of ${MAX_SEGMENT_BYTES} bytes and refuses ${MAX_SEGMENT_BYTES + 1}`, () => {
    expect(normalizePath("a".repeat(MAX_SEGMENT_BYTES))).toBe("a".repeat(MAX_SEGMENT_BYTES));
    expectInvalid("a".repeat(MAX_SEGMENT_BYTES + 1), /name is longer/);
    expectInvalid(`dir/${"a".repeat(MAX_SEGMENT_BYTES + 1)}/x`, /name is longer/);
  });

  it("counts multi-byte characters by their bytes, not their length", () => {
    // é is 2 bytes: 127 fit (254), 128 do not (256) although 128 < 255 characters.
    expect(bytes(normalizePath("\u00e9".repeat(127)))).toBe(254);
    expectInvalid("\u00e9".repeat(128), /name is longer/);
    // 中 is 3 bytes: 85 fit (255), 86 do not.
    expect(bytes(normalizePath("中".repeat(85)))).toBe(255);
    expectInvalid("中".repeat(86), /name is longer/);
    // 😀 is 4 bytes (2 UTF-16 units): 63 fit (252), 64 do not.
    expect(bytes(normalizePath("😀".repeat(63)))).toBe(252);
    expectInvalid("😀".repeat(64), /name is longer/);
  });

  it(`accepts a path of ${MAX_PATH_BYTES} bytes and refuses ${MAX_PATH_BYTES + 1}`, () => {
    const seg = "a".repeat(200);
    const base = [seg, seg, seg].join("/"); // 602 bytes
    const exact = `${base}/${"b".repeat(MAX_PATH_BYTES - bytes(base) - 1)}`;
    expect(bytes(exact)).toBe(MAX_PATH_BYTES);
    expect(normalizePath(exact)).toBe(exact);
    expectInvalid(`${exact}c`, /longer than/);
  });

  it("refuses a multi-byte path over the limit that has few characters", () => {
    const seg = "中".repeat(80); // 240 bytes, 80 chars
    const path = [seg, seg, seg, "中".repeat(10)].join("/"); // 753 bytes
    expect(normalizePath(path)).toBe(path);
    const over = `${path}/中中中中中`; // 753 + 1 + 15 = 769
    expect(over.length).toBeLessThan(MAX_PATH_BYTES);
    expectInvalid(over, /longer than/);
  });

  it("measures the canonical path, not the input", () => {
    const padded = `${"./".repeat(1000)}a`; // 2001 chars in, "a" out
    expect(normalizePath(padded)).toBe("a");
    expect(normalizePath(`${"x/../".repeat(500)}y`)).toBe("y");
  });

  it("refuses absurdly long inputs in time linear in their length", async () => {
    const refuse = (n: number) => () => {
      expectInvalid("a/".repeat(n));
      expectInvalid("../".repeat(n));
      expectInvalid("\0".repeat(n));
    };
    await expectScaling({ what: "refusing inputs of 250,000 then 1,000,000 repeats", small: refuse(250_000), large: refuse(1_000_000), bound: (s) => 8 * s + 200 });
  });

  it("every accepted path fits an S3/R2 key under the longest prefix", () => {
    const longId = "z".repeat(63);
    expect(ID_PATTERN.test(longId)).toBe(true);
    const seg = "😀".repeat(63); // 252 bytes
    const path = [seg, seg, seg].join("/"); // 758 bytes
    expect(normalizePath(path)).toBe(path);
    expect(bytes(fileKey(longId, longId, path))).toBeLessThanOrEqual(S3_MAX_KEY_BYTES);
    expect(bytes(filesPrefix(longId, longId)) + MAX_PATH_BYTES).toBeLessThanOrEqual(S3_MAX_KEY_BYTES);
  });
});

describe("ID_PATTERN and key prefixes", () => {
  it("accepts lower-case slugs", () => {
    for (const id of ["a", "0", "ws", "ws-evil", "a_b", "a-b-c", "0abc", "z".repeat(63), "t-abc123", "ws_0123456789abcdef"]) {
      expect(ID_PATTERN.test(id), id).toBe(true);
    }
  });

  it("refuses everything else", () => {
    const bad = ["", "-a", "_a", "A", "Ws", "a/b", "..", ".", "a.b", "é", "z".repeat(64), "a b", "a\n", "\na", "ws/../x", "ws%2f..", "a\\b", "a\0", " a", "a ", "*", "ws/", "/ws"];
    for (const id of bad) expect(ID_PATTERN.test(id), JSON.stringify(id)).toBe(false);
  });

  it("workspacePrefix refuses a bad workspace (INVALID_ARGUMENT) or tenant (INTERNAL)", () => {
    expect(workspacePrefix(T, WS)).toBe("t/acme/w/ws/");
    expect(errorOf(() => workspacePrefix(T, "../x"))?.code).toBe("INVALID_ARGUMENT");
    expect(errorOf(() => workspacePrefix(T, ""))?.code).toBe("INVALID_ARGUMENT");
    expect(errorOf(() => workspacePrefix(T, "ws/f"))?.code).toBe("INVALID_ARGUMENT");
    expect(errorOf(() => workspacePrefix("../other", WS))?.code).toBe("INTERNAL");
    expect(errorOf(() => workspacePrefix("", WS))?.code).toBe("INTERNAL");
    expect(errorOf(() => filesPrefix(T, "Ws"))?.code).toBe("INVALID_ARGUMENT");
    expect(errorOf(() => fileKey("a/b", WS, "x"))?.code).toBe("INTERNAL");
    expect(errorOf(() => tenantWorkspacesPrefix("a/b"))?.code).toBe("INTERNAL");
    expect(errorOf(() => tenantWorkspacesPrefix(""))?.code).toBe("INTERNAL");
  });

  it("lays out keys as documented", () => {
    expect(tenantWorkspacesPrefix(T)).toBe("t/acme/w/");
    expect(filesPrefix(T, WS)).toBe("t/acme/w/ws/f/");
    expect(internalPrefix(T, WS)).toBe("t/acme/w/ws/x/");
    expect(fileKey(T, WS, "")).toBe("t/acme/w/ws/f/");
    expect(fileKey(T, WS, "src/a.ts")).toBe("t/acme/w/ws/f/src/a.ts");
    expect(workspacePrefix(T, WS).startsWith(tenantWorkspacesPrefix(T))).toBe(true);
  });

  it("fileKey refuses a path that is not canonical (a caller that skipped normalizePath)", () => {
    for (const p of ["../x", "..", "a/../b", "/a", "a/", "./a", "a//b", "a/./b", "a\\b", "a\0b", "cafe\u0301", "\ud800", "...", "../ws-evil/f/x"]) {
      const e = errorOf(() => fileKey(T, WS, p));
      expect(e?.code, JSON.stringify(p)).toBe("INVALID_PATH");
    }
  });
});

describe("keys are built in one place", () => {
  it("Workspace builds its keys through fileKey, so it refuses non-canonical paths too", () => {
    const driver = memoryDriver();
    const ws = new Workspace({ driver, records: new RecordStore(storageKeyValue(driver, "kv/"), `${T}/${WS}`, "s"), tenant: T, id: WS });
    expect(ws.key("src/a.ts")).toBe(fileKey(T, WS, "src/a.ts"));
    expect(ws.key("")).toBe(filesPrefix(T, WS));
    for (const p of ["../x", "/a", "a//b", "cafe\u0301"]) expect(errorOf(() => ws.key(p))?.code, p).toBe("INVALID_PATH");
    expect(ws.pathOf(ws.key("a/b"))).toBe("a/b");
  });

  it("no other source file spells the key layout", () => {
    // Vite inlines the sources at build time (workerd has no filesystem to scan).
    const sources = import.meta.glob(["../../../lib/**/*.ts", "../../../functions/**/*.ts", "../../../infra/**/*.ts"], { query: "?raw", import: "default", eager: true }) as Record<string, string>;
    const files = Object.keys(sources);
    expect(files.length).toBeGreaterThan(10);
    expect(files.some((f) => f.endsWith("/lib/layout/paths.ts"))).toBe(true);
    const layout = /`t\/\$\{|["'`]t\/["'`]|\/w\/\$\{|\/f\/`/;
    for (const [file, text] of Object.entries(sources)) {
      if (file.endsWith("/lib/layout/paths.ts")) {
        expect(layout.test(text)).toBe(true);
        continue;
      }
      expect(layout.test(text), `${file} builds a storage key by hand; use lib/layout/paths.ts`).toBe(false);
    }
  });
});

describe("CVE-2025-53110 class: sibling prefixes never overlap", () => {
  const ids = ["ws", "ws-evil", "ws-", "ws_", "w", "wsx", "ws0", "a", "ab", "a-b", "a_b", "f", "x", "t", "meta"];
  const tenants = ["acme", "acme-evil", "acm", "t", "w", "f"];

  it("no workspace prefix is a prefix of another's, across tenants too", () => {
    const prefixes: string[] = [];
    for (const t of tenants) for (const w of ids) prefixes.push(filesPrefix(t, w), workspacePrefix(t, w));
    const files = tenants.flatMap((t) => ids.map((w) => ({ t, w, p: filesPrefix(t, w) })));
    for (const a of files) {
      for (const b of files) {
        if (a === b) continue;
        expect(a.p.startsWith(b.p), `${a.p} under ${b.p}`).toBe(false);
        expect(a.p.startsWith(workspacePrefix(b.t, b.w)), `${a.p} under ${workspacePrefix(b.t, b.w)}`).toBe(false);
      }
    }
  });

  const attempts = [
    "x",
    "../ws-evil/f/x",
    "ws-evil/f/x",
    "/ws-evil/x",
    "-evil/x",
    "..-evil/x",
    "%2e%2e/ws-evil/f/x",
    "..%2fws-evil%2ff%2fx",
    "../../ws-evil/f/x",
    "../../../acme-evil/w/ws/f/x",
    "x/../../ws-evil",
    "evil",
    "f/../x",
    "../meta.json",
    "../x/index",
    "",
  ];

  it("fileKey(t, 'ws', anything) never lands under 'ws-evil' and vice versa", () => {
    for (const input of attempts) {
      for (const [mine, theirs] of [
        [WS, EVIL],
        [EVIL, WS],
        ["ws", "ws-"],
        ["ws", "ws_"],
      ] as const) {
        let p: string;
        try {
          p = normalizePath(input);
        } catch (e) {
          expect((e as ToolError).code).toBe("INVALID_PATH");
          continue;
        }
        const key = fileKey(T, mine, p);
        expect(key.startsWith(filesPrefix(T, mine))).toBe(true);
        expect(key.startsWith(workspacePrefix(T, theirs)), `${JSON.stringify(input)} in ${mine} → ${key}`).toBe(false);
        expect(key.startsWith(workspacePrefix("acme-evil", mine))).toBe(false);
      }
    }
  });

  it("a file key is never the workspace record nor internal data", () => {
    for (const input of ["meta.json", "../meta.json", "/meta.json", "x/index", "../x/index", "f/../../x/a"]) {
      let p: string;
      try {
        p = normalizePath(input);
      } catch {
        continue;
      }
      const key = fileKey(T, WS, p);
      expect(key).not.toBe(`${workspacePrefix(T, WS)}meta.json`);
      expect(key.startsWith(internalPrefix(T, WS))).toBe(false);
    }
  });

  it("isWithin is segment-aware (the bug of CVE-2025-53110 is a bare startsWith)", () => {
    expect(isWithin("ws-evil/x", "ws")).toBe(false);
    expect(isWithin("ws-evil", "ws")).toBe(false);
    expect(isWithin("wsx", "ws")).toBe(false);
    expect(isWithin("ws", "ws")).toBe(true);
    expect(isWithin("ws/x", "ws")).toBe(true);
    expect(isWithin("ws/x/y", "ws/x")).toBe(true);
    expect(isWithin("ws/xy", "ws/x")).toBe(false);
    expect(isWithin("anything", "")).toBe(true);
    expect(isWithin("", "a")).toBe(false);
  });
});

describe("path helpers", () => {
  it("parentOf, baseName, joinPath, ancestorsOf, isHidden", () => {
    expect(parentOf("a/b/c")).toBe("a/b");
    expect(parentOf("a")).toBe("");
    expect(parentOf("")).toBe("");
    expect(baseName("a/b/c.txt")).toBe("c.txt");
    expect(baseName("c")).toBe("c");
    expect(joinPath("", "a")).toBe("a");
    expect(joinPath("a/b", "c")).toBe("a/b/c");
    expect(ancestorsOf("a/b/c")).toEqual(["a/b", "a"]);
    expect(ancestorsOf("a")).toEqual([]);
    expect(ancestorsOf("")).toEqual([]);
    expect(isHidden(".git/config")).toBe(true);
    expect(isHidden("a/.env")).toBe(true);
    expect(isHidden("a/b.env")).toBe(false);
    expect(isHidden("")).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// Differential oracle and fuzz
// ---------------------------------------------------------------------------------------------

/**
 * What normalizePath should answer, computed another way: node:path's POSIX normalizer, with a
 * sentinel root that no accepted input can name (it holds a NUL) to tell whether '..' climbed.
 */
function oracle(input: string): string | null {
  if (input.length > MAX_PATH_BYTES * 4) return null;
  if (!input.isWellFormed()) return null;
  if (/[\p{Cc}\\]/u.test(input)) return null;
  const nfc = input.normalize("NFC");
  for (const seg of nfc.split("/")) {
    if (/^\.{3,}$/.test(seg)) return null;
    if (bytes(seg) > MAX_SEGMENT_BYTES) return null;
  }
  const root = "/\0root";
  const resolved = posix.normalize(`${root}/${nfc}`);
  if (resolved !== root && !resolved.startsWith(`${root}/`)) return null;
  const out = resolved.slice(root.length).replace(/^\/+/, "").replace(/\/+$/, "");
  if (bytes(out) > MAX_PATH_BYTES) return null;
  return out;
}

describe("differential check against node:path", () => {
  it("agrees on a table of tricky inputs", () => {
    const inputs = ["a/b", "/a/b/", "./a//b/", "a/../b", "..", "a/../../b", "/../x", "a\\b", "\0", "...", "e\u0301", "%2e%2e", "a/./b/../../c", "////", "", ".", "x/.", "a/..", "ws/../ws-evil"];
    for (const i of inputs) {
      let got: string | null;
      try {
        got = normalizePath(i);
      } catch {
        got = null;
      }
      expect(got, JSON.stringify(i)).toBe(oracle(i));
    }
  });
});

/** mulberry32 (test/support/prng.ts): small, seeded, reproducible. */
const prng = (seed: number): (() => number) => rng(seed).next;

const FUZZ_SEED = 0x5eed_2025;
const FUZZ_COUNT = 25_000;

const HOSTILE = [
  "..", ".", "", "...", "....", "%2e%2e", "%2E%2E", "%2e", "%2f", "%2F", "%252e%252e", "%5c", "%00", "..%2f", "%2e%2e%2f", "..%5c",
  "\\", "..\\", "\\..", "\u0000", "\u0001", "\n", "\r", "\t", "\u007f", "\u0085", "\u009f", "/", "//", "/..", "../", "./",
  "é", "e\u0301", "\u00c5", "A\u030a", "\u212b", "\u1100\u1161", "\uac00", "\u0130", "ß", "ﬁ",
  "ws", "ws-evil", "-evil", "ws-", "f", "w", "t", "x", "meta.json", "acme", "acme-evil",
  "~", "~root", "$HOME", "*", "?", "[a]", "{a,b}", " ", "  ", ".hidden", "a", "b.txt", "src", "index.ts", "C:", "file:", "http:",
  "😀", "\ud83d", "\ude00", "\ud800", "\udfff", "𝕏", "中", "\u202e", "\u200b", "\ufeff", "\ufffd", "\uff0e\uff0e", "\uff0f", "\u2215", "\u2044", "\u2024",
  "\u2028", "\u00a0", "\u3000",
];
/** The tokens that no accepted path can hold; left out of half the generated paths so both sides get exercised. */
const ALWAYS_REFUSED = new Set(["\\", "..\\", "\\..", "\u0000", "\u0001", "\n", "\r", "\t", "\u007f", "\u0085", "\u009f", "\ud83d", "\ude00", "\ud800", "\udfff", "...", "...."]);
const SOFT = HOSTILE.filter((t) => !ALWAYS_REFUSED.has(t));
const ABSOLUTE = ["/", "//", "///", "./", "/./", "../", "/../", "/t/acme/w/ws-evil/f/", "t/acme/w/ws/f/", "../ws-evil/f/", "../../t/other/w/ws/f/", "file:///", "\\\\", "C:\\", "~/"];
const SEPARATORS = ["/", "/", "/", "/", "//", "", "\\", "/./", "/../", "%2f"];

function randomCodePoint(rand: () => number): string {
  const r = rand();
  if (r < 0.4) return String.fromCharCode(0x20 + Math.floor(rand() * 0x5f)); // printable ASCII
  if (r < 0.55) return String.fromCharCode(Math.floor(rand() * 0x20)); // C0 controls
  if (r < 0.85) return String.fromCharCode(0x80 + Math.floor(rand() * (0xffff - 0x80))); // any BMP unit (lone surrogates included)
  return String.fromCodePoint(0x10000 + Math.floor(rand() * 0xfffff)); // astral
}

function hostilePath(rand: () => number): string {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const mode = rand();
  if (mode < 0.08) {
    // A long run of one token (tests the byte limits and the length pre-check).
    const tok = pick(["..", "a", "é", "e\u0301", "中", "😀", "./", "../", "x/", "/", "%2e%2e/", "ws-evil/", "a".repeat(50)]);
    const n = 1 + Math.floor(rand() * 400);
    return (rand() < 0.5 ? pick(ABSOLUTE) : "") + tok.repeat(n) + (rand() < 0.5 ? "/x" : "");
  }
  if (mode < 0.18) {
    // Random code points, with separators sprinkled in.
    let s = "";
    const n = Math.floor(rand() * 40);
    for (let i = 0; i < n; i++) s += rand() < 0.2 ? pick(SEPARATORS) : randomCodePoint(rand);
    return s;
  }
  // Segments from the hostile alphabet (half the time without the tokens that are always refused).
  const alphabet = rand() < 0.5 ? HOSTILE : SOFT;
  const parts: string[] = [];
  const n = Math.floor(rand() * 14);
  for (let i = 0; i < n; i++) {
    let seg = pick(alphabet);
    if (rand() < 0.25) seg += pick(alphabet);
    if (rand() < 0.05) seg = seg.repeat(1 + Math.floor(rand() * 150));
    parts.push(seg);
  }
  let s = "";
  for (const [i, p] of parts.entries()) s += (i === 0 ? "" : rand() < 0.85 ? "/" : pick(SEPARATORS)) + p;
  if (rand() < 0.4) s = pick(ABSOLUTE) + s;
  if (rand() < 0.2) s += pick(["/", "/.", "/..", "//", "\\", "/..."]);
  return s;
}

describe(`fuzz: ${FUZZ_COUNT} hostile paths (seed 0x${FUZZ_SEED.toString(16)})`, () => {
  it("every path is refused with INVALID_PATH or gives a key inside the workspace", () => {
    const rand = prng(FUZZ_SEED);
    const mine = filesPrefix(T, WS);
    const siblings = [filesPrefix(T, EVIL), workspacePrefix(T, EVIL), workspacePrefix("acme-evil", WS), filesPrefix(T, "ws-"), internalPrefix(T, WS)];
    let accepted = 0;
    let refused = 0;
    let nonTrivial = 0;
    const seen = new Set<string>();
    const fail = (i: number, input: string, why: string) => {
      throw new Error(`fuzz case #${i} (seed 0x${FUZZ_SEED.toString(16)}): ${why}\ninput: ${JSON.stringify(input)}`);
    };
    for (let i = 0; i < FUZZ_COUNT; i++) {
      const input = hostilePath(rand);
      seen.add(input);
      let p: string;
      try {
        p = normalizePath(input);
      } catch (e) {
        if (!(e instanceof ToolError) || e.code !== "INVALID_PATH") fail(i, input, `threw ${String(e)}`);
        if (oracle(input) !== null) fail(i, input, `refused, but the oracle accepts it as ${JSON.stringify(oracle(input))}`);
        refused++;
        continue;
      }
      accepted++;
      if (p !== "") nonTrivial++;
      const expected = oracle(input);
      if (expected !== p) fail(i, input, `gave ${JSON.stringify(p)}, the oracle ${JSON.stringify(expected)}`);
      if (normalizePath(p) !== p) fail(i, input, "normalizePath is not idempotent");
      const key = fileKey(T, WS, p);
      if (!key.startsWith(mine)) fail(i, input, `key ${key} outside ${mine}`);
      if (key.slice(mine.length) !== p) fail(i, input, "key does not end with the canonical path");
      for (const s of siblings) if (key.startsWith(s)) fail(i, input, `key ${key} under sibling ${s}`);
      if (fileKey(T, EVIL, p).startsWith(mine)) fail(i, input, "sibling key under mine");
      const wrapped = `/${key}/`;
      for (const bad of ["/../", "/./", "//"]) {
        if (p !== "" && wrapped.includes(bad)) fail(i, input, `key ${key} contains ${bad}`);
      }
      if (p === "" && key !== mine) fail(i, input, "root key is not the prefix");
      if (key.normalize("NFC") !== key) fail(i, input, "key is not NFC");
      if (!key.isWellFormed()) fail(i, input, "key is not well-formed");
      if (/[\p{Cc}\\]/u.test(key)) fail(i, input, "key holds a control character or backslash");
      if (bytes(key) > S3_MAX_KEY_BYTES) fail(i, input, `key is ${bytes(key)} bytes`);
      if (bytes(p) > MAX_PATH_BYTES) fail(i, input, `path is ${bytes(p)} bytes`);
      if (p.split("/").some((s) => bytes(s) > MAX_SEGMENT_BYTES)) fail(i, input, "a name is too long");
      // normalizeFilePath agrees, except that it refuses the root.
      if (p === "") {
        if (errorOf(() => normalizeFilePath(input))?.code !== "IS_DIRECTORY") fail(i, input, "normalizeFilePath accepted the root");
      } else if (normalizeFilePath(input) !== p) fail(i, input, "normalizeFilePath disagrees");
    }
    expect(accepted + refused).toBe(FUZZ_COUNT);
    // The generator must exercise both sides, and mostly with distinct inputs.
    expect(refused).toBeGreaterThan(FUZZ_COUNT * 0.2);
    expect(accepted).toBeGreaterThan(FUZZ_COUNT * 0.3);
    expect(nonTrivial).toBeGreaterThan(FUZZ_COUNT * 0.15);
    expect(seen.size).toBeGreaterThan(FUZZ_COUNT * 0.8);
    console.log(`paths fuzz: ${FUZZ_COUNT} inputs (${seen.size} distinct), seed 0x${FUZZ_SEED.toString(16)}: ${accepted} accepted (${nonTrivial} non-root), ${refused} refused`);
  });

  it("a second, differently seeded run of canonical-form mutations keeps every property", () => {
    // Start from accepted paths and mutate one character at a time: near-misses of valid paths.
    const rand = prng(FUZZ_SEED ^ 0xa5a5a5a5);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
    const bases = ["src/index.ts", "a/b/c", "ws/f/x", "café/x", ".git/config", "a..b/.c"];
    let count = 0;
    for (let i = 0; i < 5000; i++) {
      let s = pick(bases);
      const edits = 1 + Math.floor(rand() * 4);
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(rand() * (s.length + 1));
        const ins = rand() < 0.6 ? pick(["..", ".", "/", "\\", "\0", "%2e", "/../", "e\u0301", "\ud800", "..."]) : randomCodePoint(rand);
        s = rand() < 0.3 ? s.slice(0, at) + ins + s.slice(at + 1) : s.slice(0, at) + ins + s.slice(at);
      }
      let p: string | null;
      try {
        p = normalizePath(s);
      } catch (e) {
        expect((e as ToolError).code).toBe("INVALID_PATH");
        p = null;
      }
      expect(p, JSON.stringify(s)).toBe(oracle(s));
      if (p !== null) {
        expect(fileKey(T, WS, p).startsWith(filesPrefix(T, WS))).toBe(true);
        expect(normalizePath(p)).toBe(p);
      }
      count++;
    }
    expect(count).toBe(5000);
  });
});

describe("normalizePath's shortcut for canonical ASCII", () => {
  /** The same answer, or the same refusal, with and without the shortcut. */
  function expectSame(input: string) {
    const full = errorOf(() => normalizePathInFull(input));
    const quick = errorOf(() => normalizePath(input));
    expect(quick?.message ?? null, JSON.stringify(input)).toBe(full?.message ?? null);
    if (!full) expect(normalizePath(input), JSON.stringify(input)).toBe(normalizePathInFull(input));
  }

  it("answers the edges as the full normalization does: name and path lengths, dots, spaces, every printable character", () => {
    const edges = [
      "a".repeat(MAX_SEGMENT_BYTES), "a".repeat(MAX_SEGMENT_BYTES + 1), `d/${"a".repeat(MAX_SEGMENT_BYTES)}`, `d/${"a".repeat(MAX_SEGMENT_BYTES + 1)}/e`,
      Array.from({ length: 3 }, () => "b".repeat(MAX_SEGMENT_BYTES)).join("/").slice(0, MAX_PATH_BYTES), `${"c/".repeat(MAX_PATH_BYTES / 2 - 1)}cc`, `${"c/".repeat(MAX_PATH_BYTES / 2)}c`,
      ".", "..", "...", "a/.", "a/..", "a/...", "./a", "a/./b", ".a", "a.", "..a", "a/.b/..c", " ", " a ", "a /b", "a//b", "/a", "a/", "",
      "a\\b", "a\u007fb", "a\u0000b", "caf\u00e9", "e\u0301", "~", "-", "[x]", "{y}", "a:b", "a*b?c", "#%&'()+,;=@^`|",
      String.fromCharCode(...Array.from({ length: 95 }, (_, i) => 0x20 + i)).replace("/", ""),
    ];
    for (const input of edges) expectSame(input);
  });

  it("agrees with the full normalization on the fuzz's hostile paths and near-misses of canonical ASCII: '..', '.', '//', trailing '/', backslashes, NUL and controls, %2e%2e (literal), very long", () => {
    const r = rng(FUZZ_SEED ^ 0x0a5c11);
    for (let i = 0; i < 10_000; i++) expectSame(hostilePath(() => r.next()));
    let quick = 0;
    // Canonical ASCII with one hostile token put in or swapped in: just inside and just outside the shortcut.
    const tokens = ["..", ".", "/", "//", "\\", "\0", "\u0001", "\u001f", "\u007f", "\u0080", "%2e%2e", "%2f", "%00", "\u00e9", "e\u0301", " ", "a".repeat(300)];
    for (let i = 0; i < 10_000; i++) {
      const segs = Array.from({ length: 1 + r.int(6) }, () => r.pick(["a", "src", "x.ts", ".git", "a..b", "-", "~", "%2e%2e", "b".repeat(1 + r.int(255))]));
      let s = segs.join("/");
      const at = r.int(s.length + 1);
      const tok = r.pick(tokens);
      if (r.next() < 0.7) s = r.next() < 0.5 ? s.slice(0, at) + tok + s.slice(at) : s.slice(0, at) + tok + s.slice(at + 1);
      if (r.next() < 0.1) s = `${s}/${"c".repeat(MAX_PATH_BYTES)}`.slice(0, MAX_PATH_BYTES + r.int(3) - 1);
      if (s.length <= MAX_PATH_BYTES && errorOf(() => normalizePathInFull(s)) === null && normalizePathInFull(s) === s) quick++;
      expectSame(s);
    }
    expect(quick).toBeGreaterThan(1000); // both sides of the shortcut were exercised
    // %2e%2e stays a literal name on both paths, never a step up.
    for (const s of ["%2e%2e", "%2e%2e/x", "a/%2e%2e/b", "%2E%2E/%2e%2e"]) {
      expect(normalizePath(s)).toBe(s);
      expect(normalizePathInFull(s)).toBe(s);
    }
  });

  it("agrees with the full normalization on 20,000 seeded ASCII-heavy inputs", () => {
    const r = rng(0x5eed);
    const parts = ["a", "b", "src", "x.ts", ".", "..", "...", ".git", " ", "/", "//", "\\", "\u007f", "\u00e9", "-", "_", "~", "[", "]", "a".repeat(254), "b".repeat(256)];
    for (let i = 0; i < 20_000; i++) {
      let s = "";
      for (let n = 1 + r.int(8); n > 0; n--) s += r.pick(parts) + (r.next() < 0.6 ? "/" : "");
      if (r.next() < 0.5) s = s.replace(/\/+$/, "");
      expectSame(s);
    }
  });
});

describe("workspaceOfMetaKey", () => {
  it("is workspaceMetaKey's inverse, and null for every other key", () => {
    expect(workspaceOfMetaKey(workspaceMetaKey("acme", "main-1"))).toEqual({ tenant: "acme", workspace: "main-1" });
    for (const key of ["t/acme/w/main/f/meta.json", "t/acme/w/main/x/meta.json", "t/acme/w/main/meta.json.bak", "t/acme/tenant.json", "t/ACME/w/main/meta.json", "x/t/acme/w/main/meta.json", "t/acme/w//meta.json"]) {
      expect(workspaceOfMetaKey(key), key).toBeNull();
    }
  });
});

