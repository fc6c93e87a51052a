import type { LlamaContextSequence } from "node-llama-cpp";
import { ArmatureError } from "../../protocol/index.js";

/** One sequence of the context and whether a request holds it. */
export interface SequenceSlot {
  readonly index: number;
  readonly sequence: LlamaContextSequence;
  busy: boolean;
}

interface Waiter {
  readonly tokens: readonly number[];
  readonly resolve: (slot: SequenceSlot) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Hands out the context's sequences to requests. A request gets the free sequence whose cached
 * tokens share the longest prefix with its prompt (prefix reuse); when none is free it waits, first
 * come first served.
 */
export class SequenceSlots {
  readonly #slots: SequenceSlot[];
  readonly #waiting: Waiter[] = [];
  #closed = false;

  constructor(sequences: readonly LlamaContextSequence[]) {
    this.#slots = sequences.map((sequence, index) => ({ index, sequence, busy: false }));
  }

  get busyCount(): number {
    return this.#slots.filter((s) => s.busy).length;
  }

  get waitingCount(): number {
    return this.#waiting.length;
  }

  get all(): readonly SequenceSlot[] {
    return this.#slots;
  }

  /** KV blocks of `blockSize` tokens the busy sequences hold. */
  activeBlocks(blockSize: number): number {
    let blocks = 0;
    for (const slot of this.#slots) if (slot.busy) blocks += Math.ceil(slot.sequence.nextTokenIndex / blockSize);
    return blocks;
  }

  async acquire(tokens: readonly number[], signal: AbortSignal): Promise<SequenceSlot> {
    if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", "engine is closed");
    const free = this.#bestFree(tokens);
    if (free) {
      free.busy = true;
      return free;
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { tokens, resolve, reject };
      this.#waiting.push(waiter);
      signal.addEventListener(
        "abort",
        () => {
          const at = this.#waiting.indexOf(waiter);
          if (at >= 0) {
            this.#waiting.splice(at, 1);
            reject(signal.reason);
          }
        },
        { once: true },
      );
    });
  }

  release(slot: SequenceSlot): void {
    const next = this.#waiting.shift();
    if (next) next.resolve(slot);
    else slot.busy = false;
  }

  close(): void {
    this.#closed = true;
    for (const waiter of this.#waiting.splice(0)) {
      waiter.reject(new ArmatureError("ENGINE_CLOSED", "engine closed while the request waited"));
    }
  }

  #bestFree(tokens: readonly number[]): SequenceSlot | undefined {
    let best: SequenceSlot | undefined;
    let bestShared = -1;
    for (const slot of this.#slots) {
      if (slot.busy) continue;
      const shared = sharedPrefixLength(slot.sequence.contextTokens, tokens);
      if (shared > bestShared) {
        best = slot;
        bestShared = shared;
      }
    }
    return best;
  }
}

export function sharedPrefixLength(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
