import type { LlamaContextSequence } from "node-llama-cpp";
import type { KvbmConnector } from "./kvbm-connector.js";

/**
 * Copies a running request's blocks down the tiers as they fill (`--kv-offload as-filled`): the
 * prompt's once it is evaluated (another request with the same prefix, on another sequence or
 * another worker, can load them while this one decodes), then each time the sequence holds twice
 * the complete blocks it held at the last copy. Each copy saves the whole sequence state, so the
 * copies add up to less than twice the bytes of the request's final state. One copy runs at a
 * time; the request's end waits for it (`settled`) before its sequence is reused.
 */
export class RunningOffload {
  readonly #kvbm: KvbmConnector;
  readonly #sequence: LlamaContextSequence;
  readonly #blockSize: number;
  /** Complete blocks the sequence held when the last copy started. */
  #copiedBlocks = 0;
  #running: Promise<void> | undefined;

  constructor(kvbm: KvbmConnector, sequence: LlamaContextSequence, blockSize: number) {
    this.#kvbm = kvbm;
    this.#sequence = sequence;
    this.#blockSize = blockSize;
  }

  /** The sequence has evaluated `tokens` tokens (the prompt, then each generated token). */
  evaluated(tokens: number): void {
    const blocks = Math.floor(tokens / this.#blockSize);
    if (blocks === 0 || this.#running !== undefined) return;
    if (this.#copiedBlocks > 0 && blocks < 2 * this.#copiedBlocks) return;
    this.#copiedBlocks = blocks;
    // The connector logs its failures and never throws.
    this.#running = this.#kvbm.offload(this.#sequence).finally(() => {
      this.#running = undefined;
    });
  }

  /** Resolves once no copy is running. */
  async settled(): Promise<void> {
    while (this.#running) await this.#running;
  }
}
