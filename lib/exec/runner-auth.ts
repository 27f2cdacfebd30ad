/**
 * Signed invocations of the container function (docs/runner-security.md). The API signs every
 * event it hands the runner with TOOLSHED_RUNNER_SECRET, a secret of its own: never the sync
 * secret, so a runner can never mint a sync token. The handler (infra/container/handler.ts)
 * runs only an event whose signature holds and whose expiry has not passed, and reads the
 * tenant, the workspace and the sync endpoint only from that verified event.
 *
 *   event on the wire = { ...ExecEvent, auth: { exp, sig } }
 *   sig = base64url(HMAC-SHA256(secret, "toolshed-runner-invocation.v1\n" + exp + "\n" + canonical(ExecEvent)))
 *
 * canonical() is JSON with every object's keys sorted: the same text on both ends whatever
 * order a JSON parser keeps, so the whole event, every field, is covered. WebCrypto only:
 * Workers and Node.
 */
import { ToolError } from "../shared/errors.js";
import { safeEqual } from "../shared/hash.js";
import { RUN_MARGIN_MS } from "../sync/run-records.js";
import { sign } from "../sync/token.js";
import type { ExecEvent } from "./types.js";

/** The variable that holds the secret, on the API and on the runner alike. */
export const RUNNER_SECRET_VAR = "TOOLSHED_RUNNER_SECRET";

export interface InvocationAuth {
  /** Expiry, ms since the epoch. */
  exp: number;
  sig: string;
}

export type SignedEvent = ExecEvent & { auth: InvocationAuth };

const MIN_SECRET = 16;

/** JSON of `value` with the keys of every object sorted (arrays keep their order). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (!v || typeof v !== "object" || Array.isArray(v)) return v;
    return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

const signedText = (exp: number, event: ExecEvent) => `toolshed-runner-invocation.v1\n${exp}\n${canonicalJson(event)}`;

/** How long a signed event may wait before it starts: as long as the run's sync token lives (tool-support.ts). */
export function invocationTtlMs(event: ExecEvent): number {
  return (Number.isFinite(event.timeout_ms) ? event.timeout_ms : 0) + RUN_MARGIN_MS;
}

function checkSecret(secret: string | undefined, side: "API" | "command runner"): string {
  if (!secret) throw new ToolError("UNAVAILABLE", `The ${side} has no ${RUNNER_SECRET_VAR}: set it to the same random value (at least ${MIN_SECRET} characters) on the API and on the command runner. Until then, commands do not run.`, { reason: "runner_secret_missing" });
  if (secret.length < MIN_SECRET) throw new ToolError("UNAVAILABLE", `${RUNNER_SECRET_VAR} of the ${side} is shorter than ${MIN_SECRET} characters; set a longer random value on the API and the runner.`, { reason: "runner_secret_missing" });
  return secret;
}

/** The event as the runner takes it: every field signed, with an expiry. */
export async function signEvent(secret: string | undefined, event: ExecEvent, now = Date.now()): Promise<SignedEvent> {
  const key = checkSecret(secret, "API");
  const { auth: _dropped, ...plain } = event as SignedEvent;
  const exp = now + invocationTtlMs(plain);
  return { ...plain, auth: { exp, sig: await sign(key, signedText(exp, plain), undefined) } };
}

/**
 * The event inside a signed invocation, or a ToolError (UNAVAILABLE, details.reason says why)
 * for an invocation that is unsigned, altered in any field, expired, or for a runner without
 * its secret. The returned object holds only what the signature covers.
 */
export async function verifyEvent(secret: string | undefined, received: unknown, now = Date.now()): Promise<ExecEvent> {
  const key = checkSecret(secret, "command runner");
  const refuse = (reason: string, message: string) => new ToolError("UNAVAILABLE", message, { reason });
  if (!received || typeof received !== "object" || Array.isArray(received)) throw new ToolError("INVALID_ARGUMENT", "The event must be a JSON object.");
  const { auth, ...event } = received as Partial<SignedEvent>;
  if (!auth || typeof auth !== "object" || typeof auth.sig !== "string" || typeof auth.exp !== "number" || !Number.isFinite(auth.exp))
    throw refuse("invocation_unsigned", `The command runner refused an unsigned invocation: only the Toolshed API, which signs each one with ${RUNNER_SECRET_VAR}, may invoke it.`);
  if (!safeEqual(await sign(key, signedText(auth.exp, event as ExecEvent), undefined), auth.sig))
    throw refuse("invocation_bad_signature", `The command runner refused an invocation whose signature does not match its fields: it was altered, or the API and the runner hold different values of ${RUNNER_SECRET_VAR}.`);
  if (auth.exp <= now) throw refuse("invocation_expired", `The command runner refused an invocation that expired at ${new Date(auth.exp).toISOString()} before it arrived; make the call again.`);
  return event as ExecEvent;
}
