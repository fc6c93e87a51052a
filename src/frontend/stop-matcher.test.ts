import assert from "node:assert/strict";
import { test } from "node:test";
import { ByteTokenizer } from "../engines/index.js";
import { IncrementalDetokenizer } from "./incremental-detokenizer.js";
import { StopMatcher } from "./stop-matcher.js";

test("a stop string split across deltas is found and nothing after it leaks", () => {
  const m = new StopMatcher(["END"]);
  assert.deepEqual(m.push("hello E"), { text: "hello ", stopped: false });
  assert.deepEqual(m.push("N"), { text: "", stopped: false });
  assert.deepEqual(m.push("D and more"), { text: "", stopped: true });
});

test("held text that turns out not to be a stop string is released", () => {
  const m = new StopMatcher(["END"]);
  assert.deepEqual(m.push("E"), { text: "", stopped: false });
  assert.deepEqual(m.push("x"), { text: "Ex", stopped: false });
  assert.deepEqual(m.push("EN"), { text: "", stopped: false });
  assert.equal(m.flush(), "EN");
});

test("the earliest of several stop strings wins", () => {
  const m = new StopMatcher(["world", "lo"]);
  assert.deepEqual(m.push("hello world"), { text: "hel", stopped: true });
});

test("multi-byte characters split across tokens come out whole", () => {
  const tokenizer = new ByteTokenizer();
  const text = "naïve 🦊 café";
  const detok = new IncrementalDetokenizer(tokenizer);
  const deltas = tokenizer.encode(text).map((t) => detok.push([t]));
  assert.ok(deltas.every((d) => !d.includes("\uFFFD")));
  assert.equal(deltas.join("") + detok.flush(), text);
});

test("an incomplete character at the end is flushed as a replacement character", () => {
  const tokenizer = new ByteTokenizer();
  const detok = new IncrementalDetokenizer(tokenizer);
  const ids = [...tokenizer.encode("ok "), 0xf0, 0x9f];
  const streamed = ids.map((t) => detok.push([t])).join("") + detok.flush();
  assert.equal(streamed, tokenizer.decode(ids));
});
