// Runs s3rver with S3's documented write semantics: "Amazon S3 never adds partial objects"; concurrent
// PUTs of one key end with one writer's object, whole. s3rver's filesystem store writes the object file
// in place (and answers before the write is flushed), so racing PUTs interleave bytes and a GET right
// after a PUT can read half a file. Here each PUT is written to its own temporary file, flushed, then
// renamed over the object: the rename makes the object appear whole. Its metadata (the length a GET
// serves) lives in a second file, so a PUT and a GET of one key take turns on a lock per key: a GET
// reads the metadata and opens the object file of the same version (the open file keeps it).
// Usage: node --openssl-legacy-provider s3rver-process.mjs <directory> <address> <port>
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rename } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";

const require = createRequire(import.meta.url);
const S3rver = require("s3rver");
const FilesystemStore = require("s3rver/lib/stores/filesystem");

/** Each key's last operation: the next one on the key starts when it ends. */
const turns = new Map();
function inTurn(key, operation) {
  const previous = turns.get(key) ?? Promise.resolve();
  const current = previous.then(operation, operation);
  const settled = current.then(
    () => undefined,
    () => undefined,
  );
  turns.set(key, settled);
  void settled.then(() => {
    if (turns.get(key) === settled) turns.delete(key);
  });
  return current;
}

const getObject = FilesystemStore.prototype.getObject;
FilesystemStore.prototype.getObject = function getObjectInTurn(bucket, key, options) {
  return inTurn(`${bucket}/${key}`, () => getObject.call(this, bucket, key, options));
};

const putObjectWhole = async function putObjectWhole(object) {
  const objectPath = this.getResourcePath(object.bucket, object.key, "object");
  await mkdir(dirname(objectPath), { recursive: true });
  const temporary = `${objectPath}.${randomBytes(6).toString("hex")}.partial`;
  const md5 = require("node:crypto").createHash("md5");
  let size = 0;
  const measure = new Transform({
    transform(chunk, _encoding, callback) {
      md5.update(chunk);
      size += chunk.length;
      callback(null, chunk);
    },
  });
  const source = Buffer.isBuffer(object.content) ? [object.content] : object.content;
  await pipeline(source, measure, createWriteStream(temporary));
  const digest = md5.digest("hex");
  await rename(temporary, objectPath);
  await this.putMetadata(object.bucket, object.key, object.metadata, digest);
  return { size, md5: digest };
};
FilesystemStore.prototype.putObject = function putObjectInTurn(object) {
  return inTurn(`${object.bucket}/${object.key}`, () => putObjectWhole.call(this, object));
};

const [directory, address, port] = process.argv.slice(2);
await new S3rver({ directory, address, port: Number(port), silent: true }).run();
