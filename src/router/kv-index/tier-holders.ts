import type { StorageTier } from "../../protocol/index.js";
import type { LowerTierBlocks, OverlapScores } from "./radix-tree.js";

/** Separates a worker id from a tier in a holder name (never part of a worker id). */
const SEPARATOR = "\u0000";

type LowerTier = "host" | "disk" | "external";

/** Lower tiers, fastest first: a block on several is counted at the fastest. */
const LOWER_TIERS: Readonly<Record<string, LowerTier>> = { host_pinned: "host", disk: "disk", external: "external" };

/**
 * Names the radix tree's holders by worker and storage tier: a worker's device blocks are held
 * under its own id (so a fleet without tiers costs nothing), its blocks on another tier under
 * `id␀tier`. Turns the tree's matches back into device scores and, per worker, the blocks it can
 * load back from its lower tiers; blocks on the `external` tier (a store shared by the model's
 * workers) count for every worker, whoever announced them.
 */
export class TierHolders {
  /** Workers that reported a lower tier, and which. */
  readonly #lower = new Map<string, Set<StorageTier>>();

  /** Whether any worker reported a lower tier. */
  get any(): boolean {
    return this.#lower.size > 0;
  }

  /** The tree holder for a worker's blocks on `tier` (absent: the device). */
  holder(workerId: string, tier: StorageTier | undefined): string {
    if (tier === undefined || tier === "device") return workerId;
    let tiers = this.#lower.get(workerId);
    if (!tiers) {
      tiers = new Set();
      this.#lower.set(workerId, tiers);
    }
    tiers.add(tier);
    return `${workerId}${SEPARATOR}${tier}`;
  }

  /** Every holder of the worker: its device and each lower tier it reported. */
  holdersOf(workerId: string): string[] {
    return [workerId, ...[...(this.#lower.get(workerId) ?? [])].map((tier) => `${workerId}${SEPARATOR}${tier}`)];
  }

  /** The lower tiers the worker reported, in the order it first did. */
  lowerTiersOf(workerId: string): StorageTier[] {
    return [...(this.#lower.get(workerId) ?? [])];
  }

  forget(workerId: string): void {
    this.#lower.delete(workerId);
  }

  /**
   * The tree's per-holder matches as per-worker device scores and tree sizes, plus, from the
   * holders of each block along the query's path, what each worker can load from lower tiers:
   * past its device prefix, the walk goes on while any of its tiers (or the shared external
   * tier) holds the next block, so a prefix whose head is on one tier and tail on another counts
   * whole. Unchanged when no worker reported a lower tier.
   */
  split(matches: OverlapScores, path: readonly string[][]): OverlapScores {
    if (this.#lower.size === 0) return matches;
    const scores = new Map<string, number>();
    for (const [holder, depth] of matches.scores) if (!holder.includes(SEPARATOR)) scores.set(holder, depth);
    const treeSizes = new Map<string, number>();
    for (const [holder, size] of matches.treeSizes) if (!holder.includes(SEPARATOR)) treeSizes.set(holder, size);
    const perDepth = path.map(tiersAt);
    let sharedBlocks = 0;
    while (sharedBlocks < perDepth.length && perDepth[sharedBlocks]?.external) sharedBlocks++;
    const lowerTierScores = new Map<string, number>();
    const lowerTierBlocks = new Map<string, LowerTierBlocks>();
    const workers = new Set<string>(scores.keys());
    for (const worker of this.#lower.keys()) workers.add(worker);
    for (const worker of workers) {
      const counts = { host: 0, disk: 0, external: 0 };
      let depth = scores.get(worker) ?? 0;
      for (; depth < perDepth.length; depth++) {
        const tier = fastestFor(perDepth[depth] as BlockTiers, worker);
        if (!tier) break;
        counts[tier]++;
      }
      if (depth > (scores.get(worker) ?? 0)) {
        lowerTierScores.set(worker, depth);
        lowerTierBlocks.set(worker, counts);
      }
    }
    return { scores, treeSizes, lowerTierScores, lowerTierBlocks, sharedBlocks };
  }
}

/** Who holds one block: workers per lower tier, and whether the shared external tier has it. */
interface BlockTiers {
  readonly host: Set<string>;
  readonly disk: Set<string>;
  readonly external: boolean;
}

function tiersAt(holders: readonly string[]): BlockTiers {
  const at: BlockTiers = { host: new Set(), disk: new Set(), external: false };
  let external = false;
  for (const holder of holders) {
    const cut = holder.indexOf(SEPARATOR);
    if (cut < 0) continue;
    const tier = LOWER_TIERS[holder.slice(cut + 1)];
    if (tier === "external") external = true;
    else if (tier) at[tier].add(holder.slice(0, cut));
  }
  return { ...at, external };
}

function fastestFor(block: BlockTiers, worker: string): LowerTier | undefined {
  if (block.host.has(worker)) return "host";
  if (block.disk.has(worker)) return "disk";
  return block.external ? "external" : undefined;
}
