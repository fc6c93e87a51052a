import { factorBigrams } from "./bigram.js";
import { type BpeVocabulary, encodeBpe, learnBpe } from "./byte-bpe.js";
import { CHATML_TEMPLATE } from "./chat-template.js";
import { TOKENIZER_TEXT, trainingStreams } from "./corpus-streams.js";
import { encodeGguf, type MetadataValue, type TensorSpec } from "./gguf-writer.js";
import { bigramRank, speakingTensors } from "./transformer-weights.js";

/** ChatML with Hermes-style tools, the template embedded in the tiny model's metadata. */
export { CHATML_TEMPLATE };

export interface TinyModelOptions {
  readonly seed?: number;
  readonly embeddingLength?: number;
  readonly layers?: number;
  readonly heads?: number;
  readonly feedForwardLength?: number;
  /** At most this many BPE merges (default: enough for every corpus word to be one token). */
  readonly merges?: number;
  readonly contextLength?: number;
}

const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

/** Merges enough for every word of the training text to be one token. */
const ALL_MERGES = 4000;

/** The tiny model's BPE vocabulary (special tokens follow it), learned from its corpus. */
export function tinyVocabulary(options: Pick<TinyModelOptions, "merges"> = {}): BpeVocabulary {
  return learnBpe(TOKENIZER_TEXT, options.merges ?? ALL_MERGES, 1);
}

/** Token ids of the tiny model: the BPE tokens, then `SPECIAL_TOKENS`. */
export function tinyVocabularySize(vocab: BpeVocabulary): number {
  return vocab.tokens.length + SPECIAL_TOKENS.length;
}

/**
 * Builds a small llama-architecture GGUF that speaks the English of its built-in corpus: a
 * byte-level BPE tokenizer learned on the corpus (every corpus word one token), weights that realise
 * the corpus's bigram statistics (see transformer-weights.ts) and a ChatML template whose turns the
 * model ends with `<|im_end|>`. Same options, same bytes.
 */
export function buildTinyModel(options: TinyModelOptions = {}): Buffer {
  const { metadata, tensors } = tinyModelParts(options);
  return encodeGguf(metadata, tensors);
}

/** The tiny model's metadata and tensors, before they are written (the ranker is built from them). */
export function tinyModelParts(options: TinyModelOptions = {}): { metadata: Map<string, MetadataValue>; tensors: TensorSpec[] } {
  const seed = options.seed ?? 1234;
  const dim = options.embeddingLength ?? 64;
  const layers = options.layers ?? 2;
  const heads = options.heads ?? 4;
  const ff = options.feedForwardLength ?? 256;
  const contextLength = options.contextLength ?? 4096;
  const vocab = tinyVocabulary(options);
  const tokens = [...vocab.tokens, ...SPECIAL_TOKENS];
  const tokenTypes = tokens.map((_, i) => (i >= vocab.tokens.length ? 3 : 1));
  const vocabSize = tinyVocabularySize(vocab);
  const id = (t: string): number => tokens.indexOf(t);

  const md = new Map<string, MetadataValue>([
    ["general.architecture", { type: "string", value: "llama" }],
    ["general.name", { type: "string", value: "armature-tiny" }],
    ["general.alignment", { type: "uint32", value: 32 }],
    ["llama.context_length", { type: "uint32", value: contextLength }],
    ["llama.embedding_length", { type: "uint32", value: dim }],
    ["llama.block_count", { type: "uint32", value: layers }],
    ["llama.feed_forward_length", { type: "uint32", value: ff }],
    ["llama.attention.head_count", { type: "uint32", value: heads }],
    ["llama.attention.head_count_kv", { type: "uint32", value: heads }],
    ["llama.rope.dimension_count", { type: "uint32", value: dim / heads }],
    ["llama.rope.freq_base", { type: "float32", value: 1e6 }],
    ["llama.attention.layer_norm_rms_epsilon", { type: "float32", value: 1e-5 }],
    ["llama.vocab_size", { type: "uint32", value: vocabSize }],
    ["tokenizer.ggml.model", { type: "string", value: "gpt2" }],
    ["tokenizer.ggml.pre", { type: "string", value: "gpt-2" }],
    ["tokenizer.ggml.tokens", { type: "string[]", value: tokens }],
    ["tokenizer.ggml.token_type", { type: "int32[]", value: tokenTypes }],
    ["tokenizer.ggml.merges", { type: "string[]", value: vocab.merges }],
    ["tokenizer.ggml.bos_token_id", { type: "uint32", value: id("<|endoftext|>") }],
    ["tokenizer.ggml.eos_token_id", { type: "uint32", value: id("<|endoftext|>") }],
    ["tokenizer.ggml.eot_token_id", { type: "uint32", value: id("<|im_end|>") }],
    ["tokenizer.ggml.add_bos_token", { type: "bool", value: false }],
    ["tokenizer.chat_template", { type: "string", value: CHATML_TEMPLATE }],
  ]);

  const imStart = id("<|im_start|>");
  const imEnd = id("<|im_end|>");
  const factors = factorBigrams(trainingStreams(vocab, { imStart, imEnd }), vocabSize, bigramRank(dim, heads), seed);
  // Inside a chat turn, `<|im_end|>` is lifted just above the likeliest token after a full stop.
  const fullStop = encodeBpe(vocab, ".")[0] as number;
  let best = Number.NEGATIVE_INFINITY;
  for (const next of factors.seen) if (next !== imEnd) best = Math.max(best, factors.logit(fullStop, next));
  const chatEndBoost = Math.max(0, best - factors.logit(fullStop, imEnd)) + 1;
  // Words carry an identity code for the repetition head; punctuation and special tokens do not.
  const coded = (token: number): boolean => token < vocab.tokens.length && /\p{L}/u.test(tokens[token] ?? "");
  const tensors = speakingTensors(
    {
      dim,
      layers,
      heads,
      feedForward: ff,
      vocabSize,
      imStart,
      imEnd,
      chatEndBoost,
      fullStop,
      chatStopBoost: 1,
      mixing: 0.1,
      repetitionPenalty: 14,
      coded,
      structural: (token: number) => token < vocab.tokens.length && '[]{},:"'.includes(tokens[token] ?? "-"),
      seed,
    },
    factors,
  );
  return { metadata: md, tensors };
}
