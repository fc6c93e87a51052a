import { SeededRandom } from "../seeded-random.js";
import { learnBpe } from "./byte-bpe.js";
import { TINY_CORPUS } from "./corpus.js";
import { encodeGguf, type MetadataValue, type TensorSpec } from "./gguf-writer.js";

/** ChatML, the template embedded in the tiny model's metadata. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export interface TinyModelOptions {
  readonly seed?: number;
  readonly embeddingLength?: number;
  readonly layers?: number;
  readonly heads?: number;
  readonly feedForwardLength?: number;
  readonly merges?: number;
  readonly contextLength?: number;
}

const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

/**
 * Builds a small llama-architecture GGUF: random weights from a fixed seed, an untied output
 * layer (tied random models only echo their input), a byte-level BPE tokenizer with merges and a
 * ChatML template. Same options, same bytes.
 */
export function buildTinyModel(options: TinyModelOptions = {}): Buffer {
  const seed = options.seed ?? 1234;
  const dim = options.embeddingLength ?? 64;
  const layers = options.layers ?? 2;
  const heads = options.heads ?? 4;
  const ff = options.feedForwardLength ?? 256;
  const contextLength = options.contextLength ?? 4096;
  const vocab = learnBpe(TINY_CORPUS, options.merges ?? 240);
  const tokens = [...vocab.tokens, ...SPECIAL_TOKENS];
  const tokenTypes = tokens.map((_, i) => (i >= vocab.tokens.length ? 3 : 1));
  const vocabSize = tokens.length;
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
    ["llama.rope.freq_base", { type: "float32", value: 10000 }],
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

  const rng = new SeededRandom(seed);
  const random = (count: number, std: number): Float32Array => {
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = rng.gaussian() * std;
    return out;
  };
  const ones = (count: number): Float32Array => new Float32Array(count).fill(1);
  const linearStd = 1 / Math.sqrt(dim);
  const tensors: TensorSpec[] = [
    { name: "token_embd.weight", dims: [dim, vocabSize], data: random(dim * vocabSize, 1) },
    { name: "output_norm.weight", dims: [dim], data: ones(dim) },
    { name: "output.weight", dims: [dim, vocabSize], data: random(dim * vocabSize, 3 * linearStd) },
  ];
  for (let l = 0; l < layers; l++) {
    const p = `blk.${l}`;
    tensors.push(
      { name: `${p}.attn_norm.weight`, dims: [dim], data: ones(dim) },
      { name: `${p}.attn_q.weight`, dims: [dim, dim], data: random(dim * dim, linearStd) },
      { name: `${p}.attn_k.weight`, dims: [dim, dim], data: random(dim * dim, linearStd) },
      { name: `${p}.attn_v.weight`, dims: [dim, dim], data: random(dim * dim, linearStd) },
      { name: `${p}.attn_output.weight`, dims: [dim, dim], data: random(dim * dim, linearStd) },
      { name: `${p}.ffn_norm.weight`, dims: [dim], data: ones(dim) },
      { name: `${p}.ffn_gate.weight`, dims: [dim, ff], data: random(dim * ff, linearStd) },
      { name: `${p}.ffn_up.weight`, dims: [dim, ff], data: random(dim * ff, linearStd) },
      { name: `${p}.ffn_down.weight`, dims: [ff, dim], data: random(ff * dim, 1 / Math.sqrt(ff)) },
    );
  }
  return encodeGguf(md, tensors);
}
