/**
 * The script a sandbox runs before the command: it sets the limits (soft = hard) in the sandboxed
 * process, closes every descriptor but 0-2, volunteers the command as the OOM killer's first victim,
 * then execs the command. Two forms: the process sandbox's (sandbox-process.ts) gets the run in its
 * arguments; bubblewrap's (sandbox.ts) waits at a gate and takes the run through it (the command,
 * its working directory, limits and environment), so a sandbox can be started before its run is
 * known (a spare: sandbox-spare.ts) with nothing of the run among bwrap's arguments but what is
 * fixed in advance.
 */
import type { RunLimits } from "../../lib/exec/types.js";
import type { SandboxSpec } from "./sandbox-spec.js";

/** `s` as one shell word. */
export const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The whole environment of a command: these few variables and the call's own. */
export function commandEnv(tmp: string, extra: Record<string, string>): Record<string, string> {
  return { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: tmp, TMPDIR: tmp, LANG: "C.UTF-8", TERM: "dumb", USER: "user", ...extra };
}

/**
 * The ulimit values of a run, in the order of ULIMIT_FLAGS. Memory is RLIMIT_DATA (what a process
 * writes), not RLIMIT_AS alone: an address-space limit of 2 GiB stops `java` and WebAssembly, which
 * reserve gigabytes they never touch. CPU: the wall-clock timeout rounded up, unless set.
 */
const ULIMIT_FLAGS = ["u", "d", "v", "f", "t", "n"] as const;
function ulimitValues(l: RunLimits, timeoutMs: number): number[] {
  const cpu = l.cpu_seconds > 0 ? l.cpu_seconds : Math.ceil(timeoutMs / 1000) + 1;
  return [l.processes, l.memory_mb * 1024, l.address_space_mb * 1024, l.file_size_mb * 1024, cpu, l.open_files];
}

// Descriptors beyond 0-2 that the handler inherited without close-on-exec would reach the command: closed.
// (Not `done 2>/dev/null`: bash would save stderr in a descriptor the loop then closes.)
const CLOSE_FDS = `for f in /proc/self/fd/*; do n=\${f##*/}; [ "$n" -gt 2 ] && { eval "exec $n<&-"; } 2>/dev/null; done`;
/** rlimits are per process: the command also volunteers as the OOM killer's first victim, so if the host runs short it dies before the handler does. */
const OOM_FIRST = "echo 1000 2>/dev/null >/proc/self/oom_score_adj";
const ulimitLine = (values: string[]) => `ulimit -c 0 ${ULIMIT_FLAGS.map((f, i) => `-${f} ${values[i]}`).join(" ")} || { echo "toolshed: could not set limits" >&2; exit 125; }`;

/** The process sandbox's form: the limits in the script, the command in $1. */
export function limitsScript(l: RunLimits, timeoutMs: number): string {
  return `${CLOSE_FDS}; ${OOM_FIRST}; ${ulimitLine(ulimitValues(l, timeoutMs).map(String))}; exec /bin/bash -c "$1"`;
}

/** The script's own variables (never exported: the command's environment is only what the run gives it). */
const V = { cwd: "__ts_w", command: "__ts_c", env: "__ts_e", item: "__ts_x", limits: ULIMIT_FLAGS.map((f) => `__ts_${f}`) };

/**
 * bubblewrap's form. It waits for one line "go" on the gate's descriptor (anything else ends it
 * unrun), then reads the run from `payload` (a file, so bash reads it in blocks: gatePayload),
 * changes to the working directory (made meanwhile), and execs the command, through `env` when the
 * run sets variables of its own (bash would refuse or rewrite some names; bwrap's environment holds
 * only what is fixed in advance).
 *
 * `helper`: a process started first, before the gate opens (so its start overlaps the run's
 * setup), with only descriptors 0-2 (stdin /dev/null); it prints "ready" once it serves, and the
 * command starts only after that (the egress forwarder, egress-forwarder.ts).
 */
export function gatedScript(fds: { gate: number; payload: number }, helper?: { command: string; failure: string }): string {
  const read = (name: string) => `IFS= read -r -d '' -u ${fds.payload} ${name}`;
  const fields = [V.cwd, ...V.limits, V.command].map(read).join(" && ");
  const launch = helper ? `exec {helper}< <(${CLOSE_FDS}; ${helper.command} </dev/null); ` : "";
  const wait = `read -r g <&${fds.gate} && [ "$g" = go ] || exit 125; ${fields} || exit 125; ${V.env}=(); while ${read(V.item)}; do ${V.env}+=("$${V.item}"); done; cd -- "$${V.cwd}" || exit 125; `;
  const ready = helper ? `read -r ok <&$helper; exec {helper}<&-; [ "$ok" = ready ] || { echo ${shellQuote(helper.failure)} >&2; exit 125; }; ` : "";
  const exec = `((\${#${V.env}[@]})) && exec /usr/bin/env -- "\${${V.env}[@]}" /bin/bash -c "$${V.command}"; exec /bin/bash -c "$${V.command}"`;
  return `${launch}${wait}${ready}${CLOSE_FDS}; ${OOM_FIRST}; ${ulimitLine(V.limits.map((v) => `"$${v}"`))}; ${exec}`;
}

/** What gatedScript reads after "go": NUL-terminated fields (none holds a NUL: run-request.ts refuses them). */
export function gatePayload(spec: Pick<SandboxSpec, "cwd" | "command" | "env" | "limits" | "timeoutMs">): Buffer {
  const fields = [spec.cwd ? `/workspace/${spec.cwd}` : "/workspace", ...ulimitValues(spec.limits, spec.timeoutMs).map(String), spec.command, ...Object.entries(spec.env).map(([k, v]) => `${k}=${v}`)];
  return Buffer.from(fields.map((f) => `${f}\0`).join(""));
}
