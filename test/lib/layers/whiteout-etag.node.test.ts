/**
 * A workspace's whiteouts are told apart in a listing by the MD5 of its mark (docs/whiteouts.md).
 * That MD5 is made only when an object of the mark's exact size is looked at: a workspace is opened
 * on every live command's manifest (lib/sync/server.ts), and an upper layer that holds no object of
 * that size (most: an import's, a no-change command's) needs none (docs/benchmarks/investigations-live.md,
 * 2026-12-02 livepath). What a listing says is whiteout or file is unchanged.
 */
import { describe, expect, it, vi } from "vitest";
import * as md5 from "../../../lib/storage/md5.js";
import { newWhiteoutMark, Whiteouts, WHITEOUT_SIZE } from "../../../lib/layers/whiteout.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { ObjectInfo } from "../../../lib/storage/types.js";

vi.mock("../../../lib/storage/md5.js", async (real) => {
  const m = await real<typeof md5>();
  return { ...m, md5Hex: vi.fn(m.md5Hex) };
});
const md5Calls = () => vi.mocked(md5.md5Hex).mock.calls.length;

const FP = "t/acme/w/main/f/";
const listed = (size: number, etag = "0".repeat(32)): ObjectInfo => ({ key: `${FP}f${size}.txt`, size, etag, modified: new Date(0) });

describe("the whiteout's MD5, made only when an object of its size is looked at", () => {
  it("opening a workspace and classifying a listing of other sizes makes no MD5", async () => {
    vi.mocked(md5.md5Hex).mockClear();
    const storage = memoryDriver({ s3Like: true });
    const wo = Whiteouts.of({ contentEtags: true }, { whiteout: newWhiteoutMark() });
    const objects = Array.from({ length: 500 }, (_, i) => listed(i === WHITEOUT_SIZE ? 0 : i));
    expect(await wo.resolve(storage, objects)).toBe(objects); // nothing to HEAD
    expect(objects.filter((o) => wo.is(o))).toEqual([]);
    expect(md5Calls()).toBe(0);
  });

  it("an object of the mark's size and MD5 is a whiteout, a tenant file of that size is not; the MD5 made once", async () => {
    vi.mocked(md5.md5Hex).mockClear();
    const storage = memoryDriver({ s3Like: true });
    const mark = newWhiteoutMark();
    const wo = Whiteouts.of({ contentEtags: true }, { whiteout: mark });
    const body = new TextEncoder().encode(`\u0000toolshed:whiteout:v2:${mark}`);
    expect(body.length).toBe(WHITEOUT_SIZE);
    const real = (await vi.importActual<typeof md5>("../../../lib/storage/md5.js")).md5Hex(body);
    const white = listed(WHITEOUT_SIZE, real);
    const file = { ...listed(WHITEOUT_SIZE, "1".repeat(32)), key: `${FP}tenant.txt` };
    expect(wo.is(white)).toBe(true);
    expect(wo.is(file)).toBe(false);
    // Listed without a content type on storage whose etags are MD5s: both classified from the listing alone (no HEAD).
    expect(await wo.resolve(storage, [white, file])).toEqual([white, file]);
    expect(md5Calls()).toBe(1);
  });

  it("a record without a mark has no whiteout of its own and makes no MD5", () => {
    vi.mocked(md5.md5Hex).mockClear();
    const wo = Whiteouts.of({ contentEtags: true }, {});
    expect(wo.body).toBeNull();
    expect(wo.is(listed(WHITEOUT_SIZE))).toBe(false);
    expect(md5Calls()).toBe(0);
  });
});
