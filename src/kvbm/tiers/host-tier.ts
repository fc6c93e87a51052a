import type { KvEvent } from "../../protocol/index.js";
import { BlockPool } from "../block-pool.js";
import type { BlockRecord } from "../block-record.js";
import { dumpParentsFirst, type KvTier, STORAGE_TIER, storedEvents, type TierEventSink } from "./kv-tier.js";

/**
 * G2: blocks in this process's memory within a byte budget (`--kv-host-bytes`), evicted by
 * frequency and recency. Reading one is a lookup; it is the tier a block comes back from fastest.
 */
export class HostTier implements KvTier {
  readonly name = "host" as const;
  readonly #pool: BlockPool<BlockRecord>;
  readonly #blockSize: number;
  readonly #emit: TierEventSink;

  constructor(options: { capacityBytes: number; blockSize: number; emit: TierEventSink }) {
    this.#pool = new BlockPool({ capacityBytes: options.capacityBytes });
    this.#blockSize = options.blockSize;
    this.#emit = options.emit;
  }

  has(hash: bigint): boolean {
    return this.#pool.has(hash);
  }

  /** The block without counting a hit (the disk tier copies from here). */
  peek(hash: bigint): BlockRecord | undefined {
    return this.#pool.peek(hash);
  }

  async read(hash: bigint): Promise<BlockRecord | undefined> {
    return this.#pool.peek(hash);
  }

  async write(records: readonly BlockRecord[]): Promise<void> {
    const stored: BlockRecord[] = [];
    const removed: bigint[] = [];
    for (const record of records) {
      if (this.#pool.has(record.hash)) continue;
      const evicted = this.#pool.insert(record.hash, record, record.payload.length);
      for (const { hash } of evicted) removed.push(hash);
      if (this.#pool.has(record.hash)) stored.push(record);
    }
    // A stored chain counts as a use of it: the leaves end up the least recent.
    this.hit(stored.map((record) => record.hash));
    const events: KvEvent[] = [];
    const gone = removed.filter((hash) => !this.#pool.has(hash));
    if (gone.length > 0) events.push({ type: "kv-block-removed", blockHashes: gone, storageTier: STORAGE_TIER.host });
    events.push(...storedEvents(stored, this.#blockSize, STORAGE_TIER.host));
    if (events.length > 0) this.#emit(events);
  }

  /** Children first, so parents stay more recent than their children and leaves are evicted first. */
  hit(hashes: readonly bigint[]): void {
    for (let i = hashes.length - 1; i >= 0; i--) this.#pool.hit(hashes[i] as bigint);
  }

  /** The block's hit frequency here (1 when stored once, doubling per hit); 0 when absent. */
  frequency(hash: bigint): number {
    return this.#pool.frequency(hash) ?? 0;
  }

  usage(): { bytes: number; blocks: number } {
    return { bytes: this.#pool.bytes, blocks: this.#pool.size };
  }

  dump(): KvEvent[] {
    return dumpParentsFirst(
      [...this.#pool.entries()].map(([, record]) => record),
      this.#blockSize,
      STORAGE_TIER.host,
    );
  }

  async close(): Promise<void> {
    this.#pool.clear();
  }
}
