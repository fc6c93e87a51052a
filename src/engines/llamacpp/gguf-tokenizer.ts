import type { LlamaModel, Token } from "node-llama-cpp";
import type { Tokenizer } from "../tokenizer.js";
import { OffLoopEncoder } from "../tokenizer-thread.js";
import { llamaRuntime } from "./llama-runtime.js";

/** The tokenizer of a GGUF model, from llama.cpp. */
export class GgufTokenizer implements Tokenizer {
  readonly #model: LlamaModel;
  /** Tokenizes long texts on a thread that loads the same GGUF; undefined: every text is tokenized here. */
  readonly #offLoop: OffLoopEncoder | undefined;
  #maxTokenBytes: number | undefined;

  private constructor(model: LlamaModel, path: string | undefined) {
    this.#model = model;
    this.#offLoop =
      path === undefined
        ? undefined
        : new OffLoopEncoder({ kind: "gguf", path }, (text, special) => this.encode(text, { special }));
  }

  /** Loads only the vocabulary of the GGUF at `path` (no weights); long texts are tokenized off the event loop. */
  static async load(path: string): Promise<GgufTokenizer> {
    const llama = await llamaRuntime();
    return new GgufTokenizer(await llama.loadModel({ modelPath: path, vocabOnly: true }), path);
  }

  static fromModel(model: LlamaModel): GgufTokenizer {
    return new GgufTokenizer(model, undefined);
  }

  get vocabSize(): number {
    const tokens = this.#model.fileInfo.metadata.tokenizer?.ggml?.tokens;
    return Array.isArray(tokens) ? tokens.length : 0;
  }

  /**
   * The longest token text in the vocabulary, in UTF-8 bytes. Stored token texts are never shorter
   * than what they decode to (byte-level BPE maps each byte to one or two-byte characters,
   * SentencePiece writes a space as three-byte `▁` and byte fallbacks as `<0xNN>`), so it bounds it.
   */
  get maxTokenBytes(): number {
    if (this.#maxTokenBytes === undefined) {
      const tokens = this.#model.fileInfo.metadata.tokenizer?.ggml?.tokens;
      let max = 1;
      if (Array.isArray(tokens)) for (const token of tokens) max = Math.max(max, Buffer.byteLength(String(token)));
      this.#maxTokenBytes = max;
    }
    return this.#maxTokenBytes;
  }

  encode(text: string, options: { special?: boolean } = {}): number[] {
    return this.#model.tokenize(text, options.special ?? false) as number[];
  }

  /**
   * As `encode`, but a text of `OFF_LOOP_CHARACTERS` or more is tokenized on a worker thread that
   * holds the same vocabulary, so the streams this process serves keep flowing meanwhile. The first
   * long text starts the thread; until it is ready (seconds), and should it fail (a process warning
   * says why), long texts are tokenized here as short ones are.
   */
  encodeAsync(text: string, options: { special?: boolean } = {}): Promise<number[]> {
    if (!this.#offLoop) return Promise.resolve(this.encode(text, options));
    return this.#offLoop.encode(text, options.special ?? false);
  }

  /** Resolves true once long texts go to the tokenizing thread (starting it), false where they cannot. */
  async offLoopReady(): Promise<boolean> {
    return (await this.#offLoop?.ready()) ?? false;
  }

  /** Stops the tokenizing thread, if one started. */
  async close(): Promise<void> {
    await this.#offLoop?.close();
  }

  /** Special tokens decode to nothing, as with vLLM's `skip_special_tokens`. */
  decode(tokenIds: readonly number[]): string {
    return this.#model.detokenize(tokenIds as Token[], false);
  }
}
