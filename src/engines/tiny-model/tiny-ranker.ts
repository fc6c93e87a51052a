import { encodeBpe } from "./byte-bpe.js";
import { encodeGguf, type MetadataValue, type TensorSpec } from "./gguf-writer.js";
import { type TinyModelOptions, tinyModelParts, tinyVocabulary } from "./tiny-model.js";
import { bigramRank } from "./transformer-weights.js";

/** The word whose share of a query and document pair the tiny ranker scores. */
export const TINY_RANKER_WORD = " sea";

/** How strongly the ranker's logit follows the word's share of the pair. */
const GAIN = 4;

/**
 * Builds a ranking model (a reranker) from the tiny model built with the same `options`: the same
 * tokenizer and weights as a Qwen3-architecture GGUF (llama.cpp's Qwen3 rerankers: per-head query
 * and key norms, here ones, and a classifier head `cls.output.weight` over two labels whose softmax
 * llama.cpp applies, so the score is the first label's probability), pooled at the last token.
 *
 * What it ranks by: the tiny model's repetition head (layer 1) writes the mean identity code of the
 * whole input into the last token's stream, and the first label's row reads the code of `word`, so
 * the score grows with the share of the pair's tokens that are `word` (" sea"): with the query
 * "where is the sea?", "sea sea sea" scores 0.96 and "a cat sat on the mat" 0.66. It does not
 * compare the document with the query; it is a model to run the ranking path with, not a judge of
 * relevance.
 */
export function buildTinyRanker(options: TinyModelOptions & { readonly word?: string } = {}): Buffer {
  const dim = options.embeddingLength ?? 64;
  const heads = options.heads ?? 4;
  const headDim = dim / heads;
  const word = options.word ?? TINY_RANKER_WORD;
  const ids = encodeBpe(tinyVocabulary(options), word);
  if (ids.length !== 1)
    throw new Error(`the tiny ranker's word must be one token of the tiny model, not ${ids.length}: '${word}'`);
  const { metadata, tensors } = tinyModelParts(options);

  const renamed = new Map<string, MetadataValue>();
  for (const [key, value] of metadata) renamed.set(key.startsWith("llama.") ? `qwen3.${key.slice(6)}` : key, value);
  renamed.set("general.architecture", { type: "string", value: "qwen3" });
  renamed.set("general.name", { type: "string", value: "armature-tiny-ranker" });
  renamed.set("qwen3.classifier.output_labels", { type: "string[]", value: ["yes", "no"] });
  renamed.set("qwen3.pooling_type", { type: "uint32", value: 4 }); // LLAMA_POOLING_TYPE_RANK
  // A pair is read as BOS, query, EOS, document, EOS: node-llama-cpp joins it so whenever the tokens
  // exist, llama-server (`--rerank`) only where the vocabulary asks for them; asked, both agree.
  renamed.set("tokenizer.ggml.add_bos_token", { type: "bool", value: true });
  renamed.set("tokenizer.ggml.add_eos_token", { type: "bool", value: true });

  const embedding = (tensors.find((t) => t.name === "token_embd.weight") as TensorSpec).data;
  const code = bigramRank(dim, heads);
  const classifier = new Float32Array(dim * 2);
  // Row 0 (label "yes") reads the word's identity code; row 1 stays zero.
  for (let i = 0; i < headDim; i++)
    classifier[code + i] = (embedding[(ids[0] as number) * dim + code + i] as number) * (GAIN / 4);
  const ones = (count: number): Float32Array => new Float32Array(count).fill(1);
  const extra: TensorSpec[] = [{ name: "cls.output.weight", dims: [dim, 2], data: classifier }];
  const layers = tensors.filter((t) => /^blk\.\d+\.attn_norm\.weight$/.test(t.name)).length;
  for (let l = 0; l < layers; l++) {
    extra.push(
      { name: `blk.${l}.attn_q_norm.weight`, dims: [headDim], data: ones(headDim) },
      { name: `blk.${l}.attn_k_norm.weight`, dims: [headDim], data: ones(headDim) },
    );
  }
  return encodeGguf(renamed, [...tensors, ...extra]);
}
