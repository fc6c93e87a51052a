import type { KvEvent } from "../../protocol/index.js";
import { type CachedBlock, storedEventsParentsFirst } from "./stored-events.js";

/**
 * The mocker's host tier (KVBM's G2, pinned host memory): a write-through copy of the blocks the
 * device registers, evicted least-recently-used at its own capacity. A block the device evicted can
 * come back from here by a copy instead of a recomputation. Its changes are KV events with storage
 * tier `host_pinned`, so a router can count what a worker keeps on its host.
 */
export class HostTier {
  readonly capacity: number;
  readonly #blockSize: number;
  /** Blocks by sequence hash, least recently used first (a Map keeps insertion order). */
  readonly #blocks = new Map<bigint, CachedBlock>();
  readonly #emit: (events: KvEvent[]) => void;

  constructor(capacity: number, blockSize: number, emit: (events: KvEvent[]) => void) {
    this.capacity = capacity;
    this.#blockSize = blockSize;
    this.#emit = emit;
  }

  get size(): number {
    return this.#blocks.size;
  }

  has(hash: bigint): boolean {
    return this.#blocks.has(hash);
  }

  /**
   * Copies a device block here, or marks it recently used if it is here. Its parent should be here
   * already (the block manager offloads chains from the top), so readers can chain it.
   */
  offload(hash: bigint, parent: bigint | null, tokensHash: bigint): void {
    if (this.touch(hash)) return;
    while (this.#blocks.size >= this.capacity) this.#evictOldest();
    this.#blocks.set(hash, { parent, tokensHash });
    this.#emit([
      {
        type: "kv-block-stored",
        parentHash: parent,
        blocks: [{ blockHash: hash, tokensHash }],
        blockSize: this.#blockSize,
        storageTier: "host_pinned",
      },
    ]);
  }

  /** Marks a block recently used; false when it is not here. */
  touch(hash: bigint): boolean {
    const block = this.#blocks.get(hash);
    if (!block) return false;
    this.#blocks.delete(hash);
    this.#blocks.set(hash, block);
    return true;
  }

  /** Every block as stored events, parents before children; orphans (parent evicted) left out. */
  dump(): KvEvent[] {
    return storedEventsParentsFirst(this.#blocks, this.#blockSize, "host_pinned");
  }

  /** Drops everything silently (the caller announces a `kv-cache-cleared`, which covers every tier). */
  clear(): void {
    this.#blocks.clear();
  }

  #evictOldest(): void {
    const oldest = this.#blocks.keys().next();
    if (oldest.done) return;
    this.#blocks.delete(oldest.value);
    this.#emit([{ type: "kv-block-removed", blockHashes: [oldest.value], storageTier: "host_pinned" }]);
  }
}
