import type { KvEvent } from "../../protocol/index.js";
import type { KvTier } from "./kv-tier.js";
import { type LowerTierName, LowerTiers, type TierCounts } from "./lower-tiers.js";
import { type LruEntry, LruList } from "./lru-list.js";
import type { ObjectTier } from "./object-tier.js";
import { type CachedBlock, storedEventsParentsFirst } from "./stored-events.js";

/** A full block the device caches, and how many requests hold it (0: unused, evictable). */
interface DeviceBlock extends CachedBlock, LruEntry {
  readonly hash: bigint;
  refs: number;
}

/** The tiers an engine keeps below its device; each is optional. */
export interface BlockTiers {
  readonly host?: KvTier | undefined;
  readonly disk?: KvTier | undefined;
  /** Shared with other engines. */
  readonly object?: ObjectTier | undefined;
  /** Whether onboarding from a tier saves time; a tier it does not is left unread. Default: every tier. */
  readonly onboards?: ((tier: LowerTierName) => boolean) | undefined;
}

/**
 * vLLM-like paged KV cache with prefix caching: full blocks are identified by their sequence hash
 * and shared between requests; blocks nobody uses stay cached until LRU eviction needs the space.
 * Every change to what is cached is reported as a KV event. With lower tiers (host, disk, object
 * store), the blocks the device registers are copied down by KVBM's policies, and blocks the
 * device lost can be onboarded back from the fastest tier that holds them.
 */
export class BlockManager {
  readonly capacity: number;
  readonly blockSize: number;
  /** Each cached full block: parent and token hash (for dumps), and its reference count. */
  readonly #blocks = new Map<bigint, DeviceBlock>();
  /** Unused cached blocks, least recently released first. */
  readonly #lru = new LruList<DeviceBlock>();
  /** Blocks held by requests that are not full yet (no hash). */
  #partialBlocks = 0;
  readonly #emit: (events: KvEvent[]) => void;
  readonly #tiers: LowerTiers | undefined;
  readonly #onboards: ((tier: LowerTierName) => boolean) | undefined;
  /** Blocks copied back from each lower tier since the scheduler last asked. */
  #onboarded: TierCounts = { host: 0, disk: 0, object: 0 };

  constructor(capacity: number, blockSize: number, emit: (events: KvEvent[]) => void, tiers: BlockTiers = {}) {
    this.capacity = capacity;
    this.blockSize = blockSize;
    this.#emit = emit;
    const { host, disk, object } = tiers;
    this.#onboards = tiers.onboards;
    this.#tiers =
      host || disk || object
        ? new LowerTiers({
            host,
            disk,
            object,
            sink: emit,
            deviceBlock: (hash) => this.#blocks.get(hash),
            frequencyLimit: 2 * (capacity + (host?.capacity ?? 0) + (disk?.capacity ?? 0)),
          })
        : undefined;
  }

  /** Blocks in use by running requests (full and partial). */
  get activeBlocks(): number {
    return this.#blocks.size - this.#lru.size + this.#partialBlocks;
  }

  /** Blocks that could be handed out now (free plus evictable). */
  get availableBlocks(): number {
    return this.capacity - this.activeBlocks;
  }

  /** Whether the device caches a full block. */
  isCached(hash: bigint): boolean {
    return this.#blocks.has(hash);
  }

  /**
   * The fastest lower tier holding a block, when loading it from there is faster than recomputing
   * it (undefined: none does, or the fastest that does is no faster than recomputing).
   */
  lowerTierHolding(hash: bigint): LowerTierName | undefined {
    const tier = this.#tiers?.fastestHolding(hash);
    return tier === undefined || (this.#onboards?.(tier) ?? true) ? tier : undefined;
  }

  /**
   * Copies a block back from lower tier `from` into a device block the caller then holds; false
   * when no device block is free.
   */
  onboard(hash: bigint, tokensHash: bigint, parent: bigint | null, from: LowerTierName): boolean {
    if (!this.allocatePartial()) return false;
    this.commitFull(hash, tokensHash, parent);
    this.#tiers?.touch(hash);
    this.#onboarded[from]++;
    return true;
  }

  /** Blocks onboarded from each tier since the last call (the scheduler charges their copy to the step). */
  takeOnboarded(): TierCounts {
    const counts = this.#onboarded;
    this.#onboarded = { host: 0, disk: 0, object: 0 };
    return counts;
  }

  /** A request used a block (computed or reused): counts towards the disk filter. */
  used(hash: bigint): void {
    this.#tiers?.used(hash);
  }

  /** Takes a reference on a cached block (a prefix hit). */
  acquireCached(hash: bigint): void {
    const block = this.#blocks.get(hash);
    if (block === undefined) throw new Error("acquireCached on a block that is not cached");
    if (block.refs === 0) this.#lru.remove(block);
    block.refs++;
  }

  /** Reserves one not-yet-full block; false when the cache is full of blocks in use. */
  allocatePartial(): boolean {
    if (!this.#makeRoom()) return false;
    this.#partialBlocks++;
    return true;
  }

  /**
   * A partial block became full with sequence hash `hash` and local hash `tokensHash` (child of
   * `parent`). If an identical block is
   * already cached the two merge and the partial reservation is returned.
   */
  commitFull(hash: bigint, tokensHash: bigint, parent: bigint | null): void {
    this.#partialBlocks--;
    const block = this.#blocks.get(hash);
    if (block !== undefined) {
      if (block.refs === 0) this.#lru.remove(block);
      block.refs++;
      return;
    }
    this.#blocks.set(hash, { hash, parent, tokensHash, refs: 1, older: undefined, newer: undefined, listed: false });
    this.#emit([
      { type: "kv-block-stored", parentHash: parent, blocks: [{ blockHash: hash, tokensHash }], blockSize: this.blockSize },
    ]);
    this.#tiers?.registered(hash);
  }

  releasePartial(): void {
    this.#partialBlocks--;
  }

  /** Drops a reference; an unused block stays cached (evictable), and recently used on lower tiers. */
  release(hash: bigint): void {
    const block = this.#blocks.get(hash);
    if (block === undefined) return;
    this.#tiers?.touch(hash);
    if (block.refs <= 1) {
      block.refs = 0;
      this.#lru.add(block);
    } else {
      block.refs--;
    }
  }

  /**
   * Every cached block as one stored event, parents before children, device then lower tiers (of
   * the shared object store, the blocks this engine wrote). A block whose parent was evicted is
   * left out: no prefix match can reach it.
   */
  dump(): KvEvent[] {
    return [...storedEventsParentsFirst(this.#blocks, this.blockSize), ...(this.#tiers?.dump() ?? [])];
  }

  /**
   * Drops every unused cached block, and the host and disk tiers. The shared object store keeps
   * its blocks; those this engine wrote are announced again after the `kv-cache-cleared`.
   */
  clear(): void {
    const kept = this.#tiers?.clear() ?? [];
    for (const block of this.#lru.drain()) this.#blocks.delete(block.hash);
    this.#emit([{ type: "kv-cache-cleared" }]);
    if (kept.length > 0) this.#emit(kept);
  }

  #makeRoom(): boolean {
    if (this.#blocks.size + this.#partialBlocks < this.capacity) return true;
    const oldest = this.#lru.oldest();
    if (oldest === undefined) return false;
    this.#lru.remove(oldest);
    this.#blocks.delete(oldest.hash);
    this.#emit([{ type: "kv-block-removed", blockHashes: [oldest.hash] }]);
    return true;
  }
}
