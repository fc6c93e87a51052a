import { localBlockHashes } from "../protocol/index.js";
import type { ActiveLoad } from "./active-load.js";
import type { OverlapScores } from "./kv-index/radix-tree.js";
import type { RoutingPolicy } from "./policy.js";
import { lowerTierSavedBlocks } from "./tier-savings.js";
import type { RouteRequest, WorkerView } from "./worker-view.js";

/** What the KV policy needs of an index: matches, and (approximate mode) to hear its own decisions. */
export interface KvIndexView {
  findMatches(localHashes: readonly bigint[]): OverlapScores;
  /** The block size a model's workers hash with, when the index knows it (else the policy's own). */
  blockSizeOf?(model: string): number | undefined;
  recordDecision?(workerId: string, tokenIds: readonly number[], lora?: string): void;
}

export interface KvPolicyOptions {
  readonly indexer: KvIndexView;
  /** The load every router replica has booked on each worker (the router books, the policy reads). */
  readonly activeLoad: ActiveLoad;
  /** Block size of a model whose size the index does not know. */
  readonly blockSize: number;
  /** Weight of prefill work against decode load. Default 1 (Dynamo's default). */
  readonly overlapWeight?: number;
  /**
   * What a block on a worker's lower tier (host memory, disk, a shared store) saves of its prefill,
   * against 1 for a block on its device, when the worker has not measured its rates (then the
   * saving comes from them, see `tierSaving`). Default 0.8 (llm-d's CPU weight).
   */
  readonly lowerTierWeight?: number;
  /**
   * What a worker's lead counts, as a multiple of the overlap weight: the cached blocks it holds
   * beyond the runner-up's prefix, which no other worker holds. Default `DEFAULT_EXCLUSIVE_FACTOR`;
   * 1 weighs them as any cached block (Dynamo's cost).
   */
  readonly exclusiveFactor?: number;
  /** 0 picks the cheapest; above 0 samples a softmax over costs. Default 0. */
  readonly temperature?: number;
  readonly random?: () => number;
  /** Hears how long each phase of a decision took (Dynamo's `router_overhead_*` metrics). */
  readonly onOverhead?: ((phase: "block_hashing" | "indexer_find_matches" | "scheduling", ms: number) => void) | undefined;
}

/**
 * The overlap weight a router uses unless told otherwise: 4, not Dynamo's 1. Measured on four
 * multi-turn loads at 8 and 16 workers (decision 0024): 1 lets a worker's decode load push a turn
 * off the worker that caches its conversation; 8 and more herd new conversations onto the workers
 * that already hold a shared system prompt.
 */
export const DEFAULT_OVERLAP_WEIGHT = 4;

/**
 * How much more a cached block only one worker holds counts than one others hold too: 8 (decision
 * 0028). Sending a turn away from the only worker that holds its conversation recomputes that prefix
 * and splits the conversation's later turns; a prefix many workers hold (a shared system prompt) gets
 * no lead, so it cannot herd new conversations onto its holders.
 */
export const DEFAULT_EXCLUSIVE_FACTOR = 8;

/**
 * Dynamo's KV-aware selection: cost = overlap_weight × prefill_tokens / block_size + decode_blocks,
 * where prefill_tokens is the worker's active prefill plus the request's uncached tokens, and
 * decode_blocks its active blocks plus the request's blocks it does not cache. Lowest cost wins; ties go to the worker
 * with the smaller tree, then at random. Blocks a worker can load back from a lower tier (its host
 * or disk, or the store its model's workers share) count as the share of a cached block that
 * loading them saves over recomputing them, from the worker's measured rates (`lowerTierWeight`
 * when it has none); they still need device blocks. The worker with the longest such prefix gets
 * its lead over the runner-up (blocks no other worker holds) counted `exclusiveFactor` times the
 * overlap weight in all, not once: cost − (exclusiveFactor − 1) × overlap_weight × lead.
 */
export function kvPolicy(options: KvPolicyOptions): RoutingPolicy {
  const weight = options.overlapWeight ?? DEFAULT_OVERLAP_WEIGHT;
  const lowerTierWeight = options.lowerTierWeight ?? 0.8;
  const temperature = options.temperature ?? 0;
  const exclusiveFactor = options.exclusiveFactor ?? DEFAULT_EXCLUSIVE_FACTOR;
  const random = options.random ?? Math.random;
  const overlapOf = new WeakMap<RouteRequest, Map<string, number>>();

  return {
    name: "kv",
    select(candidates, request) {
      const t0 = performance.now();
      const bs = options.indexer.blockSizeOf?.(request.model) ?? options.blockSize;
      const hashes = localBlockHashes(request.tokenIds, bs, request.lora);
      const t1 = performance.now();
      const matches = options.indexer.findMatches(hashes);
      const t2 = performance.now();
      overlapOf.set(request, matches.scores);
      const chosen = choose(matches);
      if (options.onOverhead) {
        options.onOverhead("block_hashing", t1 - t0);
        options.onOverhead("indexer_find_matches", t2 - t1);
        options.onOverhead("scheduling", performance.now() - t2);
      }
      return chosen;

      function choose({ scores, treeSizes, lowerTierScores, lowerTierBlocks, sharedBlocks = 0 }: OverlapScores): WorkerView {
        const isl = request.tokenIds.length;
        const w8 = request.overrides?.overlapWeight ?? weight;
        // Blocks each worker caches on its device, the prefill blocks it saves (device, then what
        // lower tiers save), and the runner-up's saving.
        const overlaps = candidates.map((w) => scores.get(w.id) ?? 0);
        const savedBlocks = candidates.map((w, i) => (overlaps[i] as number) + lowerSaved(w, overlaps[i] as number));
        const runnerUp = secondLargest(savedBlocks);
        const costs = candidates.map((w, i) => {
          const overlap = overlaps[i] as number;
          const active = options.activeLoad.of(w.id);
          const saved = savedBlocks[i] as number;
          const prefill = active.prefillTokens + Math.max(0, isl - saved * bs);
          // Blocks the worker already caches are not new decode blocks (Dynamo assumes KV reuse).
          const decode = active.decodeBlocks + Math.ceil(isl / bs) - overlap;
          const leadCredit = (exclusiveFactor - 1) * w8 * Math.max(0, saved - runnerUp);
          return { worker: w, cost: (w8 * prefill) / bs + decode - leadCredit, tree: treeSizes.get(w.id) ?? 0 };
        });
        const t = request.overrides?.temperature ?? temperature;
        /** Prefill blocks saved by loading back from lower tiers what the device lacks. */
        function lowerSaved(w: WorkerView, overlap: number): number {
          const blocks =
            lowerTierBlocks?.get(w.id) ??
            (sharedBlocks > overlap ? { host: 0, disk: 0, external: sharedBlocks - overlap } : undefined);
          if (blocks) return lowerTierSavedBlocks(w, blocks, lowerTierWeight);
          return lowerTierWeight * Math.max(0, (lowerTierScores?.get(w.id) ?? 0) - overlap);
        }
        if (t > 0) return sample(costs, t, random);
        const min = Math.min(...costs.map((c) => c.cost));
        const cheapest = costs.filter((c) => c.cost === min);
        const smallestTree = Math.min(...cheapest.map((c) => c.tree));
        const finalists = cheapest.filter((c) => c.tree === smallestTree);
        return (finalists[Math.floor(random() * finalists.length)] ?? costs[0])?.worker as WorkerView;
      }
    },
    onRouted(workerId, request) {
      options.indexer.recordDecision?.(workerId, request.tokenIds, request.lora);
    },
    overlapBlocks(workerId, request) {
      return overlapOf.get(request)?.get(workerId) ?? 0;
    },
  };
}

/** The second largest of `values` (a repeated maximum counts twice); 0 with fewer than two. */
function secondLargest(values: readonly number[]): number {
  let first = 0;
  let second = 0;
  for (const v of values) {
    if (v > first) {
      second = first;
      first = v;
    } else if (v > second) second = v;
  }
  return second;
}

function sample(costs: { worker: WorkerView; cost: number }[], temperature: number, random: () => number): WorkerView {
  const max = Math.max(...costs.map((c) => c.cost));
  const min = Math.min(...costs.map((c) => c.cost));
  const span = max - min;
  const weights = costs.map((c) => (span === 0 ? 1 : Math.exp(-c.cost / span / temperature)));
  const total = weights.reduce((a, b) => a + b, 0);
  let point = random() * total;
  for (let i = 0; i < costs.length; i++) {
    point -= weights[i] as number;
    if (point <= 0) return (costs[i] as { worker: WorkerView }).worker;
  }
  return (costs.at(-1) as { worker: WorkerView }).worker;
}
