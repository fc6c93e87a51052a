import type { KvEvent } from "../../protocol/index.js";
import type { HostTier } from "./host-tier.js";
import { type CachedBlock, storedEventsParentsFirst } from "./stored-events.js";

/**
 * vLLM-like paged KV cache with prefix caching: full blocks are identified by their sequence hash
 * and shared between requests; blocks nobody uses stay cached until LRU eviction needs the space.
 * Every change to what is cached is reported as a KV event. With a host tier, every block the
 * device registers is also copied there, and blocks the device lost can be onboarded back.
 */
export class BlockManager {
  readonly capacity: number;
  readonly blockSize: number;
  /** Reference count of each cached full block (0 = cached but unused, evictable). */
  readonly #refs = new Map<bigint, number>();
  /** Unused cached blocks, oldest first (Map keeps insertion order). */
  readonly #lru = new Map<bigint, true>();
  /** Parent and token hash of each cached block, for dumps. */
  readonly #meta = new Map<bigint, CachedBlock>();
  /** Blocks held by requests that are not full yet (no hash). */
  #partialBlocks = 0;
  readonly #emit: (events: KvEvent[]) => void;
  readonly #host: HostTier | undefined;
  /** Blocks copied back from the host tier since the scheduler last asked. */
  #onboarded = 0;

  constructor(capacity: number, blockSize: number, emit: (events: KvEvent[]) => void, host?: HostTier) {
    this.capacity = capacity;
    this.blockSize = blockSize;
    this.#emit = emit;
    this.#host = host;
  }

  /** Blocks in use by running requests (full and partial). */
  get activeBlocks(): number {
    return this.#refs.size - this.#lru.size + this.#partialBlocks;
  }

  /** Blocks that could be handed out now (free plus evictable). */
  get availableBlocks(): number {
    return this.capacity - this.activeBlocks;
  }

  /** Leading blocks of `hashes` that are cached. */
  cachedPrefix(hashes: readonly bigint[]): number {
    let n = 0;
    while (n < hashes.length && this.#refs.has(hashes[n] as bigint)) n++;
    return n;
  }

  /** Leading blocks of `hashes[from…]` the host tier holds (0 without one). */
  hostPrefix(hashes: readonly bigint[], from: number): number {
    const host = this.#host;
    if (!host) return 0;
    let n = from;
    while (n < hashes.length && host.has(hashes[n] as bigint)) n++;
    return n - from;
  }

  /**
   * Copies a block back from the host tier into a device block the caller then holds; false when
   * no device block is free.
   */
  onboard(hash: bigint, tokensHash: bigint, parent: bigint | null): boolean {
    if (!this.allocatePartial()) return false;
    this.commitFull(hash, tokensHash, parent);
    this.#onboarded++;
    return true;
  }

  /** Blocks onboarded since the last call (the scheduler charges their copy to the step). */
  takeOnboarded(): number {
    const n = this.#onboarded;
    this.#onboarded = 0;
    return n;
  }

  /** Takes a reference on a cached block (a prefix hit). */
  acquireCached(hash: bigint): void {
    const count = this.#refs.get(hash);
    if (count === undefined) throw new Error("acquireCached on a block that is not cached");
    if (count === 0) this.#lru.delete(hash);
    this.#refs.set(hash, count + 1);
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
    const count = this.#refs.get(hash);
    if (count !== undefined) {
      if (count === 0) this.#lru.delete(hash);
      this.#refs.set(hash, count + 1);
      return;
    }
    this.#refs.set(hash, 1);
    this.#meta.set(hash, { parent, tokensHash });
    this.#emit([
      { type: "kv-block-stored", parentHash: parent, blocks: [{ blockHash: hash, tokensHash }], blockSize: this.blockSize },
    ]);
    if (this.#host) this.#offloadChain(hash);
  }

  /**
   * Write-through to the host tier: the block, after any ancestors the host lost (all are on the
   * device: the sequence holds them), top first so each stored event names a known parent.
   */
  #offloadChain(hash: bigint): void {
    const host = this.#host as HostTier;
    const chain: bigint[] = [];
    for (let h: bigint | null = hash; h !== null && !host.has(h); h = this.#meta.get(h)?.parent ?? null) {
      if (!this.#meta.has(h)) break;
      chain.push(h);
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const h = chain[i] as bigint;
      const meta = this.#meta.get(h) as CachedBlock;
      host.offload(h, meta.parent, meta.tokensHash);
    }
  }

  releasePartial(): void {
    this.#partialBlocks--;
  }

  /** Drops a reference; an unused block stays cached (evictable), and recently used on the host. */
  release(hash: bigint): void {
    const count = this.#refs.get(hash);
    if (count === undefined) return;
    this.#host?.touch(hash);
    if (count <= 1) {
      this.#refs.set(hash, 0);
      this.#lru.set(hash, true);
    } else {
      this.#refs.set(hash, count - 1);
    }
  }

  /**
   * Every cached block as one stored event, parents before children, device then host. A block
   * whose parent was evicted is left out: no prefix match can reach it.
   */
  dump(): KvEvent[] {
    return [...storedEventsParentsFirst(this.#meta, this.blockSize), ...(this.#host?.dump() ?? [])];
  }

  /** Drops every unused cached block, and the host tier. */
  clear(): void {
    this.#host?.clear();
    for (const hash of this.#lru.keys()) {
      this.#refs.delete(hash);
      this.#meta.delete(hash);
    }
    this.#lru.clear();
    this.#emit([{ type: "kv-cache-cleared" }]);
  }

  #makeRoom(): boolean {
    if (this.#refs.size + this.#partialBlocks < this.capacity) return true;
    const oldest = this.#lru.keys().next();
    if (oldest.done) return false;
    this.#lru.delete(oldest.value);
    this.#refs.delete(oldest.value);
    this.#meta.delete(oldest.value);
    this.#emit([{ type: "kv-block-removed", blockHashes: [oldest.value] }]);
    return true;
  }
}
