import type { Tokenizer } from "../engines/index.js";

/**
 * Turns a token stream into text deltas without ever splitting a UTF-8 character: text whose
 * decoding still ends in U+FFFD waits for the next token (vLLM's prefix/read offset scheme), so
 * concatenated deltas equal decoding all tokens at once. Text that ends in a space waits too:
 * tokenizers that clean up spaces (llama.cpp's BPE vocabularies, Hugging Face's
 * `clean_up_tokenization_spaces`) drop a space before `,` `.` `?` `!` and some apostrophes, which
 * only the next token tells. It waits one token only, so a run of spaces still streams.
 */
export class IncrementalDetokenizer {
  readonly #tokenizer: Tokenizer;
  readonly #tokens: number[] = [];
  #prefixOffset = 0;
  #readOffset = 0;
  /** The last push held back text for its trailing space. */
  #heldSpace = false;

  constructor(tokenizer: Tokenizer) {
    this.#tokenizer = tokenizer;
  }

  /** Adds tokens; returns the text that became final (possibly ""). */
  push(tokenIds: readonly number[]): string {
    for (const t of tokenIds) this.#tokens.push(t);
    const prefixText = this.#tokenizer.decode(this.#tokens.slice(this.#prefixOffset, this.#readOffset));
    const fullText = this.#tokenizer.decode(this.#tokens.slice(this.#prefixOffset));
    // A trailing space waits one token, no more: a run of spaces still streams.
    const waitForSpace = fullText.endsWith(" ") && !this.#heldSpace;
    this.#heldSpace = waitForSpace;
    if (fullText.length > prefixText.length && !fullText.endsWith("\uFFFD") && !waitForSpace) {
      this.#prefixOffset = this.#readOffset;
      this.#readOffset = this.#tokens.length;
      return fullText.slice(prefixText.length);
    }
    return "";
  }

  /** Text still held back at the end of the stream (incomplete characters decode as U+FFFD). */
  flush(): string {
    const prefixText = this.#tokenizer.decode(this.#tokens.slice(this.#prefixOffset, this.#readOffset));
    const fullText = this.#tokenizer.decode(this.#tokens.slice(this.#prefixOffset));
    this.#prefixOffset = this.#readOffset = this.#tokens.length;
    return fullText.slice(prefixText.length);
  }
}
