import type { KvEvent, StorageTier } from "../../protocol/index.js";
import { type CachedBlock, storedEventsParentsFirst } from "./stored-events.js";

/** Where a tier's KV events go: the engine that publishes them. */
export type KvEventSink = (events: KvEvent[]) => void;

interface TierBlock extends CachedBlock {
  /** The engine that wrote the block publishes its stored and removed events. */
  readonly sink: KvEventSink;
}

/**
 * One tier of the mocker below the device (KVBM's G2 host, G3 disk or G4 object store): a copy of
 * blocks the device registered, evicted least-recently-used at its own capacity in blocks. Its
 * changes are KV events with its storage tier, published by the engine that wrote each block, so
 * a tier shared by several engines (the object store) reports each block once, under its writer.
 */
export class KvTier {
  readonly storageTier: StorageTier;
  readonly capacity: number;
  readonly blockSize: number;
  /** Blocks by sequence hash, least recently used first (a Map keeps insertion order). */
  readonly #blocks = new Map<bigint, TierBlock>();
  readonly #defaultSink: KvEventSink | undefined;

  /** `sink` publishes the events of blocks offloaded without one (a tier one engine owns). */
  constructor(storageTier: StorageTier, capacity: number, blockSize: number, sink?: KvEventSink) {
    this.storageTier = storageTier;
    this.capacity = capacity;
    this.blockSize = blockSize;
    this.#defaultSink = sink;
  }

  get size(): number {
    return this.#blocks.size;
  }

  has(hash: bigint): boolean {
    return this.#blocks.has(hash);
  }

  /** Parent and token hash of a block here (undefined when it is not). */
  get(hash: bigint): CachedBlock | undefined {
    return this.#blocks.get(hash);
  }

  /**
   * Copies a block here, or marks it recently used if it is here already (then nothing is
   * published: whoever wrote it did). Its parent should be here already, so readers can chain it.
   * Returns whether the block was new. Throws when neither `sink` nor the constructor's is given.
   */
  offload(hash: bigint, parent: bigint | null, tokensHash: bigint, sink: KvEventSink | undefined = this.#defaultSink): boolean {
    if (this.touch(hash)) return false;
    if (!sink) throw new Error(`the ${this.storageTier} tier needs the writer's event sink`);
    while (this.#blocks.size >= this.capacity) this.#evictOldest();
    this.#blocks.set(hash, { parent, tokensHash, sink });
    sink([
      {
        type: "kv-block-stored",
        parentHash: parent,
        blocks: [{ blockHash: hash, tokensHash }],
        blockSize: this.blockSize,
        storageTier: this.storageTier,
      },
    ]);
    return true;
  }

  /** Marks a block recently used; false when it is not here. */
  touch(hash: bigint): boolean {
    const block = this.#blocks.get(hash);
    if (!block) return false;
    this.#blocks.delete(hash);
    this.#blocks.set(hash, block);
    return true;
  }

  /**
   * Blocks as stored events, parents before children; orphans (parent evicted) left out. With
   * `writer`, only the blocks that sink wrote (their parents may be another writer's).
   */
  dump(writer?: KvEventSink): KvEvent[] {
    const events = storedEventsParentsFirst(this.#blocks, this.blockSize, this.storageTier);
    if (!writer) return events;
    return events.filter((e) => e.type === "kv-block-stored" && this.#blocks.get(e.blocks[0]?.blockHash ?? -1n)?.sink === writer);
  }

  /** Drops everything silently (the caller announces a `kv-cache-cleared`, which covers every tier). */
  clear(): void {
    this.#blocks.clear();
  }

  #evictOldest(): void {
    const oldest = this.#blocks.entries().next();
    if (oldest.done) return;
    const [hash, block] = oldest.value;
    this.#blocks.delete(hash);
    block.sink([{ type: "kv-block-removed", blockHashes: [hash], storageTier: this.storageTier }]);
  }
}
