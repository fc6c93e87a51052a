import type { Tokenizer } from "./tokenizer.js";

/** Special tokens of the byte tokenizer, after the 256 byte tokens. */
export const BYTE_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

/**
 * Token id = byte value, plus three ChatML specials. Needs no file, so the mocker and tests work
 * with nothing on disk; UTF-8 text spanning several tokens exercises incremental detokenization.
 */
export class ByteTokenizer implements Tokenizer {
  readonly vocabSize = 256 + BYTE_SPECIAL_TOKENS.length;
  /** A special token's text is the longest one token stands for. */
  readonly maxTokenBytes = Math.max(...BYTE_SPECIAL_TOKENS.map((t) => t.length));
  readonly #decoder = new TextDecoder("utf-8", { fatal: false });

  static readonly endOfText = 256;
  static readonly endOfTurn = 258;

  encode(text: string, options: { special?: boolean } = {}): number[] {
    const ids: number[] = [];
    const parts = options.special ? text.split(/(<\|endoftext\|>|<\|im_start\|>|<\|im_end\|>)/) : [text];
    for (const part of parts) {
      const special = BYTE_SPECIAL_TOKENS.indexOf(part as (typeof BYTE_SPECIAL_TOKENS)[number]);
      if (options.special && special >= 0) ids.push(256 + special);
      else for (const byte of Buffer.from(part, "utf8")) ids.push(byte);
    }
    return ids;
  }

  /** Special tokens decode to nothing, as with vLLM's `skip_special_tokens`. */
  decode(tokenIds: readonly number[]): string {
    const bytes: number[] = [];
    let out = "";
    for (const id of tokenIds) {
      if (id < 256) {
        bytes.push(id);
        continue;
      }
      out += this.#decoder.decode(Uint8Array.from(bytes));
      bytes.length = 0;
    }
    return out + this.#decoder.decode(Uint8Array.from(bytes));
  }
}
