/** A local stand-in for Secrets Manager's GetSecretValue (its JSON protocol) on 127.0.0.1, for the real SDK client. */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface SecretsServer {
  endpoint: string;
  /** "<X-Amz-Target> <SecretId>" of every request, in order. */
  asked: string[];
  stop(): Promise<void>;
}

export async function startSecretsServer(stored: Record<string, string>): Promise<SecretsServer> {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const { SecretId } = JSON.parse(body) as { SecretId: string };
      asked.push(`${req.headers["x-amz-target"]} ${SecretId}`);
      res.setHeader("content-type", "application/x-amz-json-1.1");
      if (!(SecretId in stored)) {
        res.statusCode = 400;
        res.end(JSON.stringify({ __type: "ResourceNotFoundException", message: "Secrets Manager can't find the specified secret." }));
        return;
      }
      res.end(JSON.stringify({ ARN: SecretId, Name: SecretId.split(":").pop(), SecretString: stored[SecretId] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { endpoint: `http://127.0.0.1:${port}`, asked, stop: () => new Promise<void>((r) => server.close(() => r())) };
}
