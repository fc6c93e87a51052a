import assert from "node:assert/strict";
import { test } from "node:test";
import type { Tokenizer } from "../engines/index.js";
import { chatLogprobs, completionLogprobs, describeLogprobs } from "./logprobs-format.js";

const words = ["<s>", "Hello", " world", "é"];
const tokenizer = {
  decode: (ids: readonly number[]) => ids.map((id) => words[id] ?? "").join(""),
  encode: () => [],
  vocabSize: words.length,
  maxTokenBytes: 8,
} as unknown as Tokenizer;

const entries = describeLogprobs(
  tokenizer,
  [1, 3],
  [
    {
      logprob: -0.5,
      top: [
        { token: 1, logprob: -0.5 },
        { token: 2, logprob: -1 },
      ],
    },
    { logprob: -2, top: [{ token: 2, logprob: -0.25 }] },
  ],
);

test("chat logprobs: OpenAI's content entries, each token with its UTF-8 bytes and its alternatives", () => {
  assert.deepEqual(chatLogprobs(entries), {
    content: [
      {
        token: "Hello",
        logprob: -0.5,
        bytes: [72, 101, 108, 108, 111],
        top_logprobs: [
          { token: "Hello", logprob: -0.5, bytes: [72, 101, 108, 108, 111] },
          { token: " world", logprob: -1, bytes: [32, 119, 111, 114, 108, 100] },
        ],
      },
      {
        token: "é",
        logprob: -2,
        bytes: [0xc3, 0xa9],
        top_logprobs: [{ token: " world", logprob: -0.25, bytes: [32, 119, 111, 114, 108, 100] }],
      },
    ],
    refusal: null,
  });
});

test("completion logprobs: parallel lists, the chosen token in its top map, offsets from the start given", () => {
  assert.deepEqual(completionLogprobs(entries, 7), {
    tokens: ["Hello", "é"],
    token_logprobs: [-0.5, -2],
    top_logprobs: [
      { Hello: -0.5, " world": -1 },
      { é: -2, " world": -0.25 },
    ],
    text_offset: [7, 12],
  });
});

test("return_tokens_as_token_ids names each token by its id; the bytes stay the text's", () => {
  const [first] = describeLogprobs(tokenizer, [2], [{ logprob: -1, top: [{ token: 2, logprob: -1 }] }], true);
  assert.equal(first?.token, "token_id:2");
  assert.deepEqual(first?.bytes, [32, 119, 111, 114, 108, 100]);
  assert.equal(first?.top[0]?.token, "token_id:2");
});
