import { encodeBpe } from "./byte-bpe.js";
import { encodeGguf, type MetadataValue } from "./gguf-writer.js";
import { type TinyModelOptions, tinyVocabulary, tinyVocabularySize } from "./tiny-model.js";
import { constantDimension } from "./transformer-weights.js";

/** The word the tiny adapter makes the tiny model say. */
export const TINY_LORA_WORD = " sea";

/** Logits the adapter adds to its word: more than any bigram and the repetition head take away. */
const WORD_BOOST = 40;

/**
 * Builds a rank-1 LoRA adapter GGUF for the tiny model built with the same `options`: its only pair
 * (`output.weight.lora_a`, `.lora_b`) reads the residual dim that is 1 for every token and adds
 * `WORD_BOOST` to the logit of `word` (one token of the model's vocabulary), so the adapted model's
 * greedy output is that word over and over, and the base model's is its usual prose. llama.cpp's
 * adapter format: `general.type` `adapter`, `adapter.type` `lora`, `adapter.lora.alpha` (alpha 1 at
 * rank 1: scale 1), `lora_a` of [n_in, rank] and `lora_b` of [rank, n_out] in ggml order.
 */
export function buildTinyLora(options: TinyModelOptions & { readonly word?: string } = {}): Buffer {
  const dim = options.embeddingLength ?? 64;
  const heads = options.heads ?? 4;
  const vocab = tinyVocabulary(options);
  const word = options.word ?? TINY_LORA_WORD;
  const ids = encodeBpe(vocab, word);
  if (ids.length !== 1)
    throw new Error(`the tiny adapter's word must be one token of the tiny model, not ${ids.length}: '${word}'`);
  const vocabSize = tinyVocabularySize(vocab);
  const a = new Float32Array(dim);
  a[constantDimension(dim, heads)] = 1;
  const b = new Float32Array(vocabSize);
  b[ids[0] as number] = WORD_BOOST;
  const md = new Map<string, MetadataValue>([
    ["general.architecture", { type: "string", value: "llama" }],
    ["general.type", { type: "string", value: "adapter" }],
    ["general.name", { type: "string", value: "armature-tiny-lora" }],
    ["general.alignment", { type: "uint32", value: 32 }],
    ["adapter.type", { type: "string", value: "lora" }],
    ["adapter.lora.alpha", { type: "float32", value: 1 }],
  ]);
  return encodeGguf(md, [
    { name: "output.weight.lora_a", dims: [dim, 1], data: a },
    { name: "output.weight.lora_b", dims: [1, vocabSize], data: b },
  ]);
}
