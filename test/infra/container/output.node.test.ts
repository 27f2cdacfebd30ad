import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HeadTail, OutputCollector } from "../../../infra/container/output.js";

const dir = mkdtempSync(join(tmpdir(), "toolshed-output-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("HeadTail", () => {
  it("keeps everything under the cap", () => {
    const h = new HeadTail(100);
    h.push(Buffer.from("hello "));
    h.push(Buffer.from("world"));
    expect(h.truncated).toBe(false);
    expect(h.text()).toBe("hello world");
  });

  it("keeps head and tail over the cap, in bounded memory, saying how much was cut", () => {
    const h = new HeadTail(20);
    for (let i = 0; i < 10_000; i++) h.push(Buffer.from(`${i}\n`));
    expect(h.truncated).toBe(true);
    const text = h.text("out.log");
    expect(text.startsWith("0\n1\n2\n3\n4\n[... output cut")).toBe(true);
    expect(text.endsWith("9998\n9999\n")).toBe(true);
    expect(text).toContain('[... output cut: 48,870 of 48,890 bytes omitted, lines 6–9,998 of 10,000. The full output is saved as out.log (not a workspace file): read it with bash_output (output_file: "out.log", offset: 6, limit: 2000).');
    expect(text.length).toBeLessThan(400);
  });

  it("does not start the tail in the middle of a UTF-8 character", () => {
    const h = new HeadTail(10);
    h.push(Buffer.from("aaaaa" + "é".repeat(50)));
    expect(h.text()).not.toContain("\uFFFD");
  });
});

describe("OutputCollector's log", () => {
  it("output within the cap makes no file", async () => {
    const path = join(dir, "small", "run.log");
    const out = new OutputCollector(100, path);
    out.out(Buffer.from("hi\n"));
    out.err(Buffer.from("oops\n"));
    await out.close();
    expect(out.truncated).toBe(false);
    expect(out.hasLog).toBe(false);
    expect(existsSync(join(dir, "small"))).toBe(false);
  });

  it("output past the cap: the log (its directory made) holds the whole merged stream, what came before the cap included", async () => {
    const path = join(dir, "big", "run.log");
    const out = new OutputCollector(20, path);
    let all = "";
    for (let i = 0; i < 1000; i++) {
      const line = `${i}\n`;
      all += line;
      (i % 2 ? out.err : out.out)(Buffer.from(line));
    }
    await out.close();
    expect(out.truncated).toBe(true);
    expect(out.hasLog).toBe(true);
    expect(readFileSync(path, "utf8")).toBe(all);
  });
});
