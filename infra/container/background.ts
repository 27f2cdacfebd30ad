/**
 * Background tasks of a long-lived runner process (local executor, local Invoke stand-in).
 * On AWS Lambda an execution environment is frozen once the invocation returns, so a
 * task cannot outlive its invocation there: the Lambda entry disables them (README).
 */
import { randomBytes } from "node:crypto";
import { ToolError, isToolError } from "../../lib/errors.js";
import type { RunResult, TaskPoll, TaskStatus } from "../../lib/exec/types.js";
import type { OutputCollector } from "./output.js";
import type { RunHooks } from "./runner.js";

interface Task {
  id: string;
  tenant: string;
  status: TaskStatus;
  ctrl: AbortController;
  collector: OutputCollector | null;
  done: Promise<void>;
  result?: RunResult;
  error?: { code: string; message: string };
  finishedAt?: number;
  /** Tail of the output not yet handed out, kept after the collector is gone. */
  rest: string;
}

export class TaskManager {
  private tasks = new Map<string, Task>();

  constructor(private readonly maxRunningPerTenant = 8, private readonly keepMs = 60 * 60 * 1000) {}

  start(tenant: string, run: (hooks: RunHooks) => Promise<RunResult>): string {
    this.gc();
    const running = [...this.tasks.values()].filter((t) => t.tenant === tenant && t.status === "running").length;
    if (running >= this.maxRunningPerTenant) throw new ToolError("RATE_LIMITED", `At most ${this.maxRunningPerTenant} background tasks may run at once; kill one with kill_shell or wait.`);
    const id = `bg_${randomBytes(9).toString("base64url")}`;
    const task: Task = { id, tenant, status: "running", ctrl: new AbortController(), collector: null, done: Promise.resolve(), rest: "" };
    task.done = run({ signal: task.ctrl.signal, onStart: (c) => (task.collector = c) }).then(
      (r) => {
        task.result = r;
        task.status = r.timed_out ? "timed_out" : r.killed ? "killed" : "completed";
      },
      (e: unknown) => {
        task.error = isToolError(e) ? { code: e.code, message: e.message } : { code: "INTERNAL", message: String(e) };
        task.status = task.ctrl.signal.aborted ? "killed" : "completed";
      },
    ).finally(() => {
      task.rest = task.collector?.take() ?? "";
      task.collector = null;
      task.finishedAt = Date.now();
    });
    this.tasks.set(id, task);
    return id;
  }

  private get(tenant: string, id: string): Task {
    const t = this.tasks.get(id);
    // Another tenant's task id is answered exactly like an unknown one.
    if (!t || t.tenant !== tenant) throw new ToolError("NOT_FOUND", `No background task ${JSON.stringify(id)}. Task ids come from bash with run_in_background: true.`, { task_id: id });
    return t;
  }

  async poll(tenant: string, id: string, waitMs = 0): Promise<TaskPoll> {
    const t = this.get(tenant, id);
    if (waitMs > 0 && t.status === "running") {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([t.done, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
      clearTimeout(timer);
    }
    let output = t.collector?.take() ?? "";
    if (t.status !== "running") {
      output = t.rest + output;
      t.rest = "";
    }
    return {
      task_id: id,
      status: t.status,
      exit_code: t.result?.exit_code ?? null,
      output,
      ...(t.result ? { result: t.result } : {}),
      ...(t.error ? { error: t.error } : {}),
    };
  }

  async kill(tenant: string, id: string): Promise<{ status: "killed" | "already_completed" }> {
    const t = this.get(tenant, id);
    if (t.status !== "running") return { status: "already_completed" };
    t.ctrl.abort();
    await t.done;
    return { status: (t.status as TaskStatus) === "killed" ? "killed" : "already_completed" };
  }

  /** Kills every running task (shutdown). */
  async killAll(): Promise<void> {
    for (const t of this.tasks.values()) t.ctrl.abort();
    await Promise.all([...this.tasks.values()].map((t) => t.done));
  }

  private gc(): void {
    const now = Date.now();
    for (const [id, t] of this.tasks) if (t.finishedAt && now - t.finishedAt > this.keepMs) this.tasks.delete(id);
  }
}
