/** ripgrep on the same files on local disk: one process per query, wall time until it exits. */
import { execSync, spawn } from "node:child_process";

/** Installs ripgrep from Debian when missing (as .ci/run does for bubblewrap). */
export function ensureRipgrep(): string {
  const has = () => {
    try {
      return execSync("command -v rg", { shell: "/bin/sh", encoding: "utf8" }).trim();
    } catch {
      return "";
    }
  };
  let path = has();
  if (!path) {
    console.log("ripgrep missing: apt-get install -y ripgrep");
    execSync("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep >/dev/null", { shell: "/bin/sh", stdio: "inherit" });
    path = has();
  }
  if (!path) throw new Error("ripgrep is not installed and could not be installed");
  return execSync("rg --version", { encoding: "utf8" }).split("\n")[0]!;
}

/**
 * Runs `rg args` in cwd. With headLines, stops it after that many output lines (like `| head`).
 * Resolves with the wall time and the output lines.
 */
export function rg(args: string[], cwd: string, headLines?: number): Promise<{ ms: number; lines: string[] }> {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn("rg", args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    let stopped = false;
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d: string) => {
      if (stopped) return;
      out += d;
      if (headLines !== undefined && out.split("\n").length > headLines) {
        stopped = true;
        child.kill("SIGPIPE");
        const lines = out.split("\n").slice(0, headLines);
        resolve({ ms: performance.now() - t, lines });
      }
    });
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => {
      if (stopped) return;
      if (code !== 0 && code !== 1) return reject(new Error(`rg ${args.join(" ")}: exit ${code}: ${err}`));
      resolve({ ms: performance.now() - t, lines: out.split("\n").filter((l) => l !== "") });
    });
  });
}
