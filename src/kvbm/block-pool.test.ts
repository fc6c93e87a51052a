import assert from "node:assert/strict";
import { test } from "node:test";
import { BlockPool } from "./block-pool.js";

const keys = (pool: BlockPool<string>) => [...pool.entries()].map(([, v]) => v);

test("within the byte budget the least recently used block goes first", () => {
  const pool = new BlockPool<string>({ capacityBytes: 300 });
  pool.insert(1n, "a", 100);
  pool.insert(2n, "b", 100);
  pool.insert(3n, "c", 100);
  assert.deepEqual(pool.insert(4n, "d", 100), [{ hash: 1n, value: "a" }]);
  assert.deepEqual([pool.bytes, pool.size], [300, 3]);
  assert.deepEqual(pool.insert(5n, "e", 200), [
    { hash: 2n, value: "b" },
    { hash: 3n, value: "c" },
  ]);
  assert.deepEqual(keys(pool), ["d", "e"]);
});

test("a block hit once outlives older and newer blocks hit never (frequency before recency)", () => {
  const pool = new BlockPool<string>({ capacityBytes: 300 });
  pool.insert(1n, "a", 100);
  pool.insert(2n, "b", 100);
  pool.insert(3n, "c", 100);
  pool.hit(1n);
  assert.equal(pool.frequency(1n), 2);
  // Level 0 holds b, c; a sits on level 1: b goes, then c, then d before a.
  assert.deepEqual(pool.insert(4n, "d", 100), [{ hash: 2n, value: "b" }]);
  assert.deepEqual(pool.insert(5n, "e", 100), [{ hash: 3n, value: "c" }]);
  assert.deepEqual(pool.insert(6n, "f", 100), [{ hash: 4n, value: "d" }]);
  assert.ok(pool.has(1n));
});

test("frequency doubles per hit and decays by one per decay period", () => {
  const pool = new BlockPool<string>({ capacityBytes: 1000, decayEveryHits: 3 });
  pool.insert(1n, "a", 1);
  pool.insert(2n, "b", 1);
  pool.hit(1n); // 2
  pool.hit(1n); // 4
  pool.hit(2n); // b: 2; third hit: decay, a 4→3, b 2→1
  assert.deepEqual([pool.frequency(1n), pool.frequency(2n)], [3, 1]);
});

test("a block larger than the whole budget is not taken, and nothing is evicted for it", () => {
  const pool = new BlockPool<string>({ capacityBytes: 100 });
  pool.insert(1n, "a", 60);
  assert.deepEqual(pool.insert(2n, "b", 101), []);
  assert.deepEqual([pool.has(1n), pool.has(2n)], [true, false]);
});

test("inserting a held block only touches it; delete gives its bytes back", () => {
  const pool = new BlockPool<string>({ capacityBytes: 200 });
  pool.insert(1n, "a", 100);
  pool.insert(2n, "b", 100);
  pool.insert(1n, "a", 100);
  assert.deepEqual(pool.insert(3n, "c", 100), [{ hash: 2n, value: "b" }]);
  assert.equal(pool.delete(1n), "a");
  assert.deepEqual([pool.bytes, pool.size], [100, 1]);
});
