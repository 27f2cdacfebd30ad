/** Turning the container function's answer back into a result or a ToolError. Pure. */
import { ERROR_CODES, ToolError, type ErrorCode } from "../shared/errors.js";
import type { ExecResponse } from "../sync/types.js";

export function unwrapExecResponse<T>(res: ExecResponse): T {
  if (res && res.ok === true) return res.result as T;
  if (res && res.ok === false && res.error) {
    const code = (res.error.code in ERROR_CODES ? res.error.code : "INTERNAL") as ErrorCode;
    throw new ToolError(code, res.error.message, res.error.details ?? {});
  }
  throw new ToolError("INTERNAL", "The command runner answered with something that is not a result.");
}
