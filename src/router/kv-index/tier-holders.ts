import type { StorageTier } from "../../protocol/index.js";
import type { OverlapScores } from "./radix-tree.js";

/** Separates a worker id from a tier in a holder name (never part of a worker id). */
const SEPARATOR = "\u0000";

/**
 * Names the radix tree's holders by worker and storage tier: a worker's device blocks are held
 * under its own id (so a fleet without tiers costs nothing), its blocks on another tier under
 * `id␀tier`. Turns the tree's matches back into device scores and lower-tier scores per worker.
 */
export class TierHolders {
  /** Workers that reported a lower tier, and which. */
  readonly #lower = new Map<string, Set<StorageTier>>();

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

  forget(workerId: string): void {
    this.#lower.delete(workerId);
  }

  /**
   * The tree's per-holder matches as per-worker device scores and tree sizes, plus the deepest
   * lower-tier match of each worker. Unchanged when no worker reported a lower tier.
   */
  split(matches: OverlapScores): OverlapScores {
    if (this.#lower.size === 0) return matches;
    const scores = new Map<string, number>();
    const lowerTierScores = new Map<string, number>();
    for (const [holder, depth] of matches.scores) {
      const cut = holder.indexOf(SEPARATOR);
      if (cut < 0) scores.set(holder, depth);
      else {
        const worker = holder.slice(0, cut);
        lowerTierScores.set(worker, Math.max(depth, lowerTierScores.get(worker) ?? 0));
      }
    }
    const treeSizes = new Map<string, number>();
    for (const [holder, size] of matches.treeSizes) if (!holder.includes(SEPARATOR)) treeSizes.set(holder, size);
    return { scores, treeSizes, lowerTierScores };
  }
}
