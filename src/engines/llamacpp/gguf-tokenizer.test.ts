import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { ensureTinyModel } from "../tiny-model/model-cache.js";
import { OFF_LOOP_CHARACTERS } from "../tokenizer-thread.js";
import { GgufTokenizer } from "./gguf-tokenizer.js";

let tokenizer: GgufTokenizer;
before(async () => {
  tokenizer = await GgufTokenizer.load(await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-tokenizer-"))));
});
after(() => tokenizer.close());

const words = ["river", "stone", "light", "north", "paper", "glass", "cloud", "ember", "field", "tower", "<|im_end|>"];
const longText = (characters: number): string => {
  let text = "";
  for (let i = 0; text.length < characters; i++) text += `${words[(i * 7) % words.length]} `;
  return text;
};

test("a long text tokenized off the event loop gets the tokens the loop's own tokenizer gives", async () => {
  assert.equal(await tokenizer.offLoopReady(), true);
  const text = longText(4 * OFF_LOOP_CHARACTERS);
  for (const special of [true, false]) {
    assert.deepEqual(await tokenizer.encodeAsync(text, { special }), tokenizer.encode(text, { special }));
  }
  const short = "a short prompt <|im_end|>";
  assert.deepEqual(await tokenizer.encodeAsync(short, { special: true }), tokenizer.encode(short, { special: true }));
});

test("while a long text is tokenized the event loop keeps turning", async () => {
  const text = longText(40 * OFF_LOOP_CHARACTERS);
  assert.equal(await tokenizer.offLoopReady(), true);
  let turned = false;
  const encoding = tokenizer.encodeAsync(text).then((tokens) => ({ tokens, turnedFirst: turned }));
  setImmediate(() => {
    turned = true;
  });
  const { tokens, turnedFirst } = await encoding;
  assert.ok(tokens.length > 0);
  assert.equal(turnedFirst, true, "the tokens came back before the event loop's next turn: the text was tokenized on it");
});

test("a text below the threshold is tokenized at once, on the loop", async () => {
  let turned = false;
  setImmediate(() => {
    turned = true;
  });
  await tokenizer.encodeAsync(longText(OFF_LOOP_CHARACTERS / 2));
  assert.equal(turned, false);
});
