import { hashBlocks, type KvEvent } from "../../protocol/index.js";

/**
 * Turns "sequence s now caches these tokens" into Dynamo-style KV events for the whole worker:
 * a block is stored when the first sequence caches it and removed when the last one drops it.
 */
export class KvBlockTracker {
  readonly #blockSize: number;
  readonly #lora: string | undefined;
  readonly #perSequence = new Map<number, bigint[]>();
  readonly #localOf = new Map<bigint, bigint>();
  readonly #refs = new Map<bigint, number>();

  /** `lora`: the adapter whose weights made the cache; its blocks hash with the adapter's seed. */
  constructor(blockSize: number, lora?: string) {
    this.#blockSize = blockSize;
    this.#lora = lora;
  }

  /** Blocks cached by all sequences together. */
  get cachedBlocks(): number {
    return this.#refs.size;
  }

  /** Every sequence's cached chain as a stored event from the root (re-storing is idempotent). */
  dump(): KvEvent[] {
    return [...this.#perSequence.values()]
      .filter((chain) => chain.length > 0)
      .map((chain) => ({
        type: "kv-block-stored" as const,
        parentHash: null,
        blocks: chain.map((blockHash) => ({ blockHash, tokensHash: this.#localOf.get(blockHash) as bigint })),
        blockSize: this.#blockSize,
      }));
  }

  /** Records that `sequence` caches exactly `tokens`; returns the events that change implies. */
  update(sequence: number, tokens: readonly number[]): KvEvent[] {
    const hashes = hashBlocks(tokens, this.#blockSize, this.#lora);
    const next = hashes.sequence;
    const previous = this.#perSequence.get(sequence) ?? [];
    let common = 0;
    while (common < next.length && common < previous.length && next[common] === previous[common]) common++;
    const removed: bigint[] = [];
    for (const hash of previous.slice(common)) {
      const count = (this.#refs.get(hash) ?? 0) - 1;
      if (count <= 0) {
        this.#refs.delete(hash);
        removed.push(hash);
      } else {
        this.#refs.set(hash, count);
      }
    }
    const stored: bigint[] = [];
    for (const hash of next.slice(common)) {
      const count = (this.#refs.get(hash) ?? 0) + 1;
      this.#refs.set(hash, count);
      if (count === 1) stored.push(hash);
    }
    this.#perSequence.set(sequence, next);
    for (const hash of removed) this.#localOf.delete(hash);
    for (let i = common; i < next.length; i++) this.#localOf.set(next[i] as bigint, hashes.local[i] as bigint);
    const events: KvEvent[] = [];
    if (removed.length > 0) events.push({ type: "kv-block-removed", blockHashes: removed });
    if (stored.length > 0) {
      // Stored blocks continue the chain right after the last block shared with the old content.
      const firstNew = next.indexOf(stored[0] as bigint);
      events.push({
        type: "kv-block-stored",
        parentHash: firstNew > 0 ? (next[firstNew - 1] ?? null) : null,
        blocks: stored.map((blockHash, i) => ({ blockHash, tokensHash: hashes.local[firstNew + i] as bigint })),
        blockSize: this.#blockSize,
      });
    }
    return events;
  }
}
