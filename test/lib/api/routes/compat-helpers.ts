/** Calling the provider-native compat routes in tests (workers and node alike: only app.request). */
import type { Tenant } from "../../../helpers.js";

export interface CompatResult {
  status: number;
  /** X-Toolshed-Error-Code, when the item carries a tool error. */
  code: string | null;
  body: any;
}

export async function compat(
  t: Pick<Tenant, "req" | "ws">,
  provider: "anthropic" | "openai",
  tool: string,
  body: unknown,
  opts: { headers?: Record<string, string>; ws?: string; session?: string } = {},
): Promise<CompatResult> {
  const res = await t.req(`/v1/workspaces/${opts.ws ?? t.ws}/compat/${provider}/${tool}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-session-id": opts.session ?? "s1", ...opts.headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, code: res.headers.get("x-toolshed-error-code"), body: await res.json() };
}

/** The text of a tool_result block. */
export const textOf = (r: CompatResult): string => r.body.content.map((c: { text: string }) => c.text).join("");
