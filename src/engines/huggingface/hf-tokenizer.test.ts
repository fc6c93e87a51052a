import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { getLlama, type LlamaModel } from "node-llama-cpp";
import { qwen3TokenizerDir, writeTokenizerFolderOf, writeVocabGguf } from "../../../test/helpers/tokenizer-folders.js";
import { hfEngineTokenizer } from "../engine-server/engine-tokenizer.js";
import { GgufTokenizer } from "../llamacpp/gguf-tokenizer.js";
import { ensureTinyModel } from "../tiny-model/model-cache.js";
import { OFF_LOOP_CHARACTERS } from "../tokenizer-thread.js";
import { HfTokenizer } from "./hf-tokenizer.js";
import { readTokenizerFolder } from "./tokenizer-folder.js";

// The reference for a Hugging Face tokenizer is another implementation of the same vocabulary:
// llama.cpp's tokenizer (C++, its own pre-tokenizer regexes and BPE), loading a GGUF that holds
// Qwen3's tokenizer.json vocabulary and merges; and for the tiny model, its own GGUF beside the
// tokenizer folder written from it.

const TEXTS = [
  "Hello, world! 1234567 tokens: ñandú café naïve\n\t  spaces <|im_start|>user end.",
  "def f(x):\n    return x ** 2  # squares\n\n\n",
  "日本語のテキストと中文文本，还有한국어 텍스트。",
  "emoji 👍🏽 and flags 🇫🇷, math ∑ x² ≤ ∞, accents Ελληνικά Кириллица",
  "  leading spaces, trailing spaces   ",
  "numbers 3.14159 1,000,000 -42 0x1F 2026-12-02T03:04:05Z",
  "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
  "I'm sure they'll say we'd've DONE IT'S fine\r\nyes\r\n",
  "",
];

let qwen: HfTokenizer;
let qwenLlama: LlamaModel;

before(async () => {
  qwen = HfTokenizer.load(qwen3TokenizerDir());
  const gguf = join(await mkdtemp(join(tmpdir(), "armature-hf-")), "qwen3-vocab.gguf");
  await writeVocabGguf(qwen3TokenizerDir(), "qwen2", gguf);
  const llama = await getLlama({ gpu: false, build: "never" });
  qwenLlama = await llama.loadModel({ modelPath: gguf, vocabOnly: true });
});
after(async () => {
  await qwen.close();
  await qwenLlama.dispose();
});

test("Qwen3's tokenizer.json tokenizes as llama.cpp tokenizes the same vocabulary", () => {
  for (const text of TEXTS) {
    assert.deepEqual(qwen.encode(text), qwenLlama.tokenize(text, true), JSON.stringify(text));
  }
});

test("decoding gives the text back; special tokens decode to nothing; a cut UTF-8 sequence is U+FFFD", () => {
  for (const text of TEXTS.filter((t) => !t.includes("<|"))) assert.equal(qwen.decode(qwen.encode(text)), text);
  const chat = qwen.encode("<|im_start|>user\nHi<|im_end|>");
  assert.equal(qwen.decode(chat), "user\nHi");
  assert.equal(qwen.decode([]), "");
  // A character that is no single token is its UTF-8 bytes' tokens: one of them alone is no text.
  const bytes = qwen.encode("🦜");
  assert.ok(bytes.length > 1, `🦜 is ${bytes.length} tokens`);
  assert.match(qwen.decode(bytes.slice(0, 1)), /^\uFFFD+$/);
});

test("vocabulary size and the byte bound of a token", () => {
  assert.equal(qwen.vocabSize, 151669); // 151,643 pieces and 26 added tokens, ids 0 to 151,668
  // No token decodes to more bytes than the bound, so bytes / bound never exceeds a prompt's tokens.
  for (const text of TEXTS) {
    assert.ok(Buffer.byteLength(text) / qwen.maxTokenBytes <= qwen.encode(text).length, JSON.stringify(text));
  }
});

test("long texts are tokenized on another thread, to the same tokens", async () => {
  assert.equal(await qwen.offLoopReady(), true);
  const text = `${TEXTS.join(" ")} `.repeat(Math.ceil((4 * OFF_LOOP_CHARACTERS) / 400));
  assert.ok(text.length >= 4 * OFF_LOOP_CHARACTERS);
  assert.deepEqual(await qwen.encodeAsync(text), qwen.encode(text));
});

test("special-token text as plain text is refused: Hugging Face tokenizers read it as the token", () => {
  assert.throws(() => qwen.encode("<|im_end|>", { special: false }), /reads special-token text as its token/);
});

test("the folder's chat template, end tokens and their ids (Qwen3: <|im_end|>, no BOS)", () => {
  const engine = hfEngineTokenizer(qwen3TokenizerDir());
  assert.deepEqual(engine.source, { kind: "huggingface", path: qwen3TokenizerDir() });
  assert.equal(engine.eosToken, "<|im_end|>");
  assert.deepEqual(engine.eosTokenIds, [151645]);
  assert.equal(engine.bosToken, undefined);
  assert.match(engine.chatTemplate ?? "", /<\|im_start\|>/);
});

test("a tokenizer folder written from the tiny GGUF tokenizes as llama.cpp tokenizes the GGUF", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-hf-tiny-"));
  const gguf = await ensureTinyModel(dir);
  await writeTokenizerFolderOf(gguf, join(dir, "tokenizer"));
  const hf = HfTokenizer.load(join(dir, "tokenizer"));
  const native = await GgufTokenizer.load(gguf);
  for (const text of TEXTS) assert.deepEqual(hf.encode(text), native.encode(text, { special: true }), JSON.stringify(text));
  const engine = hfEngineTokenizer(join(dir, "tokenizer"));
  assert.deepEqual([...engine.eosTokenIds].sort(), [hf.tokenId("<|endoftext|>"), hf.tokenId("<|im_end|>")].sort());
  await hf.close();
  await native.close();
});

test("chat_template.jinja comes before the config's template; a named list gives its default", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-hf-folder-"));
  await writeFile(join(dir, "tokenizer.json"), "{}");
  await writeFile(
    join(dir, "tokenizer_config.json"),
    JSON.stringify({
      eos_token: { content: "</s>", special: true },
      chat_template: [
        { name: "tool_use", template: "T" },
        { name: "default", template: "D" },
      ],
    }),
  );
  await writeFile(join(dir, "generation_config.json"), JSON.stringify({ eos_token_id: [2, 7] }));
  let folder = readTokenizerFolder(dir);
  assert.equal(folder.chatTemplate, "D");
  assert.equal(folder.eosToken, "</s>");
  assert.deepEqual(folder.generationEosIds, [2, 7]);
  await writeFile(join(dir, "chat_template.jinja"), "J");
  folder = readTokenizerFolder(dir);
  assert.equal(folder.chatTemplate, "J");
});

test("a folder without tokenizer.json, or with one that is not JSON, stops naming the flag and the file", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-hf-bad-"));
  assert.throws(() => readTokenizerFolder(dir), /--tokenizer .*: no tokenizer\.json there/);
  await writeFile(join(dir, "tokenizer.json"), "{not json");
  assert.throws(() => readTokenizerFolder(dir), /--tokenizer .*: cannot read tokenizer\.json/);
  await writeFile(join(dir, "tokenizer.json"), "[1, 2]");
  assert.throws(() => readTokenizerFolder(dir), /tokenizer\.json is not a JSON object/);
});
