import type { LlamaModel, Token } from "node-llama-cpp";
import type { Tokenizer } from "../tokenizer.js";
import { llamaRuntime } from "./llama-runtime.js";

/** The tokenizer of a GGUF model, from llama.cpp. */
export class GgufTokenizer implements Tokenizer {
  readonly #model: LlamaModel;

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

  encode(text: string, options: { special?: boolean } = {}): number[] {
    return this.#model.tokenize(text, options.special ?? false) as number[];
  }

  /** Special tokens decode to nothing, as with vLLM's `skip_special_tokens`. */
  decode(tokenIds: readonly number[]): string {
    return this.#model.detokenize(tokenIds as Token[], false);
  }
}
