/**
 * What a route declares about who may call it (RoutePolicy), the symbol its guard carries it under
 * (so the policy can be read back from the app's routes: served-routes.ts), and how its Hono path is
 * named in the OpenAPI document. The guard that enforces a policy is access.ts.
 */
import type { Scope } from "../../contract/caller.js";

export type Access =
  | { auth: "public" }
  | { auth: "admin" }
  | {
      auth: "tenant"; scope: Scope | "any"; workspace?: boolean; runsTools?: true;
      /**
       * A route whose path names no workspace covers the whole tenant (its secrets, custom tools, audit
       * log, usage export): the guard refuses it to a key limited to some workspaces (assertTenantWide).
       * `keyBounded`: this route bounds what it shows or changes by the key's own bounds itself (the
       * workspaces it lists or creates, the keys it could have made, one workspace's usage).
       */
      keyBounded?: true;
    }
  | { auth: "sync" };

export interface RoutePolicy {
  access: Access;
  /** Why the route is left out of the OpenAPI document; absent for documented routes. */
  undocumented?: string;
  /** What the path's trailing `*` holds, named `{wildcard}` in the document and the route walks (default: `path`). */
  wildcard?: string;
  /** Methods (upper case) the route takes only to refuse them: no 404 or 405 of the app says the path takes them (served-routes.ts methodsAt). */
  refuses?: string[];
}

/** The guard carries its route's policy, so the policy can be read back from the app's routes. */
export const POLICY = Symbol.for("toolshed.route-policy");
export const accessLabel = (a: Access): string => (a.auth === "tenant" ? `tenant:${a.scope}` : a.auth);

/** `/v1/workspaces/:ws/files/*` → `/v1/workspaces/{ws}/files/{path}`; `wildcard` names what the trailing `*` holds (RoutePolicy.wildcard). */
export function openApiPathOf(honoPath: string, wildcard = "path"): string {
  return honoPath.replace(/:(\w+)(\{[^}]*\})?/g, "{$1}").replace(/\/\*$/, `/{${wildcard}}`);
}

