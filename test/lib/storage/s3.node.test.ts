/**
 * The S3 driver against a real S3 server (s3rver, on 127.0.0.1, ephemeral port, temp directory),
 * plus the error mapping for responses s3rver never produces (412 / 409), through a fake HTTP handler.
 *
 * s3rver 3.7 ignores If-Match / If-None-Match on PUT (it stores the object anyway), so the conformance
 * suite runs with `conditionsNotEnforced` and checks through a request spy that the driver sends them.
 * s3rver runs in a child process: its continuation tokens use DES, which needs Node's
 * --openssl-legacy-provider (and it keeps the server's buffers out of this process's memory numbers).
 */
import { Readable } from "node:stream";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3Driver } from "../../../lib/storage/drivers/s3.js";
import { ConditionFailedError, unquoteEtag, type StorageDriver } from "../../../lib/storage/types.js";
import { startS3Server, type S3Server } from "../../support/s3rver.js";
import { describeStorageConformance, type SentConditions } from "./conformance.js";

const BUCKET = "toolshed-test";
let server: S3Server;

/** What the driver put on the wire, per key, recorded by a middleware after serialization. */
interface SentPut { conditions: SentConditions; contentLength?: string; bodyIsStream: boolean }
const sentPuts = new Map<string, SentPut>();
/** The If-Match (unquoted) of the last DeleteObject per key; null when it had none. */
const sentDeletes = new Map<string, string | null>();

function makeClient(extra: Partial<ConstructorParameters<typeof S3Client>[0]> = {}): S3Client {
  return server.client(extra);
}

function spyOnPuts(client: S3Client): S3Client {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const key = (args.input as { Key?: string }).Key;
      if (context.commandName === "PutObjectCommand" && key !== undefined) {
        const req = args.request as { headers: Record<string, string>; body: unknown };
        const h = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v]));
        const conditions: SentConditions = {};
        if (h["if-match"] !== undefined) conditions.ifMatch = unquoteEtag(h["if-match"]);
        if (h["if-none-match"] !== undefined) conditions.ifNoneMatch = h["if-none-match"];
        sentPuts.set(key, { conditions, contentLength: h["content-length"], bodyIsStream: req.body instanceof Readable });
      }
      if (context.commandName === "DeleteObjectCommand" && key !== undefined) {
        const req = args.request as { headers: Record<string, string> };
        const ifMatch = Object.entries(req.headers).find(([k]) => k.toLowerCase() === "if-match")?.[1];
        sentDeletes.set(key, ifMatch === undefined ? null : unquoteEtag(ifMatch));
      }
      return next(args);
    },
    { step: "finalizeRequest", name: "toolshedPutSpy" },
  );
  return client;
}

beforeAll(async () => {
  server = await startS3Server();
  await server.createBucket(BUCKET);
});

afterAll(async () => {
  await server?.stop();
});

describeStorageConformance("s3 (s3rver)", () => s3Driver({ client: spyOnPuts(makeClient()), bucket: BUCKET }), {
  conditionsNotEnforced: { sent: (key) => sentPuts.get(key)?.conditions, sentDelete: (key) => sentDeletes.get(key) },
  prefixesOutsideLimit: true,
});

describe("s3 driver against s3rver", () => {
  let driver: StorageDriver;
  beforeAll(() => {
    driver = s3Driver({ client: spyOnPuts(makeClient()), bucket: BUCKET });
  });
  const fresh = () => `s3/${crypto.randomUUID()}/`;

  it("s3rver does not enforce conditional writes (why the conformance suite runs with conditionsNotEnforced)", async () => {
    const key = `${fresh()}k`;
    await driver.put(key, "one");
    await driver.put(key, "two", { ifMatch: "00000000000000000000000000000000" });
    await driver.put(key, "three", { ifNoneMatch: "*" });
    expect(await new Response((await driver.get(key))!.body).text()).toBe("three");
  });

  it("streams a ReadableStream body with a length: a Node stream with Content-Length goes on the wire", async () => {
    const key = `${fresh()}stream`;
    const body = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new Uint8Array(5000)), c.close()) });
    await driver.put(key, body, { length: 5000 });
    expect(sentPuts.get(key)).toMatchObject({ bodyIsStream: true, contentLength: "5000" });
  });

  it("does not buffer a 96 MiB stream body (arrayBuffers stay far below the body size)", async () => {
    const key = `${fresh()}huge`;
    const size = 96 * 1024 * 1024;
    const chunk = new Uint8Array(1024 * 1024).fill(7);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= size) return c.close();
        sent += chunk.length;
        c.enqueue(chunk.slice());
      },
    });
    const base = process.memoryUsage().arrayBuffers;
    let peak = base;
    const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 5);
    try {
      const put = await driver.put(key, body, { length: size });
      expect(put.size).toBe(size);
    } finally {
      clearInterval(timer);
    }
    expect(peak - base).toBeLessThan(48 * 1024 * 1024);
    expect((await driver.head(key))!.size).toBe(size);
    await driver.delete(key);
  }, 60_000);
});

/** A client whose HTTP handler answers every request with one canned response, and records the requests. */
function fakeServer(status: number, xml: string, headers: Record<string, string> = {}) {
  const requests: { method: string; path: string; query: Record<string, unknown> }[] = [];
  const client = new S3Client({
    endpoint: "http://fake.invalid",
    region: "auto",
    forcePathStyle: true,
    maxAttempts: 1,
    credentials: { accessKeyId: "x", secretAccessKey: "y" },
    requestChecksumCalculation: "WHEN_REQUIRED",
    requestHandler: {
      async handle(req: { method: string; path: string; query: Record<string, unknown> }) {
        requests.push({ method: req.method, path: req.path, query: req.query });
        const body = Readable.from(xml ? [Buffer.from(xml)] : []);
        return { response: { statusCode: status, reason: "", headers: { "content-type": "application/xml", ...headers }, body } };
      },
    } as never,
  });
  return { driver: s3Driver({ client, bucket: BUCKET }), requests };
}
const s3Error = (code: string, message = code) => `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;

describe("s3 driver error mapping (fake responses s3rver never sends)", () => {
  it("412 PreconditionFailed on an ifMatch put → ConditionFailedError(ifMatch)", async () => {
    const { driver } = fakeServer(412, s3Error("PreconditionFailed"));
    const err = await driver.put("a/b", "x", { ifMatch: "abc" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConditionFailedError);
    expect(err).toMatchObject({ key: "a/b", condition: "ifMatch" });
  });

  it("412 PreconditionFailed on an ifNoneMatch put → ConditionFailedError(ifNoneMatch)", async () => {
    const { driver } = fakeServer(412, s3Error("PreconditionFailed"));
    await expect(driver.put("a/b", "x", { ifNoneMatch: "*" })).rejects.toMatchObject({ name: "ConditionFailedError", condition: "ifNoneMatch" });
  });

  it("409 ConditionalRequestConflict → ConditionFailedError", async () => {
    const { driver } = fakeServer(409, s3Error("ConditionalRequestConflict"));
    await expect(driver.put("k", "x", { ifMatch: "abc" })).rejects.toBeInstanceOf(ConditionFailedError);
    await expect(driver.put("k", "x", { ifNoneMatch: "*" })).rejects.toMatchObject({ condition: "ifNoneMatch" });
  });

  it("404 NoSuchKey on an ifMatch put (AWS: the object is gone) → ConditionFailedError(ifMatch)", async () => {
    const { driver } = fakeServer(404, s3Error("NoSuchKey"));
    await expect(driver.put("k", "x", { ifMatch: "abc" })).rejects.toMatchObject({ name: "ConditionFailedError", condition: "ifMatch" });
  });

  it("a 412 / 409 on an unconditional put is not turned into ConditionFailedError", async () => {
    for (const [status, code] of [[412, "PreconditionFailed"], [409, "OperationAborted"]] as const) {
      const { driver } = fakeServer(status, s3Error(code));
      const err = await driver.put("k", "x").catch((e: unknown) => e);
      expect(err).not.toBeInstanceOf(ConditionFailedError);
      expect(err).toMatchObject({ name: code });
    }
  });

  it("other errors on a conditional put pass through", async () => {
    const { driver } = fakeServer(403, s3Error("AccessDenied"));
    await expect(driver.put("k", "x", { ifMatch: "abc" })).rejects.toMatchObject({ name: "AccessDenied" });
  });

  it("412 / 409 / 404 on a conditional delete → ConditionFailedError naming every refused key; plain keys still go", async () => {
    for (const [status, code] of [[412, "PreconditionFailed"], [409, "ConditionalRequestConflict"], [404, "NoSuchKey"]] as const) {
      const { driver, requests } = fakeServer(status, s3Error(code));
      const err = await driver.delete([{ key: "a", ifMatch: "e1" }, { key: "b", ifMatch: "e2" }]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConditionFailedError);
      expect(err).toMatchObject({ condition: "ifMatch", key: "a", keys: ["a", "b"] });
      expect(requests.map((r) => [r.method, r.path])).toEqual([["DELETE", `/${BUCKET}/a`], ["DELETE", `/${BUCKET}/b`]]);
    }
    const { driver, requests } = fakeServer(204, "");
    await driver.delete([{ key: "a", ifMatch: "e1" }, "p"]);
    expect(requests.map((r) => r.method)).toEqual(["DELETE", "DELETE"]);
  });

  it("other errors on a conditional delete pass through", async () => {
    const { driver } = fakeServer(403, s3Error("AccessDenied"));
    await expect(driver.delete([{ key: "a", ifMatch: "e" }])).rejects.toMatchObject({ name: "AccessDenied" });
  });

  it("404 on head and get → null", async () => {
    expect(await fakeServer(404, "").driver.head("k")).toBeNull();
    expect(await fakeServer(404, s3Error("NoSuchKey")).driver.get("k")).toBeNull();
  });

  it("falls back to one DeleteObject per key when DeleteObjects is not implemented", async () => {
    const { driver, requests } = fakeServer(501, s3Error("NotImplemented"));
    // Every request fails with 501 here, so the fallback's DeleteObject fails too: the point is that it was tried.
    await expect(driver.delete(["a", "b"])).rejects.toMatchObject({ name: "NotImplemented" });
    expect(requests.map((r) => [r.method, "delete" in r.query])).toEqual([["POST", true], ["DELETE", false], ["DELETE", false]]);
  });

  it("cuts the asked bytes out when the server ignores the Range header (200 with the whole object)", async () => {
    const { driver } = fakeServer(200, "0123456789", { "content-type": "text/plain", "content-length": "10", etag: '"e"' });
    const got = await driver.get("k", { range: { offset: 3, length: 4 } });
    expect(got).toMatchObject({ size: 10, etag: "e", range: { offset: 3, length: 4 } });
    expect(await new Response(got!.body).text()).toBe("3456");
  });
});

describe("raw s3rver behaviour the driver relies on", () => {
  it("returns quoted ETags that the driver unquotes", async () => {
    const r = await makeClient().send(new PutObjectCommand({ Bucket: BUCKET, Key: `${crypto.randomUUID()}`, Body: "x" }));
    expect(r.ETag).toMatch(/^".+"$/);
  });
});
