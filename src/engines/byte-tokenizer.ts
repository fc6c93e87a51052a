import type { Tokenizer } from "./tokenizer.js";

/** Special tokens of the byte tokenizer, after the 256 byte tokens. */
export const BYTE_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

/** Ids decoded one character at a time while ASCII; longer runs go through the UTF-8 decoder. */
const SHORT_DECODE = 16;

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
    const parts = options.special ? text.split(/(<\|endoftext\|>|<\|im_start\|>|<\|im_end\|>)/) : [text];
    const pieces = parts.map((part) => {
      const special = options.special ? BYTE_SPECIAL_TOKENS.indexOf(part as (typeof BYTE_SPECIAL_TOKENS)[number]) : -1;
      return special >= 0 ? 256 + special : Buffer.from(part, "utf8");
    });
    // Sized once and filled by index: pushing byte by byte costs about three times as much, and a
    // long prompt is 100,000 bytes.
    const length = pieces.reduce<number>((n, p) => n + (typeof p === "number" ? 1 : p.length), 0);
    const ids = new Array<number>(length);
    let at = 0;
    for (const piece of pieces) {
      if (typeof piece === "number") ids[at++] = piece;
      else for (let i = 0; i < piece.length; i++) ids[at++] = piece[i] as number;
    }
    return ids;
  }

  /** Special tokens decode to nothing, as with vLLM's `skip_special_tokens`. */
  decode(tokenIds: readonly number[]): string {
    // A streamed token's one or two ids, when ASCII (the usual case), need no UTF-8 decoder.
    const fast = tokenIds.length <= SHORT_DECODE ? tokenIds.length : 0;
    let ascii = "";
    let i = 0;
    for (; i < fast && (tokenIds[i] as number) < 0x80; i++) ascii += String.fromCharCode(tokenIds[i] as number);
    if (i === tokenIds.length) return ascii;
    const bytes: number[] = [];
    let out = ascii;
    for (; i < tokenIds.length; i++) {
      const id = tokenIds[i] as number;
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
