/**
 * A plausible request for one route the app serves, built from its OpenAPI entry (a sampled JSON
 * body) or a plain one for undocumented routes. Shared by the route walks that must cover every
 * route without a hand-kept list: access.test.ts (scopes) and isolation.test.ts (another tenant).
 */
import { docPathOf, type ServedRoute } from "../../lib/api/routes/served-routes.js";
import { sample } from "./json-sample.js";

export interface RouteRequest {
  method: string;
  url: string;
  body?: BodyInit;
  headers: Record<string, string>;
}

/** `doc`: the app's /openapi.json; `params`: values for path parameters (others are "probe"). */
export function routeRequest(doc: any, route: ServedRoute, params: Record<string, string>): RouteRequest {
  const deref = (s: any): any => (s?.$ref ? deref(doc.components.schemas[s.$ref.split("/").pop()]) : s);
  const method = route.method === "ALL" ? "POST" : route.method;
  const url = docPathOf(route).replace(/\{(\w+)\}/g, (_, p: string) => params[p] ?? "probe");
  const op = doc.paths[docPathOf(route)]?.[method.toLowerCase()];
  const schema = deref(op?.requestBody?.content?.["application/json"]?.schema);
  // A sampled path of its own per route: a file an earlier route of the walk made cannot turn a create into NOT_READ.
  if (schema) return { method, url, body: JSON.stringify(sample(schema)).replaceAll('"secret.txt"', `"secret-${route.path.replace(/\W+/g, "-")}.txt"`), headers: { "content-type": "application/json" } };
  if (method === "PUT") return { method, url, body: "probe", headers: { "content-length": "5" } };
  if (method === "POST") return { method, url, body: "{}", headers: { "content-type": "application/json" } };
  return { method, url, headers: {} };
}
