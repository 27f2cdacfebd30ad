/**
 * A real S3-compatible server (s3rver) on 127.0.0.1, in a child process with its own temp directory.
 * A child process because s3rver's continuation tokens use DES, which needs Node's
 * --openssl-legacy-provider (and it keeps the server's memory apart from the test's). The child
 * (s3rver-child.cjs) makes s3rver's object writes atomic, as S3's and R2's are: a GET meeting a PUT
 * or DELETE of its key reads one whole version with its own ETag (s3rver.node.test.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";

export interface S3Server {
  endpoint: string;
  /** A client for this server (path-style, fixed credentials, no streaming checksums). */
  client(extra?: Partial<ConstructorParameters<typeof S3Client>[0]>): S3Client;
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startS3Server(): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), "toolshed-s3rver-"));
  const child: ChildProcess = spawn(process.execPath, ["--openssl-legacy-provider", fileURLToPath(new URL("./s3rver-child.cjs", import.meta.url))], {
    env: { ...process.env, S3RVER_MODULE: createRequire(import.meta.url).resolve("s3rver"), S3RVER_DIR: dir },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`s3rver exited with ${code}`)));
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const end = out.indexOf("\n");
      if (end >= 0) resolve((JSON.parse(out.slice(0, end)) as { port: number }).port);
    });
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = (extra: Partial<ConstructorParameters<typeof S3Client>[0]> = {}) =>
    new S3Client({
      endpoint,
      region: "auto",
      forcePathStyle: true,
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      ...extra,
    });
  return {
    endpoint,
    client,
    async createBucket(name) {
      await client().send(new CreateBucketCommand({ Bucket: name }));
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
