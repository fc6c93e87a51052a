// KV index performance on one core: stored-event application rate, findMatches latency for a
// 64-block query against ~1M indexed blocks spread over 128 workers, and heap bytes per block.
// Usage: node --import tsx --expose-gc bench/indexer.ts
import { chainBlockHash } from "../src/protocol/index.js";
import { RadixTree } from "../src/router/index.js";
import { summarize } from "../src/sim/index.js";
import { machine } from "./load/processes.js";

const WORKERS = 128;
const BLOCKS = 1_000_000;
const SEQUENCE = 64; // blocks per stored sequence
const SHARED = 16; // leading blocks every sequence of a "session family" shares
const gc = (globalThis as { gc?: () => void }).gc;

function sequence(family: number, index: number): { blockHash: bigint; tokensHash: bigint }[] {
  const out: { blockHash: bigint; tokensHash: bigint }[] = [];
  let parent: bigint | undefined;
  for (let b = 0; b < SEQUENCE; b++) {
    const tokensHash = BigInt(b < SHARED ? family * 1_000_003 + b : (family * 1_000_003 + index) * 131 + b) & 0xffffffffffffffffn;
    const blockHash: bigint = parent === undefined ? tokensHash : chainBlockHash(parent, tokensHash);
    out.push({ blockHash, tokensHash });
    parent = blockHash;
  }
  return out;
}

console.log(`indexer — ${machine()} — ${BLOCKS.toLocaleString()} blocks over ${WORKERS} workers, ${SEQUENCE}-block sequences\n`);
const sequences = BLOCKS / SEQUENCE;
const events = Array.from({ length: sequences }, (_, i) => ({ worker: `w${i % WORKERS}`, blocks: sequence(i % 500, i) }));
gc?.();
// Typed arrays live outside the JS heap: count both.
const memory = (): number => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
const heapBefore = memory();
const tree = new RadixTree();
const t0 = performance.now();
for (const e of events) tree.applyStored(e.worker, { parentHash: null, blocks: e.blocks });
const applySeconds = (performance.now() - t0) / 1000;
gc?.();
const heapAfter = memory();

const queries = Array.from({ length: 20_000 }, (_, i) => sequence(i % 500, (i * 7919) % sequences).map((b) => b.tokensHash));
const latencies: number[] = [];
for (const q of queries) {
  const s = performance.now();
  tree.findMatches(q);
  latencies.push((performance.now() - s) * 1000);
}
const match = summarize(latencies.slice(1000));

// Steady state: the same stores into a tree whose tables are already sized (a router that has run a
// while, or reserved for its fleet's capacity), measured apart from growth.
const sized = new RadixTree();
sized.reserve(BLOCKS);
const t1 = performance.now();
for (const e of events) sized.applyStored(e.worker, { parentHash: null, blocks: e.blocks });
const sizedSeconds = (performance.now() - t1) / 1000;

const removeStart = performance.now();
for (const e of events.slice(0, sequences / 2))
  tree.applyRemoved(
    e.worker,
    e.blocks.map((b) => b.blockHash),
  );
const removeSeconds = (performance.now() - removeStart) / 1000;

console.log("| measure | value | goal |");
console.log("|---|---:|---:|");
console.log(
  `| stored blocks applied per second, from empty | ${Math.round(BLOCKS / applySeconds).toLocaleString()} | 2,000,000 |`,
);
console.log(
  `| stored blocks applied per second, tables sized | ${Math.round(BLOCKS / sizedSeconds).toLocaleString()} | 2,000,000 |`,
);
console.log(`| removed blocks applied per second | ${Math.round(BLOCKS / 2 / removeSeconds).toLocaleString()} | 2,000,000 |`);
console.log(`| findMatches p50 / p99 (64-block query, µs) | ${match.p50.toFixed(1)} / ${match.p99.toFixed(1)} | p99 ≤ 50 |`);
console.log(
  `| bytes per indexed block (JS heap + typed arrays) | ${gc ? Math.round((heapAfter - heapBefore) / BLOCKS) : "run with --expose-gc"} | ≤ 200 |`,
);
