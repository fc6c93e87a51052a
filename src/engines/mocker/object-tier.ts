import { KvTier } from "./kv-tier.js";

export interface ObjectTierOptions {
  /** Capacity in blocks, shared by every engine that uses the tier. */
  readonly capacityBlocks: number;
  /** Tokens per block; every engine sharing the tier must use the same. */
  readonly blockSize: number;
  /** Object-store-to-device bandwidth for onboarding, GB/s. Default 1 (a remote object store). */
  readonly gbps?: number;
}

/**
 * The mocker's object tier (KVBM's G4, a remote object store such as S3): one instance shared by
 * every engine of a deployment. Each engine writes through every block it registers; a block
 * another engine already put is not written again (KVBM's conditional PUT), only marked recently
 * used. Evicted least-recently-used. Its events carry storage tier `external` and are published by
 * the engine that wrote the block; any engine can onboard from it.
 */
export class ObjectTier extends KvTier {
  /** Onboarding bandwidth, GB/s. */
  readonly gbps: number;

  constructor(options: ObjectTierOptions) {
    const gbps = options.gbps ?? 1;
    if (!(options.capacityBlocks >= 1))
      throw new RangeError(`an object tier needs capacityBlocks ≥ 1, got ${options.capacityBlocks}`);
    if (!(gbps > 0)) throw new RangeError(`an object tier needs gbps > 0, got ${gbps}`);
    super("external", options.capacityBlocks, options.blockSize);
    this.gbps = gbps;
  }
}
