/**
 * The generated API description, from the real app in workerd: /openapi.json matches the OAS 3.1
 * JSON Schema and lists every tool; every input schema in /v1/tools is valid JSON Schema 2020-12
 * (ajv) and accepts what zod accepts; /docs is HTML. The full official validator (which reads its
 * schemas from disk) runs in Node: test/lib/api/openapi.node.test.ts.
 */
import oas31 from "@seriousme/openapi-schema-validator/schemas/v3.1/schema.json";
import Ajv2020 from "ajv/dist/2020.js";
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { SCOPES } from "../../../lib/contract/caller.js";
import { testApp } from "../../helpers.js";

const app = testApp();

let doc: any;
let catalog: { tools: any[] };

beforeAll(async () => {
  const d = await app.request("/openapi.json");
  expect(d.status).toBe(200);
  doc = await d.json();
  const c = await app.request("/v1/tools");
  expect(c.status).toBe(200);
  catalog = (await c.json()) as { tools: any[] };
});

describe("/openapi.json", () => {
  it("matches the OpenAPI 3.1 schema", () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    // As @seriousme/openapi-schema-validator sets it up, less format checks (ajv-formats is not ours).
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addFormat("media-range", true);
    const validate = ajv.compile(oas31 as object);
    expect(validate(doc), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true);
    const broken = structuredClone(doc);
    broken.paths["/v1/tools"].get.responses = { 200: { content: {} } }; // a response without description
    expect(validate(broken)).toBe(false);
  });

  it("lists every tool's path, once, with its operationId, request schema and error responses", () => {
    expect(tools.length).toBeGreaterThan(0);
    const ops = new Set<string>();
    for (const tool of tools) {
      const path = doc.paths[`/v1/workspaces/{ws}/tools/${tool.name}`];
      expect(path, tool.name).toBeDefined();
      const op = path.post;
      expect(op.operationId).toBe(`tool_${tool.name}`);
      expect(ops.has(op.operationId)).toBe(false);
      ops.add(op.operationId);
      expect(op.description).toBe((tool.withoutLive ?? tool).description); // testApp has no live sessions (Tool.withoutLive)
      expect(op.requestBody.content["application/json"].schema).toBeDefined();
      expect(op.parameters.some((p: any) => p.name === "ws" && p.in === "path" && p.required)).toBe(true);
      expect(op.parameters.some((p: any) => p.name === "x-session-id" && p.in === "header")).toBe(true);
      for (const s of ["200", "400", "401", "404"]) expect(op.responses[s], `${tool.name} ${s}`).toBeDefined();
      expect(op.security).toEqual([{ Bearer: [] }]);
    }
    const toolPaths = Object.keys(doc.paths).filter((p) => p.startsWith("/v1/workspaces/{ws}/tools/"));
    expect(toolPaths.sort()).toEqual(tools.map((t) => `/v1/workspaces/{ws}/tools/${t.name}`).sort());
  });

  it("lists the tenant, admin, raw-file and catalog routes", () => {
    const expected: [string, string[]][] = [
      ["/v1/workspaces", ["get", "post"]],
      ["/v1/workspaces/{ws}", ["get", "delete"]],
      ["/v1/workspaces/{ws}/files/{path}", ["put", "get", "head", "delete"]],
      ["/v1/workspaces/{ws}/files/", ["get"]],
      ["/v1/admin/tenants", ["post", "get"]],
      ["/v1/admin/tenants/{tenant}", ["get"]],
      ["/v1/admin/tenants/{tenant}/keys", ["post", "get"]],
      ["/v1/admin/tenants/{tenant}/keys/{key_id}", ["delete"]],
      ["/v1/tools", ["get"]],
    ];
    for (const [path, methods] of expected) {
      expect(doc.paths[path], path).toBeDefined();
      for (const m of methods) expect(doc.paths[path][m], `${m} ${path}`).toBeDefined();
    }
    expect(doc.components.securitySchemes.Bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.components.securitySchemes.AdminBearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.components.schemas.Error).toBeDefined();
  });

  it("every $ref points at a component that exists", () => {
    const refs = new Set<string>();
    const walk = (v: unknown) => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === "object") {
        for (const [k, x] of Object.entries(v)) {
          if (k === "$ref" && typeof x === "string") refs.add(x);
          else walk(x);
        }
      }
    };
    walk(doc);
    for (const ref of refs) {
      expect(ref.startsWith("#/components/"), ref).toBe(true);
      const [, , section, name] = ref.split("/");
      expect(doc.components[section!]?.[name!], ref).toBeDefined();
    }
  });
});

describe("/v1/tools", () => {
  it("lists every tool with name, description, category, permission and input schema", () => {
    expect(catalog.tools.map((t) => t.name)).toEqual(tools.map((t) => t.name));
    for (const t of catalog.tools) {
      expect(Object.keys(t).sort()).toEqual(["annotations", "category", "description", "input_schema", "name", "output_schema", "permission", "summary"]);
      expect(t.name).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(["file", "search", "execute", "planning", "web"]).toContain(t.category);
      expect(SCOPES as readonly string[]).toContain(t.permission);
      expect(t.input_schema.type).toBe("object");
    }
  });

  it("each description has a purpose line, defaults as '(default: X)', and closes with 'Returns:'", () => {
    for (const t of catalog.tools) {
      const lines = (t.description as string).trim().split("\n");
      expect(lines[0]!.length, t.name).toBeGreaterThan(10);
      expect(lines.at(-1), t.name).toMatch(/^Returns: \S/);
      const props = Object.keys(t.input_schema.properties ?? {});
      const required = new Set<string>(t.input_schema.required ?? []);
      const optional = props.filter((p) => !required.has(p));
      // Optional arguments with a default say it, in the description the model reads.
      const withDefault = optional.filter((p) => /\(default: /.test(t.input_schema.properties[p].description ?? "") || t.input_schema.properties[p].default !== undefined);
      if (withDefault.length) expect(t.description, t.name).toContain("(default:");
      for (const p of withDefault) expect(t.description, `${t.name}: ${p}`).toContain(p);
      // Every argument is described.
      for (const p of props) expect(t.input_schema.properties[p].description, `${t.name}.${p}`).toBeTruthy();
    }
  });

  it("each input_schema is valid JSON Schema 2020-12 and compiles with ajv", () => {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    for (const t of catalog.tools) {
      const schema = t.input_schema;
      expect(schema.$schema, t.name).toBe("https://json-schema.org/draft/2020-12/schema");
      const valid = ajv.validateSchema(schema);
      expect(ajv.errors ?? [], t.name).toEqual([]);
      expect(valid).toBe(true);
      expect(() => ajv.compile(schema), t.name).not.toThrow();
    }
  });

  it("ajv and zod agree on what the schemas accept", () => {
    const ajv = new Ajv2020({ strict: false });
    for (const tool of tools) {
      const def = catalog.tools.find((t) => t.name === tool.name)!;
      const validate = ajv.compile(def.input_schema);
      const required: string[] = def.input_schema.required ?? [];
      const samples: unknown[] = [{}, { [required[0] ?? "x"]: 42 }, { unknown_argument: 1 }, "string", null, []];
      for (const s of samples) {
        expect(validate(s), `${tool.name} ${JSON.stringify(s)}`).toBe(tool.input.safeParse(s).success);
      }
    }
  });

  it("ajv refuses an invalid schema (so the check above can fail)", () => {
    const ajv = new Ajv2020({ strict: true });
    expect(ajv.validateSchema({ type: "object", properties: { a: { type: "strng" } } })).toBe(false);
  });
});

describe("/docs", () => {
  it("returns an HTML page that loads /openapi.json", async () => {
    const r = await app.request("/docs");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/text\/html/);
    const html = await r.text();
    expect(html).toMatch(/<html/i);
    expect(html).toContain("/openapi.json");
  });
});
