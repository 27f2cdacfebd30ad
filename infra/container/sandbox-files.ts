/**
 * The files a bwrap sandbox starts with (sandbox.ts): its synthetic /etc (its own users and
 * hosts: nothing of the runner's host), the host's /etc files it may read, and HOME's files.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// No resolv.conf: the sandbox resolves nothing itself; names go to the egress proxy (CONNECT host:port).
export const ETC_BINDS = ["alternatives", "ssl", "ca-certificates", "pki", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types", "protocols", "services", "nsswitch.conf", "host.conf", "bash.bashrc", "profile", "inputrc", "gitconfig", "python3", "python3.11"];
export const SANDBOX_UID = 1000;
export const ETC_FILES = ["passwd", "group", "hosts", "hostname"];

/** Writes the synthetic /etc files (passed to bwrap as descriptors); the state directory stays traversable (the egress socket is bound from below it). */
export function writeEtc(stateDir: string): string {
  const etc = join(stateDir, "etc");
  mkdirSync(stateDir, { recursive: true, mode: 0o711 });
  mkdirSync(etc, { recursive: true, mode: 0o700 });
  const files: Record<string, string> = {
    passwd: `root:x:0:0:root:/root:/bin/bash\nuser:x:${SANDBOX_UID}:${SANDBOX_UID}:user:/tmp:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nuser:x:${SANDBOX_UID}:\nnogroup:x:65534:\n`,
    hosts: "127.0.0.1 localhost toolshed\n::1 localhost\n",
    hostname: "toolshed\n",
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(etc, name), text, { mode: 0o644 });
  return etc;
}

/** A file of the handler's state holding `text` (named by its hash: written once, shared by runs). */
export function homeFile(stateDir: string, text: string): string {
  const dir = join(stateDir, "home");
  const path = join(dir, createHash("sha256").update(text).digest("hex").slice(0, 32));
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, text, { mode: 0o600 });
    renameSync(tmp, path);
  }
  return path;
}
