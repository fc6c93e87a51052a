/** Frequency levels of the pool: 1, 2–3, 4–7, 8 and more hits. */
const LEVELS = 4;

interface PoolEntry<V> {
  readonly value: V;
  readonly bytes: number;
  frequency: number;
  level: number;
}

export interface BlockPoolOptions {
  /** Byte budget; inserting past it evicts. */
  readonly capacityBytes: number;
  /** Every this many hits, each block's frequency drops by one (floor 1). Default 4096. */
  readonly decayEveryHits?: number;
}

/**
 * Blocks held by a tier, within a byte budget, evicted by Dynamo's multi-level LRU with frequency:
 * a block's frequency starts at 1, doubles on each hit and decays by one every `decayEveryHits`
 * hits; eviction takes the least recently used block of the lowest frequency level first. A chain
 * touched leaf first keeps its parents more recent than its children, so leaves go first and the
 * prefixes that remain stay reachable.
 */
export class BlockPool<V> {
  readonly capacityBytes: number;
  readonly #decayEveryHits: number;
  /** One map per frequency level; a Map keeps insertion order, so its first key is the oldest. */
  readonly #levels: Map<bigint, PoolEntry<V>>[] = Array.from({ length: LEVELS }, () => new Map());
  #bytes = 0;
  #count = 0;
  #hitsSinceDecay = 0;

  constructor(options: BlockPoolOptions) {
    this.capacityBytes = options.capacityBytes;
    this.#decayEveryHits = options.decayEveryHits ?? 4096;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#count;
  }

  has(hash: bigint): boolean {
    return this.#find(hash) !== undefined;
  }

  /** The value without counting a hit. */
  peek(hash: bigint): V | undefined {
    return this.#find(hash)?.value;
  }

  /** Frequency of a held block (undefined when absent). */
  frequency(hash: bigint): number | undefined {
    return this.#find(hash)?.frequency;
  }

  /** Whether `bytes` more fit after evicting everything evictable (false when larger than the budget). */
  fits(bytes: number): boolean {
    return bytes <= this.capacityBytes;
  }

  /**
   * Adds a block (a held one is only touched), evicting as the budget demands. Returns the evicted
   * hashes and values, oldest first; a block larger than the whole budget is not added.
   */
  insert(hash: bigint, value: V, bytes: number): Array<{ hash: bigint; value: V }> {
    if (this.#find(hash)) {
      this.#moveToNewest(hash);
      return [];
    }
    if (!this.fits(bytes)) return [];
    const evicted: Array<{ hash: bigint; value: V }> = [];
    while (this.#bytes + bytes > this.capacityBytes) {
      const victim = this.#evictOne();
      if (!victim) break;
      evicted.push(victim);
    }
    const entry: PoolEntry<V> = { value, bytes, frequency: 1, level: 0 };
    (this.#levels[0] as Map<bigint, PoolEntry<V>>).set(hash, entry);
    this.#bytes += bytes;
    this.#count++;
    return evicted;
  }

  /** Counts a hit: doubles the block's frequency and makes it the most recently used. */
  hit(hash: bigint): V | undefined {
    const entry = this.#find(hash);
    if (!entry) return undefined;
    entry.frequency = Math.min(entry.frequency * 2, 1 << 20);
    this.#moveToNewest(hash);
    if (++this.#hitsSinceDecay >= this.#decayEveryHits) this.#decay();
    return entry.value;
  }

  /** Removes a block; returns its value. */
  delete(hash: bigint): V | undefined {
    for (const level of this.#levels) {
      const entry = level.get(hash);
      if (!entry) continue;
      level.delete(hash);
      this.#bytes -= entry.bytes;
      this.#count--;
      return entry.value;
    }
    return undefined;
  }

  /** Every held block, lowest level and oldest first. */
  *entries(): IterableIterator<[bigint, V]> {
    for (const level of this.#levels) for (const [hash, entry] of level) yield [hash, entry.value];
  }

  clear(): void {
    for (const level of this.#levels) level.clear();
    this.#bytes = 0;
    this.#count = 0;
  }

  #find(hash: bigint): PoolEntry<V> | undefined {
    for (const level of this.#levels) {
      const entry = level.get(hash);
      if (entry) return entry;
    }
    return undefined;
  }

  #moveToNewest(hash: bigint): void {
    for (const level of this.#levels) {
      const entry = level.get(hash);
      if (!entry) continue;
      level.delete(hash);
      entry.level = levelOf(entry.frequency);
      (this.#levels[entry.level] as Map<bigint, PoolEntry<V>>).set(hash, entry);
      return;
    }
  }

  #evictOne(): { hash: bigint; value: V } | undefined {
    for (const level of this.#levels) {
      const oldest = level.entries().next();
      if (oldest.done) continue;
      const [hash, entry] = oldest.value;
      level.delete(hash);
      this.#bytes -= entry.bytes;
      this.#count--;
      return { hash, value: entry.value };
    }
    return undefined;
  }

  #decay(): void {
    this.#hitsSinceDecay = 0;
    for (let l = 1; l < LEVELS; l++) {
      const level = this.#levels[l] as Map<bigint, PoolEntry<V>>;
      for (const [hash, entry] of [...level]) {
        entry.frequency = Math.max(1, entry.frequency - 1);
        const next = levelOf(entry.frequency);
        if (next !== l) {
          // A block that drops a level joins it as its most recent block: it was hit more than its peers.
          level.delete(hash);
          entry.level = next;
          (this.#levels[next] as Map<bigint, PoolEntry<V>>).set(hash, entry);
        }
      }
    }
  }
}

function levelOf(frequency: number): number {
  return Math.min(LEVELS - 1, Math.floor(Math.log2(frequency)));
}
