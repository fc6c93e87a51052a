/**
 * KV cache events with Dynamo's semantics: a worker announces blocks it stored (chained by parent
 * hash), blocks it removed, and that it cleared everything. Hashes are u64 values.
 */
/**
 * Where a worker keeps blocks, with Dynamo's storage tiers (from vLLM's `medium`): GPU memory, pinned
 * host memory, local disk, or storage outside the worker. Events without one are about the device.
 */
export type StorageTier = "device" | "host_pinned" | "disk" | "external";

/** One stored block: the engine's (external) block hash and the local hash of its tokens. */
export interface StoredBlock {
  /** Identifies the block for parent links and removals; opaque to readers. */
  readonly blockHash: bigint;
  /** XXH3-64 (seed 1337) of the block's token ids: what the router's tree is keyed by. */
  readonly tokensHash: bigint;
}

export interface KvBlockStored {
  readonly type: "kv-block-stored";
  /** Block hash of the block before the first one here; null when they start a sequence. */
  readonly parentHash: bigint | null;
  /** Consecutive blocks of one sequence, each the child of the one before. */
  readonly blocks: readonly StoredBlock[];
  /** Number of tokens per block, so a reader can detect a block-size mismatch. */
  readonly blockSize: number;
  /** Absent: the device. */
  readonly storageTier?: StorageTier | undefined;
}

export interface KvBlockRemoved {
  readonly type: "kv-block-removed";
  readonly blockHashes: readonly bigint[];
  /** Absent: the device. */
  readonly storageTier?: StorageTier | undefined;
}

/** The worker dropped every block it held, in every tier. */
export interface KvCacheCleared {
  readonly type: "kv-cache-cleared";
}

export type KvEvent = KvBlockStored | KvBlockRemoved | KvCacheCleared;

/** A batch of KV events from one worker, numbered so readers can detect gaps. */
export interface KvEventBatch {
  readonly type: "kv-event-batch";
  readonly workerId: string;
  /** Monotonic per worker, starting at 1. */
  readonly eventId: number;
  readonly events: readonly KvEvent[];
}

/** Asks a worker for its KV event batches from `fromEventId` on (recovery after a gap). */
export interface KvEventsQuery {
  readonly type: "kv-events-query";
  readonly fromEventId: number;
}

/**
 * A worker's whole cache as stored events, sent when the asked-for batches are no longer in its
 * ring buffer. A reader replaces everything it knew of the worker with it.
 */
export interface KvEventsDump {
  readonly type: "kv-events-dump";
  readonly workerId: string;
  /** The last event id the dump includes. */
  readonly eventId: number;
  readonly events: readonly KvEvent[];
}

/** A worker's load, published periodically and on change. */
export interface WorkerLoad {
  readonly type: "worker-load";
  readonly workerId: string;
  readonly activeRequests: number;
  readonly waitingRequests: number;
  readonly activeKvBlocks: number;
  readonly totalKvBlocks: number;
  /** What the worker measured of its prefill and of loading KV back from its tiers, when it has. */
  readonly kvCosts?: KvCosts | undefined;
  /** LoRA adapters ready to run now (a request for another one waits for it to load). */
  readonly residentLoras?: readonly string[] | undefined;
  /**
   * The id of the last KV event batch the worker published (0 before its first): a router that has
   * applied less than this for a while has lost events. Absent from workers that do not say.
   */
  readonly kvEventId?: number | undefined;
}

/**
 * A worker's measured rates, from which a router estimates a request's prefill time there:
 * recomputing a token costs 1 / `prefillTokensPerSecond`; loading it back from a tier costs its KV
 * bytes over that tier's onboarding bandwidth. Absent rates were not measured yet.
 */
export interface KvCosts {
  readonly prefillTokensPerSecond?: number | undefined;
  /** Onboarding bandwidth per tier, bytes per second (reading, assembling and loading). */
  readonly onboardBytesPerSecond?: Partial<Record<OnboardTier, number>> | undefined;
}

/** The storage tiers a worker onboards KV from, by their KV event names. */
export type OnboardTier = "host_pinned" | "disk" | "external";

/** A worker's lower tier (host memory, local disk, a shared object store) by its KV event name. */
export const ONBOARD_TIER = { host: "host_pinned", disk: "disk", object: "external" } as const satisfies Record<
  string,
  OnboardTier
>;

/**
 * The share of a token's prefill that loading its KV back from `tier` saves, from `costs`:
 * 1 − bytesPerToken × prefill tokens/s ÷ the tier's bytes/s, clamped to [0, 1]; 0 means loading it
 * is no faster than recomputing it. Undefined when a rate is missing. The router weighs a worker's
 * lower-tier blocks by it and workers onboard only where it is above 0, so both agree.
 */
export function onboardingSaving(
  costs: KvCosts | undefined,
  tier: OnboardTier,
  bytesPerToken: number | undefined,
): number | undefined {
  const bandwidth = costs?.onboardBytesPerSecond?.[tier];
  const rate = costs?.prefillTokensPerSecond;
  if (!bandwidth || !rate || !bytesPerToken) return undefined;
  return Math.min(1, Math.max(0, 1 - (bytesPerToken * rate) / bandwidth));
}
