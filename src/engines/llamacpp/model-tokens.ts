import type { LlamaModel, Token } from "node-llama-cpp";

/** What a model card says of a GGUF's vocabulary: its chat template and special tokens. */
export interface ModelTokens {
  readonly chatTemplate: string | undefined;
  /** End of sequence and end of turn, each once. */
  readonly eosTokenIds: readonly number[];
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
}

/** The chat template and special tokens of a loaded model (weights or vocabulary only). */
export function modelTokens(model: LlamaModel): ModelTokens {
  const metadata = model.fileInfo.metadata;
  const texts = metadata.tokenizer?.ggml?.tokens;
  const text = (id: Token | null): string | undefined => {
    if (id == null || !Array.isArray(texts)) return undefined;
    const value = texts[id];
    return typeof value === "string" ? value : undefined;
  };
  const eos = [model.tokens.eos, model.tokens.eot].filter((t): t is Token => t != null) as number[];
  return {
    chatTemplate: typeof metadata.tokenizer?.chat_template === "string" ? metadata.tokenizer.chat_template : undefined,
    eosTokenIds: [...new Set(eos)],
    bosToken: text(model.tokens.bos),
    eosToken: text(model.tokens.eos),
  };
}

/** Token ids the model's vocabulary holds (unbounded when the GGUF does not list its tokens). */
export function vocabularySize(model: LlamaModel): number {
  const tokens = model.fileInfo.metadata.tokenizer?.ggml?.tokens;
  return Array.isArray(tokens) ? tokens.length : Number.MAX_SAFE_INTEGER;
}
