import assert from "node:assert/strict";
import { test } from "node:test";
import { chainBlockHash } from "../../protocol/index.js";
import { RadixTree } from "./radix-tree.js";

// The cases of Dynamo's indexer tests (lib/kv-router/src/indexer/tests.rs): local hashes 1, 2, 3…
// stand for token blocks, block hashes are the chained sequence hashes.
function chain(locals: readonly number[]): { blockHash: bigint; tokensHash: bigint }[] {
  const out: { blockHash: bigint; tokensHash: bigint }[] = [];
  for (const l of locals) {
    const tokensHash = BigInt(l);
    const prev = out.at(-1);
    out.push({ tokensHash, blockHash: prev ? chainBlockHash(prev.blockHash, tokensHash) : tokensHash });
  }
  return out;
}
const store = (tree: RadixTree, worker: string, locals: number[]) =>
  tree.applyStored(worker, { parentHash: null, blocks: chain(locals) });
const query = (tree: RadixTree, locals: number[]) => Object.fromEntries(tree.findMatches(locals.map(BigInt)).scores);

test("store then query: full, partial and diverging matches", () => {
  const tree = new RadixTree();
  assert.equal(store(tree, "w0", [1, 2, 3]), "ok");
  assert.deepEqual(query(tree, [1, 2, 3]), { w0: 3 });
  assert.deepEqual(query(tree, [1, 2, 999]), { w0: 2 });
  assert.deepEqual(query(tree, [7]), {});
});

test("two workers sharing a prefix", () => {
  const tree = new RadixTree();
  store(tree, "w0", [1, 2]);
  store(tree, "w1", [1, 3]);
  assert.deepEqual(query(tree, [1]), { w0: 1, w1: 1 });
  assert.deepEqual(query(tree, [1, 2]), { w0: 2, w1: 1 });
  assert.deepEqual(Object.fromEntries(tree.findMatches([1n]).treeSizes), { w0: 2, w1: 2 });
});

test("a stored event continues a chain through its parent hash", () => {
  const tree = new RadixTree();
  const blocks = chain([1, 2, 3]);
  tree.applyStored("w0", { parentHash: null, blocks: blocks.slice(0, 1) });
  assert.equal(tree.applyStored("w0", { parentHash: blocks[0]?.blockHash ?? null, blocks: blocks.slice(1) }), "ok");
  assert.deepEqual(query(tree, [1, 2, 3]), { w0: 3 });
});

test("an unknown parent is rejected and changes nothing", () => {
  const tree = new RadixTree();
  assert.equal(tree.applyStored("w0", { parentHash: 12345n, blocks: chain([1]) }), "parent_block_not_found");
  assert.equal(tree.blockCount("w0"), 0);
  // Another worker's block is not a parent for this one.
  store(tree, "w1", [1]);
  assert.equal(tree.applyStored("w0", { parentHash: 1n, blocks: chain([2]) }), "parent_block_not_found");
});

test("duplicate or self-parenting block hashes are invalid", () => {
  const tree = new RadixTree();
  const [a] = chain([1]);
  assert.ok(a);
  assert.equal(tree.applyStored("w0", { parentHash: null, blocks: [a, a] }), "invalid_block");
  store(tree, "w0", [1]);
  assert.equal(tree.applyStored("w0", { parentHash: a.blockHash, blocks: [a] }), "invalid_block");
});

test("removing a block in the middle cuts that worker's match there, without cascade", () => {
  const tree = new RadixTree();
  store(tree, "w0", [1, 2, 3]);
  store(tree, "w1", [1, 2, 3]);
  const blocks = chain([1, 2, 3]);
  assert.equal(tree.applyRemoved("w0", [blocks[1]?.blockHash as bigint]), "ok");
  assert.deepEqual(query(tree, [1, 2, 3]), { w0: 1, w1: 3 });
  assert.equal(tree.blockCount("w0"), 2, "the third block stays listed for w0");
});

test("unknown hashes in a removal are reported while the rest applies", () => {
  const tree = new RadixTree();
  store(tree, "w0", [1, 2]);
  const blocks = chain([1, 2]);
  assert.equal(tree.applyRemoved("w0", [999n, blocks[1]?.blockHash as bigint]), "block_not_found");
  assert.deepEqual(query(tree, [1, 2]), { w0: 1 });
});

test("removing a worker (or clearing it) drops all its blocks and leaves others intact", () => {
  const tree = new RadixTree();
  store(tree, "w0", [1, 2, 3]);
  store(tree, "w1", [1, 2]);
  tree.removeWorker("w0");
  assert.deepEqual(query(tree, [1, 2, 3]), { w1: 2 });
  assert.equal(tree.blockCount("w0"), 0);
  tree.removeWorker("w1");
  assert.deepEqual(query(tree, [1]), {});
});

test("re-applying the same stored event is idempotent", () => {
  const tree = new RadixTree();
  store(tree, "w0", [1, 2]);
  store(tree, "w0", [1, 2]);
  assert.equal(tree.blockCount("w0"), 2);
  assert.deepEqual(query(tree, [1, 2]), { w0: 2 });
});

test("long sequences match to their full depth", () => {
  const tree = new RadixTree();
  const locals = Array.from({ length: 130 }, (_, i) => i + 1);
  store(tree, "w0", locals);
  assert.deepEqual(query(tree, locals), { w0: 130 });
  assert.deepEqual(query(tree, [...locals.slice(0, 65), 0]), { w0: 65 });
});

test("a tree sized ahead answers as one that grew", () => {
  const grown = new RadixTree();
  const sized = new RadixTree();
  sized.reserve(50_000);
  for (let s = 0; s < 300; s++) {
    const locals = Array.from({ length: 40 }, (_, i) => s * 1000 + i + 1);
    store(grown, `w${s % 7}`, locals);
    store(sized, `w${s % 7}`, locals);
  }
  const q = Array.from({ length: 40 }, (_, i) => 5000 + i + 1);
  assert.deepEqual(query(sized, q), query(grown, q));
  assert.deepEqual(query(sized, q), { w5: 40 });
  assert.equal(sized.blockCount("w3"), grown.blockCount("w3"));
});
