"use strict";
/**
 * The child process of test/support/s3rver.ts: s3rver on 127.0.0.1 (its stock FilesystemStore,
 * unpatched in node_modules), with the store's object writes made atomic as S3's and R2's are.
 *
 * s3rver 3.7's putObject writes the body straight onto the object's file, answers once its hashing
 * stream has seen the last byte (the file's write stream may still hold some), then rewrites the .md5
 * and metadata files; deleteObject unlinks the three files one by one. A GET meeting either read a cut
 * body, or a whole body with another version's ETag. Here:
 * - a PUT streams its body into a file of its own under `incoming/` and, once that file is written
 *   whole, renames it over the object and writes the .md5 and metadata, holding the key's lock;
 * - a GET or HEAD reads the metadata and opens the object under the same lock: the open file keeps
 *   the version it opened after a later PUT renames over it or a DELETE unlinks it;
 * - a DELETE takes the key's lock too; a PUT's commit and a DELETE also take one lock for the whole
 *   tree, since a DELETE removes the key's parent directories once empty (another key's PUT could
 *   be about to rename into them).
 * A PUT that fails midway (the client went away) leaves the stored object as it was.
 * Not covered: CopyObject (s3rver copies in place; the S3 driver never sends it).
 */
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { Transform } = require("node:stream");
const { pipeline } = require("node:stream/promises");
const S3rver = require(process.env.S3RVER_MODULE);

const buckets = path.join(process.env.S3RVER_DIR, "buckets");
const incoming = path.join(process.env.S3RVER_DIR, "incoming");
fs.mkdirSync(buckets);
fs.mkdirSync(incoming);

/** Runs `fn` after every earlier call for the same id has settled (one queue per id). */
function keyedLocks() {
  const tails = new Map();
  return async function locked(id, fn) {
    const before = tails.get(id) ?? Promise.resolve();
    let release;
    const mine = new Promise((r) => (release = r));
    const tail = before.then(() => mine);
    tails.set(id, tail);
    await before;
    try {
      return await fn();
    } finally {
      release();
      if (tails.get(id) === tail) tails.delete(id);
    }
  };
}

/** Makes `store`'s object reads, writes and deletes atomic per key (see above). */
function atomicObjects(store) {
  const locked = keyedLocks();
  const TREE = "\0tree";
  const idOf = (bucket, key) => `${bucket}/${key}`;
  const { getMetadata, getObject, deleteObject } = store;
  // getObject's own getMetadata call runs inside the lock getObject already holds.
  const inLock = Object.create(store, { getMetadata: { value: getMetadata } });
  store.getMetadata = (bucket, key) => locked(idOf(bucket, key), () => getMetadata.call(store, bucket, key));
  store.getObject = (bucket, key, options) => locked(idOf(bucket, key), () => getObject.call(inLock, bucket, key, options));
  store.deleteObject = (bucket, key) => locked(idOf(bucket, key), () => locked(TREE, () => deleteObject.call(store, bucket, key)));
  store.putObject = async (object) => {
    const temp = path.join(incoming, crypto.randomUUID());
    const hash = crypto.createHash("md5");
    let size = 0;
    const counted = new Transform({
      transform(chunk, _encoding, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    try {
      const source = Buffer.isBuffer(object.content) ? [object.content] : object.content;
      await pipeline(source, counted, fs.createWriteStream(temp));
      const md5 = hash.digest("hex");
      await locked(idOf(object.bucket, object.key), () =>
        locked(TREE, async () => {
          const objectPath = store.getResourcePath(object.bucket, object.key, "object");
          await fs.promises.mkdir(path.dirname(objectPath), { recursive: true });
          await fs.promises.rename(temp, objectPath);
          await store.putMetadata(object.bucket, object.key, object.metadata, md5);
        }),
      );
      return { size, md5 };
    } finally {
      await fs.promises.rm(temp, { force: true });
    }
  };
}

const server = new S3rver({ address: "127.0.0.1", port: 0, directory: buckets, silent: true });
atomicObjects(server.store);
server.run().then(({ port }) => console.log(JSON.stringify({ port })));
const stop = () => server.close().finally(() => process.exit(0));
process.on("SIGTERM", stop);
process.stdin.on("end", stop).resume(); // the test process went away
