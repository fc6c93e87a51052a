import { TINY_CORPUS } from "../tiny-model/corpus.js";
import type { Tokenizer } from "../tokenizer.js";

const WORDS = TINY_CORPUS.split(/\s+/).filter((w) => w.length > 0);

/**
 * Deterministic completion text: the words of a fixed corpus, starting at an offset derived from
 * the prompt, encoded with the model's tokenizer. The same prompt always gives the same tokens,
 * however the request was scheduled or split.
 */
export class MockText {
  readonly #tokens: number[];
  readonly #starts = new WeakMap<readonly number[], number>();

  constructor(tokenizer: Tokenizer) {
    this.#tokens = tokenizer.encode(WORDS.map((w) => ` ${w}`).join(""));
  }

  /** Token number `index` of the completion of the prompt `tokens[0..promptLength)`. */
  tokenAt(tokens: readonly number[], promptLength: number, index: number): number {
    const start = this.#startFor(tokens, promptLength);
    return this.#tokens[(start + index) % this.#tokens.length] as number;
  }

  #startFor(tokens: readonly number[], promptLength: number): number {
    const known = this.#starts.get(tokens);
    if (known !== undefined) return known;
    let hash = 0x811c9dc5;
    for (let i = 0; i < promptLength; i++) {
      hash ^= tokens[i] ?? 0;
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    const start = hash % this.#tokens.length;
    this.#starts.set(tokens, start);
    return start;
  }
}
