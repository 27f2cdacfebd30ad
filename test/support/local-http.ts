/**
 * A real HTTP server on 127.0.0.1 for a hostile-server test: `handler` answers every request; close()
 * first destroys the answers still open (an endless or dripping body), then stops the server.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface LocalHttp {
  /** http://127.0.0.1:<port> */
  base: string;
  close(): Promise<void>;
}

export async function serveLocal(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<LocalHttp> {
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    open.add(res);
    res.on("close", () => open.delete(res));
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close() {
      for (const r of open) r.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
