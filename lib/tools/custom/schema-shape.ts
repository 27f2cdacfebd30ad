
/**
 * The shape of a tenant's input_schema where zod's JSON-Schema import lets it pass but a model
 * provider would refuse the whole tool list it is sent in (Anthropic, OpenAI: 400 on one bad tool):
 * `properties` not an object of schemas, `required` not a list of names, a subschema that is neither
 * an object nor a boolean. Checked when a tool is saved; the error names the place.
 */
import { isObject } from "../../shared/is-object.js";

/** Keywords whose value is one subschema, a map of name → subschema, or a list of subschemas. */
const ONE = ["items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems"];
const MAP = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
const LIST = ["anyOf", "oneOf", "allOf", "prefixItems"];

/** Where `schema` has a shape providers refuse, in words (e.g. "input_schema.properties must be an object of schemas"); null when none. */
export function schemaShapeError(schema: unknown, at = "input_schema"): string | null {
  if (typeof schema === "boolean") return null;
  if (!isObject(schema)) return `${at} must be a schema (an object, or true/false)`;
  if ("required" in schema && !(Array.isArray(schema.required) && schema.required.every((r) => typeof r === "string"))) return `${at}.required must be a list of property names`;
  for (const k of MAP) {
    if (!(k in schema)) continue;
    const m = schema[k];
    if (!isObject(m)) return `${at}.${k} must be an object of schemas (name → schema)`;
    for (const [name, sub] of Object.entries(m)) {
      const e = schemaShapeError(sub, `${at}.${k}.${name}`);
      if (e) return e;
    }
  }
  for (const k of ONE) {
    if (!(k in schema)) continue;
    // items as a list: the older tuple form, a list of schemas.
    const subs = k === "items" && Array.isArray(schema[k]) ? (schema[k] as unknown[]) : [schema[k]];
    for (const [i, sub] of subs.entries()) {
      const e = schemaShapeError(sub, subs.length > 1 || Array.isArray(schema[k]) ? `${at}.${k}[${i}]` : `${at}.${k}`);
      if (e) return e;
    }
  }
  for (const k of LIST) {
    if (!(k in schema)) continue;
    const l = schema[k];
    if (!Array.isArray(l)) return `${at}.${k} must be a list of schemas`;
    for (const [i, sub] of l.entries()) {
      const e = schemaShapeError(sub, `${at}.${k}[${i}]`);
      if (e) return e;
    }
  }
  return null;
}
