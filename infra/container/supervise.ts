/**
 * Running one spawned sandbox to its end, whichever sandbox spawned it (bwrap: sandbox.ts; the
 * per-tenant process sandbox: sandbox-process.ts): stdin, output, the wall-clock timeout, the
 * abort signal, the start gate, and ending every process of the run.
 */
import type { ChildProcess } from "node:child_process";
import type { SandboxExit, SandboxSpec } from "./sandbox-spec.js";

/** The gate of a spawned sandbox (SandboxSpec.gate): open() lets its command start. */
export interface Gate {
  wait: Promise<boolean>;
  open(): void;
}

/** Ends the process group of `child` (the sandbox and everything it started). */
export function killGroup(child: ChildProcess): void {
  try {
    if (child.pid) process.kill(-child.pid, "SIGKILL");
  } catch {
    /* already gone */
  }
}

/**
 * Runs a spawned sandbox to its end: feeds stdin, streams output, enforces the wall-clock
 * timeout and the abort signal. `killAll` must end every process of the run; it is called
 * on timeout, abort, and as soon as the first process exits (nothing may outlive the call).
 */
export function supervise(
  child: ChildProcess,
  spec: SandboxSpec,
  killAll: () => void | Promise<void>,
  spawnError: (e: NodeJS.ErrnoException) => Error,
  gate?: Gate,
): Promise<SandboxExit> {
  let started = Date.now();
  return new Promise<SandboxExit>((resolve, reject) => {
    let timedOut = false;
    let killed = false;
    let settled = false;
    let ended: Promise<void> | null = null;
    let timer: NodeJS.Timeout | undefined;
    const end = () => (ended ??= Promise.resolve().then(killAll));
    const begin = () => {
      if (settled) return;
      started = Date.now();
      timer = setTimeout(() => {
        timedOut = true;
        void end();
      }, spec.timeoutMs);
      gate?.open();
    };
    if (!gate) begin();
    else
      gate.wait.then(
        (go) => (go ? begin() : ((killed = true), void end())),
        () => ((killed = true), void end()),
      );
    const onAbort = () => {
      killed = true;
      void end();
    };
    spec.signal?.addEventListener("abort", onAbort, { once: true });
    if (spec.signal?.aborted) onAbort();
    child.stdout!.on("data", spec.onStdout);
    child.stderr!.on("data", spec.onStderr);
    if (child.stdin) {
      child.stdin.on("error", () => {});
      if (spec.input) spec.input.pipe(child.stdin);
      else child.stdin.end(spec.stdin);
    }
    if (child.pid) spec.onSpawn?.(child.pid);
    const finish = async (code: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      spec.signal?.removeEventListener("abort", onAbort);
      try {
        await end();
        await killAll(); // once more: a process may have forked meanwhile
      } catch (e) {
        reject(e);
        return;
      }
      resolve({ exitCode: timedOut || killed ? null : code, timedOut, killed: killed && !timedOut, durationMs: Date.now() - started });
    };
    child.on("error", (e) => {
      settled = true;
      clearTimeout(timer);
      reject(spawnError(e as NodeJS.ErrnoException));
    });
    child.on("close", (code, signal) => void finish(code ?? (signal ? 128 + 9 : null)));
    // A process left behind may hold the pipes open: end everything once the first one exits,
    // and give up on the pipes 5 s later.
    child.on("exit", (code) => {
      void end();
      setTimeout(() => void finish(code), 5000).unref();
    });
  });
}
