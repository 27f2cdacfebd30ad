/**
 * The one registry of error codes. Each code has an HTTP status and a default hint
 * telling the agent what to do next. Errors are data: tools throw ToolError, the app
 * turns it into `{ ok: false, tool, error: { code, message, details } }`.
 */
export const ERROR_CODES = {
  INVALID_ARGUMENT: { status: 400, hint: "Fix the arguments as the message says and call again." },
  INVALID_PATH: { status: 400, hint: "Use a path inside the workspace, e.g. src/index.ts." },
  UNAUTHORIZED: { status: 401, hint: "Send 'Authorization: Bearer <api key>'." },
  PERMISSION_DENIED: { status: 403, hint: "This API key lacks the scope this call needs." },
  NOT_FOUND: { status: 404, hint: "Check the name; use ls or glob to find it." },
  METHOD_NOT_ALLOWED: { status: 405, hint: "Call the route with a method it takes (details.allow, the Allow header); GET /openapi.json lists every route." },
  IS_DIRECTORY: { status: 400, hint: "This is a directory; use ls to list it." },
  NOT_A_DIRECTORY: { status: 400, hint: "A parent of this path is a file." },
  SYMLINK_REFUSED: { status: 400, hint: "The path goes through a symlink whose target is outside the workspace or missing; tools never follow such a link. Give the path of a file inside the workspace, or work with the link in bash." },
  NOT_READ: { status: 409, hint: "Read the file with the read tool first, then retry." },
  FILE_MODIFIED: { status: 409, hint: "The file changed since you read it; read it again, then retry." },
  ALREADY_EXISTS: { status: 409, hint: "Pick another name, or pass overwrite: true where allowed." },
  NO_MATCH: { status: 422, hint: "Read the file again and copy old_string exactly, whitespace included." },
  NOT_UNIQUE: { status: 422, hint: "Add surrounding lines to old_string to make it unique, or set replace_all: true." },
  NO_CHANGE: { status: 422, hint: "The content is already as requested; nothing was written." },
  BINARY_FILE: { status: 415, hint: "This is a binary file; pass encoding: \"base64\" to read its bytes." },
  FILE_TOO_LARGE: { status: 413, hint: "Read it in pages with offset and limit, or use grep." },
  PAYLOAD_TOO_LARGE: { status: 413, hint: "Send a smaller body." },
  CONFLICT: { status: 409, hint: "Another change is in progress; retry." },
  QUOTA_EXCEEDED: { status: 413, hint: "A quota is used up (details name the quota, the usage and the limit) and nothing was written: delete what is not needed (a command: write less, or delete scratch data in the same command), or ask the operator to raise the tenant's limits, then retry." },
  TIMEOUT: { status: 408, hint: "Use a larger timeout, or run_in_background: true for long commands." },
  BLOCKED: { status: 403, hint: "This command is refused by the workspace's guard rails." },
  NEEDS_INPUT: { status: 202, hint: "A question for the user is pending (details.pending_id): the app answers it with POST /v1/workspaces/{ws}/pending/{id}; the agent gets the answer with the pending_result tool {pending_id} (an app: GET .../pending/{id}?wait=30)." },
  NEEDS_APPROVAL: { status: 202, hint: "This call waits for a human's approval (details.pending_id); nothing ran. The agent gets the outcome with the pending_result tool {pending_id} (an app: GET /v1/workspaces/{ws}/pending/{id}?wait=30)." },
  DENIED: { status: 403, hint: "A human refused this call (their note says why); do not retry it as it was: change the approach or ask the user." },
  EXPIRED: { status: 410, hint: "The pending call expired unanswered; make the call again to ask anew." },
  UNAVAILABLE: { status: 503, hint: "The service behind this tool is unavailable; retry later." },
  FETCH_FAILED: { status: 502, hint: "The remote site answered with an error (its status and an excerpt are in the message); try another URL or source, or retry later." },
  LLM_ASSIST_REQUIRED: { status: 501, hint: "This tenant has no model endpoint for subagents: run the prompt (details.prompt) with your own agent, or ask an admin to configure PUT /v1/admin/tenants/{tenant}/model." },
  PLUGIN_FAILED: { status: 502, hint: "The custom tool's plugin misbehaved (details.reason: crashed, invalid_output, wrong_call_id, output_too_large); its owner must fix it. Try another approach meanwhile." },
  TOOL_REPORTED_ERROR: { status: 422, hint: "The custom tool ran and reported an error (its text is the message): change the arguments as it says, or try another approach." },
  CANCELLED: { status: 499, hint: "The client went away before the call finished; the call was stopped (a command is killed, its file changes not written back). Call again to run it." },
  BUSY: { status: 409, hint: "This session's live sandbox is running another command (one at a time per session): retry after Retry-After seconds, or use another session (X-Session-Id) for parallel work." },
  RATE_LIMITED: { status: 429, hint: "Slow down and retry after a moment." },
  INTERNAL: { status: 500, hint: "An internal error occurred; retry, and report it if it persists." },
} as const satisfies Record<string, { status: number; hint: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class ToolError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "ToolError";
    this.code = code;
    this.details = details;
  }
  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export const isToolError = (e: unknown): e is ToolError => e instanceof ToolError;

export function errorBody(e: ToolError) {
  return { code: e.code, message: e.message, details: e.details };
}
