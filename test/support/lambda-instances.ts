/**
 * Separate API instances of the Lambda runtime, each a Node process of its own with its own caches
 * (test/support/lambda-instance-child.ts): the API bundled as deployed (infra/aws/bundle-api.ts), behind a
 * function URL stand-in on 127.0.0.1. `env` is their environment (lambdaEnv's variables: one bucket
 * and table for all of them); each gets TOOLSHED_PUBLIC_URL, its own URL, where the runner syncs.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { bundleApi } from "../../infra/aws/bundle-api.js";
import { freePort } from "./wrangler-dev.js";

export interface LambdaInstance {
  url: string;
  /** What the process printed so far (stdout and stderr). */
  log(): string;
}

export interface LambdaInstances {
  instances: LambdaInstance[];
  /** Stops every process and removes the bundles. */
  stop(): Promise<void>;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(t);
}

export async function startLambdaInstances(count: number, env: Record<string, string>): Promise<LambdaInstances> {
  const dir = mkdtempSync(join(tmpdir(), "toolshed-lambda-instances-"));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.map(stopChild));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await bundleApi(dir);
    const child = join(dir, "instance.mjs");
    await build({
      entryPoints: [join(dirname(fileURLToPath(import.meta.url)), "lambda-instance-child.ts")], outfile: child, bundle: true, platform: "node", target: "node22", format: "esm", logLevel: "error",
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    });
    const instances = await Promise.all(Array.from({ length: count }, async () => {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const proc = spawn(process.execPath, [child, join(dir, "index.mjs"), String(port)], { env: { ...process.env, ...env, TOOLSHED_PUBLIC_URL: url }, stdio: ["ignore", "pipe", "pipe"] });
      children.push(proc);
      let log = "";
      proc.stdout!.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
      proc.stderr!.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
      for (const until = Date.now() + 60_000; ; ) {
        if (proc.exitCode !== null) throw new Error(`a Lambda instance exited (${proc.exitCode}):\n${log}`);
        try {
          if ((await fetch(`${url}/healthz`)).ok) break;
        } catch {}
        if (Date.now() > until) throw new Error(`a Lambda instance did not start:\n${log}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      return { url, log: () => log };
    }));
    return { instances, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
