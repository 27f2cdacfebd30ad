import { describe, expect, it } from "vitest";
import { HeadTail } from "../../../infra/container/output.js";

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
    expect(text).toContain("[... output cut: 48,870 of 48,890 bytes omitted, lines 6–9,998 of 10,000. The full output is in out.log");
    expect(text.length).toBeLessThan(300);
  });

  it("does not start the tail in the middle of a UTF-8 character", () => {
    const h = new HeadTail(10);
    h.push(Buffer.from("aaaaa" + "é".repeat(50)));
    expect(h.text()).not.toContain("\uFFFD");
  });
});
