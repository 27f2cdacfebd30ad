/**
 * A session's live sandbox (docs/live-sessions.md): GET shows it, DELETE ends it at once (its
 * runner's next poll is told `{end: "ended"}`). Both need the scope bash needs (execute), through
 * the one guard. A session of another tenant or workspace is simply not found: the coordinator is
 * keyed by the authenticated tenant and the guarded workspace.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import { checkSessionId } from "../../layout/paths.js";
import { ToolError } from "../../shared/errors.js";
import { accountEnds } from "../../exec/live/service.js";
import type { LiveKey, SandboxView } from "../../exec/live/types.js";
import { LIVE_LIST_MAX, type LiveLost, type LiveProcess } from "../../sync/live-types.js";
import { secureRoute } from "./access.js";
import { backgroundOf, errorResponses, newApp, WsParam } from "./common.js";

/** A process of a sandbox another API key started: its command line is that key's (it may hold what that key passed it), never shown. */
const OTHER_KEYS = "(started by another API key: not shown)";

/** How long DELETE waits for the runner's report of its end (its processes then): it comes once the runner has killed them and written back. */
const END_REPORT_WAIT_MS = 5_000;

const Process = z.object({ pid: z.number().int(), command: z.string() });
const SandboxSchema = z
  .object({
    session: z.string(),
    generation: z.string().openapi({ description: "This sandbox's id (a new one per start)." }),
    state: z.enum(["starting", "idle", "running"]),
    started_at: z.string().openapi({ description: "ISO time it started (asked for, while starting)." }),
    last_used_at: z.string().openapi({ description: "ISO time its last command ended (its start, before any)." }),
    processes: z.array(Process).openapi({ description: `Processes besides its session shell: the ${LIVE_LIST_MAX} lowest pids at most. GET: as its runner last reported them (at reported_at). DELETE: those its runner found still running as it ended it (its own report at its end, waited for up to ${END_REPORT_WAIT_MS / 1000} s); empty with processes_known false when that report did not come in time. Their command lines are shown only to the API key that started the sandbox; to another key each reads "${OTHER_KEYS}".` }),
    processes_known: z.literal(false).optional().openapi({ description: `DELETE only: its runner did not report its end within ${END_REPORT_WAIT_MS / 1000} s, so which processes were still running at its end is not known here (the session's next call is told once it reports); processes is then empty.` }),
    reported_at: z.string().optional().openapi({ description: "ISO time its runner took the status that ports (and, for GET, processes) come from: up to about 20 s old while it is idle, from before the command while one runs." }),
    processes_total: z.number().int().optional().openapi({ description: `How many processes run, when more than ${LIVE_LIST_MAX} (processes lists the first).` }),
    ports: z.array(z.number().int()).openapi({ description: `TCP ports listening on its loopback: the ${LIVE_LIST_MAX} lowest at most.` }),
    ports_total: z.number().int().optional().openapi({ description: `How many ports listen, when more than ${LIVE_LIST_MAX}.` }),
    wall_ms: z.number().int().openapi({ description: "How long it has existed: what it costs (sandbox_ms of its usage record at its end)." }),
    cpu_ms: z.number().int().optional(),
    rss_bytes: z.number().int().optional(),
  })
  .openapi("LiveSandbox");

const SessionParams = WsParam.extend({ session: z.string().openapi({ param: { name: "session", in: "path" }, example: "chat-42" }) });

/**
 * The processes to show and whether they are known: the last status report's (GET: `atEnd` undefined), or those its
 * runner reported at its end (DELETE: `atEnd`), none and not known when that report did not come in time (null).
 */
function processesOf(v: SandboxView, atEnd?: LiveLost | null): { processes: LiveProcess[]; total?: number; known: boolean } {
  if (atEnd === undefined) return { processes: v.processes, total: v.processes_total, known: true };
  if (atEnd === null) return { processes: [], known: false };
  return { processes: atEnd.lost_processes, total: atEnd.lost_total, known: true };
}

/** The answer of GET and DELETE. `keyId`: the caller's; a sandbox another key started is shown without its processes' command lines. */
const shown = (session: string, v: SandboxView, keyId: string, atEnd?: LiveLost | null) => {
  const { processes, total, known } = processesOf(v, atEnd);
  const ownKey = v.key_id === undefined || v.key_id === keyId;
  return {
    session, generation: v.generation, state: v.state, started_at: new Date(v.started_at).toISOString(), last_used_at: new Date(v.last_used_at).toISOString(),
    processes: ownKey ? processes : processes.map((p) => ({ pid: p.pid, command: OTHER_KEYS })),
    ...(total !== undefined ? { processes_total: total } : {}),
    ...(known ? {} : { processes_known: false as const }),
    ...(v.reported_at !== undefined ? { reported_at: new Date(v.reported_at).toISOString() } : {}),
    ports: v.ports, ...(v.ports_total !== undefined ? { ports_total: v.ports_total } : {}), wall_ms: Math.round(v.wall_ms),
    ...(v.cpu_ms !== undefined ? { cpu_ms: Math.round(v.cpu_ms) } : {}), ...(v.rss_bytes !== undefined ? { rss_bytes: Math.round(v.rss_bytes) } : {}),
  };
};

const none = (session: string) => new ToolError("NOT_FOUND", `Session ${session} has no live sandbox in this workspace (none was started with keep_alive, or it ended). A bash or run_code call with keep_alive: true and the header X-Session-Id: ${session} starts one.`, { session });

export function sandboxApp(deps: AppDeps) {
  const app = newApp();
  const route = (method: "get" | "delete", summary: string, description: string, ok: string) =>
    createRoute(secureRoute(deps, { auth: "tenant", scope: "execute", workspace: true }, {
      method, path: "/v1/workspaces/{ws}/sessions/{session}/sandbox", tags: ["sessions"], summary, description,
      request: { params: SessionParams },
      responses: { 200: { description: ok, content: { "application/json": { schema: SandboxSchema } } }, ...errorResponses(400, 401, 403, 404) },
    }));
  const keyOf = (tenant: string, ws: string, session: string): LiveKey => ({ tenant, workspace: ws, session: checkSessionId(session) });
  const service = () => {
    if (!deps.live) throw new ToolError("UNAVAILABLE", "Live sandboxes are not enabled on this server.");
    return deps.live;
  };

  app.openapi(
    route("get", "The session's live sandbox (keep_alive)", "What the session's live sandbox is doing: when it started and was last used, its processes and listening ports, its wall time so far. 404 when the session has none. Needs the 'execute' scope.", "The live sandbox"),
    async (c) => {
      const { ws, session } = c.req.valid("param");
      const svc = service();
      const key = keyOf(c.get("auth").tenant, ws, session);
      const { sandbox, ends } = await svc.coordinator.status(key);
      await accountEnds(svc, key, ends, backgroundOf(c));
      if (!sandbox) throw none(session);
      return c.json(shown(session, sandbox, c.get("auth").key_id), 200);
    },
  );
  app.openapi(
    route("delete", "End the session's live sandbox now", "Ends the session's live sandbox at once: its processes and shell state are gone (files never: they were written back); a command running in it is answered as lost. Answers what it ended; 404 when the session has none. The session's next keep_alive call starts a new one (calls without keep_alive then run in fresh sandboxes). Needs the 'execute' scope.", "The live sandbox that was ended"),
    async (c) => {
      const { ws, session } = c.req.valid("param");
      const svc = service();
      const key = keyOf(c.get("auth").tenant, ws, session);
      const { ended, ends } = await svc.coordinator.end(key, "ended");
      await accountEnds(svc, key, ends, backgroundOf(c));
      if (!ended) throw none(session);
      // Its last status report may list processes that exited since: the answer names those its runner found at its end
      // (a runner that never came ran none). Before 2026-12-02 it listed the last report's.
      const atEnd = ended.state === "starting" ? { lost_processes: [] } : await svc.coordinator.lostAtEnd(key, ended.generation, END_REPORT_WAIT_MS).catch(() => null);
      return c.json(shown(session, ended, c.get("auth").key_id, atEnd), 200);
    },
  );
  return app;
}
