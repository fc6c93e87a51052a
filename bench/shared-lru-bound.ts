// The hit rate one LRU cache shared by the whole fleet would reach on a trace, at the fleet's total
// KV capacity: what no router can beat with that much memory (each request hits its longest run of
// leading hash ids in the cache, never its last token, in whole engine blocks; then all its blocks
// become most recently used). Printed against the unlimited-cache bound.
// Usage: node --import tsx bench/shared-lru-bound.ts [TRACE] [--workers 8,16] [--blocks-per-worker 16384]
import { parseArgs } from "node:util";
import { loadTrace, sharedCacheHitBound } from "../src/sim/index.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    workers: { type: "string", default: "8,16" },
    "blocks-per-worker": { type: "string", default: "16384" },
  },
});
const TRACE_BLOCK = 512;
const ENGINE_BLOCK = 64;
const trace = await loadTrace(positionals[0] ?? "../shared/research/data/mooncake/conversation_trace.jsonl");
const unlimited = sharedCacheHitBound(trace, TRACE_BLOCK, ENGINE_BLOCK);

function lruHitRate(capacityTraceBlocks: number): number {
  const cache = new Map<number, true>();
  let hit = 0;
  let all = 0;
  for (const request of trace) {
    let matched = 0;
    while (matched < request.hashIds.length && cache.has(request.hashIds[matched] as number)) matched++;
    const cached = Math.min(matched * TRACE_BLOCK, request.inputLength - 1);
    hit += Math.floor(cached / ENGINE_BLOCK) * ENGINE_BLOCK;
    all += request.inputLength;
    for (const id of request.hashIds) {
      cache.delete(id);
      cache.set(id, true);
      if (cache.size > capacityTraceBlocks) cache.delete(cache.keys().next().value as number);
    }
  }
  return hit / all;
}

console.log(`unlimited shared cache: ${(100 * unlimited).toFixed(1)}%\n`);
console.log("| workers | blocks per worker | shared LRU hit rate | % of unlimited |");
console.log("|---:|---:|---:|---:|");
for (const workers of (values.workers as string).split(",").map(Number)) {
  const perWorker = Number(values["blocks-per-worker"]);
  const rate = lruHitRate((workers * perWorker * ENGINE_BLOCK) / TRACE_BLOCK);
  console.log(`| ${workers} | ${perWorker} | ${(100 * rate).toFixed(1)}% | ${((100 * rate) / unlimited).toFixed(1)}% |`);
}
