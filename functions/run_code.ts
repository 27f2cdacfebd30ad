import { z } from "@hono/zod-openapi";
import { runForCall } from "../lib/exec/stream-run.js";
import { startedInBackground, startInBackground } from "../lib/exec/tasks.js";
import { commandOutput, commandReads, executorOf, runCallId, runRequest, takeRun } from "../lib/exec/tool-support.js";
import { writeBackNotes } from "../lib/exec/write-back-notes.js";
import { withEgressSecrets } from "../lib/tools/secrets/egress.js";
import { forgottenNote, idleUnusedNote, KEEP_ALIVE_ARGS, KEEP_ALIVE_LINES, keepAliveFields, liveIdleMs, liveMode } from "../lib/exec/live/keep-alive.js";
import { runLive } from "../lib/exec/live/run-live.js";
import { runJoining } from "../lib/exec/live/run-joining.js";
import type { RunResult } from "../lib/exec/types.js";
import { liveHinted, setLiveHint } from "../lib/exec/shell-session.js";
import { defineTool } from "../lib/contract/tool.js";
import { TIMEOUT_TOO_BIG } from "../lib/contract/foreign-args.js";
import { OutputCutInfo } from "../lib/contract/tool-output.js";

/** What the model reads; `live`: the deployment has live sessions (keep_alive), else its line is left out (Tool.withoutLive). */
const describe = (live: boolean) => `Run a snippet of Python, Node.js or bash in the sandbox (same isolation as bash) and get its output.
- language: "python" (python3), "node" or "bash". code: the program, passed on stdin (no temporary file needed).
- args: command-line arguments (sys.argv[1:], process.argv.slice(2), "$@"). env: extra environment variables.
- timeout: seconds (default: 60, max 600). Runs in the workspace root; files it writes there are written back like bash.
- run_in_background: true (default: false) returns a task_id at once, as bash's does: read its output with bash_output, stop it with kill_shell (it counts among bash's background tasks).
- No network unless your API key has the network scope; with it, public internet addresses only, through the proxy HTTP_PROXY/HTTPS_PROXY name (python's urllib and requests use it; Node's built-in fetch does not). Long output is cut as bash cuts it (the note says what was left out and where the full output is).
- Symlinks it makes are kept as links, as bash keeps them (links_changed: those it made, removed or repointed).${live ? `\n${KEEP_ALIVE_LINES} The program itself runs as a new process each call (a REPL's variables do not persist); what it leaves running, and files in /tmp and HOME, do.` : ""}
Returns: {stdout, stderr, exit_code, duration_ms, output_file?, output_cut?, files_changed?, links_changed?, modes_changed?, call_id?} (call_id when it changed files, symlinks, execute bits or empty directories: undo it with POST /v1/workspaces/{ws}/undo)`;

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const RUNNERS = { python: "python3 -", node: "node -", bash: "bash -s --" } as const;

const SUMMARY = "Run a Python, Node.js or bash snippet in the sandbox (same isolation as bash) with optional args and env; returns stdout, stderr and exit code; files written are kept.";

export default defineTool({
  name: "run_code",
  description: describe(true),
  category: "execute",
  permission: "execute",
  startReads: commandReads(false), // its git identity, beside the approval gate's reads
  summary: SUMMARY,
  liveless: { description: describe(false), summary: SUMMARY, omit: KEEP_ALIVE_ARGS },
  annotations: { title: "Run code", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  // A background start answers {task_id, status} only, so the run's fields are optional (as bash's).
  output: z.object({ task_id: z.string().optional(), status: z.literal("running").optional(), stdout: z.string().optional(), stderr: z.string().optional(), exit_code: z.number().int().nullable().optional(), duration_ms: z.number().optional(), output_file: z.string().optional(), output_cut: OutputCutInfo.optional(), files_changed: z.array(z.string()).optional(), links_changed: z.array(z.string()).optional(), modes_changed: z.array(z.string()).optional(), unsynced: z.record(z.string(), z.unknown()).optional(), call_id: z.string().optional() }),
  input: z.object({
    language: z.enum(["python", "node", "bash"]).describe("The language of code"),
    code: z.string().min(1).max(1_000_000).describe("The program"),
    args: z.array(z.string().max(10_000)).max(100).optional().describe("Command-line arguments (default: none)"),
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).optional().describe("Extra environment variables (default: none)"),
    timeout: z.number().int().min(1).max(600, TIMEOUT_TOO_BIG).optional().describe("Seconds before it is killed (default: 60, max 600)"),
    run_in_background: z.boolean().optional().describe("Start it and return a task_id at once (default: false)"),
    ...keepAliveFields,
  }),
  async execute(args, ctx) {
    const mode = liveMode(args, ctx.session, ctx.deps.live !== undefined, ctx.backgroundUnlessLive);
    const executor = executorOf(ctx.deps);
    const seconds = args.timeout ?? 60;
    const command = [RUNNERS[args.language], ...(args.args ?? []).map(quote)].join(" ");
    const req = runRequest(ctx, { command, timeoutMs: seconds * 1000, stdin: args.code, ...(args.env ? { env: args.env } : {}), background: args.run_in_background === true }).then((r) => withEgressSecrets(ctx, r));
    const title = `${args.language} (${args.code.split("\n").length} lines)`;
    const run = async (): Promise<{ result: RunResult; notes: string } | { task_id: string; notes: string }> => {
      if (mode === "start") {
        // keep_alive: in the session's live sandbox (docs/live-sessions.md).
        const started = await runLive(ctx, executor, await req, liveIdleMs(args, ctx.session), undefined, args.idle_timeout_s !== undefined);
        // Later calls without keep_alive look for the hint; one already there with no loss told: the old sandbox was forgotten (said as bash says it).
        const hinted = started.started && (await setLiveHint(ctx, true));
        return { ...started, notes: forgottenNote(started, hinted) + started.notes };
      }
      // Omitted: in the one the session holds, if any; false, or none: fresh. run_code keeps no shell: the saved shell is read for its hint alone, beside the request's token and git identity.
      const j = await runJoining(ctx, executor, {
        mode,
        req,
        load: async (hintWanted) => ({ live: hintWanted && (await liveHinted(ctx)) }),
        fresh: async (base) => {
          if (!args.run_in_background) return runForCall(ctx, executor, base); // streamed when the caller listens for progress
          return startInBackground(ctx, executor, base);
        },
        saveHint: async (_r, _loaded, gone) => {
          if (gone) await setLiveHint(ctx, false);
          return "";
        },
      });
      const unused = idleUnusedNote(args); // idle_timeout_s without keep_alive: said, never dropped unsaid
      if ("live" in j) return { ...j.live, notes: unused + j.live.notes };
      return "task_id" in j.fresh ? { task_id: j.fresh.task_id, notes: unused + j.notes } : { result: j.fresh, notes: unused + j.notes };
    };
    const ran = await run();
    if ("task_id" in ran) {
      const { task_id } = ran;
      return { title, output: startedInBackground(task_id, ran.notes), data: { task_id, status: "running" as const } };
    }
    const { result: r, notes } = ran;
    takeRun(ctx.ws, r, seconds);
    return {
      title,
      output: notes + commandOutput(r).text + writeBackNotes(r),
      data: {
        stdout: r.stdout, stderr: r.stderr, exit_code: r.exit_code, duration_ms: r.duration_ms,
        ...(r.output_file ? { output_file: r.output_file } : {}), ...(r.output_cut ? { output_cut: r.output_cut } : {}),
        ...(r.files_changed.length ? { files_changed: r.files_changed } : {}), ...(r.links_changed?.length ? { links_changed: r.links_changed } : {}), ...(r.modes_changed?.length ? { modes_changed: r.modes_changed } : {}), ...(r.unsynced ? { unsynced: r.unsynced } : {}),
        ...runCallId(ctx.ws.undo?.callId, r),
      },
    };
  },
});
