/**
 * A live sandbox's network bytes, in the real bwrap sandbox: its egress proxy lives as long as the
 * sandbox, so each command's result takes what the proxy carried since the last command took its
 * share (background processes' traffic included), and the sandbox's end takes the rest
 * (LiveEnded.status.net_bytes_in, the "live sandbox" usage record's). Every byte on the server's
 * sockets is in exactly one share. The proxy lets test loopback through (egress.node.test.ts's
 * positive control); a sandbox without network has no share at all.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapSandbox } from "../../../infra/container/sandbox.js";
import { liveSetup, until } from "./live-helpers.js";

const state = mkdtempSync(join(tmpdir(), "toolshed-live-net-"));
chmodSync(state, 0o711); // bwrap, as the sandbox user, binds paths below it
const live = liveSetup({ sandbox: bwrapSandbox({ stateDir: state, egress: { allowLoopback: true } }) }, "tenant-live-net", "ws");

const BIG = 512 * 1024;
let web: Server;
let port = 0;
let requests = 0;
const sockets = new Set<Socket>();
/** Answers of /held waiting for release(): a background request answered only after its command's share was taken. */
let held: (() => void)[] = [];
const release = () => held.splice(0).forEach((answer) => answer());
let open = 0;
/** What the server's sockets carried so far: answers written, requests read. */
const wire = () => [...sockets].reduce((w, s) => ({ written: w.written + s.bytesWritten, read: w.read + s.bytesRead }), { written: 0, read: 0 });
/** Once `n` requests came and every connection closed (the proxy has counted them). */
const settled = (n: number) => until(() => requests >= n && open === 0, `${n} requests, every connection closed`);

beforeAll(async () => {
  web = createServer((req, res) => {
    requests++;
    if (req.url === "/held") return void held.push(() => res.end(Buffer.alloc(BIG, 98)));
    res.end(req.url === "/big" ? Buffer.alloc(BIG, 97) : "small\n");
  });
  web.on("connection", (s) => {
    sockets.add(s);
    open++;
    s.on("close", () => open--);
  });
  await new Promise<void>((r) => web.listen(0, "127.0.0.2", r));
  port = (web.address() as { port: number }).port;
});

afterAll(async () => {
  web.close();
  await live.t.cleanup();
  rmSync(state, { recursive: true, force: true });
});

describe("a live sandbox's network bytes", () => {
  it("each command takes what its proxy carried since the last one took; the end takes the rest; every byte is in one share", async () => {
    const s = live.startLive({}, { network: true });
    const start = wire();
    const a = await s.cmd(`curl -sS http://127.0.0.2:${port}/big | wc -c`, { network: true });
    expect(a.stdout.trim()).toBe(String(BIG));
    await settled(1);
    expect([a.net_bytes_in, a.net_bytes_out]).toEqual([wire().written - start.written, wire().read - start.read]);
    expect(a.net_bytes_in).toBeGreaterThan(BIG);

    // A background process's traffic after its command answered: in the next command's share.
    const mark = wire();
    const b = await s.cmd(`(curl -sS -o /dev/null http://127.0.0.2:${port}/held) >/dev/null 2>&1 &`, { network: true });
    await until(() => held.length === 1, "the background request");
    release();
    await settled(2);
    const c = await s.cmd("true", { network: true });
    expect(b.net_bytes_in! + c.net_bytes_in!).toBe(wire().written - mark.written);
    expect(b.net_bytes_out! + c.net_bytes_out!).toBe(wire().read - mark.read);
    expect(c.net_bytes_in).toBeGreaterThan(BIG); // its answer came after b's share was taken
    const d = await s.cmd("true", { network: true });
    expect([d.net_bytes_in, d.net_bytes_out]).toEqual([0, 0]); // nothing since: nothing counted twice

    // After the last command: the end's.
    const tail = wire();
    const f = await s.cmd(`(curl -sS -o /dev/null http://127.0.0.2:${port}/held) >/dev/null 2>&1 &`, { network: true });
    await until(() => held.length === 1, "the last background request");
    release();
    await settled(3);
    const e = await s.end();
    expect(e.status.net_bytes_in! + f.net_bytes_in!).toBe(wire().written - tail.written);
    expect(e.status.net_bytes_in).toBeGreaterThan(BIG);

    // The sum of every share is what the server's sockets carried, both ways.
    const all = [a, b, c, d, f].reduce((n, r) => ({ in: n.in + r.net_bytes_in!, out: n.out + r.net_bytes_out! }), { in: e.status.net_bytes_in!, out: e.status.net_bytes_out! });
    expect(all).toEqual({ in: wire().written - start.written, out: wire().read - start.read });
  });

  it("without network: no command and no end has a share", async () => {
    const s = live.startLive();
    const r = await s.cmd("echo hi");
    expect([r.net_bytes_in, r.net_bytes_out]).toEqual([undefined, undefined]);
    const e = await s.end();
    expect([e.status.net_bytes_in, e.status.net_bytes_out]).toEqual([undefined, undefined]);
  });
});
