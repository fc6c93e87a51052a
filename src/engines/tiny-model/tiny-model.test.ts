import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { GgufTokenizer } from "../llamacpp/gguf-tokenizer.js";
import { encodeBpe, learnBpe } from "./byte-bpe.js";
import { TOKENIZER_TEXT, TRAINING_TEXT } from "./corpus-streams.js";
import { ensureTinyModel } from "./model-cache.js";
import { buildTinyModel } from "./tiny-model.js";

test("the generator is deterministic and writes a GGUF v3 header", () => {
  const a = buildTinyModel();
  const b = buildTinyModel();
  assert.equal(createHash("sha256").update(a).digest("hex"), createHash("sha256").update(b).digest("hex"));
  assert.equal(a.subarray(0, 4).toString("latin1"), "GGUF");
  assert.equal(a.readUInt32LE(4), 3);
});

test("two caches generate byte-identical model files", async () => {
  const [a, b] = await Promise.all([1, 2].map(async () => ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-tiny-")))));
  assert.deepEqual(await readFile(a as string), await readFile(b as string));
});

test("BPE merges are learned from the corpus and produce unique tokens", () => {
  const vocab = learnBpe("the the the then then cat", 5);
  assert.ok(vocab.merges.length > 0);
  assert.equal(new Set(vocab.tokens).size, vocab.tokens.length);
  assert.equal(vocab.tokens.length, 256 + vocab.merges.length);
});

test("llama.cpp loads the model's tokenizer and round-trips text, merges applied", async () => {
  const path = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-tiny-")));
  const tokenizer = await GgufTokenizer.load(path);
  const text = "Hello world, the quick brown fox — naïve café 🦊";
  const ids = tokenizer.encode(text);
  assert.equal(tokenizer.decode(ids), text);
  assert.ok(ids.length < Buffer.byteLength(text), "merges make tokens longer than one byte");
  assert.equal(tokenizer.encode("<|im_end|>", { special: true }).length, 1);
});

test("a corrupted cached model is replaced", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-tiny-"));
  const path = await ensureTinyModel(dir);
  await writeFile(path, "garbage");
  assert.equal(await ensureTinyModel(dir), path);
  assert.deepEqual(await readFile(path), buildTinyModel());
});

test("every word of the training text is one token, as llama.cpp tokenizes it", async () => {
  const path = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-tiny-")));
  const tokenizer = await GgufTokenizer.load(path);
  for (const word of ["The", " robot", " capital", " France", " ocean", " quick", " Paris", "assistant"]) {
    assert.equal(tokenizer.encode(word).length, 1, word);
  }
  // The statistics the weights come from were counted on the generator's own encoding of the
  // text; llama.cpp must split it the same way for them to describe the model's tokens.
  const vocabulary = learnBpe(TOKENIZER_TEXT, 4000, 1);
  const text = TRAINING_TEXT.replace(/\s+/g, " ").trim();
  assert.deepEqual(encodeBpe(vocabulary, text), tokenizer.encode(text));
});
