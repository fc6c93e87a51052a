import assert from "node:assert/strict";
import { test } from "node:test";
import { ByteTokenizer } from "./byte-tokenizer.js";

const tokenizer = new ByteTokenizer();

test("the byte tokenizer gives each UTF-8 byte its value, and special-token text its id only when asked", () => {
  // "é" is U+00E9, UTF-8 C3 A9; the specials follow the 256 bytes in the order <|endoftext|>, <|im_start|>, <|im_end|>.
  assert.deepEqual(tokenizer.encode("a<|im_end|>é<|im_start|>", { special: true }), [97, 258, 0xc3, 0xa9, 257]);
  assert.deepEqual(tokenizer.encode("a<|im_end|>"), [97, ...Array.from("<|im_end|>", (c) => c.charCodeAt(0))]);
  assert.deepEqual(tokenizer.encode("", { special: true }), []);
  assert.deepEqual(tokenizer.encode("<|endoftext|><|endoftext|>", { special: true }), [256, 256]);
});

test("a long text comes back whole and in order, and decodes to itself", () => {
  const text = "river stone élan ".repeat(6000);
  const ids = tokenizer.encode(text, { special: true });
  assert.equal(ids.length, Buffer.byteLength(text, "utf8"));
  assert.equal(tokenizer.decode(ids), text);
});

test("decoding drops special tokens and keeps incomplete UTF-8 as U+FFFD, in short and long runs alike", () => {
  // Hand-worked: 0x68 0x69 = "hi"; 258 is <|im_end|> (dropped); C3 A9 = "é"; a lone C3 is one U+FFFD.
  assert.equal(tokenizer.decode([0x68, 0x69]), "hi");
  assert.equal(tokenizer.decode([0x68, 258, 0x69]), "hi");
  assert.equal(tokenizer.decode([0x68, 0xc3, 0xa9]), "hé");
  assert.equal(tokenizer.decode([0x68, 0xc3]), "h\uFFFD");
  assert.equal(tokenizer.decode([0xc3, 258, 0xa9]), "\uFFFD\uFFFD");
  assert.equal(tokenizer.decode([]), "");
  const long = [...Array.from({ length: 20 }, () => 0x61), 258, 0xc3, 0xa9];
  assert.equal(tokenizer.decode(long), `${"a".repeat(20)}é`);
});
