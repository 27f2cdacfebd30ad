/** Test data from JSON Schemas (the tools' inputs, request bodies of the OpenAPI document). */

/** A value that satisfies a JSON Schema (the subset zod emits), guessing from property names. */
export function sample(schema: any, name = ""): unknown {
  if (!schema || typeof schema !== "object") return "x";
  if ("const" in schema) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  for (const k of ["anyOf", "oneOf"]) if (Array.isArray(schema[k])) return sample(schema[k][0], name);
  if (Array.isArray(schema.allOf)) return sample(schema.allOf[0], name);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "string":
      if (/path|file|from|to|dir/i.test(name)) return "secret.txt";
      if (/pattern|glob|regex|query/i.test(name)) return "*";
      if (/command|cmd|script|code/i.test(name)) return "ls";
      // Refused (INVALID_ARGUMENT: not http/https) before any lookup or connection: a sampled call never leaves the machine.
      if (/url/i.test(name)) return "ftp://example.invalid/";
      return "x".repeat(Math.max(1, schema.minLength ?? 1));
    case "integer":
    case "number":
      return Math.max(schema.minimum ?? 1, schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
    case "boolean":
      return false;
    case "array":
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => sample(schema.items, name));
    case "null":
      return null;
    default: {
      const out: Record<string, unknown> = {};
      for (const k of schema.required ?? []) out[k] = sample(schema.properties?.[k], k);
      return out;
    }
  }
}
