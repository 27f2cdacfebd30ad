/**
 * Names of the runner's host objects a sandbox can see. A command reads the source paths of its
 * bind mounts (/proc/self/mountinfo: its tree's stage, its shell directory, its egress proxy's
 * directory), bwrap's command line (/proc/1/cmdline) and, when bwrap made its cgroup namespace
 * before the runner moved it into its cgroup, that cgroup's name (/proc/self/cgroup). Such a name
 * must say nothing: no tenant or workspace id, and no count kept by the runner process, which every
 * tenant's environment shares on a local or ECS runner (a counter seen in two of one tenant's
 * commands told how many sandboxes the other tenants ran in between). So each is random.
 */
import { randomBytes } from "node:crypto";

/** `prefix` and 16 random hex digits (64 bits): a fresh name for one host object a sandbox can see. */
export const opaqueName = (prefix = ""): string => `${prefix}${randomBytes(8).toString("hex")}`;
