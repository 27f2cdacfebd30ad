import { z } from "@hono/zod-openapi";
import { assertNotBlocked } from "../lib/exec/guard.js";
import { startedInBackground, startInBackground } from "../lib/exec/tasks.js";
import { saveShell, setLiveHint, shellRequest, type SessionShell } from "../lib/exec/shell-session.js";
import { runForCall } from "../lib/exec/stream-run.js";
import { commandData, commandOutput, commandReads, executorOf, guardVerdict, MAX_COMMAND_OUTPUT, runCallId, runRequest, stoppedError, takeRun } from "../lib/exec/tool-support.js";
import { writeBackNotes } from "../lib/exec/write-back-notes.js";
import { withEgressSecrets } from "../lib/tools/secrets/egress.js";
import { idleUnusedNote, KEEP_ALIVE_ARGS, KEEP_ALIVE_LINES, keepAliveFields, liveIdleMs, liveMode } from "../lib/exec/live/keep-alive.js";
import { endLive, runLive, type LiveShellUse } from "../lib/exec/live/run-live.js";
import { runJoining } from "../lib/exec/live/run-joining.js";
import type { RunResult } from "../lib/exec/types.js";
import { ToolError } from "../lib/shared/errors.js";
import { normalizePath } from "../lib/layout/paths.js";
import { defineTool } from "../lib/contract/tool.js";
import { TIMEOUT_TOO_BIG } from "../lib/contract/foreign-args.js";
import { CommandResult } from "../lib/contract/tool-output.js";

/** What the model reads; `live`: the deployment has live sessions (keep_alive), else its lines are left out (Tool.withoutLive). */
const describe = (live: boolean) => `Run a bash command in an isolated sandbox over a copy of the workspace; file changes are written back.
- command: run by bash in the workspace. python3, node and git are installed.
- The working directory persists between the commands of a session (X-Session-Id): after \`cd sub\`, the next command starts in sub (the first one starts in the workspace root; if that directory is gone, in the root, with a note). working_dir sets it for one command, restart: true starts from the root (alone, without a command, it only forgets the session's shell). Shell variables, exports, functions, aliases and options do NOT persist unless keep_env: true (then exported variables and functions do too, up to 64 KiB)${live ? " or keep_alive: true (then all of them, in the live shell)" : ""}.
- timeout: seconds (default: 120, max 600). On timeout every process is killed, file changes are NOT written back, and the error carries the output so far.
- A command that adds more than the per-call quota (default: 4 GiB) to the workspace is stopped the same way (QUOTA_EXCEEDED). Big scratch data: delete it before the command ends.
- run_in_background: true (default: false) returns a task_id at once; read its output with bash_output, stop it with kill_shell. At most 8 run at once per workspace (RATE_LIMITED beyond). It starts in the session's directory; where it ends is not kept.
- A process the command starts in the background (\`cmd &\`, nohup, setsid) is killed when the command ends${live ? ", unless it runs in the session's live sandbox (keep_alive)" : ""}; it does not run on into the next call. For a long-running process use ${live ? "keep_alive or " : ""}run_in_background: true.${live ? `\n${KEEP_ALIVE_LINES} run_in_background ignores keep_alive (a fresh sandbox). restart: true ends the live sandbox too, unless keep_alive: false.` : ""}
- No network unless your API key has the network scope; with it, public internet addresses only (loopback, private and cloud metadata addresses are refused, the reason in stderr), through the proxy HTTP_PROXY/HTTPS_PROXY name: curl, wget, pip, npm and git use it; raw sockets and DNS lookups have no route. The tenant's secrets (credentials for a host, never shown: {{secret:NAME}} stands in) are added by that proxy to requests sent as http://<host>/... (it sends them on over https); an https:// URL goes through as it is, without them. ${live ? "Outside a live sandbox nothing" : "Nothing"} survives the call but workspace files: /tmp is private, processes are killed.
- Output: stdout and stderr merged; over ${MAX_COMMAND_OUTPUT} bytes, the head and tail are kept on line boundaries and a note says how many bytes and which lines were left out and where the full output is (output_file, not a workspace file: read it with bash_output {output_file, offset, limit}); a non-zero exit code is appended.
- Write-back is per file and conditional: a file another tool changed during the command is kept as that tool wrote it and listed in conflicts (the command's version is saved under .toolshed/conflicts/). Symlinks are kept as links (links_changed: those the command made, removed or repointed), execute bits too (modes_changed: files whose bit it set or cleared); special files are not written back. Changes past 100,000 files, or past the write-back's share of the time, are listed in unsynced and are NOT in the workspace.
- Directories the command leaves empty are kept for later calls (dirs_created); directories it removes are removed (dirs_deleted).
- git works out of the box (identity "Toolshed Agent", branch main); .toolshed/ (conflict copies) is ignored by git.
- After a command changes a file, read it again before editing it.
- Destructive commands (rm -r, git reset --hard, git clean -f, git push --force, chmod -R, ...) wait for a human's approval (NEEDS_APPROVAL with a pending_id; get the outcome with the pending_result tool); nothing of them runs before. Some (rm -rf /, fork bombs, writes to system paths) are always refused.
- confirmed (default: false): the user agreed to this exact command. It counts only where the tenant's policy allows self-confirmation; otherwise a destructive command waits for approval whatever it says.
- call_id (when files, symlinks, execute bits or empty directories changed): POST /v1/workspaces/{ws}/undo {call_id} puts back every file, symlink, execute bit and empty directory the command wrote back.
Returns: {stdout, stderr, exit_code, duration_ms, truncated, output_file?, output_cut?, files_changed, files_deleted, dirs_created?, dirs_deleted?, links_changed?, modes_changed?, conflicts, unsynced?, call_id?, notes?} or {task_id, status} in background (notes: the lines the output adds to the command's own)`;

const SUMMARY = "Run a bash command in an isolated sandbox over the workspace (python3, node, git installed); file changes are written back. timeout in seconds (default 120, max 600); run_in_background: true returns a task_id for bash_output.";

export default defineTool({
  name: "bash",
  description: describe(true),
  category: "execute",
  permission: "execute",
  startReads: commandReads(true), // its guard rails and git identity, beside the approval gate's reads
  onKnownRecord: "command", // the runner reads the workspace record itself: a record this isolate knows is enough here
  summary: `${SUMMARY} keep_alive: true (with X-Session-Id) keeps the sandbox (shell, processes, /tmp) for the session's next calls, which run in it unless keep_alive: false.`,
  liveless: { description: describe(false), summary: SUMMARY, omit: KEEP_ALIVE_ARGS },
  annotations: { title: "Run bash command", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  output: z.object({
    task_id: z.string().optional(),
    status: z.literal("running").optional(),
    ...CommandResult.partial().shape,
    notes: z.string().optional().openapi({ description: "The lines the output adds to the command's own (write-back, live sandbox, shell), one per line: the same text" }),
  }),
  input: z.object({
    command: z.string().min(1).max(100_000).optional().describe("The bash command to run (required unless restart: true)"),
    timeout: z.number().int().min(1).max(600, TIMEOUT_TOO_BIG).optional().describe("Seconds before the command is killed (default: 120, max 600)"),
    description: z.string().max(200).optional().describe("What the command does, in a few words (shown as the title)"),
    working_dir: z.string().optional().describe("Workspace directory to run in (default: where this session's previous command ended, else the workspace root)"),
    restart: z.boolean().optional().describe("Forget this session's shell first: start in the workspace root, with no kept variables or functions, and end its live sandbox if it has one (default: false)"),
    keep_env: z.boolean().optional().describe("Also keep exported variables and shell functions for this session's next commands, as a persistent shell does (default: false: only the working directory carries over)"),
    run_in_background: z.boolean().optional().describe("Start it and return a task_id at once (default: false)"),
    ...keepAliveFields,
    confirmed: z.boolean().optional().describe("The user confirmed this exact command in the conversation (default: false). It counts only where the tenant's policy allows self-confirmation; by default a destructive command waits for approval whatever this says"),
  }),
  async execute(args, ctx) {
    if (args.command === undefined) {
      if (!args.restart) throw new ToolError("INVALID_ARGUMENT", "Missing required argument command (the bash command to run); only restart: true may come without one.", { field: "command" });
      // Forgets the session's shell (and ends its live sandbox, if it has one, unless keep_alive: false); nothing runs.
      const leave = args.keep_alive === false;
      const [, ended] = await Promise.all([shellRequest(ctx, "cwd", true, leave), leave ? false : endLive(ctx)]);
      return { title: "restart", output: `Shell restarted: the next command starts in the workspace root, with no kept variables or functions.${ended ? " The session's live sandbox was ended (its processes are gone; files are safe)." : ""}`, data: {} };
    }
    const command = args.command;
    const mode = liveMode(args, ctx.session, ctx.deps.live !== undefined, ctx.backgroundUnlessLive);
    // A restarted shell is a new one: the session's live sandbox goes with the old, unless keep_alive: false leaves it alone
    // (the OpenAI-compat shell's every command: a fresh shell at the root that must not end what another door started).
    if (args.restart && args.keep_alive !== false) await endLive(ctx);
    // Caution commands are held by the approval gate (lib/run/pending/gate.ts) before this runs; here only the blocked ones are refused.
    assertNotBlocked(await guardVerdict(ctx, command));
    const executor = executorOf(ctx.deps);
    const seconds = args.timeout ?? 120;
    const cwd = normalizePath(args.working_dir ?? "");
    const keep = args.keep_env ? "all" : "cwd";
    const title = args.description ?? (command.length > 80 ? `${command.slice(0, 77)}...` : command);
    const built = runRequest(ctx, { command, timeoutMs: seconds * 1000, cwd, background: args.run_in_background === true }).then((r) => withEgressSecrets(ctx, r));
    /**
     * The command's answer: notes before its output (a live sandbox's, the saved shell's), the write-back's and the shell's
     * notes after it. data.notes holds the same lines, for a door that carries the command's streams apart (OpenAI's shell).
     */
    const answer = (r: RunResult, before: string, after: string) => {
      takeRun(ctx.ws, r, seconds);
      const notes = writeBackNotes(r) + after;
      return { title, output: before + commandOutput(r).text + notes, data: { ...commandData(r), ...runCallId(ctx.ws.undo?.callId, r), ...noteLines(before + notes) } };
    };

    /** In the session's live sandbox: the live shell holds the session's state, read only for a sandbox's first command (or given: `loaded`) and saved (with the hint that the session holds a sandbox) only when it changed. */
    const liveUse = (load: () => Promise<SessionShell>): LiveShellUse => ({ keep, load, save: (r, loaded) => saveShell(ctx, r, loaded, { live: { now: true } }) });

    if (mode === "start") {
      // keep_alive (docs/live-sessions.md).
      const restarted = args.restart ? shellRequest(ctx, keep, true) : null;
      const [base] = await Promise.all([built, restarted]);
      const { result: r, notes, shellNote, shellNotes } = await runLive(ctx, executor, base, liveIdleMs(args, ctx.session), liveUse(() => restarted ?? shellRequest(ctx, keep, false)), args.idle_timeout_s !== undefined);
      return answer(r, notes + shellNote, shellNotes);
    }
    // keep_alive omitted: the session's live sandbox, if it still holds one (never a new one); keep_alive: false, or none: fresh
    // (docs/live-sessions.md, "Later calls"). The session's shell (one storage read) is read beside the run request's token and
    // git identity; its hint says whether the session may hold a live sandbox. A restart ended that sandbox above (and this isolate's memo of it).
    const j = await runJoining(ctx, executor, {
      mode,
      req: built,
      load: () => shellRequest(ctx, keep, args.restart === true, mode === "fresh"),
      shell: (loaded) => liveUse(loaded ? async () => loaded : () => shellRequest(ctx, keep, false)),
      fresh: async (base, shell) => {
        const req = { ...base, shell: shell.request };
        if (!args.run_in_background) return runForCall(ctx, executor, req); // streamed when the caller listens for progress
        return startInBackground(ctx, executor, req);
      },
      // The hint is saved with the shell: kept while the session holds its sandbox, cleared (saved even when the state is the same) once it is known gone.
      // A background start saves no shell: a task's, after a join declined, clears the hint alone.
      saveHint: async (r, shell, gone) => {
        if ("task_id" in r) return gone && shell.live ? setLiveHint(ctx, false).then(() => "") : "";
        return stoppedError(r, seconds) ? "" : saveShell(ctx, r, shell.request, { skipFresh: true, live: { now: shell.live && !gone, before: shell.live } });
      },
    });
    const unused = idleUnusedNote(args); // idle_timeout_s without keep_alive: said, never dropped unsaid
    if ("live" in j) return answer(j.live.result, unused + j.live.notes + j.live.shellNote, j.live.shellNotes);
    if ("task_id" in j.fresh) {
      const { task_id } = j.fresh;
      return {
        title,
        output: startedInBackground(task_id, unused + j.notes),
        data: { task_id, status: "running" },
      };
    }
    return answer(j.fresh, unused + j.notes + j.loaded.note, j.saved);
  },
});

/** {notes}: the lines of `text` without the blank ones; {} when there are none. */
function noteLines(text: string): { notes?: string } {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  return lines.length ? { notes: lines.join("\n") } : {};
}
