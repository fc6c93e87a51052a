import assert from "node:assert/strict";
import { test } from "node:test";
import { SeededRandom } from "../../engines/index.js";
import { TripleKeyTable } from "./triple-key-table.js";

test("the table agrees with a Map through random inserts, updates and deletes, across growth", () => {
  const table = new TripleKeyTable(16);
  const reference = new Map<string, number>();
  const rng = new SeededRandom(5);
  const keys = Array.from({ length: 3000 }, () => [
    Math.floor(rng.next() * 8),
    Math.floor(rng.next() * 2 ** 32),
    // Many equal low halves, to exercise long probe runs and backward shifts.
    Math.floor(rng.next() * 64),
  ]);
  for (let step = 0; step < 40_000; step++) {
    const [a, hi, lo] = keys[Math.floor(rng.next() * keys.length)] as [number, number, number];
    const name = `${a}/${hi}/${lo}`;
    const roll = rng.next();
    if (roll < 0.4) {
      assert.equal(table.set(a, hi, lo, step), !reference.has(name));
      reference.set(name, step);
    } else if (roll < 0.5) {
      // getOrSet keeps an existing value, or stores the new one.
      assert.equal(table.getOrSet(a, hi, lo, step), reference.get(name) ?? -1);
      if (!reference.has(name)) reference.set(name, step);
    } else if (roll < 0.8) assert.equal(table.delete(a, hi, lo), reference.delete(name));
    else assert.equal(table.get(a, hi, lo), reference.get(name) ?? -1);
  }
  assert.equal(table.size, reference.size);
  for (const [name, value] of reference) {
    const [a, hi, lo] = name.split("/").map(Number) as [number, number, number];
    assert.equal(table.get(a, hi, lo), value);
  }
  let seen = 0;
  for (let a = 0; a < 8; a++) table.forEachOf(a, () => seen++);
  assert.equal(seen, reference.size);
});
