import assert from "node:assert/strict";
import { test } from "node:test";
import { type LruEntry, LruList } from "./lru-list.js";

interface Named extends LruEntry {
  readonly name: string;
}
const entry = (name: string): Named => ({ name, older: undefined, newer: undefined, listed: false });

test("entries come out oldest first, as a Map's insertion order with delete and set", () => {
  const list = new LruList<Named>();
  const [a, b, c] = [entry("a"), entry("b"), entry("c")];
  list.add(a);
  list.add(b);
  list.add(c);
  list.add(a); // already listed: stays oldest, as Map.set on a present key
  assert.equal(list.oldest()?.name, "a");
  list.remove(a);
  list.add(a); // removed and added again: now the newest
  assert.equal(list.size, 3);
  list.remove(c); // from the middle
  list.remove(c); // not listed: nothing
  assert.equal(list.size, 2);
  assert.deepEqual(
    [...list.drain()].map((e) => e.name),
    ["b", "a"],
  );
  assert.equal(list.size, 0);
  assert.equal(list.oldest(), undefined);
  list.add(c);
  assert.equal(list.oldest()?.name, "c", "an emptied list takes entries again");
});
