/**
 * The one registry of error codes. Each code has an HTTP status and a default hint
 * telling the agent what to do next. Errors are data: tools throw ToolError, the app
 * turns it into `{ ok: false, tool, error: { code, message, details } }`.
 */
export declare const ERROR_CODES: {
    readonly INVALID_ARGUMENT: {
        readonly status: 400;
        readonly hint: "Fix the arguments as the message says and call again.";
    };
    readonly INVALID_PATH: {
        readonly status: 400;
        readonly hint: "Use a path inside the workspace, e.g. src/index.ts.";
    };
    readonly UNAUTHORIZED: {
        readonly status: 401;
        readonly hint: "Send 'Authorization: Bearer <api key>'.";
    };
    readonly PERMISSION_DENIED: {
        readonly status: 403;
        readonly hint: "This API key lacks the scope this call needs.";
    };
    readonly NOT_FOUND: {
        readonly status: 404;
        readonly hint: "Check the name; use ls or glob to find it.";
    };
    readonly IS_DIRECTORY: {
        readonly status: 400;
        readonly hint: "This is a directory; use ls to list it.";
    };
    readonly NOT_A_DIRECTORY: {
        readonly status: 400;
        readonly hint: "A parent of this path is a file.";
    };
    readonly SYMLINK_REFUSED: {
        readonly status: 400;
        readonly hint: "The path goes through a symlink whose target is outside the workspace or missing; tools never follow such a link. Give the path of a file inside the workspace, or work with the link in bash.";
    };
    readonly NOT_READ: {
        readonly status: 409;
        readonly hint: "Read the file with the read tool first, then retry.";
    };
    readonly FILE_MODIFIED: {
        readonly status: 409;
        readonly hint: "The file changed since you read it; read it again, then retry.";
    };
    readonly ALREADY_EXISTS: {
        readonly status: 409;
        readonly hint: "Pick another name, or pass overwrite: true where allowed.";
    };
    readonly NO_MATCH: {
        readonly status: 422;
        readonly hint: "Read the file again and copy old_string exactly, whitespace included.";
    };
    readonly NOT_UNIQUE: {
        readonly status: 422;
        readonly hint: "Add surrounding lines to old_string to make it unique, or set replace_all: true.";
    };
    readonly NO_CHANGE: {
        readonly status: 422;
        readonly hint: "The content is already as requested; nothing was written.";
    };
    readonly BINARY_FILE: {
        readonly status: 415;
        readonly hint: "This is a binary file; pass encoding: \"base64\" to read its bytes.";
    };
    readonly FILE_TOO_LARGE: {
        readonly status: 413;
        readonly hint: "Read it in pages with offset and limit, or use grep.";
    };
    readonly PAYLOAD_TOO_LARGE: {
        readonly status: 413;
        readonly hint: "Send a smaller body.";
    };
    readonly CONFLICT: {
        readonly status: 409;
        readonly hint: "Another change is in progress; retry.";
    };
    readonly QUOTA_EXCEEDED: {
        readonly status: 413;
        readonly hint: "The command wrote more than one call may add to the workspace; write less, or delete what it does not need in the same command, then retry.";
    };
    readonly TIMEOUT: {
        readonly status: 408;
        readonly hint: "Use a larger timeout, or run_in_background: true for long commands.";
    };
    readonly BLOCKED: {
        readonly status: 403;
        readonly hint: "This command is refused by the workspace's guard rails.";
    };
    readonly NEEDS_CONFIRMATION: {
        readonly status: 409;
        readonly hint: "Ask the user, then call again with confirmed: true.";
    };
    readonly NEEDS_INPUT: {
        readonly status: 202;
        readonly hint: "A question for the user is pending (details.pending_id): the app answers it with POST /v1/workspaces/{ws}/pending/{id}; get the answer with GET .../pending/{id}?wait=30 or by repeating the call with header X-Pending-Id.";
    };
    readonly NEEDS_APPROVAL: {
        readonly status: 202;
        readonly hint: "This call waits for a human's approval (details.pending_id); nothing ran. Get the outcome with GET /v1/workspaces/{ws}/pending/{id}?wait=30 or by repeating the call with header X-Pending-Id.";
    };
    readonly DENIED: {
        readonly status: 403;
        readonly hint: "A human refused this call (their note says why); do not retry it as it was: change the approach or ask the user.";
    };
    readonly EXPIRED: {
        readonly status: 410;
        readonly hint: "The pending call expired unanswered; make the call again to ask anew.";
    };
    readonly UNAVAILABLE: {
        readonly status: 503;
        readonly hint: "The service behind this tool is unavailable; retry later.";
    };
    readonly FETCH_FAILED: {
        readonly status: 502;
        readonly hint: "The remote site answered with an error (its status and an excerpt are in the message); try another URL or source, or retry later.";
    };
    readonly LLM_ASSIST_REQUIRED: {
        readonly status: 501;
        readonly hint: "This tenant has no model endpoint for subagents: run the prompt (details.prompt) with your own agent, or ask an admin to configure PUT /v1/admin/tenants/{tenant}/model.";
    };
    readonly PLUGIN_FAILED: {
        readonly status: 502;
        readonly hint: "The custom tool's plugin misbehaved (details.reason: crashed, invalid_output, wrong_call_id, output_too_large); its owner must fix it. Try another approach meanwhile.";
    };
    readonly TOOL_REPORTED_ERROR: {
        readonly status: 422;
        readonly hint: "The custom tool ran and reported an error (its text is the message): change the arguments as it says, or try another approach.";
    };
    readonly CANCELLED: {
        readonly status: 499;
        readonly hint: "The client went away before the call finished; the call was stopped (a command is killed, its file changes not written back). Call again to run it.";
    };
    readonly RATE_LIMITED: {
        readonly status: 429;
        readonly hint: "Slow down and retry after a moment.";
    };
    readonly INTERNAL: {
        readonly status: 500;
        readonly hint: "An internal error occurred; retry, and report it if it persists.";
    };
};
export type ErrorCode = keyof typeof ERROR_CODES;
export declare class ToolError extends Error {
    readonly code: ErrorCode;
    readonly details: Record<string, unknown>;
    constructor(code: ErrorCode, message: string, details?: Record<string, unknown>);
    get status(): number;
}
export declare const isToolError: (e: unknown) => e is ToolError;
export declare function errorBody(e: ToolError): {
    code: "INVALID_ARGUMENT" | "INVALID_PATH" | "UNAUTHORIZED" | "PERMISSION_DENIED" | "NOT_FOUND" | "IS_DIRECTORY" | "NOT_A_DIRECTORY" | "SYMLINK_REFUSED" | "NOT_READ" | "FILE_MODIFIED" | "ALREADY_EXISTS" | "NO_MATCH" | "NOT_UNIQUE" | "NO_CHANGE" | "BINARY_FILE" | "FILE_TOO_LARGE" | "PAYLOAD_TOO_LARGE" | "CONFLICT" | "QUOTA_EXCEEDED" | "TIMEOUT" | "BLOCKED" | "NEEDS_CONFIRMATION" | "NEEDS_INPUT" | "NEEDS_APPROVAL" | "DENIED" | "EXPIRED" | "UNAVAILABLE" | "FETCH_FAILED" | "LLM_ASSIST_REQUIRED" | "PLUGIN_FAILED" | "TOOL_REPORTED_ERROR" | "CANCELLED" | "RATE_LIMITED" | "INTERNAL";
    message: string;
    details: Record<string, unknown>;
};
