import { describe, expect, it } from "vitest";
import { byteLength, bytesEqual, decodeBase64, encodeBase64, fromBase64Url, lineEnding, looksBinary, sniffType, toBase64Url, visibleWhitespace } from "../../../lib/shared/text.js";

const enc = new TextEncoder();
const bytes = (...b: number[]) => new Uint8Array(b);

describe("looksBinary", () => {
  it("text is text", () => {
    expect(looksBinary(enc.encode("hello\nworld\n"), true)).toBe(false);
    expect(looksBinary(enc.encode("héllo 日本 😀\r\n"), true)).toBe(false);
    expect(looksBinary(new Uint8Array(0), true)).toBe(false);
  });

  it("a NUL byte is binary, wherever it is", () => {
    expect(looksBinary(bytes(0x61, 0x00, 0x62), true)).toBe(true);
    expect(looksBinary(bytes(0x61, 0x62, 0x00), false)).toBe(true);
  });

  it("invalid UTF-8 is binary", () => {
    expect(looksBinary(bytes(0x61, 0xff, 0x62), true)).toBe(true);
    expect(looksBinary(bytes(0xc3, 0x28), true)).toBe(true); // bad continuation
    expect(looksBinary(bytes(0x61, 0x80, 0x62), false)).toBe(true); // stray continuation
    expect(looksBinary(bytes(0x61, 0x62, 0x80), false)).toBe(true); // stray continuation at the end
    expect(looksBinary(bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a), true)).toBe(true); // PNG signature
  });

  it("a multi-byte character cut at the end of an incomplete sample is not binary", () => {
    for (const ch of ["é", "日", "😀"]) {
      const full = enc.encode(`abc${ch}`);
      for (let cut = 1; cut < enc.encode(ch).length; cut++) {
        const sample = full.subarray(0, 3 + cut);
        expect(looksBinary(sample, false), `${ch} cut after ${cut}`).toBe(false);
        // The same bytes as a whole file are invalid UTF-8.
        expect(looksBinary(sample, true), `${ch} cut after ${cut}, complete`).toBe(true);
      }
      // A complete character at the end is fine either way.
      expect(looksBinary(full, false)).toBe(false);
      expect(looksBinary(full, true)).toBe(false);
    }
  });

  it("an 8 KB sample cut inside a character, as read takes it", () => {
    const text = "a".repeat(8191) + "😀".repeat(10);
    const sample = enc.encode(text).subarray(0, 8192 + 2); // 1 byte of 'a' run left + half an emoji
    expect(looksBinary(enc.encode(text).subarray(0, 8192), false)).toBe(false);
    expect(looksBinary(sample, false)).toBe(false);
  });
});

describe("sniffType", () => {
  it("knows common signatures", () => {
    expect(sniffType(bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a))).toBe("image/png");
    expect(sniffType(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe("image/jpeg");
    expect(sniffType(enc.encode("%PDF-1.7"))).toBe("application/pdf");
    expect(sniffType(bytes(0x50, 0x4b, 0x03, 0x04, 0x14))).toBe("application/zip");
    expect(sniffType(bytes(0x1f, 0x8b, 0x08))).toBe("application/gzip");
    expect(sniffType(bytes(0x7f, 0x45, 0x4c, 0x46))).toBe("application/x-elf");
    expect(sniffType(bytes(0x00, 0x61, 0x73, 0x6d))).toBe("application/wasm");
    expect(sniffType(bytes(0x00, 0x01, 0x02))).toBe("application/octet-stream");
    expect(sniffType(bytes(0x89))).toBe("application/octet-stream"); // too short for PNG
  });
});

describe("lineEnding", () => {
  it("tells lf, crlf, mixed and none apart", () => {
    expect(lineEnding("a\nb\n")).toBe("lf");
    expect(lineEnding("a\r\nb\r\n")).toBe("crlf");
    expect(lineEnding("a\r\nb")).toBe("crlf");
    expect(lineEnding("a\r\nb\nc")).toBe("mixed");
    expect(lineEnding("abc")).toBe("none");
    expect(lineEnding("")).toBe("none");
    expect(lineEnding("a\rb")).toBe("none"); // a lone CR is not a line ending here
  });
});

describe("base64", () => {
  it("round-trips every byte value", () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const b64 = encodeBase64(all);
    expect(b64).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(bytesEqual(decodeBase64(b64)!, all)).toBe(true);
  });

  it("round-trips data larger than one encoding chunk", () => {
    const big = Uint8Array.from({ length: 100_003 }, (_, i) => (i * 31 + 7) & 0xff);
    const back = decodeBase64(encodeBase64(big));
    expect(back).not.toBeNull();
    expect(bytesEqual(back!, big)).toBe(true);
  });

  it("decodes known values, padding optional, whitespace ignored", () => {
    expect(Array.from(decodeBase64("aGk=")!)).toEqual([0x68, 0x69]);
    expect(Array.from(decodeBase64("aGk")!)).toEqual([0x68, 0x69]);
    expect(Array.from(decodeBase64("aG\nk=\n")!)).toEqual([0x68, 0x69]);
    expect(decodeBase64("")!.length).toBe(0);
    expect(encodeBase64(new Uint8Array(0))).toBe("");
    expect(encodeBase64(enc.encode("hi"))).toBe("aGk=");
  });

  it("encodes with the runtime's own toBase64 in workerd, and the fallback gives the same text", () => {
    // Each write and edit encodes its undo before-image; the fallback cost ~0.1 ms of CPU per 4 KB
    // (docs/benchmarks/investigations-per-call.md, "read, write and edit against the floor").
    const proto = Uint8Array.prototype as Uint8Array & { toBase64?: () => string };
    const own = proto.toBase64;
    expect(typeof own).toBe("function");
    let calls = 0;
    proto.toBase64 = function (this: Uint8Array) {
      calls++;
      return own!.call(this);
    };
    try {
      const data = Uint8Array.from({ length: 70_001 }, (_, i) => (i * 31 + 7) & 0xff);
      for (const view of [data, data.subarray(5, 12), data.subarray(1), new Uint8Array(0)]) {
        const native = encodeBase64(view);
        const fallback = encodeBase64(Object.defineProperty(view.slice(), "toBase64", { value: undefined }));
        expect(native).toBe(fallback);
        expect(bytesEqual(decodeBase64(native)!, view)).toBe(true);
      }
      expect(calls).toBe(4);
    } finally {
      proto.toBase64 = own;
    }
  });

  it("decodes with the runtime's own fromBase64 in workerd, and the fallback gives the same bytes", () => {
    // A live poll's marks (53 KB of base64 at 10,000 files) are decoded after every tool's edit, sync tokens at
    // every runner request (docs/benchmarks/investigations-live.md, 2026-12-02 livepath).
    const ctor = Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array };
    const own = ctor.fromBase64;
    expect(typeof own).toBe("function");
    const data = Uint8Array.from({ length: 70_001 }, (_, i) => (i * 31 + 7) & 0xff);
    const texts = [encodeBase64(data), encodeBase64(data.subarray(1, 3)), "aGk", "aG\nk=\n", "QQ=", "", "aGk=aGk=", "not base64!"];
    let calls = 0;
    ctor.fromBase64 = (s: string) => {
      calls++;
      return own!.call(Uint8Array, s);
    };
    let nativeOut: (Uint8Array | null)[];
    try {
      nativeOut = texts.map((t) => decodeBase64(t));
    } finally {
      ctor.fromBase64 = own;
    }
    expect(calls).toBe(6); // the two refused before any decoder runs
    delete ctor.fromBase64;
    try {
      const fallback = texts.map((t) => decodeBase64(t));
      expect(nativeOut.map((b) => (b ? Array.from(b) : null))).toEqual(fallback.map((b) => (b ? Array.from(b) : null)));
    } finally {
      ctor.fromBase64 = own;
    }
    expect(bytesEqual(nativeOut[0]!, data)).toBe(true);
    expect(Array.from(nativeOut[4]!)).toEqual([0x41]);
  });

  it("base64url tokens round-trip unicode and every length 0..5, unpadded, through the one base64 encoder", () => {
    const proto = Uint8Array.prototype as Uint8Array & { toBase64?: () => string };
    const own = proto.toBase64;
    let calls = 0;
    proto.toBase64 = function (this: Uint8Array) {
      calls++;
      return own!.call(this);
    };
    try {
      const texts = ["", "a", "ab", "abc", "abcd", "abcde", "é", "日本", "😀", "a😀b", "\u0000", "??>", "~~~", "é日😀\n"];
      for (const text of texts) {
        const token = toBase64Url(text);
        expect(token).toMatch(/^[A-Za-z0-9_-]*$/);
        expect(fromBase64Url(token)).toBe(text);
      }
      expect(toBase64Url("??>")).toBe("Pz8-"); // "+" and "/" become "-" and "_"
      expect(toBase64Url("???")).toBe("Pz8_");
      expect(calls).toBe(texts.length + 2);
    } finally {
      proto.toBase64 = own;
    }
    expect(() => fromBase64Url("not base64url!")).toThrow();
    expect(() => fromBase64Url("abcde")).toThrow(); // length 1 mod 4
    expect(() => fromBase64Url("_w")).toThrow(); // the byte 0xff: not UTF-8
  });

  it("refuses what is not base64", () => {
    expect(decodeBase64("not base64!")).toBeNull();
    expect(decodeBase64("aGk=aGk=")).toBeNull(); // padding in the middle
    expect(decodeBase64("abcde")).toBeNull(); // length 1 mod 4
    expect(decodeBase64("aGk===")).toBeNull();
    expect(decodeBase64("aGk-")).toBeNull(); // base64url is not base64
  });
});

describe("small helpers", () => {
  it("visibleWhitespace shows spaces, tabs and CRs", () => {
    expect(visibleWhitespace("\tif (a) {\r")).toBe("→if·(a)·{␍");
  });
  it("byteLength counts UTF-8 bytes", () => {
    expect(byteLength("aé日😀")).toBe(1 + 2 + 3 + 4);
  });
  it("bytesEqual", () => {
    expect(bytesEqual(bytes(1, 2), bytes(1, 2))).toBe(true);
    expect(bytesEqual(bytes(1, 2), bytes(1, 3))).toBe(false);
    expect(bytesEqual(bytes(1, 2), bytes(1, 2, 3))).toBe(false);
  });
});
