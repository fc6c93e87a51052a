import type { KvBlockStored } from "../../../protocol/index.js";
import type { ApplyStatus, OverlapScores } from "../radix-tree.js";

interface RadixNode {
  readonly tokensHash: bigint;
  readonly parent: RadixNode | undefined;
  /** Created on the first child: most nodes are leaves. */
  children: Map<bigint, RadixNode> | undefined;
  /** Workers holding the block; a small array costs far less than a Set per node. */
  readonly workers: string[];
}

/**
 * The first, object-per-node layout of the radix tree, kept as the reference model that the
 * typed-array tree is checked against (property test). Which worker holds which KV blocks: nodes keyed by
 * the local hash of their tokens, each naming the workers that hold it; per worker a lookup from
 * the engine's block hash to its node, for parent links and removals.
 */
export class MapRadixTree {
  readonly #root: RadixNode = { tokensHash: 0n, parent: undefined, children: new Map(), workers: [] };
  readonly #lookup = new Map<string, Map<bigint, RadixNode>>();

  /**
   * Stores a chain of blocks for `workerId` under the block named by `parentHash` (the root when
   * null). Fails, changing nothing, when the parent is unknown for that worker or a block hash
   * repeats within the event or names its own parent.
   */
  applyStored(workerId: string, event: Pick<KvBlockStored, "parentHash" | "blocks">): ApplyStatus {
    const lookup = this.#lookupOf(workerId);
    let node = this.#root;
    if (event.parentHash !== null) {
      const parent = lookup.get(event.parentHash);
      if (!parent) return "parent_block_not_found";
      node = parent;
    }
    const seen = new Set<bigint>();
    for (const block of event.blocks) {
      if (seen.has(block.blockHash) || block.blockHash === event.parentHash) return "invalid_block";
      seen.add(block.blockHash);
    }
    for (const block of event.blocks) {
      node.children ??= new Map();
      let child = node.children.get(block.tokensHash);
      if (!child) {
        child = { tokensHash: block.tokensHash, parent: node, children: undefined, workers: [] };
        node.children.set(block.tokensHash, child);
      }
      if (!child.workers.includes(workerId)) child.workers.push(workerId);
      lookup.set(block.blockHash, child);
      node = child;
    }
    return "ok";
  }

  /**
   * Drops the worker from each named block (no cascade to descendants). Unknown hashes are
   * skipped; the result is `block_not_found` if any was, after the rest applied.
   */
  applyRemoved(workerId: string, blockHashes: readonly bigint[]): ApplyStatus {
    const lookup = this.#lookup.get(workerId);
    let status: ApplyStatus = "ok";
    for (const hash of blockHashes) {
      const node = lookup?.get(hash);
      if (!node || !lookup) {
        status = "block_not_found";
        continue;
      }
      lookup.delete(hash);
      this.#dropWorker(node, workerId);
    }
    return status;
  }

  /** Removes every block of the worker (a `cleared` event, or the worker left discovery). */
  removeWorker(workerId: string): void {
    const lookup = this.#lookup.get(workerId);
    if (!lookup) return;
    for (const node of lookup.values()) this.#dropWorker(node, workerId);
    this.#lookup.delete(workerId);
  }

  /** Walks the query's local hashes from the root; a worker drops out at the first block it lacks. */
  findMatches(localHashes: readonly bigint[]): OverlapScores {
    const scores = new Map<string, number>();
    let node = this.#root;
    let active: string[] | undefined;
    for (let depth = 0; depth < localHashes.length; depth++) {
      const child = node.children?.get(localHashes[depth] as bigint);
      if (!child) break;
      if (active === undefined) active = [...child.workers];
      else if (child.workers.length > 8) {
        const holders = new Set(child.workers);
        active = active.filter((w) => holders.has(w));
      } else active = active.filter((w) => child.workers.includes(w));
      if (active.length === 0) break;
      for (const w of active) scores.set(w, depth + 1);
      node = child;
    }
    const treeSizes = new Map<string, number>();
    for (const [worker, lookup] of this.#lookup) treeSizes.set(worker, lookup.size);
    return { scores, treeSizes };
  }

  /** Blocks a worker holds. */
  blockCount(workerId: string): number {
    return this.#lookup.get(workerId)?.size ?? 0;
  }

  #lookupOf(workerId: string): Map<bigint, RadixNode> {
    let lookup = this.#lookup.get(workerId);
    if (!lookup) {
      lookup = new Map();
      this.#lookup.set(workerId, lookup);
    }
    return lookup;
  }

  #dropWorker(node: RadixNode, workerId: string): void {
    const at = node.workers.indexOf(workerId);
    if (at >= 0) node.workers.splice(at, 1);
    if (node.workers.length > 0) return;
    // Nobody holds it: its subtree is unreachable for matching, so let it go.
    node.children = undefined;
    node.parent?.children?.delete(node.tokensHash);
  }
}
