/** Text ⇄ token ids for one model. */
export interface Tokenizer {
  /** Encodes text; special-token text (e.g. `<|im_end|>`) becomes its token when `special` is set. */
  encode(text: string, options?: { special?: boolean }): number[];
  /**
   * As `encode`, without holding the event loop long: where tokenizing is costly, a long text is
   * tokenized on another thread. Absent where `encode` is cheap at any length.
   */
  encodeAsync?(text: string, options?: { special?: boolean }): Promise<number[]>;
  /** Decodes ids to text; incomplete UTF-8 sequences come out as U+FFFD. */
  decode(tokenIds: readonly number[]): string;
  readonly vocabSize: number;
  /**
   * An upper bound on the UTF-8 bytes of text one token stands for, so a prompt's token count has
   * a lower bound (bytes / this) before it is tokenized.
   */
  readonly maxTokenBytes: number;
}
