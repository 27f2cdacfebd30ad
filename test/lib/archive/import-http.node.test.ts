/**
 * Imports over real HTTP into `wrangler dev` (the Workers runtime, its local R2 and KV), for what
 * only the runtime's own request bodies show: workerd cannot read a request's body once its response
 * is sent, and an import stops reading at the archive's end (before a tar's second end block and its
 * padding, before a gzip's trailer). The rest of the archive tests run in the workers pool through
 * the app's fetch, where a body stays readable.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setupTenant, startWorker, type WorkerProcess } from "../../support/wrangler-dev.js";
import { concatBytes } from "../../../lib/shared/text.js";
import { gzip, tar, type TarItem } from "./archives.js";

let w: WorkerProcess;
let key: string;
let base: string;

beforeAll(async () => {
  w = await startWorker();
  ({ key, base } = await setupTenant(w, "acme"));
}, 120_000);
afterAll(async () => {
  await w?.stop();
});

/** A tar as GNU tar writes it with a blocking factor of 2,048 (`tar -b 2048`): padded with zeros to whole records of 1 MiB, more than the socket buffers hold. */
function paddedTar(items: TarItem[]): Uint8Array {
  const record = 2048 * 512;
  const t = tar(items);
  return concatBytes([t, new Uint8Array((record - (t.length % record)) % record)]);
}

const post = (body: Uint8Array, idem: string, query = "") =>
  fetch(`${base}/import${query}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/octet-stream", "idempotency-key": idem }, body });

/** The answer a retry gets once the first answer is kept: a 409 "still running" is retried after a pause (a few, at most), anything else returned. */
async function retried(body: Uint8Array, idem: string, query = ""): Promise<Response> {
  for (let i = 0; i < 20; i++) {
    const res = await post(body, idem, query);
    if (res.status !== 409) return res;
    await res.body?.cancel();
    await new Promise((r) => setTimeout(r, 100));
  }
  return post(body, idem, query);
}

describe("Idempotency-Key on an import the archive reader stops short of the body's end", () => {
  for (const format of ["tar", "tar.gz"] as const) {
    it(`${format}: a retry with the same key gets the first answer (replayed, nothing runs again); another body with the key is refused`, async () => {
      const plain = paddedTar([{ name: `${format}/a.txt`, body: "first\n".repeat(4000) }]);
      const body = format === "tar" ? plain : await gzip(plain);
      const idem = `import-${format}`;
      const first = await post(body, idem);
      const text = await first.text();
      expect(first.status).toBe(200);
      const again = await retried(body, idem);
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await again.text()).toBe(text);
      const otherTar = paddedTar([{ name: "other.txt", body: "x" }]);
      const other = await retried(format === "tar" ? otherTar : await gzip(otherTar), idem);
      expect(other.status).toBe(400);
      expect(((await other.json()) as any).error.message).toContain("already used for a different request");
    }, 60_000);
  }

  it("an import refused before its body is read (the prefix is a file): a retry gets the refusal replayed", async () => {
    const file = await fetch(`${base}/files/notes.txt`, { method: "PUT", headers: { authorization: `Bearer ${key}` }, body: "a file\n" });
    expect(file.status).toBeLessThan(300);
    const body = paddedTar([{ name: "a.txt", body: "x" }]);
    const first = await post(body, "import-refused", "?prefix=notes.txt");
    const text = await first.text();
    expect(first.status).toBe(400);
    expect(text).toContain("NOT_A_DIRECTORY");
    const again = await retried(body, "import-refused", "?prefix=notes.txt");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(text);
  }, 60_000);
});
