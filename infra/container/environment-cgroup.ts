/**
 * The parent cgroup of one execution environment (docs/runner-security.md, "Fair share"): the local
 * Invoke stand-in holds one environment per tenant, so on a runner host shared by tenants each
 * tenant's sandboxes' cgroups (sandbox-cgroup.ts) sit inside its environment's parent, and every
 * parent has the same CPU weight (v2 cpu.weight, v1 cpu.shares). The kernel shares the CPU equally
 * between the environments that want it, whatever the number of their sandboxes, and each
 * environment's part equally between its sandboxes. Made in every hierarchy a sandbox's cgroup is
 * (v1 memory and pids too: one layout for v1 and v2, and an environment's end or a crashed runner's
 * sweep removes one directory per hierarchy, with whatever is left below it). Its name is the
 * runner's and random bits (cgroup-dirs.ts), never a tenant's: a sandbox sees it in /proc/self/cgroup.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { CgroupPlace } from "./cgroup-place.js";
import { cgroupName, drop, knob } from "./cgroup-dirs.js";

/**
 * Every environment's CPU weight, the same for all (that is what shares the CPU per tenant): eight
 * ordinary processes' worth (the kernel's default weight × the default runs per tenant, 8), so that
 * beside the host's other processes in the runner's own cgroup (the runner, an API or tests on the same
 * host) a tenant's sandboxes weigh what up to 8 of them did as separate processes, not one process's.
 */
const WEIGHT: Record<CgroupPlace["version"], [knob: string, value: string]> = { 2: ["cpu.weight", "800"], 1: ["cpu.shares", "8192"] };

export interface EnvironmentCgroup {
  /** Where its sandboxes' cgroups go: the place's directories with this environment's parent below each; `cpu` null where CPU is not weighed. */
  readonly place: CgroupPlace;
  /** Kills whatever is left in it and removes its parent in every hierarchy; false when the kernel did not let it go in time. */
  remove(): Promise<boolean>;
}

/**
 * A new environment's parent under `place`. Its memory and pids parts are required (throws, leaving
 * nothing made); its CPU weight is not: where the cpu part cannot be made, its `place.cpu` is null.
 */
export function makeEnvironmentCgroup(place: CgroupPlace): EnvironmentCgroup {
  const name = cgroupName(true);
  const v2 = place.version === 2;
  const memory = join(place.memory, name);
  const pids = place.pids === null ? null : join(place.pids, name);
  const made: string[] = [];
  const make = (d: string) => {
    if (made.includes(d)) return;
    mkdirSync(d); // the kernel fills it with the controllers' files
    made.push(d);
  };
  try {
    make(memory);
    if (pids) make(pids);
    // v2: its sandboxes get only the controllers their parent enables for them.
    if (v2) knob(memory, "cgroup.subtree_control", pids ? "+memory +pids" : "+memory");
  } catch (e) {
    void drop(made);
    throw e;
  }
  let cpu: string | null = null;
  if (place.cpu !== null) {
    const dir = join(place.cpu, name);
    try {
      make(dir);
      if (v2) knob(dir, "cgroup.subtree_control", "+cpu");
      knob(dir, ...WEIGHT[place.version]);
      cpu = dir;
    } catch {
      if (dir !== memory) void drop([dir]);
    }
  }
  return { place: { version: place.version, memory, pids, cpu }, remove: () => drop(made) };
}
