import assert from "node:assert/strict";
import { test } from "node:test";
import { ByteTokenizer } from "../engines/byte-tokenizer.js";
import { GgufTokenizer } from "../engines/llamacpp/gguf-tokenizer.js";
import { ensureTinyModel } from "../engines/tiny-model/model-cache.js";
import { IncrementalDetokenizer } from "./incremental-detokenizer.js";

function streamed(tokenizer: ConstructorParameters<typeof IncrementalDetokenizer>[0], ids: readonly number[]): string {
  const detokenizer = new IncrementalDetokenizer(tokenizer);
  let text = "";
  for (const id of ids) text += detokenizer.push([id]);
  return text + detokenizer.flush();
}

test("token by token, the deltas add up to the whole decoding, spaces before punctuation included", async () => {
  // llama.cpp's BPE vocabularies clean up spaces: " ," decodes to ",", but " " alone to " ". A space
  // handed out before the comma came could not be taken back, and once the comma went missing.
  const tokenizer = await GgufTokenizer.load(await ensureTinyModel());
  for (const text of ['{"city": "The cat. The" , "unit": "f"}', "Hello , world . Is it ? Yes !", "a  b   c", "end with space "]) {
    const ids = tokenizer.encode(text);
    assert.equal(streamed(tokenizer, ids), tokenizer.decode(ids), JSON.stringify(text));
  }
});

test("a character split across tokens waits for its last byte", () => {
  const tokenizer = new ByteTokenizer();
  const ids = tokenizer.encode("naïve ☃ done");
  assert.equal(streamed(tokenizer, ids), "naïve ☃ done");
});

test("a run of spaces still streams: a trailing space waits one token, not for the run to end", () => {
  const tokenizer = new ByteTokenizer();
  const detokenizer = new IncrementalDetokenizer(tokenizer);
  let text = "";
  for (const id of tokenizer.encode(" ".repeat(10))) text += detokenizer.push([id]);
  assert.ok(text.length >= 9, `only ${text.length} of 10 spaces out before the end`);
  assert.equal(text + detokenizer.flush(), " ".repeat(10));
});
