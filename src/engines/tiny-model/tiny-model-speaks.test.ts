import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { GenerateRequest, RequestEnd } from "../../protocol/index.js";
import { GgufTokenizer } from "../llamacpp/gguf-tokenizer.js";
import { LlamaCppEngine } from "../llamacpp/llamacpp-engine.js";
import { TRAINING_TEXT } from "./corpus-streams.js";
import { ensureTinyModel } from "./model-cache.js";

// The generated model run by llama.cpp: its greedy text is made of the corpus's words, and a chat
// answer ends with the end-of-turn token.
let engine: LlamaCppEngine;
let tokenizer: GgufTokenizer;

/** A word as the check sees it: letters and digits only, lower case. */
const bare = (word: string): string => word.toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
const corpusWords = new Set(
  TRAINING_TEXT.split(/\s+/)
    .map(bare)
    .filter((w) => w.length > 0),
);

before(async () => {
  const path = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-tiny-")));
  engine = await LlamaCppEngine.create({ modelPath: path, sequences: 1, contextSizePerSequence: 512 });
  tokenizer = await GgufTokenizer.load(path);
});
after(() => engine.close());

async function greedy(tokenIds: number[], maxTokens: number): Promise<{ text: string; end: RequestEnd }> {
  const request: GenerateRequest = {
    type: "generate-request",
    requestId: "speaks",
    model: "tiny",
    tokenIds,
    sampling: { temperature: 0 },
    maxTokens,
  };
  const tokens: number[] = [];
  let end: RequestEnd | undefined;
  for await (const item of engine.generate(request, { signal: new AbortController().signal })) {
    if (item.type === "token-delta") tokens.push(...item.tokenIds);
    else end = item;
  }
  assert.ok(end);
  return { text: tokenizer.decode(tokens), end };
}

function assertCorpusWords(text: string): void {
  // No replacement characters (broken UTF-8) and no control characters other than tab and newline.
  const bad = [...text].filter((c) => c === "\uFFFD" || (c < " " && c !== "\n" && c !== "\t") || c === "\u007F");
  assert.deepEqual(bad, [], JSON.stringify(text));
  const words = text
    .split(/\s+/)
    .map(bare)
    .filter((w) => w.length > 0);
  assert.ok(words.length >= 2, `some words: ${JSON.stringify(text)}`);
  const known = words.filter((w) => corpusWords.has(w)).length;
  assert.ok(known >= 0.8 * words.length, `${known} of ${words.length} words from the corpus: ${JSON.stringify(text)}`);
}

for (const prompt of ["The", "Once upon a time", "Hello world", "What is the capital of France?"]) {
  test(`the greedy completion of ${JSON.stringify(prompt)} is corpus words`, async () => {
    const { text } = await greedy(tokenizer.encode(prompt), 32);
    assertCorpusWords(text);
  });
}

test("a chat answer is corpus words and ends the turn with <|im_end|>", async () => {
  for (const question of ["Hello", "What is the capital of France?"]) {
    const prompt = `<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`;
    const { text, end } = await greedy(tokenizer.encode(prompt, { special: true }), 48);
    assertCorpusWords(text);
    assert.equal(end.finishReason, "stop", `the answer ends: ${JSON.stringify(text)}`);
  }
});
