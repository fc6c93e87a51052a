import { chainBlockHash, hashBlocks, localBlockHash } from "../../protocol/index.js";
import type { BlockManager } from "./block-manager.js";
import type { TierCounts } from "./lower-tiers.js";

/** One request inside the mocker: its tokens, how many have KV computed, and the blocks it holds. */
export class MockSequence {
  readonly requestId: string;
  /** The prompt as the request gave it (never changed here, never copied). */
  readonly prompt: readonly number[];
  /**
   * The tokens generated so far, kept apart from the prompt: appending to a copy of a long prompt
   * makes V8 reallocate it (0.66 ms for 13,500 tokens, docs/benchmarks.md), once per request.
   */
  readonly output: number[] = [];
  readonly promptLength: number;
  readonly maxTokens: number;
  /** Tokens whose KV is computed. */
  computed = 0;
  /**
   * Prompt tokens found in the prefix cache at its first admission (device and lower tiers), as
   * vLLM's `num_cached_tokens`: a sequence preempted and admitted again finds its own blocks, which
   * it computed, and they do not count.
   */
  cachedTokens = 0;
  /** Whether the sequence ran once (its `cachedTokens` are known). */
  admitted = false;
  /** Of `cachedTokens`, those copied back from each lower tier. */
  tierCachedTokens: TierCounts = { host: 0, disk: 0, object: 0 };
  /** Tokens the last `adoptCachedPrefix` copied back from each lower tier. */
  onboardedTokens: TierCounts = { host: 0, disk: 0, object: 0 };
  generated = 0;
  cancelled = false;
  /** Disaggregated decode: the prompt's KV came from a prefill worker, which sampled this first token. */
  importedFirstToken: number | undefined;
  readonly #fullBlocks: bigint[] = [];
  #holdsPartial = false;
  /** Leading blocks whose use this request has counted (once per request, for the disk filter). */
  #usesCounted = 0;
  /** Local and sequence hashes of the prompt's full blocks, computed once. */
  #promptHashes: { local: bigint[]; sequence: bigint[] } | undefined;

  /** vLLM's `priority` (lower runs earlier under the priority policy); 0 when the request gave none. */
  readonly priority: number;
  /** Order of arrival at the engine (ties of priority go to the earlier). */
  arrival = 0;

  constructor(requestId: string, promptTokens: readonly number[], maxTokens: number, priority = 0) {
    this.requestId = requestId;
    this.prompt = promptTokens;
    this.promptLength = promptTokens.length;
    this.maxTokens = maxTokens;
    this.priority = priority;
  }

  /** Tokens still to compute before the next token can be sampled (1 while decoding). */
  get remaining(): number {
    return this.tokenCount - this.computed;
  }

  /** Prompt and output tokens. */
  get tokenCount(): number {
    return this.promptLength + this.output.length;
  }

  /** Tokens `from` (inclusive) to `to` (exclusive) of the prompt followed by the output. */
  tokensBetween(from: number, to: number): number[] {
    const p = this.promptLength;
    if (to <= p) return this.prompt.slice(from, to);
    if (from >= p) return this.output.slice(from - p, to - p);
    return [...this.prompt.slice(from), ...this.output.slice(0, to - p)];
  }

  get blocksHeld(): number {
    return this.#fullBlocks.length + (this.#holdsPartial ? 1 : 0);
  }

  /**
   * Takes the cached prefix of the tokens, block by block while some tier holds the next one: from
   * the device if it caches it, otherwise copied back from the fastest lower tier into a device
   * block while there are free ones. Returns the tokens covered.
   */
  adoptCachedPrefix(blocks: BlockManager): number {
    const fullBlocks = Math.floor((this.tokenCount - 1) / blocks.blockSize);
    const { local, sequence } = this.#hashesUpTo(fullBlocks, blocks.blockSize);
    const onboarded: TierCounts = { host: 0, disk: 0, object: 0 };
    let b = 0;
    for (; b < fullBlocks; b++) {
      const hash = sequence[b] as bigint;
      if (blocks.isCached(hash)) {
        blocks.acquireCached(hash);
      } else {
        const from = blocks.lowerTierHolding(hash);
        if (from === undefined || !blocks.onboard(hash, local[b] as bigint, this.#fullBlocks[b - 1] ?? null, from)) break;
        onboarded[from] += blocks.blockSize;
      }
      this.#fullBlocks.push(hash);
      this.#countUse(blocks, b, hash);
    }
    this.onboardedTokens = onboarded;
    this.computed = b * blocks.blockSize;
    return this.computed;
  }

  #countUse(blocks: BlockManager, index: number, hash: bigint): void {
    if (index < this.#usesCounted) return;
    blocks.used(hash);
    this.#usesCounted = index + 1;
  }

  /** Hashes of at least the first `count` full blocks (prompt blocks are hashed once). */
  #hashesUpTo(count: number, blockSize: number): { local: bigint[]; sequence: bigint[] } {
    if (!this.#promptHashes || this.#promptHashes.local.length < count) {
      const tokens = this.output.length === 0 ? this.prompt : this.tokensBetween(0, this.tokenCount);
      this.#promptHashes = hashBlocks(tokens, blockSize);
    }
    return this.#promptHashes;
  }

  /**
   * Computes KV for up to `count` more tokens, taking blocks as they fill. Returns how many were
   * computed; fewer than asked when the cache ran out of blocks.
   */
  compute(count: number, blocks: BlockManager): number {
    let done = 0;
    while (done < count) {
      const offset = this.computed % blocks.blockSize;
      if (offset === 0 && !this.#holdsPartial) {
        if (!blocks.allocatePartial()) break;
        this.#holdsPartial = true;
      }
      // A block at a time: up to the end of the block being filled, or as many as are left.
      const step = Math.min(blocks.blockSize - offset, count - done);
      this.computed += step;
      done += step;
      if (this.computed % blocks.blockSize === 0) {
        const index = this.computed / blocks.blockSize - 1;
        const known = this.#promptHashes?.local[index];
        const local = known ?? localBlockHash(this.tokensBetween(index * blocks.blockSize, this.computed));
        const parent = this.#fullBlocks[index - 1] ?? null;
        const hash = parent === null ? local : (this.#promptHashes?.sequence[index] ?? chainBlockHash(parent, local));
        blocks.commitFull(hash, local, parent);
        this.#fullBlocks.push(hash);
        this.#countUse(blocks, index, hash);
        this.#holdsPartial = false;
      }
    }
    return done;
  }

  /**
   * Returns every block to the cache (full blocks stay cached, evictable), last block first, as
   * vLLM frees them: LRU then evicts a sequence's tail before its head, so the prefix other
   * requests share survives longest.
   */
  releaseBlocks(blocks: BlockManager): void {
    for (let i = this.#fullBlocks.length - 1; i >= 0; i--) blocks.release(this.#fullBlocks[i] as bigint);
    this.#fullBlocks.length = 0;
    if (this.#holdsPartial) blocks.releasePartial();
    this.#holdsPartial = false;
    this.computed = 0;
  }
}
