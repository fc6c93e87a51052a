import type { KvEvent, StorageTier } from "../../protocol/index.js";
import type { BlockRecord } from "../block-record.js";

/** The tiers below the device, fastest first: KVBM's G2, G3 and G4. */
export type TierName = "host" | "disk" | "object";

/** The storage tier each of armature's tiers announces in its KV events. */
export const STORAGE_TIER: Readonly<Record<TierName, StorageTier>> = {
  host: "host_pinned",
  disk: "disk",
  object: "external",
};

/**
 * One tier of KV blocks below the device. Blocks are immutable and keyed by sequence hash; a tier
 * announces what it stores and drops as KV events of its storage tier.
 */
export interface KvTier {
  readonly name: TierName;
  /** Whether this process knows the block is here (a shared object tier may hold more). */
  has(hash: bigint): boolean;
  /**
   * The block, checked against its hash, layout and checksum; undefined when absent. Throws
   * TRANSFER_CORRUPTED for a block that fails its checks (the tier forgets it) and TRANSFER_FAILED
   * when the tier cannot be read.
   */
  read(hash: bigint): Promise<BlockRecord | undefined>;
  /** Stores blocks (parents before children); blocks already here are only marked used. */
  write(records: readonly BlockRecord[]): Promise<void>;
  /** Marks blocks used by a request (frequency and recency). */
  hit(hashes: readonly bigint[]): void;
  /** Bytes and blocks held (as this process knows them). */
  usage(): { bytes: number; blocks: number };
  /** Everything held as stored events, parents first (recovery dumps). */
  dump(): KvEvent[];
  close(): Promise<void>;
}

/** Receives a tier's KV events. */
export type TierEventSink = (events: KvEvent[]) => void;

/** What a stored event needs of a block. */
export interface ChainedBlock {
  readonly hash: bigint;
  readonly parent: bigint | null;
  readonly tokensHash: bigint;
}

/** Stored events for blocks, one event per run of consecutive blocks (each the child of the one before). */
export function storedEvents(records: readonly ChainedBlock[], blockSize: number, tier: StorageTier): KvEvent[] {
  const events: KvEvent[] = [];
  let run: { parent: bigint | null; blocks: { blockHash: bigint; tokensHash: bigint }[] } | undefined;
  let last: bigint | undefined;
  for (const record of records) {
    if (!run || record.parent !== last) {
      run = { parent: record.parent, blocks: [] };
      events.push({ type: "kv-block-stored", parentHash: run.parent, blocks: run.blocks, blockSize, storageTier: tier });
    }
    run.blocks.push({ blockHash: record.hash, tokensHash: record.tokensHash });
    last = record.hash;
  }
  return events;
}

/**
 * Stored events for a set of blocks with parents before children. A block whose parent is not in
 * the set is left out unless it starts a sequence: a reader could not chain it.
 */
export function dumpParentsFirst(records: readonly ChainedBlock[], blockSize: number, tier: StorageTier): KvEvent[] {
  const held = new Set(records.map((r) => r.hash));
  const children = new Map<bigint | null, ChainedBlock[]>();
  for (const record of records) {
    if (record.parent !== null && !held.has(record.parent)) continue;
    const list = children.get(record.parent) ?? [];
    list.push(record);
    children.set(record.parent, list);
  }
  const ordered: ChainedBlock[] = [];
  const stack = [...(children.get(null) ?? [])].reverse();
  for (let record = stack.pop(); record; record = stack.pop()) {
    ordered.push(record);
    stack.push(...[...(children.get(record.hash) ?? [])].reverse());
  }
  return storedEvents(ordered, blockSize, tier);
}
