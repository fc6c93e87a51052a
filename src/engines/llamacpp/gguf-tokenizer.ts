import type { LlamaModel, Token } from "node-llama-cpp";
import type { Tokenizer } from "../tokenizer.js";
import { llamaRuntime } from "./llama-runtime.js";

/** The tokenizer of a GGUF model, from llama.cpp. */
export class GgufTokenizer implements Tokenizer {
  readonly #model: LlamaModel;
  #maxTokenBytes: number | undefined;

  private constructor(model: LlamaModel) {
    this.#model = model;
  }

  /** Loads only the vocabulary of the GGUF at `path` (no weights). */
  static async load(path: string): Promise<GgufTokenizer> {
    const llama = await llamaRuntime();
    return new GgufTokenizer(await llama.loadModel({ modelPath: path, vocabOnly: true }));
  }

  static fromModel(model: LlamaModel): GgufTokenizer {
    return new GgufTokenizer(model);
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

  /** Special tokens decode to nothing, as with vLLM's `skip_special_tokens`. */
  decode(tokenIds: readonly number[]): string {
    return this.#model.detokenize(tokenIds as Token[], false);
  }
}
