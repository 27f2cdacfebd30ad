/**
 * Where this runner can make a cgroup per sandbox (sandbox-cgroup.ts), inside a parent per execution
 * environment (environment-cgroup.ts), found from its own cgroup (/proc/self/cgroup) and the cgroup
 * mounts (/proc/self/mountinfo): cgroup v2 when its memory controller is available there (with the
 * pids and cpu ones where available), else the v1 memory hierarchy (with the pids and cpu ones where
 * mounted and writable); null with the reason when neither is writable. Node only; Linux only.
 */
import { accessSync, constants, existsSync, mkdirSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readSync } from "./live-status.js";

/** The directories sandbox cgroups are made in: one for v2; one per mounted v1 hierarchy. */
export interface CgroupPlace {
  version: 2 | 1;
  memory: string;
  /** v1 only: the pids hierarchy's directory (v2: `memory`'s, when it has the pids controller). */
  pids: string | null;
  /** The cpu hierarchy's directory (v2: `memory`'s, when the cpu controller is enabled for its children); null: CPU is not weighed. */
  cpu: string | null;
}

/** A cgroup mount: its mount point, its file system type, and (v1) the controllers its super options name. */
interface Mount {
  dir: string;
  v2: boolean;
  controllers: string[];
}

export function mountsOf(mountinfo: string): Mount[] {
  const out: Mount[] = [];
  for (const line of mountinfo.split("\n")) {
    const [pre, post] = line.split(" - ");
    if (!pre || !post) continue;
    const [fstype, , opts] = post.split(" ");
    if (fstype !== "cgroup" && fstype !== "cgroup2") continue;
    const f = pre.split(" ");
    if (f[3] !== "/") continue; // a bind of a sub-tree: its paths are not /proc/self/cgroup's
    out.push({ dir: f[4]!.replace(/\\040/g, " "), v2: fstype === "cgroup2", controllers: fstype === "cgroup" ? (opts ?? "").split(",") : [] });
  }
  return out;
}

/** The runner's own cgroup path per hierarchy: "" for v2's ("0::/path"), else each controller's name. */
export function ownPaths(procSelfCgroup: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of procSelfCgroup.split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    for (const c of m[1] === "" ? [""] : m[1]!.split(",")) out.set(c, m[2]!);
  }
  return out;
}

/** Whether a cgroup can be made and removed in `dir` (we may be root and still be refused: a read-only mount, a delegation). */
function canMake(dir: string): boolean {
  const probe = join(dir, `toolshed-probe-${process.pid}`);
  try {
    accessSync(dir, constants.W_OK);
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

/**
 * The v2 cgroup sandboxes go under: the runner's own, its memory and pids controllers enabled for
 * its children. A cgroup with processes cannot enable them (the "no internal processes" rule, but
 * at the root): when the runner is alone in its cgroup it moves itself into a leaf of it ("runner")
 * first, as systemd and container inits do; beside other processes it leaves them be. The cpu
 * controller is enabled too where it is available; where the kernel refuses it, CPU is not weighed.
 */
function placeV2(mount: Mount, path: string): CgroupPlace | null {
  const own = join(mount.dir, path);
  const available = readSync(join(own, "cgroup.controllers")).split(/\s+/);
  if (!available.includes("memory") || !canMake(own)) return null;
  const enabled = () => readSync(join(own, "cgroup.subtree_control")).split(/\s+/);
  const enable = () => {
    // pids only where the kernel offers it: a host without it still gets the memory bound
    for (const c of ["memory", "pids"]) if (available.includes(c) && !enabled().includes(c)) writeFileSync(join(own, "cgroup.subtree_control"), `+${c}`);
  };
  try {
    enable();
  } catch {
    const procs = readSync(join(own, "cgroup.procs")).split("\n").filter(Boolean);
    if (procs.length !== 1 || Number(procs[0]) !== process.pid) return null;
    try {
      mkdirSync(join(own, "runner"), { recursive: true });
      writeFileSync(join(own, "runner", "cgroup.procs"), String(process.pid));
      enable();
    } catch {
      return null;
    }
  }
  if (!enabled().includes("memory")) return null;
  try {
    if (available.includes("cpu") && !enabled().includes("cpu")) writeFileSync(join(own, "cgroup.subtree_control"), "+cpu");
  } catch {
    /* refused (a real-time process in a cgroup below, a delegation without it): sandboxes run unweighed */
  }
  const has = (c: string) => (enabled().includes(c) ? own : null);
  return { version: 2, memory: own, pids: has("pids"), cpu: has("cpu") };
}

/** The v1 hierarchies: memory (required), pids and cpu where mounted and writable. */
function placeV1(mounts: Mount[], own: Map<string, string>): CgroupPlace | null {
  const dirOf = (c: string): string | null => {
    const m = mounts.find((x) => !x.v2 && x.controllers.includes(c));
    const p = own.get(c);
    if (!m || p === undefined) return null;
    const d = join(m.dir, p);
    return existsSync(d) && canMake(d) ? d : null;
  };
  const memory = dirOf("memory");
  return memory ? { version: 1, memory, pids: dirOf("pids"), cpu: dirOf("cpu") } : null;
}

/** Where sandbox cgroups go on this host, or why there is no such place. */
export function findCgroupPlace(procSelfCgroup = readSync("/proc/self/cgroup"), mountinfo = readSync("/proc/self/mountinfo")): CgroupPlace | { none: string } {
  const mounts = mountsOf(mountinfo);
  const own = ownPaths(procSelfCgroup);
  if (!mounts.length || !own.size) return { none: "no cgroup file system is mounted" };
  const v2 = mounts.find((m) => m.v2);
  const v2Path = own.get("");
  const placed = (v2 && v2Path !== undefined ? placeV2(v2, v2Path) : null) ?? placeV1(mounts, own);
  return placed ?? { none: "neither a cgroup v2 with the memory controller nor a v1 memory hierarchy is writable by the runner" };
}
