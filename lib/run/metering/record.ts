/**
 * One call's usage record: who (tenant, key), where (workspace), what (a tool, or a non-tool
 * route), how it ended and what it cost. No arguments, paths or output. Made by the tool meters
 * (lib/api/routes/tools.ts, lib/run/run-tool.ts) and the route meter (lib/api/routes/route-usage.ts);
 * logged (usage.ts) and stored (store.ts).
 */
export interface UsageRecord {
  tenant: string;
  workspace: string;
  /** The API key's id (absent only in records made before #28). */
  key?: string;
  /** The tool called; absent on a route's record. */
  tool?: string;
  /** A non-tool mutating route ("PUT files", "import": lib/api/routes/route-usage.ts); absent on a tool's record. */
  route?: string;
  ok: boolean;
  code?: string;
  ms: number;
  bytes_read: number;
  bytes_written: number;
  /** bash, run_code: the sandbox's wall time as the run reported it (RunResult.duration_ms). */
  sandbox_ms?: number;
  /** A live sandbox's record (route "live sandbox"): its processes' CPU time, when its runner reported it. */
  cpu_ms?: number;
  /**
   * Bytes the call's own tool received from (in) and sent to (out) hosts outside Toolshed: web_fetch with its
   * redirects, web_search, a webhook, the model endpoint of task (lib/tools/web/net-bytes.ts counts them, the
   * only place in the API), bash and run_code with network (their sandbox's egress proxy: RunResult.net_bytes_in).
   * Both present when the call reached the network, both absent when it did not.
   */
  net_bytes_in?: number;
  net_bytes_out?: number;
}
