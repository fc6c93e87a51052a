import assert from "node:assert/strict";
import { test } from "node:test";
import { SeededRandom } from "../../engines/index.js";
import { chainBlockHash } from "../../protocol/index.js";
import { RadixTree } from "./radix-tree.js";
import { MapRadixTree } from "./testing/map-radix-tree.js";

// The typed-array tree against the plain object-per-node model, on random stores (extending
// chains through parent hashes), removals, worker removals and queries over a small hash space.
test("the typed-array radix tree answers exactly as the reference model through 20,000 random events", () => {
  const rng = new SeededRandom(11);
  const pick = (n: number): number => Math.floor(rng.next() * n);
  const tree = new RadixTree();
  const model = new MapRadixTree();
  const workers = ["w0", "w1", "w2", "w3", "w4"];
  /** Sequences of local hashes per worker, as stored so far (for parents and removals). */
  const chains = new Map<string, bigint[][]>();
  const blockHashes = (locals: readonly bigint[]): bigint[] => {
    const out: bigint[] = [];
    for (const l of locals) out.push(out.length === 0 ? l : chainBlockHash(out.at(-1) as bigint, l));
    return out;
  };
  const randomLocals = (): bigint[] => Array.from({ length: 1 + pick(6) }, () => BigInt(1 + pick(4)));
  for (let step = 0; step < 20_000; step++) {
    const worker = workers[pick(workers.length)] as string;
    const roll = rng.next();
    if (roll < 0.45) {
      const known = chains.get(worker) ?? [];
      const base = known.length > 0 && rng.next() < 0.5 ? (known[pick(known.length)] as bigint[]) : [];
      const prefix = base.slice(0, pick(base.length + 1));
      const locals = [...prefix, ...randomLocals()];
      const hashes = blockHashes(locals);
      const parentHash = prefix.length > 0 ? (hashes[prefix.length - 1] as bigint) : null;
      const blocks = locals
        .slice(prefix.length)
        .map((l, i) => ({ tokensHash: l, blockHash: hashes[prefix.length + i] as bigint }));
      const event = { parentHash, blocks };
      assert.equal(tree.applyStored(worker, event), model.applyStored(worker, event), `step ${step}: stored`);
      chains.set(worker, [...known, locals].slice(-20));
    } else if (roll < 0.75) {
      const known = chains.get(worker) ?? [];
      const locals = known.length > 0 ? (known[pick(known.length)] as bigint[]) : randomLocals();
      const hashes = blockHashes(locals).filter(() => rng.next() < 0.5);
      assert.equal(tree.applyRemoved(worker, hashes), model.applyRemoved(worker, hashes), `step ${step}: removed`);
    } else if (roll < 0.78) {
      tree.removeWorker(worker);
      model.removeWorker(worker);
      chains.delete(worker);
    } else {
      const query = [...randomLocals(), ...randomLocals()];
      const a = tree.findMatches(query);
      const b = model.findMatches(query);
      assert.deepEqual(Object.fromEntries(a.scores), Object.fromEntries(b.scores), `step ${step}: scores`);
      const nonZero = (m: Map<string, number>) => Object.fromEntries([...m].filter(([, v]) => v > 0));
      assert.deepEqual(nonZero(a.treeSizes), nonZero(b.treeSizes), `step ${step}: tree sizes`);
    }
    for (const w of workers) assert.equal(tree.blockCount(w), model.blockCount(w), `step ${step}: ${w} block count`);
  }
});
