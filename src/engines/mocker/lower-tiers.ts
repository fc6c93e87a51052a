import type { KvEvent } from "../../protocol/index.js";
import type { KvEventSink, KvTier } from "./kv-tier.js";
import type { ObjectTier } from "./object-tier.js";
import type { CachedBlock } from "./stored-events.js";

/** The tiers below the device, fastest first. */
export type LowerTierName = "host" | "disk" | "object";

/** A count per lower tier (blocks onboarded, or prompt tokens served). */
export type TierCounts = Record<LowerTierName, number>;

/** The order onboarding looks in: the fastest tier that holds a block serves it. */
export const LOWER_TIERS: readonly LowerTierName[] = ["host", "disk", "object"];

/** Frequency at which a block may go to disk (KVBM's offload filter). */
const DISK_MIN_FREQUENCY = 2;
const FREQUENCY_CAP = 1 << 20;

export interface LowerTiersOptions {
  readonly host?: KvTier | undefined;
  readonly disk?: KvTier | undefined;
  /** Shared with other engines; this engine's blocks there publish through `sink`. */
  readonly object?: ObjectTier | undefined;
  /** This engine's KV events. */
  readonly sink: KvEventSink;
  /** Parent and token hash of a block the device holds. */
  readonly deviceBlock: (hash: bigint) => CachedBlock | undefined;
  /** How many blocks' frequencies to remember (the least recently used are forgotten). */
  readonly frequencyLimit: number;
}

/**
 * An engine's host, disk and object tiers with KVBM's policies: the device's blocks are written
 * through to the host and the object store as they register; a block goes to disk only once its
 * frequency reaches 2 (it starts at 1 on its first use and doubles on each later one), from the
 * host or, without one, from the device. Every copy writes the ancestors the tier lacks first, so
 * each stored event names a parent its readers know.
 */
export class LowerTiers {
  readonly host: KvTier | undefined;
  readonly disk: KvTier | undefined;
  readonly object: ObjectTier | undefined;
  readonly #o: LowerTiersOptions;
  /** Uses of each block, least recently used first (only counted with a disk tier). */
  readonly #frequency = new Map<bigint, number>();

  constructor(options: LowerTiersOptions) {
    this.#o = options;
    this.host = options.host;
    this.disk = options.disk;
    this.object = options.object;
  }

  /** The fastest tier holding a block, or undefined. */
  fastestHolding(hash: bigint): LowerTierName | undefined {
    return LOWER_TIERS.find((name) => this[name]?.has(hash));
  }

  /** The device registered a block: write-through to the host and the object store. */
  registered(hash: bigint): void {
    if (this.host) this.#copyChain(this.host, hash);
    if (this.object) this.#copyChain(this.object, hash);
  }

  /**
   * A request used a block (computed it, or found it in some tier): its frequency doubles (1 on
   * first use), and at 2 it goes to disk. Call for a request's blocks in prefix order.
   */
  used(hash: bigint): void {
    const disk = this.disk;
    if (!disk) return;
    const before = this.#frequency.get(hash);
    this.#frequency.delete(hash);
    if (this.#frequency.size >= this.#o.frequencyLimit) {
      const oldest = this.#frequency.keys().next();
      if (!oldest.done) this.#frequency.delete(oldest.value);
    }
    const frequency = before === undefined ? 1 : Math.min(before * 2, FREQUENCY_CAP);
    this.#frequency.set(hash, frequency);
    if (frequency >= DISK_MIN_FREQUENCY) this.#copyChain(disk, hash);
  }

  /** Marks a block recently used on every tier holding it. */
  touch(hash: bigint): void {
    this.host?.touch(hash);
    this.disk?.touch(hash);
    this.object?.touch(hash);
  }

  /** This engine's blocks on its tiers as stored events (the object store: those it wrote). */
  dump(): KvEvent[] {
    return [...(this.host?.dump() ?? []), ...(this.disk?.dump() ?? []), ...(this.object?.dump(this.#o.sink) ?? [])];
  }

  /**
   * Drops the host and disk tiers silently (the caller announces a `kv-cache-cleared`). The object
   * store is shared and keeps its blocks: the returned events announce again the ones this engine
   * wrote, for readers that the clear made forget them.
   */
  clear(): KvEvent[] {
    this.host?.clear();
    this.disk?.clear();
    this.#frequency.clear();
    return this.object?.dump(this.#o.sink) ?? [];
  }

  /** Copies a block to `tier` after the ancestors it lacks, top first. */
  #copyChain(tier: KvTier, hash: bigint): void {
    const chain: [bigint, CachedBlock][] = [];
    for (let h: bigint | null = hash; h !== null && !tier.has(h); ) {
      const block = this.#blockAnywhere(h);
      if (!block) break;
      chain.push([h, block]);
      h = block.parent;
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const [h, block] = chain[i] as [bigint, CachedBlock];
      tier.offload(h, block.parent, block.tokensHash, this.#o.sink);
    }
  }

  #blockAnywhere(hash: bigint): CachedBlock | undefined {
    return this.#o.deviceBlock(hash) ?? this.host?.get(hash) ?? this.disk?.get(hash) ?? this.object?.get(hash);
  }
}
