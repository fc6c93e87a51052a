import type { KvEvent } from "../../protocol/index.js";
import type { ObjectStore } from "../../transfer/index.js";
import { type BlockRecord, decodeBlockRecord, encodeBlockRecord, hex } from "../block-record.js";
import { dumpParentsFirst, type KvTier, STORAGE_TIER, storedEvents, type TierEventSink } from "./kv-tier.js";

/** Blocks this process remembers being in the store (it wrote or read them). */
const KNOWN_LIMIT = 1 << 20;

export interface ObjectTierOptions {
  readonly store: ObjectStore;
  readonly blockSize: number;
  readonly layout: bigint;
  readonly emit: TierEventSink;
}

/**
 * G4: blocks in an object store shared by every worker of a model (S3, NATS JetStream, a shared
 * folder). Keys are `kv/<layout>/<sequence hash>`, so workers of one model find each other's
 * blocks and models never mix. A block is written once: a conditional write (`If-None-Match: *`
 * on S3) makes a second writer a no-op. Blocks are announced with storage tier `external`, which
 * a router reads as "any worker of the model can load it". The store's own lifecycle rules bound
 * its size; workers never delete from it.
 */
export class ObjectTier implements KvTier {
  readonly name = "object" as const;
  readonly #options: ObjectTierOptions;
  readonly #known = new Map<bigint, { parent: bigint | null; tokensHash: bigint; bytes: number }>();
  #bytes = 0;

  constructor(options: ObjectTierOptions) {
    this.#options = options;
  }

  has(hash: bigint): boolean {
    return this.#known.has(hash);
  }

  /** Asks the store (not only what this process knows): another worker may have written it. */
  async read(hash: bigint): Promise<BlockRecord | undefined> {
    const key = this.#key(hash);
    const bytes = await this.#options.store.get(key);
    if (bytes === undefined) {
      this.#forget(hash);
      return undefined;
    }
    const record = decodeBlockRecord(bytes, { hash, layout: this.#options.layout }, `${this.#options.store.name} ${key}`);
    this.#remember(record, bytes.length);
    return record;
  }

  async write(records: readonly BlockRecord[]): Promise<void> {
    const stored: BlockRecord[] = [];
    for (const record of records) {
      if (this.#known.has(record.hash)) continue;
      const bytes = encodeBlockRecord(record);
      // Written now or by another worker before: either way the store holds it.
      await this.#options.store.putIfAbsent(this.#key(record.hash), bytes);
      this.#remember(record, bytes.length);
      stored.push(record);
    }
    const events = storedEvents(stored, this.#options.blockSize, STORAGE_TIER.object);
    if (events.length > 0) this.#options.emit(events);
  }

  hit(_hashes: readonly bigint[]): void {}

  /** What this process wrote or read (the store may hold more). */
  usage(): { bytes: number; blocks: number } {
    return { bytes: this.#bytes, blocks: this.#known.size };
  }

  dump(): KvEvent[] {
    const records = [...this.#known].map(([hash, block]) => ({ hash, ...block }));
    return dumpParentsFirst(records, this.#options.blockSize, STORAGE_TIER.object);
  }

  async close(): Promise<void> {}

  #key(hash: bigint): string {
    return `kv/${hex(this.#options.layout)}/${hex(hash)}`;
  }

  #forget(hash: bigint): void {
    const block = this.#known.get(hash);
    if (!block) return;
    this.#known.delete(hash);
    this.#bytes -= block.bytes;
  }

  #remember(record: BlockRecord, bytes: number): void {
    if (this.#known.has(record.hash)) return;
    if (this.#known.size >= KNOWN_LIMIT) {
      const oldest = this.#known.keys().next();
      if (!oldest.done) this.#forget(oldest.value);
    }
    this.#known.set(record.hash, { parent: record.parent, tokensHash: record.tokensHash, bytes });
    this.#bytes += bytes;
  }
}
