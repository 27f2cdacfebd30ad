/**
 * A TCP server for the egress tests that records every byte each connection sends and hangs up
 * once it has a whole first TLS record (a ClientHello), so a TLS client ends at once instead of
 * waiting for a ServerHello that never comes.
 */
import { createServer, type AddressInfo } from "node:net";

export interface HelloCatcher {
  port: number;
  /** Per connection, in order: the chunks it sent. */
  seen: Buffer[][];
  /** The bytes of the first connection, once it sent a whole first record. */
  firstHello: Promise<Buffer>;
  close(): void;
}

export async function startHelloCatcher(address = "127.0.0.1"): Promise<HelloCatcher> {
  const seen: Buffer[][] = [];
  let caught: (b: Buffer) => void = () => {};
  const firstHello = new Promise<Buffer>((r) => (caught = r));
  const server = createServer((s) => {
    const got: Buffer[] = [];
    seen.push(got);
    s.on("data", (c: Buffer) => {
      got.push(c);
      const all = Buffer.concat(got);
      if (all.length < 5 || all.length < 5 + all.readUInt16BE(3)) return;
      caught(all);
      s.destroy();
    });
    s.on("error", () => {});
  });
  await new Promise<void>((r) => server.listen(0, address, r));
  return { port: (server.address() as AddressInfo).port, seen, firstHello, close: () => server.close() };
}
