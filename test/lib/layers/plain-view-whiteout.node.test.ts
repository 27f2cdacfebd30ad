/**
 * A request that opened its workspace as plain, when a seal and a delete land meanwhile, finds a
 * whiteout at a file's key: the plain view answers a deleted file, never the whiteout's body (the
 * workspace's mark, docs/whiteouts.md). A tenant file of the v1 whiteout's bytes stays a file.
 */
import { describe, expect, it } from "vitest";
import { plainDriver } from "../../../lib/layers/plain-driver.js";
import { newWhiteoutMark, V1_WHITEOUT_BODY, Whiteouts } from "../../../lib/layers/whiteout.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";

const FP = "t/acme/w/main/f/";

describe("plain view over a whiteout that landed after its record was read", () => {
  it("HEAD and GET answer missing; a file of the v1 bytes is a file", async () => {
    const storage = memoryDriver({ s3Like: true });
    const wo = Whiteouts.of(storage, { whiteout: newWhiteoutMark() });
    await wo.put(storage, `${FP}gone.txt`, { ifNoneMatch: "*" });
    await storage.put(`${FP}v1.bin`, V1_WHITEOUT_BODY);
    const view = plainDriver(storage, { filesPrefix: FP, currentLayer: async () => null });
    expect(await view.head(`${FP}gone.txt`)).toBeNull();
    expect(await view.get(`${FP}gone.txt`)).toBeNull();
    expect((await view.head(`${FP}v1.bin`))?.size).toBe(22);
    const got = await view.get(`${FP}v1.bin`);
    expect(await new Response(got!.body).text()).toBe(V1_WHITEOUT_BODY);
  });
});
