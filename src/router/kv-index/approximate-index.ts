import { hashBlocks } from "../../protocol/index.js";
import type { Clock } from "../../runtime/index.js";
import { type OverlapScores, RadixTree } from "./radix-tree.js";

export interface ApproximateIndexOptions {
  readonly clock: Clock;
  readonly blockSize: number;
  /** How long a routing decision counts as cached blocks. Default 120 s (Dynamo). */
  readonly ttlMs?: number;
  /** Blocks kept at most; beyond it the oldest decisions go until 80% remain. Default 2^20. */
  readonly maxBlocks?: number;
}

interface Entry {
  readonly workerId: string;
  readonly blockHashes: bigint[];
  readonly expiresAt: number;
}

/**
 * A KV index for workers that publish no KV events (Dynamo's approximate mode): the router records
 * its own decisions as if the chosen worker had stored the request's blocks, forgets them after a
 * TTL, and prunes the oldest when the tree grows past a cap.
 */
export class ApproximateIndex {
  readonly tree = new RadixTree();
  readonly #o: Required<ApproximateIndexOptions>;
  /** Decisions in expiry order (the TTL is constant, so insertion order is expiry order). */
  readonly #entries = new Map<string, Entry>();
  /** How many live decisions of a worker name a block: `${worker}:${hash}` → count. */
  readonly #refs = new Map<string, number>();
  #blocks = 0;

  constructor(options: ApproximateIndexOptions) {
    this.#o = { ttlMs: 120_000, maxBlocks: 2 ** 20, ...options };
  }

  findMatches(localHashes: readonly bigint[]): OverlapScores {
    this.#expire();
    return this.tree.findMatches(localHashes);
  }

  /** Records that `workerId` now holds the full blocks of `tokenIds` (computed with adapter `lora`). */
  recordDecision(workerId: string, tokenIds: readonly number[], lora?: string): void {
    this.#expire();
    const { local, sequence } = hashBlocks(tokenIds, this.#o.blockSize, lora);
    if (local.length === 0) return;
    const key = `${workerId}:${sequence.at(-1)}`;
    const previous = this.#entries.get(key);
    if (previous) this.#drop(key, previous);
    this.tree.applyStored(workerId, {
      parentHash: null,
      blocks: local.map((tokensHash, i) => ({ tokensHash, blockHash: sequence[i] as bigint })),
    });
    for (const hash of sequence) {
      const ref = `${workerId}:${hash}`;
      this.#refs.set(ref, (this.#refs.get(ref) ?? 0) + 1);
    }
    this.#entries.set(key, { workerId, blockHashes: sequence, expiresAt: this.#o.clock.now() + this.#o.ttlMs });
    this.#blocks += sequence.length;
    if (this.#blocks > this.#o.maxBlocks) this.#prune();
  }

  get size(): number {
    return this.#blocks;
  }

  #expire(): void {
    const now = this.#o.clock.now();
    for (const [key, entry] of this.#entries) {
      if (entry.expiresAt > now) break;
      this.#drop(key, entry);
    }
  }

  #prune(): void {
    const target = Math.floor(this.#o.maxBlocks * 0.8);
    for (const [key, entry] of this.#entries) {
      if (this.#blocks <= target) break;
      this.#drop(key, entry);
    }
  }

  #drop(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#blocks -= entry.blockHashes.length;
    // Only blocks that no live decision of the same worker still names leave the tree.
    const gone: bigint[] = [];
    for (const hash of entry.blockHashes) {
      const ref = `${entry.workerId}:${hash}`;
      const count = (this.#refs.get(ref) ?? 1) - 1;
      if (count > 0) this.#refs.set(ref, count);
      else {
        this.#refs.delete(ref);
        gone.push(hash);
      }
    }
    this.tree.applyRemoved(entry.workerId, gone);
  }
}
