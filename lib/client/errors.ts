/**
 * ToolshedError: what every failed call of the typed client throws, built from the API's error
 * envelope `{ ok: false, tool?, error: { code, message, details }, usage? }` (lib/shared/errors.ts holds
 * the codes and their hints; the message already says what to do next). An answer that is not an
 * envelope at all (a proxy's HTML error page, a cut stream) is UNEXPECTED_RESPONSE, a code only
 * the client makes.
 */
import type { ErrorCode } from "../shared/errors.js";

export type ToolshedErrorCode = ErrorCode | "UNEXPECTED_RESPONSE";

export class ToolshedError extends Error {
  readonly code: ToolshedErrorCode;
  readonly details: Record<string, unknown>;
  /** The HTTP status (202 for NEEDS_INPUT / NEEDS_APPROVAL; 200 when the error came as an SSE result event). */
  readonly status: number;
  /** The tool that failed, for tool calls. */
  readonly tool: string | undefined;
  /** What the call cost (tool calls report it with errors too). */
  readonly usage: unknown;
  constructor(init: { code: ToolshedErrorCode; message: string; details?: Record<string, unknown>; status: number; tool?: string; usage?: unknown }) {
    super(init.message);
    this.name = "ToolshedError";
    this.code = init.code;
    this.details = init.details ?? {};
    this.status = init.status;
    this.tool = init.tool;
    this.usage = init.usage;
  }
}

interface ErrorEnvelope {
  ok: false;
  tool?: string;
  error: { code: string; message: string; details?: Record<string, unknown> };
  usage?: unknown;
}

export function isErrorEnvelope(body: unknown): body is ErrorEnvelope {
  if (typeof body !== "object" || body === null || (body as { ok?: unknown }).ok !== false) return false;
  const e = (body as { error?: unknown }).error as { code?: unknown; message?: unknown } | undefined;
  return typeof e === "object" && e !== null && typeof e.code === "string" && typeof e.message === "string";
}

/** The error an envelope describes, or UNEXPECTED_RESPONSE when `body` is not one. */
export function errorFromBody(body: unknown, status: number, contentType: string | null): ToolshedError {
  if (isErrorEnvelope(body)) {
    return new ToolshedError({
      code: body.error.code as ToolshedErrorCode,
      message: body.error.message,
      details: body.error.details ?? {},
      status,
      ...(body.tool !== undefined ? { tool: body.tool } : {}),
      ...(body.usage !== undefined ? { usage: body.usage } : {}),
    });
  }
  const excerpt = typeof body === "string" ? body.slice(0, 200) : JSON.stringify(body)?.slice(0, 200) ?? "";
  return new ToolshedError({
    code: "UNEXPECTED_RESPONSE",
    message: `The server answered HTTP ${status} (${contentType ?? "no content type"}) without a Toolshed error envelope: check that baseUrl is the Toolshed API root (it serves /openapi.json), then retry. Body starts: ${excerpt}`,
    details: { status, content_type: contentType, excerpt },
    status,
  });
}

/** Reads a failed response's body and turns it into a ToolshedError. */
export async function errorFromResponse(res: Response): Promise<ToolshedError> {
  const text = await res.text().catch(() => "");
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: reported as UNEXPECTED_RESPONSE with an excerpt
  }
  return errorFromBody(body, res.status, res.headers.get("content-type"));
}
