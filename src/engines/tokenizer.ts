/** Text ⇄ token ids for one model. */
export interface Tokenizer {
  /** Encodes text; special-token text (e.g. `<|im_end|>`) becomes its token when `special` is set. */
  encode(text: string, options?: { special?: boolean }): number[];
  /** Decodes ids to text; incomplete UTF-8 sequences come out as U+FFFD. */
  decode(tokenIds: readonly number[]): string;
  readonly vocabSize: number;
}
