import assert from "node:assert/strict";
import { test } from "node:test";
import { xxh3 } from "@node-rs/xxhash";
import { hashBlocks, localBlockHash, localBlockHashes } from "./block-hashing.js";

// Vectors published with Dynamo's kv-router (lib/kv-router/src/protocols.rs tests).
test("reproduces Dynamo's published block hash vectors", () => {
  assert.equal(localBlockHash([1, 2, 3, 4]), 14643705804678351452n);
  const { local, sequence } = hashBlocks([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 4);
  assert.deepEqual(local, [14643705804678351452n, 16777012769546811212n, 483935686894639516n]);
  assert.deepEqual(sequence, [14643705804678351452n, 4945711292740353085n, 12583592247330656132n]);
  assert.equal(xxh3.xxh64(Buffer.from("test data"), 1337n), 13226331709069118873n);
});

test("ignores a trailing partial block", () => {
  assert.equal(hashBlocks([1, 2, 3, 4, 5, 6], 4).sequence.length, 1);
});

test("a LoRA adapter changes the hashes", () => {
  assert.notEqual(hashBlocks([1, 2, 3, 4], 4, "adapter").local[0], hashBlocks([1, 2, 3, 4], 4).local[0]);
});

test("the local hashes alone are hashBlocks' local hashes, LoRA seed included", () => {
  const tokens = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];
  // Dynamo's published local vectors (above), from number arrays and from a Uint32Array alike.
  assert.deepEqual(localBlockHashes(tokens, 4), [14643705804678351452n, 16777012769546811212n, 483935686894639516n]);
  assert.deepEqual(localBlockHashes(Uint32Array.from(tokens), 4), hashBlocks(tokens, 4).local);
  assert.deepEqual(localBlockHashes(tokens, 4, "adapter"), hashBlocks(tokens, 4, "adapter").local);
  assert.deepEqual(localBlockHashes([1, 2, 3], 4), []);
});

test("hashing a long prompt leaves the next short one's hashes as published", () => {
  // 10,000 tokens outgrow the words the hashes are copied into; the published vectors must follow.
  const long = Array.from({ length: 10_000 }, (_, i) => (i * 7919) % 50_000);
  assert.equal(localBlockHashes(long, 16).length, 625);
  assert.deepEqual(localBlockHashes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 4), [
    14643705804678351452n,
    16777012769546811212n,
    483935686894639516n,
  ]);
  assert.equal(localBlockHash([1, 2, 3, 4]), 14643705804678351452n);
  // Blocks past the first 4,096 tokens hash as the same block does alone.
  assert.equal(localBlockHashes(long, 16)[600], localBlockHash(long.slice(9600, 9616)));
});
